#include "dlsched/model/cluster_state.h"

#include <bit>

#include "dlsched/common/status.h"

namespace dlsched {

ClusterState::ClusterState(const Cluster& cluster)
    : cluster_(&cluster),
      free_(cluster.num_nodes(), 0),
      words_per_level_((static_cast<size_t>(cluster.num_nodes()) + 63) / 64),
      free_per_type_(cluster.num_gpu_types(), 0),
      free_per_class_(cluster.num_label_classes(), 0),
      offline_(cluster.num_nodes(), false),
      withheld_(cluster.num_nodes(), 0) {
  nodes_with_free_.assign(static_cast<size_t>(cluster.max_gpus_per_node()) * words_per_level_, 0);
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    const NodeId id(static_cast<uint32_t>(i));
    SetFree(id, LowestGpus(static_cast<int>(cluster.node(id).gpus.size())));
  }
  if (cluster.total_cpus() == 0 && cluster.total_host_memory_mib() == 0) return;
  const size_t nodes = free_.size();
  // Stated resources start at 0 so that SetHostFree counts them in; the rest are untracked.
  host_.free_cpus.assign(nodes, kUntracked);
  host_.free_memory.assign(nodes, kUntrackedMemory);
  host_.withheld_cpus.assign(nodes, 0);
  host_.withheld_memory.assign(nodes, 0);
  host_.free_cpus_per_class.assign(cluster.num_label_classes(), 0);
  host_.free_memory_per_class.assign(cluster.num_label_classes(), 0);
  host_.nodes_with_free_cpus.assign(words_per_level_, 0);
  for (size_t i = 0; i < nodes; ++i) {
    const NodeId id(static_cast<uint32_t>(i));
    const NodeSpec& spec = cluster.node(id);
    if (spec.cpus > 0) host_.free_cpus[i] = 0;
    if (spec.memory_mib > 0) host_.free_memory[i] = 0;
    SetHostFree(id, spec.cpus, spec.memory_mib);
  }
}

bool ClusterState::IsFree(const Placement& placement) const {
  for (const NodeGpus& part : placement.parts) {
    if (!part.node.valid() || part.node.index() >= free_.size()) return false;
    if ((free_[part.node.index()] & part.gpus) != part.gpus) return false;
    if (!HasHostRoom(part.node, {part.cpus, part.memory_mib})) return false;
  }
  return true;
}

void ClusterState::SetHostFree(NodeId node, int cpus, int64_t memory_mib) {
  const size_t i = node.index();
  const NodeSpec& spec = cluster_->node(node);
  const size_t c = cluster_->node_label_class(node).index();
  if (spec.cpus > 0) {
    const int64_t delta = int64_t{cpus} - host_.free_cpus[i];
    free_cpus_total_ += delta;
    host_.free_cpus_per_class[c] += delta;
    host_.free_cpus[i] = cpus;
    const uint64_t bit = uint64_t{1} << (i % 64);
    if (cpus > 0) {
      host_.nodes_with_free_cpus[i / 64] |= bit;
    } else {
      host_.nodes_with_free_cpus[i / 64] &= ~bit;
    }
  }
  if (spec.memory_mib > 0) {
    host_.free_memory_per_class[c] += memory_mib - host_.free_memory[i];
    host_.free_memory[i] = memory_mib;
  }
}

void ClusterState::MoveHost(const NodeGpus& part, int sign) {
  if (host_.free_cpus.empty() || (part.cpus == 0 && part.memory_mib == 0)) return;
  const size_t i = part.node.index();
  const NodeSpec& spec = cluster_->node(part.node);
  // What the node does not state, it does not track (Part never puts it in a part).
  const int cpus = spec.cpus > 0 ? part.cpus : 0;
  const int64_t memory = spec.memory_mib > 0 ? part.memory_mib : 0;
  if (sign < 0) {
    DS_CHECK(host_.free_cpus[i] >= cpus && host_.free_memory[i] >= memory)
        << "allocating CPUs or memory that are not free";
    SetHostFree(part.node, host_.free_cpus[i] - cpus, host_.free_memory[i] - memory);
    return;
  }
  if (offline_[i]) {
    host_.withheld_cpus[i] += cpus;
    host_.withheld_memory[i] += memory;
  } else {
    SetHostFree(part.node, host_.free_cpus[i] + cpus, host_.free_memory[i] + memory);
  }
  DS_CHECK(
      (spec.cpus == 0 || host_.free_cpus[i] + host_.withheld_cpus[i] <= spec.cpus) &&
      (spec.memory_mib == 0 || host_.free_memory[i] + host_.withheld_memory[i] <= spec.memory_mib))
      << "releasing CPUs or memory that are not allocated";
}

void ClusterState::CountFree(NodeId node, GpuMask gpus, int sign) {
  free_total_ += sign * CountGpus(gpus);
  free_per_class_[cluster_->node_label_class(node).index()] += sign * CountGpus(gpus);
  if (cluster_->node_homogeneous(node)) {
    free_per_type_[cluster_->node_gpu_type(node).index()] += sign * CountGpus(gpus);
    return;
  }
  const NodeSpec& spec = cluster_->node(node);
  for (GpuMask m = gpus; m != 0; m &= m - 1) {
    free_per_type_[spec.gpus[std::countr_zero(m)].type.index()] += sign;
  }
}

void ClusterState::SetFree(NodeId node, GpuMask free) {
  const size_t i = node.index();
  const GpuMask before = free_[i];
  if (const GpuMask taken = before & ~free; taken != 0) CountFree(node, taken, -1);
  if (const GpuMask given = free & ~before; given != 0) CountFree(node, given, +1);
  free_[i] = free;
  // The levels between the old and the new count change: set when it grew, cleared when it
  // shrank. Level k's word for the node is at level_words[(k - 1) * words_per_level_].
  const int from = CountGpus(before);
  const int to = CountGpus(free);
  uint64_t* level_words = nodes_with_free_.data() + i / 64;
  const uint64_t bit = uint64_t{1} << (i % 64);
  for (int k = from + 1; k <= to; ++k)
    level_words[static_cast<size_t>(k - 1) * words_per_level_] |= bit;
  for (int k = to + 1; k <= from; ++k)
    level_words[static_cast<size_t>(k - 1) * words_per_level_] &= ~bit;
}

void ClusterState::Allocate(const Placement& placement) {
  DS_CHECK(!in_trial_) << "allocating during a trial";
  for (const NodeGpus& part : placement.parts) {
    const GpuMask free = free_[part.node.index()];
    DS_CHECK((free & part.gpus) == part.gpus) << "allocating a GPU that is not free";
    SetFree(part.node, free & ~part.gpus);
    MoveHost(part, -1);
  }
}

void ClusterState::Release(const Placement& placement) {
  for (const NodeGpus& part : placement.parts) {
    const GpuMask free = free_[part.node.index()];
    GpuMask& withheld = withheld_[part.node.index()];
    DS_CHECK(((free | withheld) & part.gpus) == 0) << "releasing a GPU that is already free";
    const GpuMask shared = shared_mask(part.node);
    if (in_trial_) {
      Released& record = trial_.emplace_back(Released{part, free, withheld, shared});
      if (!host_.free_cpus.empty()) {
        const size_t i = part.node.index();
        record.free_cpus = host_.free_cpus[i];
        record.withheld_cpus = host_.withheld_cpus[i];
        record.free_memory = host_.free_memory[i];
        record.withheld_memory = host_.withheld_memory[i];
      }
    }
    MoveHost(part, +1);
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
    SetFree(part.node, free | freed);
  }
}

void ClusterState::BeginTrial() {
  DS_CHECK(!in_trial_) << "trials do not nest";
  in_trial_ = true;
  trial_.clear();
}

void ClusterState::RollBackTrial() {
  DS_CHECK(in_trial_) << "no trial to roll back";
  for (auto it = trial_.rbegin(); it != trial_.rend(); ++it) {
    const NodeId node = it->part.node;
    SetFree(node, it->free);
    GpuMask& withheld = withheld_[node.index()];
    offline_total_ -= CountGpus(withheld & ~it->withheld);
    withheld = it->withheld;
    for (GpuMask m = it->part.gpus & it->shared; m != 0; m &= m - 1) {
      ++Holders(node, std::countr_zero(m));
    }
    if (!shared_.empty()) shared_[node.index()] = it->shared;
    if (!host_.free_cpus.empty()) {
      SetHostFree(node, it->free_cpus, it->free_memory);
      host_.withheld_cpus[node.index()] = it->withheld_cpus;
      host_.withheld_memory[node.index()] = it->withheld_memory;
    }
  }
  trial_.clear();
  in_trial_ = false;
}

bool ClusterState::CanShare(NodeId node, int gpu) const {
  const GpuMask bit = GpuMask{1} << gpu;
  if ((free_[node.index()] & bit) != 0) return true;
  return (shared_mask(node) & bit) != 0 && !offline_[node.index()] && sharers(node, gpu) < 255;
}

void ClusterState::AllocateShared(NodeId node, int gpu, const HostRequest& host) {
  DS_CHECK(!in_trial_) << "sharing during a trial";
  DS_CHECK(CanShare(node, gpu)) << "sharing a GPU that is neither free nor shared";
  if (shared_.empty()) {
    shared_.assign(free_.size(), 0);
    sharers_.assign(static_cast<size_t>(cluster_->total_gpus()), 0);
  }
  const GpuMask bit = GpuMask{1} << gpu;
  if ((free_[node.index()] & bit) != 0) {
    SetFree(node, free_[node.index()] & ~bit);
    shared_[node.index()] |= bit;
  }
  ++Holders(node, gpu);
  MoveHost(Part(node, 0, host), -1);
}

uint8_t& ClusterState::Holders(NodeId node, int gpu) {
  return sharers_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
}

void ClusterState::SetOffline(NodeId node) {
  DS_CHECK(!in_trial_) << "taking a node offline during a trial";
  if (offline_[node.index()]) return;
  offline_[node.index()] = true;
  const GpuMask free = free_[node.index()];
  withheld_[node.index()] = free;
  offline_total_ += CountGpus(free);
  SetFree(node, 0);
  if (host_.free_cpus.empty()) return;
  const NodeSpec& spec = cluster_->node(node);
  if (spec.cpus > 0) host_.withheld_cpus[node.index()] = host_.free_cpus[node.index()];
  if (spec.memory_mib > 0) host_.withheld_memory[node.index()] = host_.free_memory[node.index()];
  SetHostFree(node, 0, 0);
}

void ClusterState::SetOnline(NodeId node) {
  DS_CHECK(!in_trial_) << "bringing a node online during a trial";
  if (!offline_[node.index()]) return;
  offline_[node.index()] = false;
  GpuMask& withheld = withheld_[node.index()];
  SetFree(node, free_[node.index()] | withheld);
  offline_total_ -= CountGpus(withheld);
  withheld = 0;
  if (host_.free_cpus.empty()) return;
  const size_t i = node.index();
  // (An unstated resource is untracked and withholds nothing: SetHostFree leaves it be.)
  SetHostFree(node, host_.free_cpus[i] + host_.withheld_cpus[i],
              host_.free_memory[i] + host_.withheld_memory[i]);
  host_.withheld_cpus[i] = 0;
  host_.withheld_memory[i] = 0;
}

}  // namespace dlsched
