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

  // The order of jobs; see QueueSortPlugin::Less for the contract.
  virtual bool Less(const JobView& a, const JobView& b) const = 0;
  // See QueueSortPlugin::NextRankChange.
  virtual Timestamp NextRankChange(const JobView& running, Timestamp now) const {
    return kTimeNever;
  }
  // May this job enter the queue? Called once per job, before its first Decide.
  virtual Fit Admit(const JobView& job, const SchedulingContext& ctx) const = 0;
  // The decisions of one scheduling cycle.
  virtual Decisions Decide(const SchedulingContext& ctx) const = 0;
};

}  // namespace dlsched
