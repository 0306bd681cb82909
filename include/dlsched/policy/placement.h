#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/policy/context.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {

// Chooses `count` GPUs of `free` on `node`: inside one interconnect group when some group has
// enough (the group with the fewest free GPUs that suffices), else the lowest-numbered free
// GPUs, preferring to fill whole groups. Precondition: CountGpus(free) >= count.
GpuMask PickGpus(const NodeSpec& node, GpuMask free, int count);

// Topology knobs of a profile (docs/profiles.md, "placement").
struct PlacementOptions {
  // On one node, prefer a node where one interconnect group (NVLink island) holds the gang over
  // a tighter fit elsewhere.
  bool prefer_one_group = false;
  // Spread a gang that one node of its type could hold over several nodes only when the
  // estimator predicts at least this fraction of its consolidated speed there, or once it has
  // waited `relax_after` (Tiresias' consolidation relaxation). 0: always spread.
  double min_spread_speed = 0;
  Duration relax_after = Duration::max();
};

struct WeightedScore {
  const ScorePlugin* plugin;
  double weight;
};

// Whether `count` of the `free` GPUs of `node` lie in one interconnect group.
bool FitsOneGroup(const NodeSpec& node, GpuMask free, int count);

// Finds an all-or-nothing placement for a gang against a (scratch) ClusterState, in tiers:
// one node, else one rack (the rack with the fewest free eligible GPUs that suffices, its nodes
// most-free first), else across racks (most-free nodes first). On one node, candidates compare
// by the number of the job's preferred labels they carry, then (prefer_one_group) by whether one
// interconnect group (NVLink island) holds the gang, then by weighted score, ties to the lower
// node id; across nodes, preferred-label matches come first too, and a consolidation-sensitive
// gang may wait rather than spread (PlacementOptions::min_spread_speed). Only nodes matching the
// job's selector are eligible. A gang never mixes GPU types, and never uses a type the job failed
// to start on (Job::failed_gpu_types). Returns nullopt when nothing fits. Keeps scratch buffers
// across calls, so one Placer serves a whole cycle without allocating; not for concurrent use.
class Placer {
 public:
  Placer(const SchedulingContext& ctx, std::span<const FilterPlugin* const> filters,
         std::span<const WeightedScore> scores, PlacementOptions options = {})
      : ctx_(ctx), filters_(filters), scores_(scores), options_(options) {}

  std::optional<Placement> Find(const JobView& job, const ClusterState& state) const;
  // Whether the last Find failed only because the gang would not spread (min_spread_speed).
  bool last_held_for_consolidation() const { return held_for_consolidation_; }
  // Free GPUs the job could use: of its required type (if any), on nodes matching its
  // selector, of no type it failed to start on, on nodes every filter passes. O(label classes)
  // without filters, O(nodes with free GPUs) with. With filters and `refused` given, fills
  // `refused` with the filter that refused the most of the other free GPUs (nullptr: none).
  struct Refusal {
    const FilterPlugin* filter = nullptr;
    int free = 0;        // free GPUs of the job's type and labels on the nodes it refused
    std::string reason;  // its Fit::reason for the first such node
  };
  int EligibleFree(const JobView& job, const ClusterState& state, Refusal* refused = nullptr) const;

 private:
  // Fills the per-label-class scratch for the job's selector and preferences; false when the
  // GPUs free in classes matching its selector (and required type) cannot hold the gang.
  bool PrepareLabels(const JobView& job, GpuTypeId required, const ClusterState& state) const;
  bool Eligible(const JobView& job, GpuTypeId required, NodeId node) const;
  // min_spread_speed: whether the job may run on `spread` (several nodes) rather than wait.
  bool MaySpread(const JobView& job, const Placement& spread) const;
  // The job's preferred labels the node carries (0 without preferences).
  int PreferenceMatches(NodeId node) const {
    return class_preference_.empty()
               ? 0
               : class_preference_[ctx_.cluster.node_label_class(node).index()];
  }
  std::optional<Placement> FindOnOneNode(const JobView& job, GpuTypeId required,
                                         const ClusterState& state) const;
  std::optional<Placement> FindAcrossNodes(const JobView& job, GpuTypeId type,
                                           const ClusterState& state) const;

  struct Candidate {
    NodeId node;
    int free;
    int preferred;  // PreferenceMatches(node)
  };

  const SchedulingContext& ctx_;
  std::span<const FilterPlugin* const> filters_;
  std::span<const WeightedScore> scores_;
  PlacementOptions options_;
  mutable bool held_for_consolidation_ = false;
  mutable std::vector<Candidate> candidates_;  // FindAcrossNodes' scratch
  mutable std::vector<int> rack_free_;         // FindAcrossNodes' scratch
  mutable std::vector<int> rack_preferred_;    // FindAcrossNodes' scratch
  // Per label class, for the job being placed; empty when it has no selector / preferences.
  mutable std::vector<char> class_allowed_;
  mutable std::vector<int> class_preference_;
};

}  // namespace dlsched
