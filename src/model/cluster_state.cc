#include "dlsched/model/cluster_state.h"

#include "dlsched/common/status.h"

namespace dlsched {

ClusterState::ClusterState(const Cluster& cluster)
    : cluster_(&cluster), free_per_type_(cluster.num_gpu_types(), 0) {
  free_.reserve(cluster.num_nodes());
  for (const NodeSpec& node : cluster.nodes()) {
    const int n = static_cast<int>(node.gpus.size());
    free_.push_back(n == kMaxGpusPerNode ? ~GpuMask{0} : (GpuMask{1} << n) - 1);
    for (const GpuSpec& gpu : node.gpus) ++free_per_type_[gpu.type.index()];
  }
  free_total_ = cluster.total_gpus();
}

bool ClusterState::IsFree(const Placement& placement) const {
  for (const NodeGpus& part : placement.parts) {
    if (!part.node.valid() || part.node.index() >= free_.size()) return false;
    if ((free_[part.node.index()] & part.gpus) != part.gpus) return false;
  }
  return true;
}

void ClusterState::Allocate(const Placement& placement) {
  for (const NodeGpus& part : placement.parts) {
    GpuMask& free = free_[part.node.index()];
    DS_CHECK((free & part.gpus) == part.gpus) << "allocating a GPU that is not free";
    free &= ~part.gpus;
    const int n = CountGpus(part.gpus);
    free_total_ -= n;
    const NodeSpec& node = cluster_->node(part.node);
    for (GpuMask m = part.gpus; m != 0; m &= m - 1) {
      --free_per_type_[node.gpus[std::countr_zero(m)].type.index()];
    }
  }
}

void ClusterState::Release(const Placement& placement) {
  for (const NodeGpus& part : placement.parts) {
    GpuMask& free = free_[part.node.index()];
    DS_CHECK((free & part.gpus) == 0) << "releasing a GPU that is already free";
    free |= part.gpus;
    free_total_ += CountGpus(part.gpus);
    const NodeSpec& node = cluster_->node(part.node);
    for (GpuMask m = part.gpus; m != 0; m &= m - 1) {
      ++free_per_type_[node.gpus[std::countr_zero(m)].type.index()];
    }
  }
}

}  // namespace dlsched
