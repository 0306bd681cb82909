#include "daemon/core/live_sharing.h"

#include <algorithm>
#include <utility>

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

namespace {

// Declares `id` in `knowledge` from its spec and what `usage` observed of it.
void DeclareLiveJob(SharingKnowledge& knowledge, JobId id, const JobSpec& spec,
                    const SharingModels& models, int64_t gpu_memory_mib,
                    const GpuUsageBook& usage) {
  LiveJobFeatures live = LiveFeatures(spec, models, gpu_memory_mib);
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

}  // namespace

LiveSharingKnowledge::LiveSharingKnowledge(const Cluster& cluster, SharingModels models,
                                           bool group_by_user)
    : models_(std::move(models)),
      gpu_memory_mib_(LargestGpuMemoryMib(cluster)),
      group_by_user_(group_by_user),
      knowledge_(models_.models) {}

void LiveSharingKnowledge::Declare(JobId id, const Job& job, const GpuUsageBook& usage) {
  DeclareLiveJob(knowledge_, id, job.spec, models_, gpu_memory_mib_, usage);
  if (!group_by_user_) return;
  const auto [it, added] = user_groups_.try_emplace(job.spec.user, user_groups_.size());
  knowledge_.SetShareGroup(id, it->second);
}

const SharingKnowledge& LiveSharingKnowledge::Refresh(const JobTable& jobs,
                                                      const GpuUsageBook& usage) {
  for (; declared_ < jobs.size(); ++declared_) {
    const JobId id(static_cast<uint32_t>(declared_));
    const Job& job = jobs.at(id);
    if (!IsTerminal(job.state)) Declare(id, job, usage);
  }
  std::ranges::sort(observed_);
  const auto [first, last] = std::ranges::unique(observed_);
  observed_.erase(first, last);
  for (JobId id : observed_) {
    if (id.index() >= jobs.size() || IsTerminal(jobs.at(id).state)) continue;
    Declare(id, jobs.at(id), usage);
  }
  observed_.clear();
  return knowledge_;
}

}  // namespace dlsched::daemon
