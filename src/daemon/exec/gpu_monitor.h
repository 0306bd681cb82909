#pragma once

// Live observation of the GPUs (issue 18 item 4): what each GPU's memory and compute are doing,
// and how much memory each process on it holds. The daemon samples a GpuMonitor every
// `serve --monitor-period` and attributes the processes to jobs through their process groups
// (core/gpu_usage.h).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/exec/nvml.h"
#include "dlsched/common/status.h"

namespace dlsched::daemon {

// One process using a GPU.
struct GpuProcessSample {
  int pid = 0;
  int64_t used_mib = 0;  // its GPU memory on this device; -1 when the driver cannot tell
};

// One GPU at one instant.
struct GpuDeviceSample {
  int index = 0;  // the monitor's device index (NVML's: the order of CUDA_VISIBLE_DEVICES)
  int64_t memory_used_mib = 0;
  int64_t memory_total_mib = 0;
  double utilization = 0;         // fraction of time a kernel ran, 0..1
  double memory_utilization = 0;  // fraction of time memory was read or written, 0..1
  std::vector<GpuProcessSample> processes;
};

struct GpuSample {
  std::vector<GpuDeviceSample> devices;
};

// Samples the machine's GPUs. Called from one thread at a time (the daemon's sampler thread).
class GpuMonitor {
 public:
  virtual ~GpuMonitor() = default;
  // The GPUs now. Unavailable when the driver cannot answer (the daemon logs it and samples
  // again at the next period).
  virtual Result<GpuSample> Sample() = 0;
};

// A GpuMonitor over NVML (`library` as for Nvml::Open). Unavailable when NVML cannot be loaded.
class NvmlGpuMonitor final : public GpuMonitor {
 public:
  static Result<std::unique_ptr<NvmlGpuMonitor>> Open(const std::string& library);
  // Every device's memory, utilisation (0 when the driver does not report it) and compute
  // processes.
  Result<GpuSample> Sample() override;

 private:
  explicit NvmlGpuMonitor(std::unique_ptr<Nvml> nvml) : nvml_(std::move(nvml)) {}
  std::unique_ptr<Nvml> nvml_;
};

}  // namespace dlsched::daemon
