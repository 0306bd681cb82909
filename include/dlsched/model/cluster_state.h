#pragma once

#include <cstdint>
#include <vector>

#include "dlsched/model/cluster.h"

namespace dlsched {

// Which GPUs are free, per node, plus aggregate free counts per GPU type and per label class: the
// per-GPU detail for placement and the aggregate view for fast "does anything fit" checks (seed
// 002's dual representation). Allocate/Release/SetOffline/SetOnline keep both in step. Copyable:
// policies take a scratch copy to try placements within one cycle.
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

  // True if every GPU of the placement is free.
  bool IsFree(const Placement& placement) const;
  // Marks the placement's GPUs allocated. Precondition: IsFree(placement).
  void Allocate(const Placement& placement);
  // Marks the placement's GPUs free. Precondition: they are allocated. GPUs of an offline node
  // are withheld instead of freed. A shared GPU of the placement loses one holder and is freed
  // with its last (see AllocateShared).
  void Release(const Placement& placement);

  // GPU sharing (seed 000): a GPU may be held by several single-GPU jobs at once. A shared GPU
  // is not free: Allocate never takes it, so a policy that does not share sees it as busy, and
  // a what-if Release of one holder frees nothing while others remain.
  // Whether `gpu` of `node` is free or already shared (the offline rule aside: a shared GPU of
  // an offline node takes no new holder).
  bool CanShare(NodeId node, int gpu) const;
  // Adds a holder to `gpu` of `node`, taking it from the free pool if it was free.
  // Precondition: CanShare(node, gpu).
  void AllocateShared(NodeId node, int gpu);
  // GPUs of `node` held in shared mode, and how many jobs hold one.
  GpuMask shared_mask(NodeId node) const { return shared_.empty() ? 0 : shared_[node.index()]; }
  int sharers(NodeId node, int gpu) const {
    return sharers_.empty() ? 0 : sharers_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  }

  // A node out of service (its executor reports it down or drained): its free GPUs are withheld
  // at once, and so is every GPU released on it later, so no placement can use it; jobs already
  // running there keep their GPUs until released. SetOnline frees all withheld GPUs. Both are
  // idempotent.
  void SetOffline(NodeId node);
  void SetOnline(NodeId node);
  bool offline(NodeId node) const { return offline_[node.index()]; }
  // GPUs withheld by offline nodes.
  int offline_total() const { return offline_total_; }

 private:
  // Moves `gpus` of `node` between the free pool and the counts (sign +1 frees, -1 takes).
  void CountFree(NodeId node, GpuMask gpus, int sign);
  // The holder count of a shared GPU. Precondition: sharers_ is sized.
  uint8_t& Holders(NodeId node, int gpu);

  const Cluster* cluster_ = nullptr;
  std::vector<GpuMask> free_;  // per node
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
};

}  // namespace dlsched
