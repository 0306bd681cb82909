// A stand-in for NVML (libnvidia-ml.so.1) for tests on machines without a GPU: it exports the
// NVML entry points dlsched calls (daemon/exec/nvml.cc), with NVML's C signatures, structure
// layouts and return codes as NVIDIA's NVML API reference documents them, and answers from a
// state file the test writes. The file is re-read on every call, so a test changes the GPUs'
// usage while the daemon runs.
//
// The state file is named by the environment variable DLSCHED_FAKE_NVML_STATE; one line each:
//   gpu <total_mib> <utilization_percent> <memory_utilization_percent> <name ...>
//   process <gpu_index> <pid> <used_mib>
//   busid <gpu_index> <pci bus id>     e.g. 00000000:3B:00.0 (nvmlDeviceGetPciInfo_v3)
//   affinity <gpu_index> <core ...>    the cores near it (nvmlDeviceGetCpuAffinity)
// A GPU with no busid line has none (nvmlDeviceGetPciInfo_v3 answers NVML_ERROR_NOT_SUPPORTED),
// likewise one with no affinity line.
// GPUs are numbered in the order of their lines; '#' starts a comment. A GPU's used memory is the
// sum of its processes' (free = total - used). Without the variable, or when the file cannot be
// read, nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED and the other calls with
// NVML_ERROR_UNKNOWN.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

// nvmlReturn_t values (NVML API reference, "Error reporting").
constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kInsufficientSize = 7;
constexpr int kNotSupported = 3;
constexpr int kDriverNotLoaded = 9;
constexpr int kUnknown = 999;

constexpr unsigned kMaxGpus = 64;
constexpr unsigned long long kMiB = 1ull << 20;

struct FakeProcess {
  unsigned pid = 0;
  unsigned long long used_mib = 0;
};

struct FakeGpu {
  std::string name;
  unsigned long long total_mib = 0;
  unsigned utilization = 0;
  unsigned memory_utilization = 0;
  std::vector<FakeProcess> processes;
  std::string bus_id;
  std::vector<unsigned> affinity;
};

// An nvmlDevice_t is a pointer to one of these (the handle is opaque to callers).
struct DeviceSlot {
  unsigned index = 0;
};

std::mutex mu;
int init_count = 0;  // nvmlInit_v2 calls not yet matched by nvmlShutdown
DeviceSlot slots[kMaxGpus];

// Reads the state file; false when it cannot be read.
bool ReadState(std::vector<FakeGpu>& gpus) {
  const char* path = std::getenv("DLSCHED_FAKE_NVML_STATE");
  if (path == nullptr) return false;
  std::ifstream file(path);
  if (!file) return false;
  gpus.clear();
  std::string line;
  while (std::getline(file, line)) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::string kind;
    if (!(in >> kind)) continue;
    if (kind == "gpu") {
      FakeGpu gpu;
      if (!(in >> gpu.total_mib >> gpu.utilization >> gpu.memory_utilization)) return false;
      std::getline(in >> std::ws, gpu.name);
      if (gpus.size() < kMaxGpus) gpus.push_back(std::move(gpu));
    } else if (kind == "process") {
      unsigned gpu = 0;
      FakeProcess process;
      if (!(in >> gpu >> process.pid >> process.used_mib) || gpu >= gpus.size()) return false;
      gpus[gpu].processes.push_back(process);
    } else if (kind == "busid") {
      unsigned gpu = 0;
      if (!(in >> gpu) || gpu >= gpus.size() || !(in >> gpus[gpu].bus_id)) return false;
    } else if (kind == "affinity") {
      unsigned gpu = 0;
      if (!(in >> gpu) || gpu >= gpus.size()) return false;
      for (unsigned core = 0; in >> core;) gpus[gpu].affinity.push_back(core);
    } else {
      return false;
    }
  }
  return true;
}

// The state now and the GPU behind `device`, or the NVML error to return.
int Lookup(void* device, std::vector<FakeGpu>& gpus, FakeGpu*& gpu) {
  if (init_count == 0) return kUninitialized;
  if (!ReadState(gpus)) return kUnknown;
  const auto* slot = static_cast<const DeviceSlot*>(device);
  if (slot < slots || slot >= slots + kMaxGpus || slot->index >= gpus.size()) {
    return kInvalidArgument;
  }
  gpu = &gpus[slot->index];
  return kSuccess;
}

}  // namespace

extern "C" {

// nvmlMemory_t and nvmlUtilization_t.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

__attribute__((visibility("default"))) int nvmlInit_v2() {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  if (!ReadState(gpus)) return kDriverNotLoaded;
  for (unsigned i = 0; i < kMaxGpus; ++i) slots[i].index = i;
  ++init_count;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  std::lock_guard lock(mu);
  if (init_count == 0) return kUninitialized;
  --init_count;
  return kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int result) {
  switch (result) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kInsufficientSize:
      return "Insufficient Size";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard lock(mu);
  if (count == nullptr) return kInvalidArgument;
  if (init_count == 0) return kUninitialized;
  std::vector<FakeGpu> gpus;
  if (!ReadState(gpus)) return kUnknown;
  *count = static_cast<unsigned>(gpus.size());
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                         void** device) {
  std::lock_guard lock(mu);
  if (device == nullptr) return kInvalidArgument;
  if (init_count == 0) return kUninitialized;
  std::vector<FakeGpu> gpus;
  if (!ReadState(gpus)) return kUnknown;
  if (index >= gpus.size()) return kInvalidArgument;
  *device = &slots[index];
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetName(void* device, char* name,
                                                             unsigned int length) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (name == nullptr) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  if (gpu->name.size() + 1 > length) return kInsufficientSize;
  std::memcpy(name, gpu->name.c_str(), gpu->name.size() + 1);
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* device,
                                                                   nvmlMemory_t* memory) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (memory == nullptr) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  unsigned long long used_mib = 0;
  for (const FakeProcess& p : gpu->processes) used_mib += p.used_mib;
  memory->total = gpu->total_mib * kMiB;
  memory->used = std::min(used_mib, gpu->total_mib) * kMiB;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(
    void* device, nvmlUtilization_t* utilization) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (utilization == nullptr) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  utilization->gpu = gpu->utilization;
  utilization->memory = gpu->memory_utilization;
  return kSuccess;
}

// As NVML documents it: with *count too small (or infos null and *count 0), *count becomes the
// number of processes and the answer is NVML_ERROR_INSUFFICIENT_SIZE (NVML_SUCCESS when there
// are none).
__attribute__((visibility("default"))) int nvmlDeviceGetComputeRunningProcesses_v3(
    void* device, unsigned int* count, nvmlProcessInfo_t* infos) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (count == nullptr) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  const auto n = static_cast<unsigned>(gpu->processes.size());
  if (*count < n || (infos == nullptr && n > 0)) {
    *count = n;
    return kInsufficientSize;
  }
  for (unsigned i = 0; i < n; ++i) {
    infos[i] = {gpu->processes[i].pid, gpu->processes[i].used_mib * kMiB, 0xFFFFFFFFu, 0xFFFFFFFFu};
  }
  *count = n;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* device,
                                                                   nvmlPciInfo_t* pci) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (pci == nullptr) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  if (gpu->bus_id.empty()) return kNotSupported;
  std::memset(pci, 0, sizeof(*pci));
  std::strncpy(pci->busId, gpu->bus_id.c_str(), sizeof(pci->busId) - 1);
  std::strncpy(pci->busIdLegacy, gpu->bus_id.c_str(), sizeof(pci->busIdLegacy) - 1);
  return kSuccess;
}

// cpuSetSize counts unsigned longs; cores beyond them are left out, as NVML does.
__attribute__((visibility("default"))) int nvmlDeviceGetCpuAffinity(void* device,
                                                                    unsigned int cpuSetSize,
                                                                    unsigned long* cpuSet) {
  std::lock_guard lock(mu);
  std::vector<FakeGpu> gpus;
  FakeGpu* gpu = nullptr;
  if (cpuSet == nullptr || cpuSetSize == 0) return kInvalidArgument;
  if (const int rc = Lookup(device, gpus, gpu); rc != kSuccess) return rc;
  if (gpu->affinity.empty()) return kNotSupported;
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  std::memset(cpuSet, 0, cpuSetSize * sizeof(unsigned long));
  for (unsigned core : gpu->affinity) {
    if (core / kBits < cpuSetSize) cpuSet[core / kBits] |= 1ul << (core % kBits);
  }
  return kSuccess;
}

}  // extern "C"
