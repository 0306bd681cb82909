#include "policy/open_shared_gpus.h"

#include <algorithm>

namespace dlsched {

void OpenSharedGpus::Sync(const Cluster& cluster, const ClusterState& state, const JobTable& jobs,
                          const SharedGpus& shared, const SharingView& sharing) {
  const std::optional<uint64_t> demand_revision = sharing.DemandRevision();
  const bool by_change = synced_at_.has_value() && demand_revision.has_value() &&
                         gpus_.size() == static_cast<size_t>(cluster.total_gpus()) &&
                         shared.ChangedSince(synced_at_->first, changed_gpus_) &&
                         sharing.DemandChangedSince(synced_at_->second, changed_jobs_);
  if (by_change) {
    // A job's demand or group matters only on the GPU it holds shared.
    for (JobId id : changed_jobs_) {
      if (!jobs.contains(id)) continue;
      const Job& job = jobs.at(id);
      if (job.state != JobState::kRunning || job.share == ShareMode::kExclusive) continue;
      const NodeGpus& part = job.placement.parts.front();
      changed_gpus_.emplace_back(part.node, std::countr_zero(part.gpus));
    }
    std::ranges::sort(changed_gpus_);
    changed_gpus_.erase(std::ranges::unique(changed_gpus_).begin(), changed_gpus_.end());
    for (const auto& [node, gpu] : changed_gpus_) {
      Refresh(cluster, state, jobs, shared, sharing, node, gpu);
    }
  } else {
    Rebuild(cluster, state, jobs, shared, sharing);
  }
  synced_at_ = demand_revision.has_value()
                   ? std::optional(std::pair(shared.change_revision(), *demand_revision))
                   : std::nullopt;
}

void OpenSharedGpus::Rebuild(const Cluster& cluster, const ClusterState& state,
                             const JobTable& jobs, const SharedGpus& shared,
                             const SharingView& sharing) {
  gpus_.assign(static_cast<size_t>(cluster.total_gpus()), Entry{});
  used_mib_.assign(gpus_.size(), 0);
  groups_.clear();
  shared.ForEach([&](NodeId node, int gpu, std::span<const JobId>) {
    Refresh(cluster, state, jobs, shared, sharing, node, gpu);
  });
}

void OpenSharedGpus::Refresh(const Cluster& cluster, const ClusterState& state,
                             const JobTable& jobs, const SharedGpus& shared,
                             const SharingView& sharing, NodeId node, int gpu) {
  const uint32_t index = static_cast<uint32_t>(cluster.first_gpu(node) + gpu);
  Unfile(index);
  const std::span<const JobId> holders = shared.holders(node, gpu);
  if (holders.empty() || holders.size() >= static_cast<size_t>(options_.max_jobs_per_gpu) ||
      state.offline(node)) {
    return;
  }
  for (JobId id : holders) {
    if (jobs.at(id).preempt_requested) return;
  }
  const GpuSpec& spec = cluster.node(node).gpus[static_cast<size_t>(gpu)];
  Entry& entry = gpus_[index];
  entry.open = true;
  entry.key = {static_cast<uint32_t>(spec.type.index()), sharing.ShareGroup(holders[0])};
  entry.gpu.node = node;
  entry.gpu.gpu = gpu;
  entry.gpu.memory_mib = spec.memory_mib;
  entry.gpu.used_mib = 0;
  entry.gpu.holders.clear();
  for (JobId id : holders) {
    sharing::PackJob& job = entry.gpu.holders.emplace_back();
    job.job = sharing.Features(id);
    job.memory_mib =
        options_.time_sliced ? 0 : sharing.MemoryDemandMib(id, options_.memory_percentile);
    entry.gpu.used_mib += job.memory_mib;
  }
  used_mib_[index] = entry.gpu.used_mib;
  Group& group = groups_[entry.key];
  if (group.bits.empty()) group.bits.assign((gpus_.size() + 63) / 64, 0);
  group.bits[index / 64] |= uint64_t{1} << (index % 64);
  ++group.gpus;
  group.holders += holders.size();
}

void OpenSharedGpus::Unfile(uint32_t index) {
  Entry& entry = gpus_[index];
  if (!entry.open) return;
  entry.open = false;
  const auto it = groups_.find(entry.key);
  Group& group = it->second;
  group.bits[index / 64] &= ~(uint64_t{1} << (index % 64));
  --group.gpus;
  group.holders -= entry.gpu.holders.size();
  if (group.gpus == 0) groups_.erase(it);
}

}  // namespace dlsched
