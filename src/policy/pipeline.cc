#include "dlsched/policy/pipeline.h"

#include <algorithm>
#include <span>
#include <string>

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

// Running jobs from the lowest-ranked up, produced lazily: a heap is built on first use and
// popped only as far as victim searches look, so a cycle that finds its victims among the
// worst-ranked few costs O(r + k log r), not a full sort.
class RunningByRank {
 public:
  RunningByRank(const SchedulingContext& ctx, const QueueSortPlugin& sort,
                std::span<const std::unique_ptr<PreemptPlugin>> guards)
      : ctx_(&ctx), sort_(&sort), guards_(guards) {}

  // The earliest time a running job now protected by a guard becomes a possible victim.
  Timestamp earliest_unprotected() {
    if (!built_) Build();
    return earliest_unprotected_;
  }

  // The i-th lowest-ranked running job that may be a victim (not already being preempted, not
  // protected by a guard), or nullptr.
  const JobView* WorstAt(size_t i) {
    if (!built_) Build();
    // The heap's top is its "largest": with this comparison, the lowest-ranked job.
    auto better_ranked = [this](const JobView& a, const JobView& b) { return sort_->Less(a, b); };
    while (ordered_.size() <= i && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), better_ranked);
      ordered_.push_back(heap_.back());
      heap_.pop_back();
    }
    return i < ordered_.size() ? &ordered_[i] : nullptr;
  }

 private:
  void Build() {
    built_ = true;
    for (JobId id : ctx_->running) {
      const JobView view = ctx_->View(id);
      if (!view.job().preempt_requested && Unprotected(view)) heap_.push_back(view);
    }
    std::make_heap(heap_.begin(), heap_.end(),
                   [this](const JobView& a, const JobView& b) { return sort_->Less(a, b); });
  }

  bool Unprotected(const JobView& victim) {
    for (const auto& guard : guards_) {
      const Fit fit = guard->MayBeVictim(victim, *ctx_);
      if (!fit.ok) {
        earliest_unprotected_ = std::min(earliest_unprotected_, fit.retry_at);
        return false;
      }
    }
    return true;
  }

  const SchedulingContext* ctx_;
  const QueueSortPlugin* sort_;
  std::span<const std::unique_ptr<PreemptPlugin>> guards_;
  Timestamp earliest_unprotected_ = kTimeNever;
  bool built_ = false;
  std::vector<JobView> heap_;
  std::vector<JobView> ordered_;
};

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
    std::vector<JobId> victims;  // chosen for preemption this cycle (few)
    RunningByRank ranking;        // built on first need
    ClusterState what_if;        // scratch for victim searches, reused across attempts
    int preemption_attempts = 0;
  };

  // False once nothing more can start this cycle: no free GPU and no preemption attempt left.
  bool MayStartMore(const Cycle& cycle) const {
    return cycle.scratch.free_total() > 0 ||
           (!preempt_.empty() && cycle.preemption_attempts < config_.max_preemption_attempts);
  }
  // Tries to start the job; returns false when it is blocked.
  bool TryStart(Cycle& cycle, const JobView& job) const;
  // Looks for running jobs ranked below `job` whose GPUs would let it start; if found, asks for
  // their preemption and reserves the free part of the placement.
  bool TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const;
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

  Cycle cycle{ctx, ctx.state, {}, {}, RunningByRank(ctx, *sort_, preempt_), {}, 0};
  // Starvation guard: jobs that waited past the limit go first, longest-waiting first.
  auto starving = [&](const Job& job) {
    return config_.starvation_limit != Duration::max() &&
           ctx.now - job.queued_since >= config_.starvation_limit;
  };
  for (const auto& [since, id] : ctx.queue.by_wait()) {
    if (!starving(ctx.jobs.at(id)) || !MayStartMore(cycle)) break;
    if (!TryStart(cycle, ctx.View(id)) && !config_.backfill) return cycle.decisions;
  }
  JobId blocked_head;
  for (JobId id : ctx.queue.by_order()) {
    if (blocked_head.valid()) {  // only when explaining: say who holds the line
      cycle.decisions.pending_reasons.push_back(
          {id, "behind job " + std::to_string(blocked_head.value()) +
                   " (head of line; this policy does not backfill)"});
      continue;
    }
    if (!ctx.explain && !MayStartMore(cycle)) break;
    if (starving(ctx.jobs.at(id))) continue;  // considered above
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

bool PipelinePolicy::TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const {
  ClusterState& what_if = cycle.what_if;
  what_if = cycle.scratch;
  std::vector<JobId> chosen;
  for (size_t i = 0; const JobView* next = cycle.ranking.WorstAt(i); ++i) {
    const JobView& victim = *next;
    if (!sort_->Less(job, victim)) break;  // the rest rank at or above the job
    if (std::find(cycle.victims.begin(), cycle.victims.end(), victim.id()) !=
        cycle.victims.end()) {
      continue;
    }
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
        cycle.victims.push_back(id);
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
  // Protected jobs may become victims later: look again then.
  cycle.decisions.wake_at =
      std::min(cycle.decisions.wake_at, cycle.ranking.earliest_unprotected());
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
