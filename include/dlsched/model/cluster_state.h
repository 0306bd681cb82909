#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched {

// Which GPUs are free, per node, plus aggregate free counts per GPU type and per label class: the
// per-GPU detail for placement and the aggregate view for fast "does anything fit" checks (seed
// 002's dual representation), and the nodes with at least k free GPUs for each k, so that a
// placement search visits only nodes with room. Every change keeps all three in step. Copyable:
// policies take a scratch copy to try placements within one cycle.
//
// Host resources (CPU cores, host memory in MiB) are kept the same way beside the GPUs: free per
// node, summed over all nodes and per label class, and the nodes with a free CPU as a bitmap.
// A node tracks a resource only when its NodeSpec states it (cpus / memory_mib > 0): a resource
// a node does not state never limits a job there, and a job's part there holds none of it
// (Part). A cluster whose nodes state neither (the Philly trace) keeps no host bookkeeping at
// all, so its states copy and place as cheaply as GPU-only states.
class ClusterState {
 public:
  ClusterState() = default;
  explicit ClusterState(const Cluster& cluster);

  const Cluster& cluster() const { return *cluster_; }
  GpuMask free_mask(NodeId node) const { return free_[node.index()]; }
  int free_gpus(NodeId node) const { return CountGpus(free_[node.index()]); }
  int free_total() const { return free_total_; }
  int free_of_type(GpuTypeId type) const { return free_per_type_[type.index()]; }
  int free_of_class(LabelClassId c) const { return free_per_class_[c.index()]; }
  // GPUs held by jobs: neither free nor withheld by an offline node.
  int allocated_total() const { return cluster_->total_gpus() - free_total_ - offline_total_; }

  // Calls f(NodeId) for every node with at least `at_least` (>= 1) free GPUs, in ascending id
  // order; O(nodes / 64 + nodes visited). Nodes with fewer are never visited, so a placement
  // search on a busy cluster costs what the nodes with room cost.
  template <typename F>
  void ForEachNodeWithFree(int at_least, F&& f) const {
    if (at_least > cluster_->max_gpus_per_node()) return;
    const size_t level = static_cast<size_t>(std::max(at_least, 1) - 1) * words_per_level_;
    for (size_t w = 0; w < words_per_level_; ++w) {
      for (uint64_t bits = nodes_with_free_[level + w]; bits != 0; bits &= bits - 1) {
        f(NodeId(static_cast<uint32_t>(w * 64 + std::countr_zero(bits))));
      }
    }
  }

  // Host resources. What a node leaves unstated reads as kUntracked (more than any request).
  static constexpr int kUntracked = std::numeric_limits<int>::max();
  static constexpr int64_t kUntrackedMemory = std::numeric_limits<int64_t>::max();
  // Whether any node states CPUs or memory (else there is no host bookkeeping).
  bool tracks_host() const { return !host_.free_cpus.empty(); }
  // Free CPU cores / host memory (MiB) of a node: kUntracked* when it does not state them, 0
  // while it is offline.
  int free_cpus(NodeId node) const {
    return host_.free_cpus.empty() ? kUntracked : host_.free_cpus[node.index()];
  }
  int64_t free_memory_mib(NodeId node) const {
    return host_.free_memory.empty() ? kUntrackedMemory : host_.free_memory[node.index()];
  }
  // Free CPUs / memory summed over the nodes that state them (0 when none does), in all and per
  // label class.
  int64_t free_cpus_total() const { return free_cpus_total_; }
  int64_t free_cpus_of_class(LabelClassId c) const {
    return host_.free_cpus_per_class.empty() ? 0 : host_.free_cpus_per_class[c.index()];
  }
  int64_t free_memory_of_class(LabelClassId c) const {
    return host_.free_memory_per_class.empty() ? 0 : host_.free_memory_per_class[c.index()];
  }
  // Whether the node has `share` free: every resource it states has at least that much free.
  bool HasHostRoom(NodeId node, const HostRequest& share) const {
    return host_.free_cpus.empty() || (host_.free_cpus[node.index()] >= share.cpus &&
                                       host_.free_memory[node.index()] >= share.memory_mib);
  }
  // A job's part on `node`: the GPUs, and of `share` what the node states (the rest is 0).
  NodeGpus Part(NodeId node, GpuMask gpus, const HostRequest& share) const {
    NodeGpus part{node, gpus};
    if (host_.free_cpus.empty()) return part;
    const NodeSpec& spec = cluster_->node(node);
    if (spec.cpus > 0) part.cpus = share.cpus;
    if (spec.memory_mib > 0) part.memory_mib = share.memory_mib;
    return part;
  }
  // Calls f(NodeId) for every node with at least one free CPU (so: one that states CPUs and is
  // online), in ascending id order; O(nodes / 64 + nodes visited). CPU jobs search these.
  template <typename F>
  void ForEachNodeWithFreeCpus(F&& f) const {
    for (size_t w = 0; w < host_.nodes_with_free_cpus.size(); ++w) {
      for (uint64_t bits = host_.nodes_with_free_cpus[w]; bits != 0; bits &= bits - 1) {
        f(NodeId(static_cast<uint32_t>(w * 64 + std::countr_zero(bits))));
      }
    }
  }

  // True if every GPU of the placement is free and every node has its part's CPUs and memory.
  bool IsFree(const Placement& placement) const;
  // Marks the placement's GPUs, CPUs and memory allocated. Precondition: IsFree(placement).
  void Allocate(const Placement& placement);
  // Marks the placement's GPUs, CPUs and memory free. Precondition: they are allocated. What is
  // released on an offline node is withheld instead of freed. A shared GPU of the placement
  // loses one holder and is freed with its last (see AllocateShared); its holder's CPUs and
  // memory are freed at once.
  void Release(const Placement& placement);

  // GPU sharing (seed 000): a GPU may be held by several single-GPU jobs at once. A shared GPU
  // is not free: Allocate never takes it, so a policy that does not share sees it as busy, and
  // a what-if Release of one holder frees nothing while others remain.
  // Whether `gpu` of `node` is free or already shared (the offline rule aside: a shared GPU of
  // an offline node takes no new holder).
  bool CanShare(NodeId node, int gpu) const;
  // Adds a holder to `gpu` of `node`, taking it from the free pool if it was free, and takes
  // the holder's CPUs and memory (a part's cpus and memory_mib; see Part) from the node.
  // Precondition: CanShare(node, gpu) and HasHostRoom for the holder's share.
  void AllocateShared(NodeId node, int gpu, const HostRequest& host = {});
  // GPUs of `node` held in shared mode, and how many jobs hold one.
  GpuMask shared_mask(NodeId node) const { return shared_.empty() ? 0 : shared_[node.index()]; }
  int sharers(NodeId node, int gpu) const {
    return sharers_.empty() ? 0 : sharers_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  }

  // What-if trials on a scratch state, without copying it: after BeginTrial(), each Release is
  // recorded, and RollBackTrial() undoes them all, restoring the state exactly (free and
  // withheld GPUs, CPUs and memory, shared holders, every count) in O(parts released). Only Release
  // may change the state during a trial (Allocate, AllocateShared and SetOffline/SetOnline are
  // precondition failures); trials do not nest.
  void BeginTrial();
  void RollBackTrial();
  bool in_trial() const { return in_trial_; }

  // A node out of service (its executor reports it down or drained): its free GPUs, CPUs and
  // memory are withheld at once, and so is everything released on it later, so no placement can
  // use it; jobs already running there keep theirs until released. SetOnline frees all withheld
  // resources. Both are idempotent.
  void SetOffline(NodeId node);
  void SetOnline(NodeId node);
  bool offline(NodeId node) const { return offline_[node.index()]; }
  // GPUs withheld by offline nodes.
  int offline_total() const { return offline_total_; }

 private:
  // Makes `free` the node's free GPUs, keeping the counts and the free levels in step.
  void SetFree(NodeId node, GpuMask free);
  // Adds `sign` (+1 or -1) per GPU of `gpus` to the counts of free GPUs.
  void CountFree(NodeId node, GpuMask gpus, int sign);
  // The holder count of a shared GPU. Precondition: sharers_ is sized.
  uint8_t& Holders(NodeId node, int gpu);
  // Makes `cpus` / `memory_mib` the node's free host resources (each only where the node states
  // it), keeping the sums and the free-CPU bitmap in step. Precondition: tracks_host().
  void SetHostFree(NodeId node, int cpus, int64_t memory_mib);
  // Takes (sign -1) or gives back (+1) a part's CPUs and memory on its node, or on its offline
  // node's withheld resources (give-back only).
  void MoveHost(const NodeGpus& part, int sign);

  const Cluster* cluster_ = nullptr;
  std::vector<GpuMask> free_;  // per node
  // Per level k = 1..max GPUs per node, a bitmap over nodes: bit i of level k is set iff node i
  // has at least k free GPUs. Level k occupies words [(k-1) * words_per_level_, k * ...).
  std::vector<uint64_t> nodes_with_free_;
  size_t words_per_level_ = 0;
  std::vector<int> free_per_type_;
  std::vector<int> free_per_class_;
  int free_total_ = 0;
  std::vector<bool> offline_;      // per node
  std::vector<GpuMask> withheld_;  // per node: GPUs kept out of the pool while it is offline
  int offline_total_ = 0;
  // Sharing, sized at the first AllocateShared (empty until then, so that states without
  // sharing copy as cheaply as before it existed).
  std::vector<GpuMask> shared_;   // per node: GPUs held in shared mode
  std::vector<uint8_t> sharers_;  // per GPU (Cluster::first_gpu): jobs holding it shared
  // Host resources, sized only when tracks_host() (empty for clusters that state none). Per
  // node: free (kUntracked* where not stated; 0 while offline) and withheld while offline. All
  // sized together, so free_cpus.empty() stands for them all.
  struct HostVectors {
    std::vector<int> free_cpus;
    std::vector<int64_t> free_memory;
    std::vector<int> withheld_cpus;
    std::vector<int64_t> withheld_memory;
    std::vector<int64_t> free_cpus_per_class;
    std::vector<int64_t> free_memory_per_class;
    std::vector<uint64_t> nodes_with_free_cpus;  // bit i: node i has a free CPU
  };
  // Copies as HostVectors, except that copying between two states that track no host
  // resources does nothing: a policy copies the cluster state into its scratch every cycle,
  // and a GPU-only replay runs hundreds of thousands of cycles.
  struct Host : HostVectors {
    Host() = default;
    Host(const Host&) = default;
    Host(Host&&) = default;
    Host& operator=(Host&&) = default;
    Host& operator=(const Host& other) {
      if (!free_cpus.empty() || !other.free_cpus.empty()) HostVectors::operator=(other);
      return *this;
    }
  };
  Host host_;
  int64_t free_cpus_total_ = 0;
  // The trial's record: each part released, with its node's masks and host resources before
  // the release.
  struct Released {
    NodeGpus part;
    GpuMask free;
    GpuMask withheld;
    GpuMask shared;
    int free_cpus = 0;
    int withheld_cpus = 0;
    int64_t free_memory = 0;
    int64_t withheld_memory = 0;
  };
  bool in_trial_ = false;
  std::vector<Released> trial_;
};

}  // namespace dlsched
