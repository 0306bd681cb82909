#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dlsched/policy/context.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {

// A scheduling policy: a pure function of a SchedulingContext. The same object runs in the
// simulator and in the daemon. Decide is called from one thread (the scheduler's).
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view Name() const = 0;

  // The order of jobs, lower first; see QueueSortPlugin::Rank for the contract.
  virtual int64_t Rank(const JobView& job) const = 0;
  RankKey KeyOf(const JobView& job) const { return {Rank(job), job.submit_time(), job.id()}; }
  bool Less(const JobView& a, const JobView& b) const { return KeyOf(a) < KeyOf(b); }
  // See QueueSortPlugin::RankDrift.
  virtual int64_t RankDrift(const JobView& running) const { return 0; }
  // See QueueSortPlugin::NextRankChange.
  virtual Timestamp NextRankChange(const JobView& running, Timestamp now) const {
    return kTimeNever;
  }
  // See PreemptPlugin::VictimFrom; a policy that never preempts keeps the default.
  virtual Timestamp VictimFrom(const JobView& running) const { return kTimeNever; }
  // Whether Decide needs ctx.queue to index the waiting jobs by tenant (JobQueue's by_tenant,
  // which the scheduler then keeps); the answer must not change over the policy's life.
  virtual bool WalksByTenant() const { return false; }
  // May this job enter the queue? Called once per job, before its first Decide.
  virtual Fit Admit(const JobView& job, const SchedulingContext& ctx) const = 0;
  // The decisions of one scheduling cycle.
  virtual Decisions Decide(const SchedulingContext& ctx) const = 0;
};

}  // namespace dlsched
