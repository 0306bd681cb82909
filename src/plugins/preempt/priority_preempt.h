#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Lets a job preempt any running job ranked below it by the queue order, with guards against
// preemption storms: a victim must have run `min_run_s` in its current segment (default 0), and
// a job is preempted at most `max_preemptions` times (default: no limit). With
// `lower_rank_only` (default false) the victim's rank itself (the queue sort's key before its
// submit-time tie-break: a Tiresias queue, a priority) must be worse than the job's, so a job
// never preempts a later-submitted job of its own rank (Tiresias' simulator keeps a queue's
// running jobs ahead of its waiting ones).
class PriorityPreempt final : public PreemptPlugin {
 public:
  static constexpr std::string_view kName = "priority_preempt";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  PriorityPreempt(Duration min_run, int64_t max_preemptions, bool lower_rank_only = false)
      : min_run_(min_run), max_preemptions_(max_preemptions), lower_rank_only_(lower_rank_only) {}
  std::string_view Name() const override { return kName; }
  Timestamp VictimFrom(const JobView& victim) const override;
  Fit MayPreempt(const JobView& job, const JobView& victim,
                 const SchedulingContext& ctx) const override;
  bool LowerRankOnly() const override { return lower_rank_only_; }
  // Without lower_rank_only it refuses no victim.
  bool VictimBlind() const override { return !lower_rank_only_; }

 private:
  Duration min_run_;
  int64_t max_preemptions_;
  bool lower_rank_only_;
};

}  // namespace dlsched
