#include "dlsched/policy/job_queue.h"

#include <algorithm>

namespace dlsched {

JobQueue::JobQueue(const JobTable& jobs, std::function<bool(const JobView&, const JobView&)> less)
    : jobs_(&jobs), less_(std::move(less)), by_order_(Compare(this)) {}

bool JobQueue::Compare::operator()(JobId a, JobId b) const {
  // Waiting jobs do not run, so "now" does not affect their views.
  return queue_->less_(JobView(queue_->jobs_->at(a), kTimeZero),
                       JobView(queue_->jobs_->at(b), kTimeZero));
}

void JobQueue::Insert(JobId id) {
  const auto [in_order, inserted] = by_order_.insert(id);
  DS_CHECK(inserted) << "job " << id << " is already queued (or the order is not total)";
  const Job& job = jobs_->at(id);
  by_wait_.emplace(job.queued_since, id);
  OrderIndex& gang = by_gang_order_.try_emplace(job.spec.num_gpus, Compare(this)).first->second;
  const auto in_gang = gang.insert(id).first;
  by_gang_wait_[job.spec.num_gpus].emplace(job.queued_since, id);
  if (positions_.size() <= id.index()) {
    positions_.resize(std::max(id.index() + 1, positions_.size() * 2));
  }
  positions_[id.index()] = {true, in_order, in_gang};
}

void JobQueue::Erase(JobId id) {
  DS_CHECK(id.index() < positions_.size() && positions_[id.index()].queued)
      << "job " << id << " is not queued";
  const Job& job = jobs_->at(id);
  Position& position = positions_[id.index()];
  position.queued = false;
  by_order_.erase(position.in_order);
  by_wait_.erase({job.queued_since, id});
  // Empty gang sets stay: gang sizes are few, and keeping them avoids churn.
  by_gang_order_.at(job.spec.num_gpus).erase(position.in_gang);
  by_gang_wait_.at(job.spec.num_gpus).erase({job.queued_since, id});
}

}  // namespace dlsched
