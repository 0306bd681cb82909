#include "daemon/exec/nvml.h"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <type_traits>

#include "daemon/exec/host_enforcer.h"

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

struct NvmlPciInfo {       // nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
// Words of the cpu set nvmlDeviceGetCpuAffinity fills: CPU_SETSIZE cores.
constexpr unsigned kAffinityWords = CPU_SETSIZE / (sizeof(unsigned long) * CHAR_BIT);

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
  NvmlReturn (*pci_info)(Device, NvmlPciInfo*) = nullptr;                  // optional
  NvmlReturn (*cpu_affinity)(Device, unsigned, unsigned long*) = nullptr;  // optional
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
  bind(api->pci_info, "nvmlDeviceGetPciInfo_v3");
  bind(api->cpu_affinity, "nvmlDeviceGetCpuAffinity");
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

Result<std::string> Nvml::PciBusId(Device device) const {
  if (!api_->pci_info) return Unavailable("NVML lacks nvmlDeviceGetPciInfo_v3");
  NvmlPciInfo info{};
  if (const NvmlReturn rc = api_->pci_info(device, &info); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetPciInfo", rc);
  }
  info.bus_id[sizeof(info.bus_id) - 1] = '\0';
  return std::string(info.bus_id);
}

Result<std::vector<int>> Nvml::CpuAffinity(Device device) const {
  if (!api_->cpu_affinity) return Unavailable("NVML lacks nvmlDeviceGetCpuAffinity");
  unsigned long words[kAffinityWords] = {0};
  if (const NvmlReturn rc = api_->cpu_affinity(device, kAffinityWords, words); rc != kNvmlSuccess) {
    return CallFailed("nvmlDeviceGetCpuAffinity", rc);
  }
  constexpr unsigned kBits = sizeof(unsigned long) * CHAR_BIT;
  std::vector<int> cores;
  for (unsigned w = 0; w < kAffinityWords; ++w) {
    for (unsigned b = 0; b < kBits; ++b) {
      if (words[w] >> b & 1ul) cores.push_back(static_cast<int>(w * kBits + b));
    }
  }
  return cores;
}

Result<std::string> SysfsPciName(std::string_view id) {
  const auto bad = [id] {
    return Status(StatusCode::kInvalidArgument, "bad PCI bus id '" + std::string(id) + "'");
  };
  // <domain>:<bus>:<device>.<function>: 4 or 8, 2, 2 and 1 hex digits.
  const size_t colon = id.find(':');
  if (colon == std::string_view::npos || (colon != 4 && colon != 8)) return bad();
  std::string name;
  if (colon == 8) {
    if (id.substr(0, 4) != "0000") return bad();  // sysfs domains have 4 digits
    id.remove_prefix(4);
  }
  if (id.size() != 12 || id[4] != ':' || id[7] != ':' || id[10] != '.') return bad();
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 4 || i == 7 || i == 10) {
      name += c;
    } else if (std::isxdigit(static_cast<unsigned char>(c))) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      return bad();
    }
  }
  return name;
}

Result<std::vector<int>> LocalCpusOfPciDevice(const std::string& sysfs_root,
                                              std::string_view nvml_bus_id) {
  DS_ASSIGN_OR_RETURN(const std::string name, SysfsPciName(nvml_bus_id));
  const std::string path = sysfs_root + "/bus/pci/devices/" + name + "/local_cpulist";
  std::ifstream file(path);
  if (!file) return Status(StatusCode::kNotFound, "cannot read " + path);
  constexpr size_t kMaxBytes = 4096;
  std::string text(kMaxBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  if (text.size() > kMaxBytes) {
    return Status(StatusCode::kInvalidArgument, path + " is over 4 KiB");
  }
  Result<std::vector<int>> cores = ParseCpuList(text);
  if (!cores.ok()) {
    return Status(StatusCode::kInvalidArgument, path + ": " + cores.status().message());
  }
  return cores;
}

bool GpuTopology::known() const {
  for (const std::vector<int>& near : cores) {
    if (!near.empty()) return true;
  }
  return false;
}

Result<GpuTopology> DiscoverGpuTopology(const std::string& library, const std::string& sysfs_root) {
  DS_ASSIGN_OR_RETURN(const std::unique_ptr<Nvml> nvml, Nvml::Open(library));
  const Result<unsigned> count = nvml->DeviceCount();
  if (!count.ok()) return count.status();
  if (*count == 0) return Unavailable("NVML reports no GPU");
  GpuTopology topology;
  for (unsigned i = 0; i < *count && i < static_cast<unsigned>(kMaxGpusPerNode); ++i) {
    std::vector<int> near;
    std::string why;
    const Result<Nvml::Device> device = nvml->DeviceAt(i);
    if (!device.ok()) {
      why = "unknown (" + device.status().message() + ")";
    } else {
      const Result<std::string> bus_id = nvml->PciBusId(*device);
      Result<std::vector<int>> local =
          bus_id.ok() ? LocalCpusOfPciDevice(sysfs_root, *bus_id) : bus_id.status();
      if (local.ok() && !local->empty()) {
        near = *std::move(local);
        why = "(sysfs)";
      } else if (Result<std::vector<int>> affinity = nvml->CpuAffinity(*device);
                 affinity.ok() && !affinity->empty()) {
        near = *std::move(affinity);
        why = "(NVML)";
      } else {
        why = "unknown (" +
              (local.ok() ? std::string("no local CPUs listed") : local.status().message()) + "; " +
              (affinity.ok() ? std::string("NVML lists none") : affinity.status().message()) + ")";
      }
    }
    if (!topology.description.empty()) topology.description += ", ";
    topology.description += "GPU " + std::to_string(i) + ": ";
    topology.description += near.empty() ? why : "cores " + FormatCpuList(near) + " " + why;
    topology.cores.push_back(std::move(near));
  }
  return topology;
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
