#include "dlsched/policy/running_index.h"

#include <algorithm>

#include "dlsched/common/status.h"
#include "dlsched/policy/policy.h"

namespace dlsched {

RunningIndex::RunningIndex(const JobTable& jobs, const SchedulingPolicy* policy)
    : jobs_(&jobs), policy_(policy) {}

void RunningIndex::Grow(JobId id) {
  if (id.index() >= where_.size()) {
    const size_t n = std::max(id.index() + 1, where_.size() * 2);
    where_.resize(n, kOutside);
    stored_.resize(n);
    drift_.resize(n, 0);
    victim_at_.resize(n, kTimeNever);
    due_at_.resize(n, kTimeNever);
  }
}

void RunningIndex::Insert(JobId id, Timestamp now) {
  Grow(id);
  const size_t i = id.index();
  DS_CHECK(where_[i] == kOutside) << "job " << id << " is already in the running index";
  const JobView view(jobs_->at(id), now);
  drift_[i] = policy_->RankDrift(view);
  stored_[i] = policy_->KeyOf(view);
  stored_[i].rank -= drift_[i] * now.time_since_epoch().count();
  const Timestamp victim_at = policy_->VictimFrom(view);
  if (victim_at <= now) {
    DS_CHECK(victims_.insert(stored_[i]).second) << "job " << id << " is already running";
    where_[i] = kVictim;
  } else if (victim_at == kTimeNever) {
    ++never_victims_;
    where_[i] = kNeverVictim;
  } else {
    guarded_.insert({victim_at, id});
    victim_at_[i] = victim_at;
    where_[i] = kGuarded;
  }
  const Timestamp at = policy_->NextRankChange(view, now);
  due_at_[i] = at;
  if (at != kTimeNever) due_.push({at, id});
}

void RunningIndex::Take(JobId id) {
  const size_t i = id.index();
  switch (where_[i]) {
    case kVictim:
      victims_.erase(stored_[i]);
      break;
    case kGuarded:
      guarded_.erase({victim_at_[i], id});
      break;
    case kNeverVictim:
      --never_victims_;
      break;
    case kOutside:
      break;
  }
  where_[i] = kOutside;
}

void RunningIndex::Erase(JobId id) {
  if (auto it = std::find(deferred_.begin(), deferred_.end(), id); it != deferred_.end()) {
    deferred_.erase(it);
    return;
  }
  DS_CHECK(id.index() < where_.size() && where_[id.index()] != kOutside)
      << "job " << id << " is not in the running index";
  Take(id);
  due_at_[id.index()] = kTimeNever;  // its queued re-key is now stale
}

void RunningIndex::Refresh(Timestamp now) {
  std::vector<JobId> refile;
  while (!due_.empty() && due_.top().at <= now) {
    const Due due = due_.top();
    due_.pop();
    if (where_[due.job.index()] != kOutside && due_at_[due.job.index()] == due.at) {
      Take(due.job);
      refile.push_back(due.job);
    }
  }
  while (!guarded_.empty() && guarded_.begin()->first <= now) {
    const JobId id = guarded_.begin()->second;
    Take(id);
    refile.push_back(id);
  }
  for (JobId id : refile) Insert(id, now);
  for (JobId id : deferred_) Insert(id, now);
  deferred_.clear();
}

Timestamp RunningIndex::next_change() const {
  // Entries of jobs that stopped, or were re-keyed, are dropped here rather than on Erase.
  while (!due_.empty() && due_at_[due_.top().job.index()] != due_.top().at) due_.pop();
  return due_.empty() ? kTimeNever : due_.top().at;
}

}  // namespace dlsched
