#pragma once

// NVML (libnvidia-ml.so.1), loaded with dlopen at run time: the binary neither links nor needs
// the NVIDIA driver where there is none. `serve --gpus auto` discovers the GPUs through it and
// the GPU monitor (gpu_monitor.h) samples their use. Tests load the fake NVML of
// test/fake_nvml/ instead (`serve --nvml-library PATH`, or DLSCHED_NVML_LIBRARY).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

// The NVML library to load when none is named: $DLSCHED_NVML_LIBRARY when set and not empty,
// else "libnvidia-ml.so.1" (found through the dynamic loader's search path).
std::string DefaultNvmlLibrary();

// An initialised NVML: Open loads the library and calls nvmlInit_v2; the destructor calls
// nvmlShutdown and unloads it. Not thread-safe: one thread at a time. Every fault is
// Unavailable, naming the call and NVML's error code.
class Nvml {
 public:
  struct Memory {
    int64_t total_mib = 0;
    int64_t used_mib = 0;
  };
  struct Utilization {
    double gpu = 0;     // fraction of the last sample period a kernel ran, 0..1
    double memory = 0;  // fraction of it device memory was read or written, 0..1
  };
  struct Process {
    int pid = 0;
    // Its GPU memory; -1 when NVML cannot tell (NVML_VALUE_NOT_AVAILABLE).
    int64_t used_mib = -1;
  };
  using Device = void*;  // nvmlDevice_t

  // `library`: a path or a soname; "" = DefaultNvmlLibrary(). Unavailable when it cannot be
  // loaded, lacks nvmlInit_v2 / nvmlShutdown / nvmlDeviceGetCount_v2 /
  // nvmlDeviceGetHandleByIndex_v2 / nvmlDeviceGetName / nvmlDeviceGetMemoryInfo, or does not
  // initialise.
  static Result<std::unique_ptr<Nvml>> Open(const std::string& library);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& library() const { return library_; }
  Result<unsigned> DeviceCount() const;
  Result<Device> DeviceAt(unsigned index) const;
  Result<std::string> Name(Device device) const;
  Result<Memory> MemoryInfo(Device device) const;
  // Unavailable also when the library has no nvmlDeviceGetUtilizationRates.
  Result<Utilization> UtilizationRates(Device device) const;
  // The compute processes on the device (nvmlDeviceGetComputeRunningProcesses_v3). Unavailable
  // also when the library lacks that entry point (drivers before R510).
  Result<std::vector<Process>> ComputeProcesses(Device device) const;
  // The device's PCI bus id as NVML writes it ("00000000:3B:00.0"; nvmlDeviceGetPciInfo_v3).
  // Unavailable also when the library lacks that entry point.
  Result<std::string> PciBusId(Device device) const;
  // The CPU cores NVML deems near the device (nvmlDeviceGetCpuAffinity: those of its NUMA
  // node), sorted. Unavailable also when the library lacks that entry point.
  Result<std::vector<int>> CpuAffinity(Device device) const;

 private:
  struct Api;
  Nvml(void* handle, std::string library, std::unique_ptr<Api> api);

  void* handle_;
  std::string library_;
  std::unique_ptr<Api> api_;
};

// A one-node cluster of this machine's NVIDIA GPUs, in NVML index order (= PCI bus order, the
// order CUDA_VISIBLE_DEVICES uses with CUDA_DEVICE_ORDER=PCI_BUS_ID). The node is named after
// the host; GPU types are short names ("NVIDIA H100 80GB HBM3" -> "H100"). `library` as for
// Nvml::Open. Unavailable, saying why, when NVML cannot be loaded or initialised or reports no
// GPU.
Result<Cluster> DiscoverNvidiaGpus(const std::string& library = "");

// NVML's bus id -> the name of the device's directory under /sys/bus/pci/devices: lower case,
// the domain in 4 digits ("00000000:3B:00.0" -> "0000:3b:00.0"). InvalidArgument unless it is
// <domain>:<bus>:<device>.<function> in hex (so it is never a path of its own).
Result<std::string> SysfsPciName(std::string_view nvml_bus_id);

// The cores listed in <sysfs_root>/bus/pci/devices/<SysfsPciName(bus id)>/local_cpulist (the
// kernel's, e.g. "0-15,32-47"). NotFound when the file cannot be read; InvalidArgument, naming
// the file, when it is not a CPU list (ParseCpuList) or is over 4 KiB.
Result<std::vector<int>> LocalCpusOfPciDevice(const std::string& sysfs_root,
                                              std::string_view nvml_bus_id);

// The cores near each of this machine's GPUs, in NVML index order (the local executor's GPU
// indices): the kernel's local_cpulist of the GPU's PCI device under `sysfs_root` (normally
// "/sys"; tests give a directory of their own), else NVML's CPU affinity, else none (an empty
// list: that GPU's topology is unknown). `library` as for Nvml::Open.
struct GpuTopology {
  std::vector<std::vector<int>> cores;  // [GPU index] -> cores near it, sorted
  // One line for the start-up log: "GPU 0: cores 0-3 (sysfs), GPU 1: unknown (...)".
  std::string description;
  // Whether any GPU's cores are known.
  bool known() const;
};
// Unavailable, saying why, when NVML cannot be opened or reports no GPU.
Result<GpuTopology> DiscoverGpuTopology(const std::string& library,
                                        const std::string& sysfs_root = "/sys");

// "NVIDIA A100-SXM4-80GB" -> "A100", "Tesla V100-SXM2-32GB" -> "V100", "NVIDIA H200" -> "H200".
std::string ShortGpuTypeName(std::string_view nvml_name);

}  // namespace dlsched::daemon
