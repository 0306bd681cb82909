#include "sim/host_allocation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "sim/cpu_sensitivity.h"

namespace dlsched::sim {
namespace {

// cpu-aware asks at most this many times the proportional share per GPU: a node full of the
// most sensitive jobs still runs half its GPUs, and the rest go to jobs that ask fewer.
constexpr int kMaxShareMultiple = 2;

// The most cores per GPU a gang of `gpus` GPUs can take on one node of `cluster`: over the GPU
// nodes that state CPUs, node cpus / GPUs of the gang on it (all of them, or the node's).
int MostCpusPerGpuOnANode(const Cluster& cluster, int gpus) {
  int most = 0;
  for (const NodeSpec& node : cluster.nodes()) {
    const int node_gpus = static_cast<int>(node.gpus.size());
    if (node_gpus == 0 || node.cpus == 0) continue;
    most = std::max(most, node.cpus / std::min(gpus, node_gpus));
  }
  return most;
}

}  // namespace

std::string_view HostAllocationName(HostAllocation allocation) {
  switch (allocation) {
    case HostAllocation::kRequested:
      return "requested";
    case HostAllocation::kProportional:
      return "proportional";
    case HostAllocation::kCpuAware:
      return "cpu-aware";
  }
  return "requested";
}

Result<HostAllocation> ParseHostAllocation(std::string_view name) {
  for (const HostAllocation a :
       {HostAllocation::kRequested, HostAllocation::kProportional, HostAllocation::kCpuAware}) {
    if (HostAllocationName(a) == name) return a;
  }
  return InvalidArgument("unknown host allocation '" + std::string(name) +
                         "' (want requested, proportional or cpu-aware)");
}

int ProportionalCpusPerGpu(const Cluster& cluster) {
  if (cluster.host_defaults().cpus_per_gpu > 0) return cluster.host_defaults().cpus_per_gpu;
  int64_t cpus = 0;
  int64_t gpus = 0;
  for (const NodeSpec& node : cluster.nodes()) {
    if (node.gpus.empty() || node.cpus == 0) continue;
    cpus += node.cpus;
    gpus += static_cast<int64_t>(node.gpus.size());
  }
  if (gpus == 0) return 0;
  return static_cast<int>(std::max<int64_t>(1, cpus / gpus));
}

void ApplyHostAllocation(HostAllocation allocation, const Cluster& cluster,
                         std::vector<JobSpec>& jobs) {
  if (allocation == HostAllocation::kRequested) return;
  const int share = ProportionalCpusPerGpu(cluster);
  for (JobSpec& spec : jobs) {
    if (spec.num_gpus == 0) continue;  // a CPU job keeps what it asked
    if (allocation == HostAllocation::kProportional) {
      spec.cpus = share * spec.num_gpus;  // 0 (no GPU node states CPUs): nothing to share
      spec.host_memory_mib = 0;           // the per-GPU default
      continue;
    }
    const std::optional<double> saturating = SaturatingCpusPerGpu(spec.model);
    if (!saturating || share == 0) continue;
    const int most =
        std::min(kMaxShareMultiple * share, MostCpusPerGpuOnANode(cluster, spec.num_gpus));
    const int per_gpu = std::clamp(static_cast<int>(std::ceil(*saturating)), 1, std::max(1, most));
    spec.cpus = per_gpu * spec.num_gpus;
  }
}

}  // namespace dlsched::sim
