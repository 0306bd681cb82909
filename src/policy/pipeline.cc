#include "dlsched/policy/pipeline.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
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

// Walks several ordered indexes, one per gang size, as one merged order restricted to gangs of
// at most `max_gang` GPUs. The heads sit in a heap, so Next costs O(log g) comparisons for g
// gang sizes, however many larger jobs wait. `max_gang` must not grow between calls (a cycle's
// free GPUs only shrink): a head found too large is dropped for good.
template <typename Index, typename Less>
class GangWalk {
 public:
  using Value = typename Index::value_type;

  explicit GangWalk(const std::map<int, Index>& by_gang, Less less) : less_(less) {
    for (const auto& [gang, index] : by_gang) {
      if (!index.empty()) heads_.push_back({gang, index.begin(), index.end()});
    }
    std::make_heap(heads_.begin(), heads_.end(), Later());
  }

  // The first remaining element of a gang of at most `max_gang` GPUs, advancing past it.
  std::optional<Value> Next(int max_gang) {
    while (!heads_.empty()) {
      std::pop_heap(heads_.begin(), heads_.end(), Later());
      Head& head = heads_.back();
      if (head.gang > max_gang) {
        heads_.pop_back();
        continue;
      }
      const Value value = *head.it++;
      if (head.it == head.end) {
        heads_.pop_back();
      } else {
        std::push_heap(heads_.begin(), heads_.end(), Later());
      }
      return value;
    }
    return std::nullopt;
  }

 private:
  struct Head {
    int gang;
    typename Index::const_iterator it;
    typename Index::const_iterator end;
  };
  // Heap order: the head whose element comes first is on top.
  auto Later() const {
    return [this](const Head& a, const Head& b) { return less_(*b.it, *a.it); };
  }

  Less less_;
  std::vector<Head> heads_;
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
  Timestamp NextRankChange(const JobView& running, Timestamp now) const override {
    return sort_->NextRankChange(running, now);
  }

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
    ClusterState what_if;        // scratch for victim searches, reused across attempts
    std::vector<JobId> chosen;   // one search's victims, reused across attempts
    int preemption_attempts = 0;
    // Gang size of the smallest untyped job whose victim search failed this cycle. Jobs are
    // searched in rank order, so a later job outranks only a subset of those victims: one as
    // large would fail too (a typed one all the more).
    int smallest_failed_gang = std::numeric_limits<int>::max();
  };

  // False once nothing more can start this cycle: no free GPU and no preemption attempt left.
  bool MayStartMore(const Cycle& cycle) const {
    return cycle.scratch.free_total() > 0 || MaySearchVictims(cycle);
  }
  // A victim search can only succeed where the last one failed if jobs arrived or left, or time
  // changed ranks or protections. Suspensions alone return GPUs already promised to the jobs
  // that asked for them and requeue jobs ranked below those, so they never make one succeed.
  bool VictimSearchMayHelp(const SchedulingContext& ctx) const {
    const CycleTrigger& t = ctx.trigger;
    return !preempt_.empty() && (t.arrivals || t.departures || t.timer);
  }
  bool MaySearchVictims(const Cycle& cycle) const {
    return cycle.preemption_attempts < config_.max_preemption_attempts &&
           VictimSearchMayHelp(cycle.ctx);
  }
  // The largest gang that could still start this cycle: on free GPUs, or by a victim search.
  int LargestUsefulGang(const Cycle& cycle) const;
  // The cycle's walks over waiting jobs: starving jobs first (longest waiting first), then the
  // policy order. WalkAll visits every job (strict head of line, explanations); WalkFitting,
  // for backfilling policies, visits only jobs whose gang could still start, so a full cluster
  // with a long queue of wide jobs costs O(gang sizes) per start, not O(queue).
  template <typename Starving>
  void WalkFitting(Cycle& cycle, const Starving& starving) const;
  template <typename Starving>
  void WalkAll(Cycle& cycle, const Starving& starving) const;
  // Tries to start the job; returns false when it is blocked.
  bool TryStart(Cycle& cycle, const JobView& job) const;
  // Looks for running jobs ranked below `job` whose GPUs would let it start; if found, asks for
  // their preemption and reserves the free part of the placement.
  bool TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const;
  void PlanWakeUp(const SchedulingContext& ctx, Decisions& decisions) const;
  // Asks every preempt plugin; on a no, lowers `retry_at` to when it may turn into a yes.
  bool MayPreempt(const JobView& job, const JobView& victim, const SchedulingContext& ctx,
                  Timestamp& retry_at) const;

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
  if (ctx.state.free_total() == 0 && !ctx.explain && !VictimSearchMayHelp(ctx)) {
    // Nothing can start; still plan the wake-up so time-driven rank changes are seen.
    Decisions decisions;
    PlanWakeUp(ctx, decisions);
    return decisions;
  }

  Cycle cycle{ctx, ctx.state, {}, {}, {}, {}, 0};
  // Starvation guard: jobs that waited past the limit go first, longest-waiting first.
  auto starving = [&](const Job& job) {
    return config_.starvation_limit != Duration::max() &&
           ctx.now - job.queued_since >= config_.starvation_limit;
  };
  if (config_.backfill && !ctx.explain) {
    WalkFitting(cycle, starving);
  } else {
    WalkAll(cycle, starving);
  }
  PlanWakeUp(ctx, cycle.decisions);
  return std::move(cycle.decisions);
}

int PipelinePolicy::LargestUsefulGang(const Cycle& cycle) const {
  const int searchable = MaySearchVictims(cycle) ? cycle.smallest_failed_gang - 1 : 0;
  return std::max(cycle.scratch.free_total(), searchable);
}

template <typename Starving>
void PipelinePolicy::WalkFitting(Cycle& cycle, const Starving& starving) const {
  const SchedulingContext& ctx = cycle.ctx;
  if (config_.starvation_limit != Duration::max()) {
    GangWalk walk(ctx.queue.by_gang_wait(), std::less<>());
    while (auto entry = walk.Next(LargestUsefulGang(cycle))) {
      if (!starving(ctx.jobs.at(entry->second))) break;  // the rest waited less
      TryStart(cycle, ctx.View(entry->second));
    }
  }
  GangWalk walk(ctx.queue.by_gang_order(),
                [&ctx](JobId a, JobId b) { return ctx.queue.Before(a, b); });
  while (auto id = walk.Next(LargestUsefulGang(cycle))) {
    if (!starving(ctx.jobs.at(*id))) TryStart(cycle, ctx.View(*id));
  }
}

template <typename Starving>
void PipelinePolicy::WalkAll(Cycle& cycle, const Starving& starving) const {
  const SchedulingContext& ctx = cycle.ctx;
  for (const auto& [since, id] : ctx.queue.by_wait()) {
    if (!starving(ctx.jobs.at(id)) || !MayStartMore(cycle)) break;
    if (!TryStart(cycle, ctx.View(id)) && !config_.backfill) return;
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
}

bool PipelinePolicy::TryStart(Cycle& cycle, const JobView& job) const {
  const Placer placer(cycle.ctx, filter_views_, score_views_);
  if (auto placement = placer.Find(job, cycle.scratch)) {
    cycle.scratch.Allocate(*placement);
    cycle.decisions.launches.push_back({job.id(), std::move(*placement)});
    return true;
  }
  if (MaySearchVictims(cycle) && job.num_gpus() < cycle.smallest_failed_gang) {
    ++cycle.preemption_attempts;
    if (TryPreemptFor(cycle, job, placer)) return false;  // starts once the victims stop
    if (job.spec().gpu_type.empty()) {
      cycle.smallest_failed_gang = std::min(cycle.smallest_failed_gang, job.num_gpus());
    }
  }
  if (cycle.ctx.explain) {
    cycle.decisions.pending_reasons.push_back({job.id(), WaitingForGpus(job, cycle.scratch)});
  }
  return false;
}

bool PipelinePolicy::TryPreemptFor(Cycle& cycle, const JobView& job, const Placer& placer) const {
  const SchedulingContext& ctx = cycle.ctx;
  ClusterState& what_if = cycle.what_if;
  what_if = cycle.scratch;
  std::vector<JobId>& chosen = cycle.chosen;
  chosen.clear();
  Timestamp retry_at = kTimeNever;  // when a protected job the job outranks becomes fair game
  const auto& by_rank = ctx.running_by_rank.by_rank();
  for (auto it = by_rank.rbegin(); it != by_rank.rend(); ++it) {  // lowest rank first
    const JobView victim = ctx.View(*it);
    if (!sort_->Less(job, victim)) break;  // the rest rank at or above the job
    if (victim.job().preempt_requested ||
        std::find(cycle.victims.begin(), cycle.victims.end(), victim.id()) != cycle.victims.end()) {
      continue;
    }
    if (!MayPreempt(job, victim, ctx, retry_at)) continue;
    what_if.Release(victim.job().placement);
    chosen.push_back(victim.id());
    if (auto placement = placer.Find(job, what_if)) {
      for (JobId id : chosen) {
        cycle.victims.push_back(id);
        cycle.decisions.preemptions.push_back({id, "preempted for job " +
                                                       std::to_string(job.id().value()) + " (" +
                                                       std::string(sort_->Name()) + " order)"});
      }
      // Hold the free part of the future placement so lower-ranked jobs do not take it.
      Placement reserve;
      for (const NodeGpus& part : placement->parts) {
        const GpuMask free_now = part.gpus & cycle.scratch.free_mask(part.node);
        if (free_now != 0) reserve.parts.push_back({part.node, free_now});
      }
      cycle.scratch.Allocate(reserve);
      if (ctx.explain) {
        cycle.decisions.pending_reasons.push_back(
            {job.id(),
             "waiting for " + std::to_string(chosen.size()) + " preempted job(s) to stop"});
      }
      return true;
    }
  }
  // Protected jobs may become victims later: look again then.
  cycle.decisions.wake_at = std::min(cycle.decisions.wake_at, retry_at);
  return false;
}

bool PipelinePolicy::MayPreempt(const JobView& job, const JobView& victim,
                                const SchedulingContext& ctx, Timestamp& retry_at) const {
  for (const auto& plugin : preempt_) {
    Fit fit = plugin->MayBeVictim(victim, ctx);
    if (fit.ok) fit = plugin->MayPreempt(job, victim, ctx);
    if (!fit.ok) {
      retry_at = std::min(retry_at, fit.retry_at);
      return false;
    }
  }
  return true;
}

void PipelinePolicy::PlanWakeUp(const SchedulingContext& ctx, Decisions& decisions) const {
  Timestamp wake = decisions.wake_at;
  if (!preempt_.empty() && !ctx.queue.empty()) {
    // Running jobs' rank changes are tracked by the running index; jobs launched now join it
    // after this cycle.
    wake = std::min(wake, ctx.running_by_rank.next_change());
    for (const LaunchDecision& launch : decisions.launches) {
      wake = std::min(wake, sort_->NextRankChange(ctx.View(launch.job), ctx.now));
    }
  }
  if (config_.starvation_limit != Duration::max() && !ctx.queue.by_wait().empty()) {
    const Timestamp oldest = ctx.queue.by_wait().begin()->first;
    if (oldest + config_.starvation_limit > ctx.now) {
      wake = std::min(wake, oldest + config_.starvation_limit);
    }
  }
  decisions.wake_at = wake > ctx.now ? wake : kTimeNever;
}

}  // namespace

Result<std::unique_ptr<SchedulingPolicy>> BuildPipeline(const PipelineConfig& config,
                                                        const PluginRegistry& registry) {
  std::vector<std::unique_ptr<AdmitPlugin>> admit;
  for (const PluginConfig& c : config.admit) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<AdmitPlugin>(registry, PluginPoint::kAdmit, c));
    admit.push_back(std::move(p));
  }
  DS_ASSIGN_OR_RETURN(
      auto sort, CreateAs<QueueSortPlugin>(registry, PluginPoint::kQueueSort, config.queue_sort));
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
