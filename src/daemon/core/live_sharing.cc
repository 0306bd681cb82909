#include "daemon/core/live_sharing.h"

#include <algorithm>

namespace dlsched::daemon {
namespace {

// Memory bandwidth per unit of SM utilisation: about Lucid's average ratio (as the simulator
// assumes for fractional jobs).
constexpr double kMemBwPerSm = 0.6;
constexpr int64_t kDefaultGpuMemoryMib = 16384;

int64_t LargestGpuMemoryMib(const Cluster& cluster) {
  int64_t largest = 0;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    for (const GpuSpec& gpu : cluster.node(NodeId(n)).gpus) {
      largest = std::max(largest, gpu.memory_mib);
    }
  }
  return largest > 0 ? largest : kDefaultGpuMemoryMib;
}

}  // namespace

LiveJobFeatures LiveFeatures(const JobSpec& spec, const SharingModels& models,
                             int64_t gpu_memory_mib) {
  LiveJobFeatures out;
  if (const std::optional<int> type =
          FindSharingJobType(models.catalog, spec.model, spec.batch_size)) {
    out.features = models.catalog.Job(*type);
  } else if (spec.memory_mib > 0 && spec.memory_mib < gpu_memory_mib) {
    const double fraction = static_cast<double>(spec.memory_mib) / gpu_memory_mib;
    out.features = {sharing::SharingJob::kUnknownType, fraction, fraction * kMemBwPerSm,
                    spec.memory_mib};
  } else {
    out.features = {sharing::SharingJob::kUnknownType, 1.0, kMemBwPerSm, gpu_memory_mib};
    out.from_observation = true;
  }
  out.declared_peak_mib = spec.memory_mib > 0 ? spec.memory_mib : out.features.memory_mib;
  return out;
}

SharingKnowledge BuildLiveSharingKnowledge(const Cluster& cluster, const SharingModels& models,
                                           const JobTable& jobs, const GpuUsageBook& usage) {
  SharingKnowledge knowledge(models.models);
  const int64_t gpu_memory_mib = LargestGpuMemoryMib(cluster);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobId id(static_cast<uint32_t>(i));
    const Job& job = jobs.at(id);
    if (IsTerminal(job.state)) continue;
    LiveJobFeatures live = LiveFeatures(job.spec, models, gpu_memory_mib);
    const sharing::DemandHistory* history = usage.History(id);
    if (live.from_observation && history != nullptr) {
      const double sm = std::clamp(history->MeanSm().value_or(1.0), 0.0, 1.0);
      live.features.sm_util = sm;
      live.features.mem_bw_util = sm * kMemBwPerSm;
      live.features.memory_mib = std::max<int64_t>(1, history->PeakMemoryMib().value_or(1));
    }
    knowledge.Set(id, live.features, live.declared_peak_mib, GpuUsageBook::kHistory);
    if (history != nullptr) knowledge.SetHistory(id, *history);
  }
  return knowledge;
}

}  // namespace dlsched::daemon
