#pragma once

#include <cstdint>
#include <vector>

#include "dlsched/model/job.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {

// A policy's order of jobs and the guards on its victims: what the scheduler's indexes of
// waiting and running jobs (JobQueue, RunningIndex) need to keep jobs in the policy's order
// without asking the policy itself. Built from a queue sort and the preempt plugins (see
// QueueSortPlugin and PreemptPlugin for the contracts it passes on); the default order, for a
// policy without either (round-based, scripted), ranks every job alike (submit time, then id),
// never changes a rank and never makes a job a victim. Immutable; not owning: the plugins must
// outlive it. Calls no virtual function but the plugins' own.
class RankOrder {
 public:
  // The default order (FIFO, no victims, no tenant index).
  RankOrder() = default;
  // `sort` (nullptr: the default ranks) and `preempt` (empty: no job is ever a victim).
  // `by_tenant`: the policy walks the waiting jobs by tenant (JobQueue::by_tenant_order).
  RankOrder(const QueueSortPlugin* sort, std::vector<const PreemptPlugin*> preempt, bool by_tenant)
      : sort_(sort), preempt_(std::move(preempt)), by_tenant_(by_tenant) {}

  // The default order, shared by every policy that has no order of its own.
  static const RankOrder& Fifo();

  // See QueueSortPlugin::Rank: lower runs first.
  int64_t Rank(const JobView& job) const { return sort_ != nullptr ? sort_->Rank(job) : 0; }
  RankKey KeyOf(const JobView& job) const { return {Rank(job), job.submit_time(), job.id()}; }
  // Whether `a` runs before `b`.
  bool Less(const JobView& a, const JobView& b) const { return KeyOf(a) < KeyOf(b); }
  // See QueueSortPlugin::RankDrift.
  int64_t RankDrift(const JobView& running) const {
    return sort_ != nullptr ? sort_->RankDrift(running) : 0;
  }
  // See QueueSortPlugin::NextRankChange.
  Timestamp NextRankChange(const JobView& running, Timestamp now) const {
    return sort_ != nullptr ? sort_->NextRankChange(running, now) : kTimeNever;
  }
  // The latest of the preempt plugins' PreemptPlugin::VictimFrom: a victim must pass all their
  // guards. kTimeNever without preempt plugins.
  Timestamp VictimFrom(const JobView& running) const;
  // Whether the waiting jobs are indexed by tenant too (JobQueue::by_tenant_order); constant.
  bool by_tenant() const { return by_tenant_; }

 private:
  const QueueSortPlugin* sort_ = nullptr;
  std::vector<const PreemptPlugin*> preempt_;
  bool by_tenant_ = false;
};

}  // namespace dlsched
