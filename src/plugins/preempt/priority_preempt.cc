#include "plugins/preempt/priority_preempt.h"

#include <limits>

#include "dlsched/policy/context.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> PriorityPreempt::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"min_run_s", "max_preemptions", "lower_rank_only"}));
  DS_ASSIGN_OR_RETURN(double min_run_s, args.GetDouble("min_run_s", 0));
  DS_ASSIGN_OR_RETURN(int64_t max_preemptions,
                      args.GetInt("max_preemptions", std::numeric_limits<int64_t>::max()));
  DS_ASSIGN_OR_RETURN(bool lower_rank_only, args.GetBool("lower_rank_only", false));
  if (min_run_s < 0) return InvalidArgument("min_run_s must not be negative");
  if (max_preemptions < 0) return InvalidArgument("max_preemptions must not be negative");
  return std::unique_ptr<Plugin>(
      std::make_unique<PriorityPreempt>(Seconds(min_run_s), max_preemptions, lower_rank_only));
}

Timestamp PriorityPreempt::VictimFrom(const JobView& victim) const {
  if (victim.job().preemptions >= max_preemptions_) return kTimeNever;  // budget spent
  return victim.job().segment_start + min_run_;
}

Fit PriorityPreempt::MayPreempt(const JobView& job, const JobView& victim,
                                const SchedulingContext& ctx) const {
  if (!lower_rank_only_) return Fit::Yes();
  // The victim's key where the running index files it; the job waits, so the queue holds its.
  if (ctx.running_by_rank.KeyAt(victim.id(), ctx.now).rank > ctx.queue.KeyOf(job.id()).rank) {
    return Fit::Yes();
  }
  return Fit::Unfit("of the same rank");
}

}  // namespace dlsched
