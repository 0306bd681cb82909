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
  by_wait_.emplace(jobs_->at(id).queued_since, id);
}

void JobQueue::Erase(JobId id) {
  const size_t erased = by_order_.erase(id);
  DS_CHECK(erased == 1) << "job " << id << " is not queued (or its order key changed)";
  by_wait_.erase({jobs_->at(id).queued_since, id});
}

}  // namespace dlsched
