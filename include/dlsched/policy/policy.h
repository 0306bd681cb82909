#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/context.h"
#include "dlsched/policy/plugin.h"
#include "dlsched/policy/rank_order.h"

namespace dlsched {

// A scheduling policy: a pure function of a SchedulingContext. The same object runs in the
// simulator and in the daemon. Decide is called from one thread (the scheduler's).
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view Name() const = 0;

  // The order the scheduler keeps this policy's jobs in, waiting and running, and the guards
  // on its victims (JobQueue, RunningIndex). The same object for the policy's whole life.
  // Default: RankOrder::Fifo() (every job ranks alike, none is ever a victim).
  virtual const RankOrder& Order() const { return RankOrder::Fifo(); }
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
