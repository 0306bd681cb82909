#pragma once

#include <memory>
#include <string>
#include <string_view>

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
};

}  // namespace dlsched
