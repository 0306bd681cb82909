#include "daemon/api/render_gpu.h"

#include <cstdio>
#include <sstream>

#include "daemon/job/job_request.h"

namespace dlsched::daemon {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::string Ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

nlohmann::json GpuUsageJson(const JobGpuUsage* usage) {
  if (usage == nullptr) return nullptr;
  nlohmann::json recent = nlohmann::json::array();
  if (usage->recent) {
    for (const GpuUsagePoint& p : *usage->recent) {
      recent.push_back(
          {{"at", FormatTime(p.at)}, {"memory_mib", p.memory_mib}, {"utilization", p.utilization}});
    }
  }
  return {
      {"memory_mib", usage->latest_memory_mib},
      {"peak_memory_mib", usage->peak_memory_mib},
      {"utilization", usage->latest_utilization},
      {"samples", usage->samples},
      {"sampled_at", usage->latest_at == kTimeNever ? nlohmann::json(nullptr)
                                                    : nlohmann::json(FormatTime(usage->latest_at))},
      {"recent", std::move(recent)}};
}

nlohmann::json GpuDeviceJson(const Snapshot& s, int node, int gpu) {
  if (!s.gpu_devices || s.cluster == nullptr || s.cluster->num_nodes() != 1 || node != 0) {
    return nullptr;
  }
  for (const GpuDeviceSample& d : s.gpu_devices->devices) {
    if (d.index != gpu) continue;
    return {{"memory_used_mib", d.memory_used_mib},
            {"memory_total_mib", d.memory_total_mib},
            {"utilization", d.utilization},
            {"memory_utilization", d.memory_utilization}};
  }
  return nullptr;
}

std::string GpuMetricsText(const Snapshot& s) {
  if (!s.gpu_devices) return "";
  std::ostringstream out;
  auto metric = [&](const char* name, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
  };
  metric("dlsched_gpu_memory_used_bytes", "GPU memory in use, as the GPU monitor last saw it.");
  for (const GpuDeviceSample& d : s.gpu_devices->devices) {
    out << "dlsched_gpu_memory_used_bytes{gpu=\"" << d.index << "\"} " << d.memory_used_mib * kMiB
        << "\n";
  }
  metric("dlsched_gpu_memory_total_bytes", "GPU memory, as the GPU monitor last saw it.");
  for (const GpuDeviceSample& d : s.gpu_devices->devices) {
    out << "dlsched_gpu_memory_total_bytes{gpu=\"" << d.index << "\"} " << d.memory_total_mib * kMiB
        << "\n";
  }
  metric("dlsched_gpu_utilization_ratio",
         "Fraction of the last sample period a kernel ran on the GPU (NVML).");
  for (const GpuDeviceSample& d : s.gpu_devices->devices) {
    out << "dlsched_gpu_utilization_ratio{gpu=\"" << d.index << "\"} " << Ratio(d.utilization)
        << "\n";
  }
  // Running jobs only, so the series end with their jobs.
  std::ostringstream memory, peak, utilization;
  for (const auto& [id, usage] : *s.gpu_usage) {
    const JobRecord* job = s.jobs.Find(id);
    if (job == nullptr || job->state != JobState::kRunning) continue;
    const std::string label = "{job=\"" + std::to_string(id.value()) + "\"} ";
    memory << "dlsched_job_gpu_memory_bytes" << label << usage.latest_memory_mib * kMiB << "\n";
    peak << "dlsched_job_gpu_memory_peak_bytes" << label << usage.peak_memory_mib * kMiB << "\n";
    utilization << "dlsched_job_gpu_utilization_ratio" << label << Ratio(usage.latest_utilization)
                << "\n";
  }
  metric("dlsched_job_gpu_memory_bytes",
         "GPU memory a running job's processes hold on one of its GPUs (the most), latest sample.");
  out << memory.str();
  metric("dlsched_job_gpu_memory_peak_bytes", "The most GPU memory a job was seen to hold.");
  out << peak.str();
  metric("dlsched_job_gpu_utilization_ratio",
         "Utilisation of a running job's GPUs (the devices', partners included), latest sample.");
  out << utilization.str();
  return out.str();
}

}  // namespace dlsched::daemon
