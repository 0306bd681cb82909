#include "plugins/preempt/qos_preempt.h"

#include <algorithm>

#include "dlsched/policy/context.h"

namespace dlsched {
namespace {

// Estimated time still to run: the estimate at the last checkpoint, less the current segment.
Duration RemainingNow(const JobView& job) {
  return std::max(job.estimated_remaining() - job.current_segment(), Duration(0));
}

}  // namespace

Result<std::unique_ptr<Plugin>> QosPreempt::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"min_run_s", "urgent_slack_s"}));
  DS_ASSIGN_OR_RETURN(double min_run_s, args.GetDouble("min_run_s", 0));
  DS_ASSIGN_OR_RETURN(double urgent_slack_s, args.GetDouble("urgent_slack_s", 3600));
  if (min_run_s < 0) return InvalidArgument("min_run_s must not be negative");
  if (urgent_slack_s < 0) return InvalidArgument("urgent_slack_s must not be negative");
  return std::unique_ptr<Plugin>(
      std::make_unique<QosPreempt>(Seconds(min_run_s), Seconds(urgent_slack_s)));
}

Timestamp QosPreempt::VictimFrom(const JobView& victim) const {
  return victim.job().segment_start + min_run_;
}

Fit QosPreempt::MayPreemptAny(const JobView& job, const SchedulingContext& ctx) const {
  const std::optional<Timestamp>& deadline = job.spec().deadline;
  if (!deadline) return Fit::Unfit("no deadline");
  const Timestamp urgent_from = *deadline - RemainingNow(job) - urgent_slack_;
  if (ctx.now < urgent_from) return Fit::Unfit("not urgent", urgent_from);
  return Fit::Yes();
}

Fit QosPreempt::MayPreempt(const JobView& job, const JobView& victim,
                           const SchedulingContext& ctx) const {
  if (Fit fit = MayPreemptAny(job, ctx); !fit.ok) return fit;
  const std::optional<Timestamp>& victim_deadline = victim.spec().deadline;
  if (victim_deadline && ctx.now + RemainingNow(victim) + RemainingNow(job) > *victim_deadline) {
    return Fit::Unfit("victim's deadline");
  }
  return Fit::Yes();
}

}  // namespace dlsched
