#include "daemon/exec/gpu_monitor.h"

namespace dlsched::daemon {

Result<std::unique_ptr<NvmlGpuMonitor>> NvmlGpuMonitor::Open(const std::string& library) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Nvml> nvml, Nvml::Open(library));
  return std::unique_ptr<NvmlGpuMonitor>(new NvmlGpuMonitor(std::move(nvml)));
}

Result<GpuSample> NvmlGpuMonitor::Sample() {
  DS_ASSIGN_OR_RETURN(const unsigned count, nvml_->DeviceCount());
  GpuSample sample;
  sample.devices.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    DS_ASSIGN_OR_RETURN(const Nvml::Device device, nvml_->DeviceAt(i));
    DS_ASSIGN_OR_RETURN(const Nvml::Memory memory, nvml_->MemoryInfo(device));
    DS_ASSIGN_OR_RETURN(const std::vector<Nvml::Process> processes,
                        nvml_->ComputeProcesses(device));
    GpuDeviceSample d;
    d.index = static_cast<int>(i);
    d.memory_used_mib = memory.used_mib;
    d.memory_total_mib = memory.total_mib;
    // Some devices (and MIG instances) do not report utilisation: memory is still observed.
    if (const Result<Nvml::Utilization> rates = nvml_->UtilizationRates(device); rates.ok()) {
      d.utilization = rates->gpu;
      d.memory_utilization = rates->memory;
    }
    for (const Nvml::Process& p : processes) d.processes.push_back({p.pid, p.used_mib});
    sample.devices.push_back(std::move(d));
  }
  return sample;
}

}  // namespace dlsched::daemon
