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
//
// Host resources: each part takes its share of the job's EffectiveHostRequest
// (SplitHostRequest: in proportion to its GPUs), written into its NodeGpus (ClusterState::Part),
// and a node is eligible for a part only if it has that share free (ClusterState::HasHostRoom);
// across nodes, a node offers only as many of its free GPUs as its free CPUs and memory carry. A
// CPU job (no GPUs) goes on one node that states CPUs and has its request free, preferring, after
// its preferred labels, CPU-only nodes, then nodes with fewer free GPUs, then the tightest CPU
// fit: the CPUs of nodes with idle GPUs are kept for the GPU jobs that need them.
class Placer {
 public:
  Placer(const SchedulingContext& ctx, std::span<const FilterPlugin* const> filters,
         std::span<const WeightedScore> scores, PlacementOptions options = {})
      : ctx_(ctx), filters_(filters), scores_(scores), options_(options) {}

  std::optional<Placement> Find(const JobView& job, const ClusterState& state) const;
  // A node whose GPUs were freed since the last Find, with its free GPUs at that Find.
  struct Freed {
    NodeId node;
    int free_before;
  };
  // Returns what Find(job, state) returns, and leaves last_held_for_consolidation() and
  // last_limited_by_host() as it would. Precondition: the last call on this Placer was Find or
  // FindAfterFreeing for the same job, and `state` differs from that call's state only by GPUs
  // freed on the `freed` nodes. Where that call held the gang for consolidation (one GPU type,
  // no host limits) and the freed GPUs change neither its rack nor its spread placement, it
  // answers from the freed nodes alone, O(freed + racks + gang); else it calls Find.
  std::optional<Placement> FindAfterFreeing(const JobView& job, const ClusterState& state,
                                            std::span<const Freed> freed) const;
  // Whether the last Find failed only because the gang would not spread (min_spread_speed).
  bool last_held_for_consolidation() const { return held_for_consolidation_; }
  // Whether the last Find's job asks for host resources that some node limits (its searches
  // depend on more than its gang size).
  bool last_limited_by_host() const { return limits_host_; }
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
  // Of the free GPUs the job could use (as EligibleFree, filters included), those on nodes whose
  // free CPUs and memory carry their part's share (as a gang spread over nodes would take them).
  // O(nodes with free GPUs).
  int HostUsableFree(const JobView& job, const ClusterState& state) const;

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
  std::optional<Placement> FindCpuNode(const JobView& job, const ClusterState& state) const;
  // Sets host_ and limits_host_ for the job.
  void SetHostRequest(const JobView& job, const ClusterState& state) const;
  // How many of the node's `free` GPUs a part of the job can take with the node's free CPUs and
  // memory (the job's share grows with its GPUs there).
  int UsableGpus(const JobView& job, const ClusterState& state, NodeId node, int free) const;
  // The job's part on `node` with `gpus`, with its share of the host request.
  NodeGpus MakePart(const JobView& job, const ClusterState& state, NodeId node,
                    GpuMask gpus) const {
    if (!limits_host_) return NodeGpus{node, gpus};  // it asks for nothing the nodes state
    return state.Part(node, gpus, SplitHostRequest(host_, job.num_gpus(), CountGpus(gpus)));
  }

  struct Candidate {
    NodeId node;
    int free;
    int preferred;  // PreferenceMatches(node)
  };
  // FindAcrossNodes' order: preferred nodes first, then most-free first, ties to the lower id.
  static bool Before(const Candidate& a, const Candidate& b) {
    if (a.preferred != b.preferred) return a.preferred > b.preferred;
    return a.free != b.free ? a.free > b.free : a.node < b.node;
  }
  // Tier 2 of FindAcrossNodes: of the racks whose rack_free_ holds `gpus`, one with the most
  // preferred labels, then the fewest free eligible GPUs, ties to the lower index; -1: none.
  int BestRack(int gpus) const;
  // What FindAfterFreeing needs of a Find that held the gang for consolidation: the job, the
  // gang's type, the rack chosen (-1: none), and the candidates the spread took (the first
  // `taken` of candidates_, whose per-rack sums rack_free_ and rack_preferred_ keep).
  struct Held {
    JobId job;
    GpuTypeId type;
    int rack = -1;
    size_t taken = 0;
  };
  mutable std::optional<Held> held_;
  mutable int held_rack_ = -1;  // the rack the last FindAcrossNodes chose (-1: none)

  const SchedulingContext& ctx_;
  std::span<const FilterPlugin* const> filters_;
  std::span<const WeightedScore> scores_;
  PlacementOptions options_;
  mutable bool held_for_consolidation_ = false;
  // The job being placed: its EffectiveHostRequest, and whether it limits where it goes (it asks
  // for host resources and some node states them).
  mutable HostRequest host_;
  mutable bool limits_host_ = false;
  mutable std::vector<Candidate> candidates_;  // FindAcrossNodes' scratch
  mutable std::vector<int> rack_free_;         // FindAcrossNodes' scratch
  mutable std::vector<int> rack_preferred_;    // FindAcrossNodes' scratch
  // Per label class, for the job being placed; empty when it has no selector / preferences.
  mutable std::vector<char> class_allowed_;
  mutable std::vector<int> class_preference_;
};

}  // namespace dlsched
