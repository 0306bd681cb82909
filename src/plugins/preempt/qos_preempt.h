#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Preemption for deadlines (issue 4): a job with a deadline that is about to miss it may
// suspend running work that can afford the wait; nothing else preempts.
// - The job must have a deadline and be urgent: its laxity (deadline - now - its estimated
//   remaining time) below `urgent_slack_s` (default 3600). A job with more slack is refused
//   until the instant it becomes urgent (Fit::retry_at), so the pipeline looks again then.
// - A best-effort victim (no deadline) may be preempted; a victim with a deadline only if it
//   still meets it after waiting for the job to finish (its remaining time plus the job's
//   remaining time fit before its deadline).
// - Every victim must have run `min_run_s` (default 0) in its current segment.
// Estimates are on the reference placement (JobView::estimated_remaining).
class QosPreempt final : public PreemptPlugin {
 public:
  static constexpr std::string_view kName = "qos_preempt";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  QosPreempt(Duration min_run, Duration urgent_slack)
      : min_run_(min_run), urgent_slack_(urgent_slack) {}
  std::string_view Name() const override { return kName; }
  Timestamp VictimFrom(const JobView& victim) const override;
  Fit MayPreempt(const JobView& job, const JobView& victim,
                 const SchedulingContext& ctx) const override;
  // The job's part: a deadline, and urgency.
  Fit MayPreemptAny(const JobView& job, const SchedulingContext& ctx) const override;

 private:
  Duration min_run_;
  Duration urgent_slack_;
};

}  // namespace dlsched
