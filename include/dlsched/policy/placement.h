#pragma once

#include <optional>
#include <span>
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

struct WeightedScore {
  const ScorePlugin* plugin;
  double weight;
};

// Finds an all-or-nothing placement for a gang against a (scratch) ClusterState, in tiers:
// one node (best weighted score, ties to the lower node id), else one rack (the rack with the
// fewest free eligible GPUs that suffices, its nodes most-free first), else across racks
// (most-free nodes first). A gang never mixes GPU types, and never uses a type the job failed
// to start on (Job::failed_gpu_types). Returns nullopt when nothing fits.
// Keeps scratch buffers across calls, so one Placer serves a whole cycle without allocating;
// not for concurrent use.
class Placer {
 public:
  Placer(const SchedulingContext& ctx, std::span<const FilterPlugin* const> filters,
         std::span<const WeightedScore> scores)
      : ctx_(ctx), filters_(filters), scores_(scores) {}

  std::optional<Placement> Find(const JobView& job, const ClusterState& state) const;

 private:
  bool Eligible(const JobView& job, GpuTypeId required, NodeId node) const;
  std::optional<Placement> FindOnOneNode(const JobView& job, GpuTypeId required,
                                         const ClusterState& state) const;
  std::optional<Placement> FindAcrossNodes(const JobView& job, GpuTypeId type,
                                           const ClusterState& state) const;

  struct Candidate {
    NodeId node;
    int free;
  };

  const SchedulingContext& ctx_;
  std::span<const FilterPlugin* const> filters_;
  std::span<const WeightedScore> scores_;
  mutable std::vector<Candidate> candidates_;  // FindAcrossNodes' scratch
  mutable std::vector<int> rack_free_;         // FindAcrossNodes' scratch
};

}  // namespace dlsched
