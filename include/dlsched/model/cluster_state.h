#pragma once

#include <vector>

#include "dlsched/model/cluster.h"

namespace dlsched {

// Which GPUs are free, per node, plus aggregate free counts per GPU type: the per-GPU detail for
// placement and the aggregate view for fast "does anything fit" checks (seed 002's dual
// representation). Allocate/Release keep both in step. Copyable: policies take a scratch copy to
// try placements within one cycle.
class ClusterState {
 public:
  ClusterState() = default;
  explicit ClusterState(const Cluster& cluster);

  const Cluster& cluster() const { return *cluster_; }
  GpuMask free_mask(NodeId node) const { return free_[node.index()]; }
  int free_gpus(NodeId node) const { return CountGpus(free_[node.index()]); }
  int free_total() const { return free_total_; }
  int free_of_type(GpuTypeId type) const { return free_per_type_[type.index()]; }
  int allocated_total() const { return cluster_->total_gpus() - free_total_; }

  // True if every GPU of the placement is free.
  bool IsFree(const Placement& placement) const;
  // Marks the placement's GPUs allocated. Precondition: IsFree(placement).
  void Allocate(const Placement& placement);
  // Marks the placement's GPUs free. Precondition: they are allocated.
  void Release(const Placement& placement);

 private:
  const Cluster* cluster_ = nullptr;
  std::vector<GpuMask> free_;  // per node
  std::vector<int> free_per_type_;
  int free_total_ = 0;
};

}  // namespace dlsched
