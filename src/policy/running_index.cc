#include "dlsched/policy/running_index.h"

#include <algorithm>

#include "dlsched/common/status.h"

namespace dlsched {

RunningIndex::RunningIndex(const JobTable& jobs, Less less, NextChange next_change)
    : jobs_(&jobs),
      less_(std::move(less)),
      next_change_(std::move(next_change)),
      order_(Compare(this)) {}

bool RunningIndex::Compare::operator()(JobId a, JobId b) const {
  return index_->less_(JobView(index_->jobs_->at(a), index_->now_),
                       JobView(index_->jobs_->at(b), index_->now_));
}

void RunningIndex::Grow(JobId id) {
  if (id.index() >= inside_.size()) {
    const size_t n = std::max(id.index() + 1, inside_.size() * 2);
    where_.resize(n);
    inside_.resize(n, 0);
    due_at_.resize(n, kTimeNever);
  }
}

void RunningIndex::Schedule(JobId id, Timestamp now) {
  const Timestamp at = next_change_(JobView(jobs_->at(id), now), now);
  due_at_[id.index()] = at;
  if (at != kTimeNever) due_.push({at, id});
}

void RunningIndex::Insert(JobId id, Timestamp now) {
  Grow(id);
  DS_CHECK(!inside_[id.index()]) << "job " << id << " is already in the running index";
  now_ = now;
  auto [it, inserted] = order_.insert(id);
  DS_CHECK(inserted) << "running order is not total";
  where_[id.index()] = it;
  inside_[id.index()] = 1;
  Schedule(id, now);
}

void RunningIndex::Erase(JobId id) {
  if (auto it = std::find(deferred_.begin(), deferred_.end(), id); it != deferred_.end()) {
    deferred_.erase(it);
    return;
  }
  DS_CHECK(id.index() < inside_.size() && inside_[id.index()])
      << "job " << id << " is not in the running index";
  order_.erase(where_[id.index()]);
  inside_[id.index()] = 0;
  due_at_[id.index()] = kTimeNever;  // its queued re-key is now stale
}

void RunningIndex::Refresh(Timestamp now) {
  std::vector<JobId> rekey;
  while (!due_.empty() && due_.top().at <= now) {
    const Due due = due_.top();
    due_.pop();
    if (inside_[due.job.index()] && due_at_[due.job.index()] == due.at) {
      order_.erase(where_[due.job.index()]);  // by position: its key may have moved already
      inside_[due.job.index()] = 0;
      rekey.push_back(due.job);
    }
  }
  now_ = now;
  for (JobId id : rekey) Insert(id, now);
  for (JobId id : deferred_) Insert(id, now);
  deferred_.clear();
}

Timestamp RunningIndex::next_change() const {
  // Entries of jobs that stopped, or were re-keyed, are dropped here rather than on Erase.
  while (!due_.empty() && due_at_[due_.top().job.index()] != due_.top().at) due_.pop();
  return due_.empty() ? kTimeNever : due_.top().at;
}

}  // namespace dlsched
