#include "dlsched/policy/job_queue.h"

namespace dlsched {

JobQueue::JobQueue(const JobTable& jobs, std::function<bool(const JobView&, const JobView&)> less)
    : jobs_(&jobs), less_(std::move(less)), by_order_(Compare(this)) {}

bool JobQueue::Compare::operator()(JobId a, JobId b) const {
  // Waiting jobs do not run, so "now" does not affect their views.
  return queue_->less_(JobView(queue_->jobs_->at(a), kTimeZero),
                       JobView(queue_->jobs_->at(b), kTimeZero));
}

void JobQueue::Insert(JobId id) {
  const bool inserted = by_order_.insert(id).second;
  DS_CHECK(inserted) << "job " << id << " is already queued (or the order is not total)";
  const Job& job = jobs_->at(id);
  by_wait_.emplace(job.queued_since, id);
  by_gang_order_.try_emplace(job.spec.num_gpus, Compare(this)).first->second.insert(id);
  by_gang_wait_[job.spec.num_gpus].emplace(job.queued_since, id);
}

void JobQueue::Erase(JobId id) {
  const size_t erased = by_order_.erase(id);
  DS_CHECK(erased == 1) << "job " << id << " is not queued (or its order key changed)";
  const Job& job = jobs_->at(id);
  by_wait_.erase({job.queued_since, id});
  // Empty gang sets stay: gang sizes are few, and keeping them avoids churn.
  by_gang_order_.at(job.spec.num_gpus).erase(id);
  by_gang_wait_.at(job.spec.num_gpus).erase({job.queued_since, id});
}

}  // namespace dlsched
