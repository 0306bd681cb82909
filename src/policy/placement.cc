#include "dlsched/policy/placement.h"

#include <algorithm>
#include <array>
#include <limits>
#include <span>
#include <vector>

namespace dlsched {

GpuMask PickGpus(const NodeSpec& node, GpuMask free, int count) {
  DS_CHECK(CountGpus(free) >= count) << "PickGpus asked for more GPUs than are free";
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

bool Placer::Eligible(const JobView& job, GpuTypeId required, NodeId node) const {
  const GpuTypeId type = ctx_.cluster.node_gpu_type(node);
  if (required.valid() && type != required) return false;
  const std::vector<GpuTypeId>& failed = job.job().failed_gpu_types;
  if (!failed.empty() && std::ranges::find(failed, type) != failed.end()) return false;
  for (const FilterPlugin* filter : filters_) {
    if (!filter->FilterNode(job, node, ctx_).ok) return false;
  }
  return true;
}

std::optional<Placement> Placer::Find(const JobView& job, const ClusterState& state) const {
  const int gpus = job.num_gpus();
  if (gpus > state.free_total()) return std::nullopt;
  GpuTypeId required;
  if (!job.spec().gpu_type.empty()) {
    required = ctx_.cluster.FindGpuType(job.spec().gpu_type);
    if (!required.valid() || gpus > state.free_of_type(required)) return std::nullopt;
  }
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
  return best;
}

std::optional<Placement> Placer::FindOnOneNode(const JobView& job, GpuTypeId required,
                                               const ClusterState& state) const {
  const int gpus = job.num_gpus();
  NodeId best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < ctx_.cluster.num_nodes(); ++i) {
    const NodeId node(static_cast<uint32_t>(i));
    const int free = state.free_gpus(node);
    if (free < gpus || !Eligible(job, required, node)) continue;
    double score = 0;
    for (const WeightedScore& s : scores_) {
      score += s.weight * s.plugin->ScoreNode(job, node, free, gpus, ctx_);
    }
    if (score > best_score) {
      best_score = score;
      best = node;
    }
  }
  if (!best.valid()) return std::nullopt;
  Placement placement;
  placement.parts.push_back({best, PickGpus(ctx_.cluster.node(best), state.free_mask(best), gpus)});
  return placement;
}

std::optional<Placement> Placer::FindAcrossNodes(const JobView& job, GpuTypeId type,
                                                 const ClusterState& state) const {
  std::vector<Candidate>& candidates = candidates_;
  candidates.clear();
  std::vector<int>& rack_free = rack_free_;
  rack_free.assign(ctx_.cluster.num_racks(), 0);
  for (int i = 0; i < ctx_.cluster.num_nodes(); ++i) {
    const NodeId node(static_cast<uint32_t>(i));
    const int free = state.free_gpus(node);
    if (free == 0 || !Eligible(job, type, node)) continue;
    candidates.push_back({node, free});
    rack_free[ctx_.cluster.node(node).rack.index()] += free;
  }
  const int gpus = job.num_gpus();
  // Tier 2: the rack with the fewest free eligible GPUs that still holds the whole gang.
  int best_rack = -1;
  for (int r = 0; r < static_cast<int>(rack_free.size()); ++r) {
    if (rack_free[r] >= gpus && (best_rack < 0 || rack_free[r] < rack_free[best_rack])) {
      best_rack = r;
    }
  }
  if (best_rack >= 0) {
    std::erase_if(candidates, [&](const Candidate& c) {
      return static_cast<int>(ctx_.cluster.node(c.node).rack.index()) != best_rack;
    });
  }
  // Most-free nodes first spans the fewest nodes; ties to the lower id keep it deterministic.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.free != b.free ? a.free > b.free : a.node < b.node;
  });
  Placement placement;
  int needed = gpus;
  for (const Candidate& c : candidates) {
    if (needed == 0) break;
    const int take = std::min(needed, c.free);
    placement.parts.push_back(
        {c.node, PickGpus(ctx_.cluster.node(c.node), state.free_mask(c.node), take)});
    needed -= take;
  }
  if (needed > 0) return std::nullopt;
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return placement;
}

}  // namespace dlsched
