#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
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

  // The state the policy carries from one cycle to the next that the job table does not hold
  // (a round-based policy's allocation, rounds per job and current round), as text that
  // RestoreState takes back. A driver that restarts hands it to a fresh policy of the same
  // profile (the daemon through its store, the replay of its log from the policy it replayed),
  // which then decides as the uninterrupted one would. "" for a policy that keeps none: its
  // decisions are a function of the context alone. Explaining (ctx.explain) changes no state.
  virtual std::string SaveState() const { return {}; }
  // Takes back SaveState's text of a policy built from the same profile; call before the first
  // Decide. InvalidArgument, changing nothing, on text it did not write.
  virtual Status RestoreState(std::string_view state) {
    if (state.empty()) return Status::Ok();
    return InvalidArgument("policy " + std::string(Name()) + " keeps no state to restore");
  }
};

}  // namespace dlsched
