#include "dlsched/model/cluster_state.h"

#include <bit>

#include "dlsched/common/status.h"

namespace dlsched {

ClusterState::ClusterState(const Cluster& cluster)
    : cluster_(&cluster),
      free_per_type_(cluster.num_gpu_types(), 0),
      free_per_class_(cluster.num_label_classes(), 0),
      offline_(cluster.num_nodes(), false),
      withheld_(cluster.num_nodes(), 0) {
  free_.reserve(cluster.num_nodes());
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    const NodeId id(static_cast<uint32_t>(i));
    const int n = static_cast<int>(cluster.node(id).gpus.size());
    free_.push_back(LowestGpus(n));
    for (const GpuSpec& gpu : cluster.node(id).gpus) ++free_per_type_[gpu.type.index()];
    free_per_class_[cluster.node_label_class(id).index()] += n;
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

void ClusterState::CountFree(NodeId node, GpuMask gpus, int sign) {
  free_total_ += sign * CountGpus(gpus);
  free_per_class_[cluster_->node_label_class(node).index()] += sign * CountGpus(gpus);
  const NodeSpec& spec = cluster_->node(node);
  for (GpuMask m = gpus; m != 0; m &= m - 1) {
    free_per_type_[spec.gpus[std::countr_zero(m)].type.index()] += sign;
  }
}

void ClusterState::Allocate(const Placement& placement) {
  for (const NodeGpus& part : placement.parts) {
    GpuMask& free = free_[part.node.index()];
    DS_CHECK((free & part.gpus) == part.gpus) << "allocating a GPU that is not free";
    free &= ~part.gpus;
    CountFree(part.node, part.gpus, -1);
  }
}

void ClusterState::Release(const Placement& placement) {
  for (const NodeGpus& part : placement.parts) {
    GpuMask& free = free_[part.node.index()];
    GpuMask& withheld = withheld_[part.node.index()];
    DS_CHECK(((free | withheld) & part.gpus) == 0) << "releasing a GPU that is already free";
    const GpuMask shared = shared_mask(part.node);
    GpuMask freed = part.gpus & ~shared;
    for (GpuMask m = part.gpus & shared; m != 0; m &= m - 1) {
      const int gpu = std::countr_zero(m);
      uint8_t& holders = Holders(part.node, gpu);
      if (--holders == 0) {
        shared_[part.node.index()] &= ~(GpuMask{1} << gpu);
        freed |= GpuMask{1} << gpu;
      }
    }
    if (offline_[part.node.index()]) {
      withheld |= freed;
      offline_total_ += CountGpus(freed);
      continue;
    }
    free |= freed;
    CountFree(part.node, freed, +1);
  }
}

bool ClusterState::CanShare(NodeId node, int gpu) const {
  const GpuMask bit = GpuMask{1} << gpu;
  if ((free_[node.index()] & bit) != 0) return true;
  return (shared_mask(node) & bit) != 0 && !offline_[node.index()] && sharers(node, gpu) < 255;
}

void ClusterState::AllocateShared(NodeId node, int gpu) {
  DS_CHECK(CanShare(node, gpu)) << "sharing a GPU that is neither free nor shared";
  if (shared_.empty()) {
    shared_.assign(free_.size(), 0);
    sharers_.assign(static_cast<size_t>(cluster_->total_gpus()), 0);
  }
  const GpuMask bit = GpuMask{1} << gpu;
  if ((free_[node.index()] & bit) != 0) {
    free_[node.index()] &= ~bit;
    CountFree(node, bit, -1);
    shared_[node.index()] |= bit;
  }
  ++Holders(node, gpu);
}

uint8_t& ClusterState::Holders(NodeId node, int gpu) {
  return sharers_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
}

void ClusterState::SetOffline(NodeId node) {
  if (offline_[node.index()]) return;
  offline_[node.index()] = true;
  GpuMask& free = free_[node.index()];
  CountFree(node, free, -1);
  withheld_[node.index()] = free;
  offline_total_ += CountGpus(free);
  free = 0;
}

void ClusterState::SetOnline(NodeId node) {
  if (!offline_[node.index()]) return;
  offline_[node.index()] = false;
  GpuMask& withheld = withheld_[node.index()];
  free_[node.index()] |= withheld;
  CountFree(node, withheld, +1);
  offline_total_ -= CountGpus(withheld);
  withheld = 0;
}

}  // namespace dlsched
