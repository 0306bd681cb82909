#include "daemon/exec/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <type_traits>

namespace dlsched::daemon {
namespace {

// The NVML entry points used, declared here from NVML's API reference (no NVML header is needed
// to build).
using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlUtilization {  // nvmlUtilization_t, percentages
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t, as the _v3 query fills it
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

Status CallFailed(const char* call, NvmlReturn rc) {
  return Unavailable(std::string("NVML ") + call + " failed (NVML error " + std::to_string(rc) +
                     ")");
}

}  // namespace

struct Nvml::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*handle)(unsigned, Device*) = nullptr;
  NvmlReturn (*name)(Device, char*, unsigned) = nullptr;
  NvmlReturn (*memory)(Device, NvmlMemory*) = nullptr;
  NvmlReturn (*utilization)(Device, NvmlUtilization*) = nullptr;           // optional
  NvmlReturn (*processes)(Device, unsigned*, NvmlProcessInfo*) = nullptr;  // optional
};

std::string DefaultNvmlLibrary() {
  const char* named = std::getenv("DLSCHED_NVML_LIBRARY");
  return named != nullptr && *named != '\0' ? std::string(named) : "libnvidia-ml.so.1";
}

Nvml::Nvml(void* handle, std::string library, std::unique_ptr<Api> api)
    : handle_(handle), library_(std::move(library)), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(handle_);
}

Result<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  const std::string path = library.empty() ? DefaultNvmlLibrary() : library;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Unavailable("cannot load NVML (" + path + "): " + dlerror());
  }
  auto api = std::make_unique<Api>();
  auto bind = [lib](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
  };
  bind(api->init, "nvmlInit_v2");
  bind(api->shutdown, "nvmlShutdown");
  bind(api->count, "nvmlDeviceGetCount_v2");
  bind(api->handle, "nvmlDeviceGetHandleByIndex_v2");
  bind(api->name, "nvmlDeviceGetName");
  bind(api->memory, "nvmlDeviceGetMemoryInfo");
  bind(api->utilization, "nvmlDeviceGetUtilizationRates");
  bind(api->processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!api->init || !api->shutdown || !api->count || !api->handle || !api->name || !api->memory) {
    dlclose(lib);
    return Unavailable("NVML (" + path + ") lacks the functions dlsched needs");
  }
  if (const NvmlReturn rc = api->init(); rc != kNvmlSuccess) {
    dlclose(lib);
    return Unavailable("nvmlInit failed (" + path + ", NVML error " + std::to_string(rc) + ")");
  }
  return std::unique_ptr<Nvml>(new Nvml(lib, path, std::move(api)));
}

Result<unsigned> Nvml::DeviceCount() const {
  unsigned count = 0;
  if (const NvmlReturn rc = api_->count(&count); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetCount", rc);
  }
  return count;
}

Result<Nvml::Device> Nvml::DeviceAt(unsigned index) const {
  Device device = nullptr;
  if (const NvmlReturn rc = api_->handle(index, &device); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetHandleByIndex", rc);
  }
  return device;
}

Result<std::string> Nvml::Name(Device device) const {
  char name[96] = {0};
  if (const NvmlReturn rc = api_->name(device, name, sizeof(name) - 1); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetName", rc);
  }
  return std::string(name);
}

Result<Nvml::Memory> Nvml::MemoryInfo(Device device) const {
  NvmlMemory memory{};
  if (const NvmlReturn rc = api_->memory(device, &memory); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetMemoryInfo", rc);
  }
  return Memory{static_cast<int64_t>(memory.total >> 20), static_cast<int64_t>(memory.used >> 20)};
}

Result<Nvml::Utilization> Nvml::UtilizationRates(Device device) const {
  if (!api_->utilization) return Unavailable("NVML lacks nvmlDeviceGetUtilizationRates");
  NvmlUtilization rates{};
  if (const NvmlReturn rc = api_->utilization(device, &rates); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetUtilizationRates", rc);
  }
  return Utilization{rates.gpu / 100.0, rates.memory / 100.0};
}

Result<std::vector<Nvml::Process>> Nvml::ComputeProcesses(Device device) const {
  if (!api_->processes) {
    return Unavailable("NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (driver before R510)");
  }
  // The list may grow between the size query and the read: ask again with the larger size.
  std::vector<NvmlProcessInfo> infos(8);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    const NvmlReturn rc = api_->processes(device, &count, infos.data());
    if (rc == kNvmlInsufficientSize) {
      infos.resize(count + 8);
      continue;
    }
    if (rc != kNvmlSuccess) return CallFailed("nvmlDeviceGetComputeRunningProcesses", rc);
    std::vector<Process> processes;
    processes.reserve(count);
    for (unsigned i = 0; i < count && i < infos.size(); ++i) {
      const unsigned long long used = infos[i].used_gpu_memory;
      processes.push_back({static_cast<int>(infos[i].pid),
                           used == kNvmlValueNotAvailable ? -1 : static_cast<int64_t>(used >> 20)});
    }
    return processes;
  }
  return Unavailable("NVML's process list kept growing while it was read");
}

std::string ShortGpuTypeName(std::string_view name) {
  for (std::string_view prefix : {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "}) {
    if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  }
  const size_t end = name.find_first_of(" -");
  std::string type(name.substr(0, end));
  return type.empty() ? std::string("GPU") : type;
}

Result<Cluster> DiscoverNvidiaGpus(const std::string& library) {
  Result<std::unique_ptr<Nvml>> nvml = Nvml::Open(library);
  if (!nvml.ok()) {
    return Unavailable("--gpus auto: " + nvml.status().message() +
                       "; declare the GPUs instead, e.g. --gpus 1x8xV100");
  }
  const Result<unsigned> count = (*nvml)->DeviceCount();
  if (!count.ok() || *count == 0) return Unavailable("--gpus auto: NVML reports no GPU");
  Cluster cluster;
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  NodeSpec node;
  node.name = host;
  node.rack = cluster.InternRack("local");
  std::string first_type;
  for (unsigned i = 0; i < *count && i < static_cast<unsigned>(kMaxGpusPerNode); ++i) {
    Result<Nvml::Device> device = (*nvml)->DeviceAt(i);
    Result<std::string> name = device.ok() ? (*nvml)->Name(*device) : device.status();
    if (!name.ok()) {
      return Unavailable("--gpus auto: NVML cannot describe GPU " + std::to_string(i) + ": " +
                         name.status().message());
    }
    const std::string type = ShortGpuTypeName(*name);
    if (first_type.empty()) first_type = type;
    GpuSpec gpu;
    gpu.type = cluster.InternGpuType(type);
    const Result<Nvml::Memory> memory = (*nvml)->MemoryInfo(*device);
    gpu.memory_mib = memory.ok() ? memory->total_mib : 0;
    node.gpus.push_back(gpu);
  }
  node.labels = {{"gpu", first_type}, {"rack", "local"}};
  DS_RETURN_IF_ERROR(cluster.AddNode(std::move(node)).status());
  return cluster;
}

}  // namespace dlsched::daemon
