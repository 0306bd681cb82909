#include "dlsched/policy/job_queue.h"

#include <algorithm>

namespace dlsched {

Timestamp JobQueue::LatestStart(const Job& job) {
  return job.spec.deadline ? *job.spec.deadline - job.estimated_remaining : kTimeNever;
}

JobQueue::JobQueue(const JobTable& jobs, const RankOrder& order)
    : jobs_(&jobs), order_(&order), by_tenant_(order.by_tenant()) {}

void JobQueue::Insert(JobId id) {
  if (positions_.size() <= id.index()) {
    positions_.resize(std::max(id.index() + 1, positions_.size() * 2));
  }
  DS_CHECK(!positions_[id.index()].queued) << "job " << id << " is already queued";
  const Job& job = jobs_->at(id);
  // Waiting jobs do not run, so "now" does not affect their views.
  const JobView view(job, kTimeZero);
  const RankKey key = order_->KeyOf(view);
  OrderIndex& gang_index = by_gang_order_[job.spec.num_gpus];
  const auto [in_gang, inserted] = gang_index.insert(key);
  DS_CHECK(inserted) << "job " << id << " is already queued";
  WaitIndex& wait_index = by_gang_wait_[job.spec.num_gpus];
  const auto in_wait = wait_index.emplace(job.queued_since, id).first;
  Position& position = positions_[id.index()];
  position = {true, &gang_index, in_gang, &wait_index, in_wait};
  if (by_tenant_) {
    position.tenant_index = &by_tenant_order_[job.spec.queue][job.spec.num_gpus];
    position.in_tenant = position.tenant_index->insert(key).first;
  }
  if (job.spec.deadline) by_latest_start_.emplace(LatestStart(job), id);
  ++size_;
}

void JobQueue::Erase(JobId id) {
  DS_CHECK(id.index() < positions_.size() && positions_[id.index()].queued)
      << "job " << id << " is not queued";
  const Job& job = jobs_->at(id);
  Position& position = positions_[id.index()];
  position.queued = false;
  // Empty gang sets stay: gang sizes are few, and keeping them avoids churn.
  position.gang_index->erase(position.in_gang);
  if (by_tenant_) position.tenant_index->erase(position.in_tenant);
  position.wait_index->erase(position.in_wait);
  if (job.spec.deadline) by_latest_start_.erase({LatestStart(job), id});
  --size_;
}

std::vector<JobId> JobQueue::InOrder() const {
  std::vector<JobId> order;
  order.reserve(size_);
  auto walk = WalkInOrder();
  while (auto key = walk.Next(kAnyGang)) order.push_back(key->id);
  return order;
}

Timestamp JobQueue::oldest_wait() const {
  Timestamp oldest = kTimeNever;
  for (const auto& [gang, index] : by_gang_wait_) {
    if (!index.empty()) oldest = std::min(oldest, index.begin()->first);
  }
  return oldest;
}

}  // namespace dlsched
