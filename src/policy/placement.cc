#include "dlsched/policy/placement.h"

#include <algorithm>
#include <array>
#include <limits>
#include <span>
#include <vector>

namespace dlsched {

GpuMask PickGpus(const NodeSpec& node, GpuMask free, int count) {
  DS_CHECK(CountGpus(free) >= count) << "PickGpus asked for more GPUs than are free";
  if (CountGpus(free) == count) return free;  // all of them, whatever their groups
  // Free GPUs per interconnect group; groups are small integers.
  int best_group = -1;
  int best_group_free = std::numeric_limits<int>::max();
  // (group id, free GPUs in it); at most one group per GPU, so no allocation.
  std::array<std::pair<int, GpuMask>, std::numeric_limits<GpuMask>::digits> group_buffer;
  size_t num_groups = 0;
  for (GpuMask m = free; m != 0; m &= m - 1) {
    const int gpu = std::countr_zero(m);
    const int group = node.gpus[gpu].interconnect_group;
    auto it = std::find_if(group_buffer.begin(), group_buffer.begin() + num_groups,
                           [group](const auto& g) { return g.first == group; });
    if (it == group_buffer.begin() + num_groups) {
      group_buffer[num_groups++] = {group, GpuMask{1} << gpu};
    } else {
      it->second |= GpuMask{1} << gpu;
    }
  }
  const std::span groups(group_buffer.data(), num_groups);
  for (const auto& [group, mask] : groups) {
    const int n = CountGpus(mask);
    if (n >= count && n < best_group_free) {
      best_group = group;
      best_group_free = n;
    }
  }
  GpuMask chosen = 0;
  auto take_lowest = [&chosen, &count](GpuMask from) {
    for (GpuMask m = from; m != 0 && count > 0; m &= m - 1, --count) {
      chosen |= GpuMask{1} << std::countr_zero(m);
    }
  };
  if (best_group >= 0) {
    for (const auto& [group, mask] : groups) {
      if (group == best_group) take_lowest(mask);
    }
    return chosen;
  }
  // No single group suffices: fill the fullest groups first so fewer groups are split.
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return CountGpus(a.second) > CountGpus(b.second);
  });
  for (const auto& [group, mask] : groups) take_lowest(mask);
  return chosen;
}

bool FitsOneGroup(const NodeSpec& node, GpuMask free, int count) {
  // Groups are small integers; count free GPUs per group in a fixed buffer.
  std::array<int, kMaxGpusPerNode> per_group{};
  for (GpuMask m = free; m != 0; m &= m - 1) {
    const int group = node.gpus[std::countr_zero(m)].interconnect_group;
    if (group >= 0 && group < kMaxGpusPerNode && ++per_group[group] >= count) return true;
  }
  return count <= 0;
}

bool Placer::PrepareLabels(const JobView& job, GpuTypeId required,
                           const ClusterState& state) const {
  const JobSpec& spec = job.spec();
  class_allowed_.clear();
  class_preference_.clear();
  const int classes = ctx_.cluster.num_label_classes();
  if (!spec.preferences.empty()) {
    class_preference_.resize(classes);
    for (int c = 0; c < classes; ++c) {
      class_preference_[c] =
          CountMatches(ctx_.cluster.label_class_labels(LabelClassId(c)), spec.preferences);
    }
  }
  if (spec.selector.empty()) return true;
  class_allowed_.resize(classes);
  int free = 0;
  for (int c = 0; c < classes; ++c) {
    const LabelClassId id(static_cast<uint32_t>(c));
    const bool allowed = MatchesSelector(ctx_.cluster.label_class_labels(id), spec.selector) &&
                         (!required.valid() || ctx_.cluster.label_class_gpu_type(id) == required);
    class_allowed_[c] = allowed;
    if (allowed) free += state.free_of_class(id);
  }
  return free >= job.num_gpus();
}

bool Placer::Eligible(const JobView& job, GpuTypeId required, NodeId node) const {
  const GpuTypeId type = ctx_.cluster.node_gpu_type(node);
  if (required.valid() && type != required) return false;
  if (!class_allowed_.empty() && !class_allowed_[ctx_.cluster.node_label_class(node).index()]) {
    return false;
  }
  const std::vector<GpuTypeId>& failed = job.job().failed_gpu_types;
  if (!failed.empty() && std::ranges::find(failed, type) != failed.end()) return false;
  for (const FilterPlugin* filter : filters_) {
    if (!filter->FilterNode(job, node, ctx_).ok) return false;
  }
  return true;
}

std::optional<Placement> Placer::Find(const JobView& job, const ClusterState& state) const {
  held_for_consolidation_ = false;
  held_.reset();
  const int gpus = job.num_gpus();
  // First the common refusal (a replay refuses millions of gangs): one wider than the free GPUs
  // fails whatever it asks of the hosts.
  if (gpus > state.free_total()) {
    limits_host_ = false;
    return std::nullopt;
  }
  SetHostRequest(job, state);
  if (gpus == 0) {
    PrepareLabels(job, GpuTypeId(), state);  // a CPU job's selector and preferences
    return FindCpuNode(job, state);
  }
  GpuTypeId required;
  if (!job.spec().gpu_type.empty()) {
    required = ctx_.cluster.FindGpuType(job.spec().gpu_type);
    if (!required.valid() || gpus > state.free_of_type(required)) return std::nullopt;
  }
  if (!PrepareLabels(job, required, state)) return std::nullopt;
  if (gpus <= ctx_.cluster.max_gpus_per_node()) {
    if (auto placement = FindOnOneNode(job, required, state)) return placement;
  }
  // Across nodes: one GPU type per gang; prefer the type whose placement spans fewest nodes.
  std::optional<Placement> best;
  for (int t = 0; t < ctx_.cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(static_cast<uint32_t>(t));
    if (required.valid() && type != required) continue;
    if (state.free_of_type(type) < gpus) continue;
    auto placement = FindAcrossNodes(job, type, state);
    if (placement && (!best || placement->num_nodes() < best->num_nodes())) {
      best = std::move(placement);
    }
  }
  if (best && !MaySpread(job, *best)) {
    held_for_consolidation_ = true;
    // candidates_ are the only type's (FindAcrossNodes for one type), its spread their first
    // best->num_nodes().
    if (ctx_.cluster.num_gpu_types() == 1 && !limits_host_) {
      held_ = Held{job.id(), ctx_.cluster.node_gpu_type(best->parts.front().node),
                   held_rack_, static_cast<size_t>(best->num_nodes())};
    }
    return std::nullopt;
  }
  return best;
}

std::optional<Placement> Placer::FindAfterFreeing(const JobView& job, const ClusterState& state,
                                                  std::span<const Freed> freed) const {
  if (!held_ || held_->job != job.id()) return Find(job, state);
  const int gpus = job.num_gpus();
  // A one-node fit can appear only on a freed node (the last call found none elsewhere).
  if (gpus <= ctx_.cluster.max_gpus_per_node()) {
    for (const Freed& f : freed) {
      if (state.free_gpus(f.node) >= gpus) return Find(job, state);
    }
  }
  // The freed eligible GPUs join their racks' sums; the rack tier must choose as before.
  for (const Freed& f : freed) {
    if (!Eligible(job, held_->type, f.node)) continue;
    const size_t rack = ctx_.cluster.node(f.node).rack.index();
    rack_free_[rack] += state.free_gpus(f.node) - f.free_before;
    rack_preferred_[rack] = std::max(rack_preferred_[rack], PreferenceMatches(f.node));
  }
  if (BestRack(gpus) != held_->rack) return Find(job, state);
  // The spread takes the same candidates unless a freed one of the chosen rack is one of them
  // or now sorts before the last of them.
  const std::span taken(candidates_.data(), held_->taken);
  for (const Freed& f : freed) {
    if (held_->rack >= 0 &&
        static_cast<int>(ctx_.cluster.node(f.node).rack.index()) != held_->rack) {
      continue;
    }
    if (!Eligible(job, held_->type, f.node)) continue;
    const Candidate now{f.node, state.free_gpus(f.node), PreferenceMatches(f.node)};
    if (!Before(taken.back(), now) ||
        std::ranges::any_of(taken, [&](const Candidate& c) { return c.node == f.node; })) {
      return Find(job, state);
    }
  }
  // The same spread placement, which MaySpread refused (it reads the job and the placement).
  held_for_consolidation_ = true;
  return std::nullopt;
}

int Placer::BestRack(int gpus) const {
  int best_rack = -1;
  for (int r = 0; r < static_cast<int>(rack_free_.size()); ++r) {
    if (rack_free_[r] < gpus) continue;
    if (best_rack < 0 || rack_preferred_[r] > rack_preferred_[best_rack] ||
        (rack_preferred_[r] == rack_preferred_[best_rack] &&
         rack_free_[r] < rack_free_[best_rack])) {
      best_rack = r;
    }
  }
  return best_rack;
}

int Placer::EligibleFree(const JobView& job, const ClusterState& state, Refusal* refused) const {
  const JobSpec& spec = job.spec();
  const GpuTypeId required =
      spec.gpu_type.empty() ? GpuTypeId() : ctx_.cluster.FindGpuType(spec.gpu_type);
  if (!spec.gpu_type.empty() && !required.valid()) return 0;
  const std::vector<GpuTypeId>& failed = job.job().failed_gpu_types;
  // The label classes counted, for the filters' pass (only with filters: no allocation else).
  std::vector<char> allowed;
  if (!filters_.empty()) allowed.resize(static_cast<size_t>(ctx_.cluster.num_label_classes()));
  int free = 0;
  for (int c = 0; c < ctx_.cluster.num_label_classes(); ++c) {
    const LabelClassId id(static_cast<uint32_t>(c));
    const GpuTypeId type = ctx_.cluster.label_class_gpu_type(id);
    if (required.valid() && type != required) continue;
    if (std::ranges::find(failed, type) != failed.end()) continue;
    if (!MatchesSelector(ctx_.cluster.label_class_labels(id), spec.selector)) continue;
    if (!allowed.empty()) allowed[c] = 1;
    free += state.free_of_class(id);
  }
  if (filters_.empty() || free == 0) return free;
  // The profile's filters answer per node: count the free GPUs of the allowed classes they pass,
  // and tally, per filter, those it is the first to refuse.
  std::vector<Refusal> by_filter(filters_.size());
  free = 0;
  state.ForEachNodeWithFree(1, [&](NodeId node) {
    if (!allowed[ctx_.cluster.node_label_class(node).index()]) return;
    const int node_free = state.free_gpus(node);
    for (size_t f = 0; f < filters_.size(); ++f) {
      Fit fit = filters_[f]->FilterNode(job, node, ctx_);
      if (fit.ok) continue;
      if (by_filter[f].free == 0) by_filter[f].reason = std::move(fit.reason);
      by_filter[f].free += node_free;
      return;
    }
    free += node_free;
  });
  if (refused != nullptr) {
    *refused = {};
    for (size_t f = 0; f < filters_.size(); ++f) {
      if (by_filter[f].free > refused->free) {
        *refused = std::move(by_filter[f]);
        refused->filter = filters_[f];
      }
    }
  }
  return free;
}

void Placer::SetHostRequest(const JobView& job, const ClusterState& state) const {
  // Only a CPU job, or a cluster that states host resources, needs the request (the replay of a
  // GPU-only trace places millions of gangs).
  limits_host_ = false;
  if (!state.tracks_host() && job.num_gpus() > 0) return;
  host_ = EffectiveHostRequest(job.spec(), ctx_.cluster.host_defaults());
  limits_host_ = state.tracks_host() && (host_.cpus > 0 || host_.memory_mib > 0);
}

int Placer::HostUsableFree(const JobView& job, const ClusterState& state) const {
  held_.reset();  // it prepares the scratch for this job
  SetHostRequest(job, state);
  const JobSpec& spec = job.spec();
  const GpuTypeId required =
      spec.gpu_type.empty() ? GpuTypeId() : ctx_.cluster.FindGpuType(spec.gpu_type);
  if (!spec.gpu_type.empty() && !required.valid()) return 0;
  PrepareLabels(job, required, state);
  int usable = 0;
  state.ForEachNodeWithFree(1, [&](NodeId node) {
    if (Eligible(job, required, node))
      usable += UsableGpus(job, state, node, state.free_gpus(node));
  });
  return usable;
}

bool Placer::MaySpread(const JobView& job, const Placement& spread) const {
  if (options_.min_spread_speed <= 0 || spread.num_nodes() < 2) return true;
  if (job.now() - job.queued_since() >= options_.relax_after) return true;
  // Compare with a one-node placement of the same type (estimators read only the GPU type, the
  // count and the spread); a gang no node of that type holds must spread.
  const NodeId first = spread.parts.front().node;
  const GpuTypeId type = ctx_.cluster.node_gpu_type(first);
  if (job.num_gpus() > ctx_.cluster.max_gpus_of_type_per_node(type)) return true;
  const Placement one_node{{{first, LowestGpus(job.num_gpus())}}};
  const double consolidated = ctx_.estimator.ItersPerSecond(job.spec(), ctx_.cluster, one_node);
  if (consolidated <= 0) return true;
  const double spread_speed = ctx_.estimator.ItersPerSecond(job.spec(), ctx_.cluster, spread);
  return spread_speed >= options_.min_spread_speed * consolidated;
}

std::optional<Placement> Placer::FindOnOneNode(const JobView& job, GpuTypeId required,
                                               const ClusterState& state) const {
  const int gpus = job.num_gpus();
  // (preferred labels, one interconnect group, weighted score), compared lexicographically.
  struct Rating {
    int preferred;
    bool one_group;
    double score;
    auto operator<=>(const Rating&) const = default;
  };
  NodeId best;
  Rating best_rating{-1, false, -std::numeric_limits<double>::infinity()};
  state.ForEachNodeWithFree(gpus, [&](NodeId node) {
    if (limits_host_ && !state.HasHostRoom(node, host_)) return;
    if (!Eligible(job, required, node)) return;
    const int free = state.free_gpus(node);
    Rating rating{PreferenceMatches(node),
                  options_.prefer_one_group &&
                      FitsOneGroup(ctx_.cluster.node(node), state.free_mask(node), gpus),
                  0.0};
    for (const WeightedScore& s : scores_) {
      rating.score += s.weight * s.plugin->ScoreNode(job, node, free, gpus, ctx_);
    }
    if (rating > best_rating) {
      best_rating = rating;
      best = node;
    }
  });
  if (!best.valid()) return std::nullopt;
  Placement placement;
  placement.parts.push_back(
      MakePart(job, state, best, PickGpus(ctx_.cluster.node(best), state.free_mask(best), gpus)));
  return placement;
}

int Placer::UsableGpus(const JobView& job, const ClusterState& state, NodeId node, int free) const {
  if (!limits_host_) return free;
  // A part of t GPUs takes ceil(request * t / gang) (SplitHostRequest), which fits in `room`
  // exactly when request * t <= room * gang.
  const int64_t gang = job.num_gpus();
  int64_t usable = free;
  if (host_.cpus > 0) usable = std::min(usable, state.free_cpus(node) * gang / host_.cpus);
  if (host_.memory_mib > 0 && state.free_memory_mib(node) != ClusterState::kUntrackedMemory) {
    usable = std::min(usable, state.free_memory_mib(node) * gang / host_.memory_mib);
  }
  return static_cast<int>(usable);
}

std::optional<Placement> Placer::FindCpuNode(const JobView& job, const ClusterState& state) const {
  if (host_.cpus > state.free_cpus_total()) return std::nullopt;
  // (preferred labels, CPU-only, fewer free GPUs, fewer free CPUs), compared lexicographically.
  struct Rating {
    int preferred;
    bool cpu_only;
    int neg_free_gpus;
    int neg_free_cpus;
    auto operator<=>(const Rating&) const = default;
  };
  NodeId best;
  Rating best_rating{};
  state.ForEachNodeWithFreeCpus([&](NodeId node) {
    if (!state.HasHostRoom(node, host_) || !Eligible(job, GpuTypeId(), node)) return;
    const Rating rating{PreferenceMatches(node), ctx_.cluster.node(node).gpus.empty(),
                        -state.free_gpus(node), -state.free_cpus(node)};
    if (!best.valid() || rating > best_rating) {
      best_rating = rating;
      best = node;
    }
  });
  if (!best.valid()) return std::nullopt;
  return Placement{{state.Part(best, 0, host_)}};
}

std::optional<Placement> Placer::FindAcrossNodes(const JobView& job, GpuTypeId type,
                                                 const ClusterState& state) const {
  std::vector<Candidate>& candidates = candidates_;
  candidates.clear();
  std::vector<int>& rack_free = rack_free_;
  rack_free.assign(ctx_.cluster.num_racks(), 0);
  std::vector<int>& rack_preferred = rack_preferred_;
  rack_preferred.assign(ctx_.cluster.num_racks(), 0);
  int eligible_free = 0;
  state.ForEachNodeWithFree(1, [&](NodeId node) {
    const int free = UsableGpus(job, state, node, state.free_gpus(node));
    if (free == 0 || !Eligible(job, type, node)) return;
    const int preferred = PreferenceMatches(node);
    candidates.push_back({node, free, preferred});
    const size_t rack = ctx_.cluster.node(node).rack.index();
    rack_free[rack] += free;
    rack_preferred[rack] = std::max(rack_preferred[rack], preferred);
    eligible_free += free;
  });
  const int gpus = job.num_gpus();
  if (eligible_free < gpus) return std::nullopt;
  const int best_rack = BestRack(gpus);
  held_rack_ = best_rack;
  if (best_rack >= 0) {
    std::erase_if(candidates, [&](const Candidate& c) {
      return static_cast<int>(ctx_.cluster.node(c.node).rack.index()) != best_rack;
    });
  }
  // Preferred nodes first; then most-free first spans the fewest nodes; ties to the lower id
  // keep it deterministic.
  std::sort(candidates.begin(), candidates.end(), Before);
  // The gang takes the first candidates that together hold it (they do: eligible_free >= gpus,
  // and a chosen rack holds the gang); counting them first allocates the placement once.
  size_t taken = 0;
  for (int covered = 0; covered < gpus; ++taken) covered += candidates[taken].free;
  Placement placement;
  placement.parts.reserve(taken);
  int needed = gpus;
  for (size_t i = 0; i < taken; ++i) {
    const Candidate& c = candidates[i];
    const int take = std::min(needed, c.free);
    placement.parts.push_back(MakePart(
        job, state, c.node, PickGpus(ctx_.cluster.node(c.node), state.free_mask(c.node), take)));
    needed -= take;
  }
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return placement;
}

}  // namespace dlsched
