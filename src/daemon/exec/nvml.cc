#include "daemon/exec/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>

namespace dlsched::daemon {
namespace {

// The few NVML entry points used, declared here (no NVML header is needed to build).
using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

}  // namespace

std::string ShortGpuTypeName(std::string_view name) {
  for (std::string_view prefix : {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "}) {
    if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  }
  const size_t end = name.find_first_of(" -");
  std::string type(name.substr(0, end));
  return type.empty() ? std::string("GPU") : type;
}

Result<Cluster> DiscoverNvidiaGpus() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Unavailable(std::string("--gpus auto: cannot load NVML (libnvidia-ml.so.1): ") +
                       dlerror() + "; declare the GPUs instead, e.g. --gpus 1x8xV100");
  }
  auto sym = [lib](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlShutdown"));
  auto count_fn = reinterpret_cast<NvmlReturn (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  auto handle_fn =
      reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name_fn =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, char*, unsigned)>(sym("nvmlDeviceGetName"));
  auto memory_fn =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(sym("nvmlDeviceGetMemoryInfo"));
  if (!init || !shutdown || !count_fn || !handle_fn || !name_fn || !memory_fn) {
    dlclose(lib);
    return Unavailable("--gpus auto: NVML lacks the functions dlsched needs");
  }
  if (const NvmlReturn rc = init(); rc != 0) {
    dlclose(lib);
    return Unavailable("--gpus auto: nvmlInit failed (NVML error " + std::to_string(rc) + ")");
  }
  unsigned count = 0;
  Result<Cluster> result = Unavailable("--gpus auto: NVML reports no GPU");
  if (count_fn(&count) == 0 && count > 0) {
    Cluster cluster;
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    NodeSpec node;
    node.name = host;
    node.rack = cluster.InternRack("local");
    std::string first_type;
    for (unsigned i = 0; i < count && i < static_cast<unsigned>(kMaxGpusPerNode); ++i) {
      NvmlDevice device = nullptr;
      char name[96] = {0};
      NvmlMemory memory{};
      if (handle_fn(i, &device) != 0 || name_fn(device, name, sizeof(name) - 1) != 0) {
        result = Unavailable("--gpus auto: NVML cannot describe GPU " + std::to_string(i));
        count = 0;
        break;
      }
      const std::string type = ShortGpuTypeName(name);
      if (first_type.empty()) first_type = type;
      GpuSpec gpu;
      gpu.type = cluster.InternGpuType(type);
      gpu.memory_mib =
          memory_fn(device, &memory) == 0 ? static_cast<int64_t>(memory.total >> 20) : 0;
      node.gpus.push_back(gpu);
    }
    if (count > 0) {
      node.labels = {{"gpu", first_type}, {"rack", "local"}};
      Result<NodeId> added = cluster.AddNode(std::move(node));
      result = added.ok() ? Result<Cluster>(std::move(cluster)) : Result<Cluster>(added.status());
    }
  }
  shutdown();
  dlclose(lib);
  return result;
}

}  // namespace dlsched::daemon
