#pragma once

// The GPU monitor's observations as the API shows them (daemon/core/gpu_usage.h): a job's
// "gpu_usage" in GET /v1/jobs/{id}, and the GPU series of /metrics.

#include <nlohmann/json.hpp>
#include <string>

#include "daemon/core/snapshot.h"

namespace dlsched::daemon {

// {"memory_mib": latest, "peak_memory_mib", "utilization": latest (0..1), "samples",
// "sampled_at": time of the latest, "recent": [{"at", "memory_mib", "utilization"}, ...] the
// latest observations, oldest first, at most JobGpuUsage::kRecent}; null when nothing was
// observed (no monitor, or the job has not run with one).
nlohmann::json GpuUsageJson(const JobGpuUsage* usage);

// What the monitor's latest sample says of GPU `gpu` of `node` (GET /v1/nodes): {"memory_used_mib",
// "memory_total_mib", "utilization" (0..1), "memory_utilization" (0..1)}, or null when no
// sample covers it. The monitor samples the daemon's own machine, whose devices are the GPUs of
// a cluster of one node (device i is GPU i, as CUDA_VISIBLE_DEVICES numbers them): a cluster of
// several nodes has no device of its own for each of them, so there every GPU is null.
nlohmann::json GpuDeviceJson(const Snapshot& snapshot, int node, int gpu);

// Prometheus text (appended to MetricsText's): per GPU of the latest sample
// dlsched_gpu_memory_used_bytes, dlsched_gpu_memory_total_bytes and
// dlsched_gpu_utilization_ratio {gpu="<index>"}; per running job with observations
// dlsched_job_gpu_memory_bytes, dlsched_job_gpu_memory_peak_bytes and
// dlsched_job_gpu_utilization_ratio {job="<id>"}. Empty before the monitor's first sample.
std::string GpuMetricsText(const Snapshot& snapshot);

}  // namespace dlsched::daemon
