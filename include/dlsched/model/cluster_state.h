#pragma once

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
  // are withheld instead of freed.
  void Release(const Placement& placement);

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

  const Cluster* cluster_ = nullptr;
  std::vector<GpuMask> free_;  // per node
  std::vector<int> free_per_type_;
  std::vector<int> free_per_class_;
  int free_total_ = 0;
  std::vector<bool> offline_;      // per node
  std::vector<GpuMask> withheld_;  // per node: GPUs kept out of the pool while it is offline
  int offline_total_ = 0;
};

}  // namespace dlsched
