#include "dlsched/policy/pipeline.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "dlsched/policy/placement.h"

namespace dlsched {
namespace {

template <typename P>
Result<std::unique_ptr<P>> CreateAs(const PluginRegistry& registry, PluginPoint point,
                                    const PluginConfig& config) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Plugin> plugin,
                      registry.Create(point, config.name, config.args));
  // The registry files each plugin under the point its base class names, so this holds.
  return std::unique_ptr<P>(static_cast<P*>(plugin.release()));
}

std::string WaitingForGpus(const JobView& job, const ClusterState& state) {
  const std::string type = job.spec().gpu_type.empty() ? "" : " " + job.spec().gpu_type;
  if (job.num_gpus() > state.free_total()) {
    return "waiting for " + std::to_string(job.num_gpus()) + type + " GPUs (" +
           std::to_string(state.free_total()) + " free)";
  }
  return "fragmentation: " + std::to_string(job.num_gpus()) + type +
         " GPUs free in total but no placement fits the gang";
}

// The plugin pipeline of DESIGN.md: Admit -> QueueSort -> Filter/Score -> Preempt.
class PipelinePolicy final : public SchedulingPolicy {
 public:
  PipelinePolicy(PipelineConfig config, std::vector<std::unique_ptr<AdmitPlugin>> admit,
                 std::unique_ptr<QueueSortPlugin> sort,
                 std::vector<std::unique_ptr<FilterPlugin>> filters,
                 std::vector<std::unique_ptr<ScorePlugin>> scores,
                 std::vector<std::unique_ptr<PreemptPlugin>> preempt)
      : config_(std::move(config)),
        admit_(std::move(admit)),
        sort_(std::move(sort)),
        filters_(std::move(filters)),
        scores_(std::move(scores)),
        preempt_(std::move(preempt)) {
    for (const auto& f : filters_) filter_views_.push_back(f.get());
    for (size_t i = 0; i < scores_.size(); ++i) {
      score_views_.push_back({scores_[i].get(), config_.score[i].weight});
    }
  }

  std::string_view Name() const override { return config_.name; }
  bool Less(const JobView& a, const JobView& b) const override { return sort_->Less(a, b); }

  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    for (const auto& plugin : admit_) {
      Fit fit = plugin->Admit(job, ctx);
      if (!fit.ok) return fit;
    }
    return Fit::Yes();
  }

  Decisions Decide(const SchedulingContext& ctx) const override;

 private:
  // One cycle's working state.
  struct Cycle {
    const SchedulingContext& ctx;
    ClusterState scratch;  // free GPUs after this cycle's launches and reservations
    Decisions decisions;
    std::unordered_set<uint32_t> considered;  // jobs already looked at this cycle
    std::unordered_set<uint32_t> victims;     // jobs chosen for preemption this cycle
    std::vector<JobView> by_rank_worst_first;  // running jobs, filled on first need
    bool ranked = false;
    int preemption_attempts = 0;
  };

  // Tries to start the job; returns false when it is blocked.
  bool TryStart(Cycle& cycle, const JobView& job) const;
  // Looks for running jobs ranked below `job` whose GPUs would let it start; if found, asks for
  // their preemption and reserves the free part of the placement.
  bool TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const;
  void RankRunning(Cycle& cycle) const;
  void PlanWakeUp(Cycle& cycle) const;

  PipelineConfig config_;
  std::vector<std::unique_ptr<AdmitPlugin>> admit_;
  std::unique_ptr<QueueSortPlugin> sort_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;
  std::vector<std::unique_ptr<ScorePlugin>> scores_;
  std::vector<std::unique_ptr<PreemptPlugin>> preempt_;
  std::vector<const FilterPlugin*> filter_views_;
  std::vector<WeightedScore> score_views_;
};

Decisions PipelinePolicy::Decide(const SchedulingContext& ctx) const {
  if (ctx.queue.empty()) return {};
  const bool preemptive = !preempt_.empty();
  if (ctx.state.free_total() == 0 && !preemptive && !ctx.explain) return {};

  Cycle cycle{ctx, ctx.state, {}, {}, {}, {}, false, 0};
  // Starvation guard: jobs that waited past the limit go first, longest-waiting first.
  if (config_.starvation_limit != Duration::max()) {
    for (const auto& [since, id] : ctx.queue.by_wait()) {
      if (ctx.now - since < config_.starvation_limit) break;
      cycle.considered.insert(id.value());
      if (!TryStart(cycle, ctx.View(id)) && !config_.backfill) return cycle.decisions;
    }
  }
  JobId blocked_head;
  for (JobId id : ctx.queue.by_order()) {
    if (blocked_head.valid()) {  // only when explaining: say who holds the line
      cycle.decisions.pending_reasons.push_back(
          {id, "behind job " + std::to_string(blocked_head.value()) +
                   " (head of line; this policy does not backfill)"});
      continue;
    }
    if (cycle.scratch.free_total() == 0 && !ctx.explain &&
        (!preemptive || cycle.preemption_attempts >= config_.max_preemption_attempts)) {
      break;
    }
    if (cycle.considered.contains(id.value())) continue;
    if (!TryStart(cycle, ctx.View(id)) && !config_.backfill) {
      if (!ctx.explain) break;
      blocked_head = id;
    }
  }
  PlanWakeUp(cycle);
  return std::move(cycle.decisions);
}

bool PipelinePolicy::TryStart(Cycle& cycle, const JobView& job) const {
  const Placer placer(cycle.ctx, filter_views_, score_views_);
  if (auto placement = placer.Find(job, cycle.scratch)) {
    cycle.scratch.Allocate(*placement);
    cycle.decisions.launches.push_back({job.id(), std::move(*placement)});
    return true;
  }
  if (!preempt_.empty() && cycle.preemption_attempts < config_.max_preemption_attempts) {
    ++cycle.preemption_attempts;
    if (TryPreemptFor(cycle, job, placer)) return false;  // starts once the victims stop
  }
  if (cycle.ctx.explain) {
    cycle.decisions.pending_reasons.push_back({job.id(), WaitingForGpus(job, cycle.scratch)});
  }
  return false;
}

void PipelinePolicy::RankRunning(Cycle& cycle) const {
  if (cycle.ranked) return;
  cycle.ranked = true;
  for (JobId id : cycle.ctx.running) {
    const JobView view = cycle.ctx.View(id);
    if (!view.job().preempt_requested) cycle.by_rank_worst_first.push_back(view);
  }
  std::sort(cycle.by_rank_worst_first.begin(), cycle.by_rank_worst_first.end(),
            [this](const JobView& a, const JobView& b) { return sort_->Less(b, a); });
}

bool PipelinePolicy::TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const {
  RankRunning(cycle);
  ClusterState what_if = cycle.scratch;
  std::vector<JobId> chosen;
  for (const JobView& victim : cycle.by_rank_worst_first) {
    if (!sort_->Less(job, victim)) break;  // the rest rank at or above the job
    if (cycle.victims.contains(victim.id().value())) continue;
    bool allowed = true;
    for (const auto& plugin : preempt_) {
      Fit fit = plugin->MayPreempt(job, victim, cycle.ctx);
      if (!fit.ok) {
        cycle.decisions.wake_at = std::min(cycle.decisions.wake_at, fit.retry_at);
        allowed = false;
        break;
      }
    }
    if (!allowed) continue;
    what_if.Release(victim.job().placement);
    chosen.push_back(victim.id());
    if (auto placement = placer.Find(job, what_if)) {
      for (JobId id : chosen) {
        cycle.victims.insert(id.value());
        cycle.decisions.preemptions.push_back(
            {id, "preempted for job " + std::to_string(job.id().value()) + " (" +
                     std::string(sort_->Name()) + " order)"});
      }
      // Hold the free part of the future placement so lower-ranked jobs do not take it.
      Placement reserve;
      for (const NodeGpus& part : placement->parts) {
        const GpuMask free_now = part.gpus & cycle.scratch.free_mask(part.node);
        if (free_now != 0) reserve.parts.push_back({part.node, free_now});
      }
      cycle.scratch.Allocate(reserve);
      if (cycle.ctx.explain) {
        cycle.decisions.pending_reasons.push_back(
            {job.id(), "waiting for " + std::to_string(chosen.size()) +
                           " preempted job(s) to stop"});
      }
      return true;
    }
  }
  return false;
}

void PipelinePolicy::PlanWakeUp(Cycle& cycle) const {
  const SchedulingContext& ctx = cycle.ctx;
  Timestamp wake = cycle.decisions.wake_at;
  if (!preempt_.empty() && !ctx.queue.empty()) {
    for (JobId id : ctx.running) {
      wake = std::min(wake, sort_->NextRankChange(ctx.View(id), ctx.now));
    }
  }
  if (config_.starvation_limit != Duration::max() && !ctx.queue.by_wait().empty()) {
    const Timestamp oldest = ctx.queue.by_wait().begin()->first;
    if (oldest + config_.starvation_limit > ctx.now) {
      wake = std::min(wake, oldest + config_.starvation_limit);
    }
  }
  cycle.decisions.wake_at = wake > ctx.now ? wake : kTimeNever;
}

}  // namespace

Result<std::unique_ptr<SchedulingPolicy>> BuildPipeline(const PipelineConfig& config,
                                                        const PluginRegistry& registry) {
  std::vector<std::unique_ptr<AdmitPlugin>> admit;
  for (const PluginConfig& c : config.admit) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<AdmitPlugin>(registry, PluginPoint::kAdmit, c));
    admit.push_back(std::move(p));
  }
  DS_ASSIGN_OR_RETURN(auto sort, CreateAs<QueueSortPlugin>(registry, PluginPoint::kQueueSort,
                                                            config.queue_sort));
  std::vector<std::unique_ptr<FilterPlugin>> filters;
  for (const PluginConfig& c : config.filter) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<FilterPlugin>(registry, PluginPoint::kFilter, c));
    filters.push_back(std::move(p));
  }
  std::vector<std::unique_ptr<ScorePlugin>> scores;
  for (const PluginConfig& c : config.score) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<ScorePlugin>(registry, PluginPoint::kScore, c));
    scores.push_back(std::move(p));
  }
  std::vector<std::unique_ptr<PreemptPlugin>> preempt;
  for (const PluginConfig& c : config.preempt) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<PreemptPlugin>(registry, PluginPoint::kPreempt, c));
    preempt.push_back(std::move(p));
  }
  if (config.max_preemption_attempts < 0) {
    return InvalidArgument("max_preemption_attempts must not be negative");
  }
  return std::unique_ptr<SchedulingPolicy>(
      std::make_unique<PipelinePolicy>(config, std::move(admit), std::move(sort),
                                       std::move(filters), std::move(scores), std::move(preempt)));
}

}  // namespace dlsched
