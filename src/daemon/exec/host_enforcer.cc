#include "daemon/exec/host_enforcer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <tuple>

namespace dlsched::daemon {
namespace {

constexpr std::array<std::string_view, 3> kControllers = {"cpu", "cpuset", "memory"};
constexpr int64_t kCfsPeriodUs = 100000;

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(sep);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// The whole of a (pseudo-)file, "" when it cannot be read. Cgroup files report size 0, so read
// to the end.
std::string ReadAll(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

// Writes `value` to an existing control file in one write(2), as the kernel wants it.
Status WriteControl(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size())) error = errno;
    close(fd);
  }
  if (error != 0) {
    return Internal("cannot write '" + value + "' to " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

Status MakeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Internal("cannot create " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// The value after `key` in a "key value" per line file (memory.events, memory.oom_control).
int64_t KeyedValue(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string k; in >> k;) {
    int64_t v = 0;
    if (!(in >> v)) return 0;
    if (k == key) return v;
  }
  return 0;
}

// The directory of `path` (a group's path in its hierarchy) under a mount of that hierarchy
// whose root is `root`, mounted at `mount_point`.
std::string UnderMount(std::string_view mount_point, std::string_view root, std::string_view path) {
  if (root != "/" && path.starts_with(root)) path.remove_prefix(root.size());
  std::string dir(mount_point);
  if (!path.empty() && path != "/") dir += path;
  return dir;
}

std::vector<int> ThisProcessCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

// The cores `pid` may run on; empty when it cannot be read.
std::vector<int> AffinityOf(int pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (pid <= 0 || sched_getaffinity(pid, sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

// Resident bytes per process group of `wanted`, over every process in /proc.
std::map<int, int64_t> ResidentBytesByGroup(const std::set<int>& wanted) {
  std::map<int, int64_t> bytes;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return bytes;
  const int64_t page = sysconf(_SC_PAGESIZE);
  while (const dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string stat = ReadAll(std::string("/proc/") + entry->d_name + "/stat");
    // "pid (comm) S ppid pgrp ..." — comm may hold anything; fields after the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string field;
    int pgrp = 0;
    int64_t rss = 0;
    bool whole = true;
    for (int i = 3; i <= 24 && whole; ++i) {
      whole = static_cast<bool>(rest >> field);
      if (!whole) break;
      if (i == 5) pgrp = std::atoi(field.c_str());
      if (i == 24) rss = std::atoll(field.c_str());
    }
    if (whole && wanted.contains(pgrp)) bytes[pgrp] += rss * page;
  }
  closedir(proc);
  return bytes;
}

}  // namespace

std::string HostGroupName(std::string_view workdir) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (char c : workdir) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return std::string("dlsched-") + hex;
}

LocalHost DetectLocalHost() {
  LocalHost host;
  host.cpus = static_cast<int>(ThisProcessCores().size());
  std::istringstream meminfo(ReadAll("/proc/meminfo"));
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    if (key == "MemTotal:" && meminfo >> kib) host.memory_mib = kib / 1024;
  }
  const CgroupDirs dirs =
      ParseCgroupDirs(ReadAll("/proc/self/cgroup"), ReadAll("/proc/self/mountinfo"));
  int64_t limit = 0;
  const std::string v1 = Trimmed(ReadAll(dirs.memory + "/memory.limit_in_bytes"));
  const std::string v2 = Trimmed(ReadAll(dirs.unified + "/memory.max"));
  for (const std::string& text : {v1, v2}) {
    std::from_chars(text.data(), text.data() + text.size(), limit);
    if (limit > 0 && (limit >> 20) < host.memory_mib) host.memory_mib = limit >> 20;
    limit = 0;
  }
  return host;
}

Cluster WithLocalHost(const Cluster& cluster, const LocalHost& host) {
  Cluster out;
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    out.InternGpuType(cluster.gpu_type_name(GpuTypeId(t)));
  }
  for (int r = 0; r < cluster.num_racks(); ++r) out.InternRack(cluster.rack_name(RackId(r)));
  for (NodeSpec node : cluster.nodes()) {
    if (node.cpus == 0) node.cpus = host.cpus;
    if (node.memory_mib == 0) node.memory_mib = host.memory_mib;
    const Result<NodeId> added = out.AddNode(std::move(node));
    DS_CHECK(added.ok()) << "a node of a valid cluster was refused: " << added.status().ToString();
  }
  out.set_host_defaults(cluster.host_defaults());
  return out;
}

std::string_view HostEnforcementName(HostEnforcement mode) {
  switch (mode) {
    case HostEnforcement::kCgroupV2:
      return "cgroup-v2";
    case HostEnforcement::kCgroupV1:
      return "cgroup-v1";
    case HostEnforcement::kAffinity:
      return "affinity";
    case HostEnforcement::kNone:
      break;
  }
  return "none";
}

Result<HostEnforcerChoice> ParseHostEnforcerChoice(std::string_view text) {
  if (text == "auto") return HostEnforcerChoice::kAuto;
  if (text == "cgroup") return HostEnforcerChoice::kCgroup;
  if (text == "affinity") return HostEnforcerChoice::kAffinity;
  if (text == "none") return HostEnforcerChoice::kNone;
  return InvalidArgument("host enforcer: want auto, cgroup, affinity or none, got '" +
                         std::string(text) + "'");
}

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::set<int> cores;
  if (text.empty()) return std::vector<int>();
  for (std::string_view range : Split(text, ',')) {
    const size_t dash = range.find('-');
    const std::string_view first = range.substr(0, dash);
    const std::string_view last = dash == std::string_view::npos ? first : range.substr(dash + 1);
    int lo = -1, hi = -1;
    const auto a = std::from_chars(first.data(), first.data() + first.size(), lo);
    const auto b = std::from_chars(last.data(), last.data() + last.size(), hi);
    if (a.ec != std::errc() || a.ptr != first.data() + first.size() || b.ec != std::errc() ||
        b.ptr != last.data() + last.size() || lo < 0 || hi < lo || hi >= CPU_SETSIZE) {
      return InvalidArgument("bad CPU list '" + std::string(text) + "'");
    }
    for (int c = lo; c <= hi; ++c) cores.insert(c);
  }
  return std::vector<int>(cores.begin(), cores.end());
}

std::string FormatCpuList(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cores[i]);
    if (j > i) out += '-' + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

CgroupDirs ParseCgroupDirs(std::string_view self_cgroup, std::string_view mountinfo) {
  // "ID:controllers:path" per hierarchy; ID 0 with no controllers is the unified one.
  std::string unified_path;
  std::map<std::string, std::string, std::less<>> path_of;  // v1 controller -> path
  for (std::string_view line : Split(self_cgroup, '\n')) {
    const std::vector<std::string_view> f = Split(line, ':');
    if (f.size() < 3) continue;
    const std::string path(line.substr(f[0].size() + f[1].size() + 2));
    if (f[0] == "0" && f[1].empty()) unified_path = path;
    for (std::string_view c : Split(f[1], ',')) path_of.emplace(std::string(c), path);
  }
  CgroupDirs dirs;
  // "ID parent major:minor root mount-point options [optional...] - type source super-options"
  for (std::string_view line : Split(mountinfo, '\n')) {
    const std::vector<std::string_view> f = Split(line, ' ');
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string_view root = f[3], mount_point = f[4], type = dash[1], super = dash[3];
    if (type == "cgroup2" && dirs.unified.empty() && !unified_path.empty()) {
      dirs.unified = UnderMount(mount_point, root, unified_path);
    }
    if (type != "cgroup") continue;
    for (std::string_view option : Split(super, ',')) {
      const auto it = path_of.find(option);
      if (it == path_of.end()) continue;
      std::string* dir = option == "cpu"      ? &dirs.cpu
                         : option == "cpuset" ? &dirs.cpuset
                         : option == "memory" ? &dirs.memory
                                              : nullptr;
      if (dir != nullptr && dir->empty()) *dir = UnderMount(mount_point, root, it->second);
    }
  }
  return dirs;
}

HostEnforcer::HostEnforcer(Options options, HostEnforcement mode, CgroupDirs dirs)
    : options_(std::move(options)), mode_(mode), dirs_(std::move(dirs)) {
  for (int core : options_.cores) holders_[core] = 0;
}

HostEnforcer::~HostEnforcer() {
  // The daemon's own groups go with it unless jobs still run in them (they keep running, and
  // the next daemon re-adopts them): rmdir refuses a group with children.
  for (const std::string& group : DaemonGroupDirs()) rmdir(group.c_str());
}

Result<std::unique_ptr<HostEnforcer>> HostEnforcer::Create(Options options) {
  if (options.cores.empty()) options.cores = ThisProcessCores();
  CgroupDirs dirs =
      options.dirs ? *options.dirs
                   : ParseCgroupDirs(ReadAll("/proc/self/cgroup"), ReadAll("/proc/self/mountinfo"));
  const HostEnforcerChoice choice = options.choice;
  if (choice == HostEnforcerChoice::kNone || choice == HostEnforcerChoice::kAffinity) {
    const HostEnforcement mode =
        choice == HostEnforcerChoice::kNone ? HostEnforcement::kNone : HostEnforcement::kAffinity;
    return std::unique_ptr<HostEnforcer>(new HostEnforcer(std::move(options), mode, {}));
  }
  std::string why;
  // v2 first: its controllers must all be there for the daemon's groups.
  if (!dirs.unified.empty()) {
    const std::string have = " " + Trimmed(ReadAll(dirs.unified + "/cgroup.controllers")) + " ";
    const bool all = std::ranges::all_of(kControllers, [&](std::string_view c) {
      return have.find(" " + std::string(c) + " ") != std::string::npos;
    });
    if (all) {
      std::unique_ptr<HostEnforcer> v2(new HostEnforcer(options, HostEnforcement::kCgroupV2,
                                                        CgroupDirs{.unified = dirs.unified}));
      const Status made = v2->MakeDaemonGroups();
      if (made.ok()) return v2;
      why = "cgroup v2: " + made.message();
    } else {
      why = "cgroup v2: " + dirs.unified + " lacks the cpu, cpuset or memory controller";
    }
  } else {
    why = "no cgroup v2 hierarchy";
  }
  if (!dirs.cpuset.empty() && !dirs.memory.empty()) {
    std::unique_ptr<HostEnforcer> v1(new HostEnforcer(
        options, HostEnforcement::kCgroupV1,
        CgroupDirs{.cpu = dirs.cpu, .cpuset = dirs.cpuset, .memory = dirs.memory}));
    const Status made = v1->MakeDaemonGroups();
    if (made.ok()) return v1;
    why += "; cgroup v1: " + made.message();
  } else {
    why += "; no cgroup v1 cpuset and memory hierarchies";
  }
  if (choice == HostEnforcerChoice::kCgroup) {
    return FailedPrecondition("no usable cgroup hierarchy (" + why + ")");
  }
  return std::unique_ptr<HostEnforcer>(
      new HostEnforcer(std::move(options), HostEnforcement::kAffinity, {}));
}

std::vector<std::string> HostEnforcer::DaemonGroupDirs() const {
  std::vector<std::string> out;
  for (const std::string* dir : {&dirs_.unified, &dirs_.cpu, &dirs_.cpuset, &dirs_.memory}) {
    const std::string group = *dir + "/" + options_.group_name;
    if (!dir->empty() && std::ranges::find(out, group) == out.end()) out.push_back(group);
  }
  return out;
}

std::vector<std::string> HostEnforcer::JobGroupDirs(JobId job) const {
  std::vector<std::string> out;
  for (const std::string& group : DaemonGroupDirs()) {
    out.push_back(group + "/job-" + std::to_string(job.value()));
  }
  return out;
}

Status HostEnforcer::MakeDaemonGroups() {
  if (mode_ == HostEnforcement::kCgroupV2) {
    // Controllers reach a group's children only through its parent's subtree_control; the
    // kernel refuses that for a non-root group with processes of its own (the daemon's).
    DS_RETURN_IF_ERROR(
        WriteControl(dirs_.unified + "/cgroup.subtree_control", "+cpu +cpuset +memory"));
    const std::string group = dirs_.unified + "/" + options_.group_name;
    DS_RETURN_IF_ERROR(MakeDir(group));
    return WriteControl(group + "/cgroup.subtree_control", "+cpu +cpuset +memory");
  }
  for (const std::string& group : DaemonGroupDirs()) DS_RETURN_IF_ERROR(MakeDir(group));
  // A v1 cpuset takes no process before it has CPUs and memory nodes: the parent's.
  const std::string group = dirs_.cpuset + "/" + options_.group_name;
  for (const char* file : {"/cpuset.cpus", "/cpuset.mems"}) {
    const std::string value = Trimmed(ReadAll(dirs_.cpuset + file));
    if (value.empty()) return Internal("cannot read " + dirs_.cpuset + file);
    if (Trimmed(ReadAll(group + file)) != value) {
      DS_RETURN_IF_ERROR(WriteControl(group + file, value));
    }
  }
  return Status::Ok();
}

std::string HostEnforcer::Describe() const {
  std::string out(HostEnforcementName(mode_));
  const std::vector<std::string> groups = DaemonGroupDirs();
  for (size_t i = 0; i < groups.size(); ++i) out += (i == 0 ? ": groups " : ", ") + groups[i];
  if (mode_ == HostEnforcement::kAffinity) out += ": CPU affinity and a host-memory watchdog";
  if (mode_ == HostEnforcement::kNone) return out + ": CPUs and host memory are not enforced";
  return out + "; " + std::to_string(options_.cores.size()) + " cores (" +
         FormatCpuList(options_.cores) + ")";
}

bool HostEnforcer::NeedsTicks() const {
  std::lock_guard lock(mu_);
  if (!to_remove_.empty()) return true;
  return mode_ == HostEnforcement::kAffinity &&
         std::ranges::any_of(held_, [](const auto& h) { return h.second.grant.memory_mib > 0; });
}

bool HostEnforcer::Watches(JobId job) const {
  if (mode_ != HostEnforcement::kAffinity) return false;
  std::lock_guard lock(mu_);
  const auto it = held_.find(job);
  return it != held_.end() && it->second.grant.memory_mib > 0;
}

std::vector<int> HostEnforcer::CoresNear(GpuMask gpus) const {
  std::set<int> near;
  for (size_t i = 0; i < options_.gpu_cores.size() && i < size_t{kMaxGpusPerNode}; ++i) {
    if (gpus >> i & 1) near.insert(options_.gpu_cores[i].begin(), options_.gpu_cores[i].end());
  }
  return std::vector<int>(near.begin(), near.end());
}

HostGrant HostEnforcer::Reserve(JobId job, int cpus, int64_t memory_mib,
                                const std::vector<int>& near) {
  if (mode_ == HostEnforcement::kNone) return {};
  std::lock_guard lock(mu_);
  if (const auto it = held_.find(job); it != held_.end()) return it->second.grant;
  HostGrant grant;
  grant.cpus = std::max(cpus, 0);
  grant.memory_mib = std::max<int64_t>(memory_mib, 0);
  if (grant.cpus > 0 && grant.cpus < static_cast<int>(options_.cores.size())) {
    std::vector<int> order = options_.cores;
    const auto key = [&](int core) {
      return std::tuple(holders_[core], std::ranges::find(near, core) == near.end(), core);
    };
    std::ranges::sort(order, [&](int a, int b) { return key(a) < key(b); });
    grant.cores.assign(order.begin(), order.begin() + grant.cpus);
    std::ranges::sort(grant.cores);
    for (int core : grant.cores) ++holders_[core];
  }
  held_[job] = {grant, false};
  return grant;
}

Status HostEnforcer::WriteGroup(JobId job, const HostGrant& grant, int pid) {
  const std::string name = "/" + options_.group_name + "/job-" + std::to_string(job.value());
  const std::string cores = FormatCpuList(grant.cores.empty() ? options_.cores : grant.cores);
  const std::string pid_text = std::to_string(pid);
  const int64_t bytes = grant.memory_mib << 20;
  if (mode_ == HostEnforcement::kCgroupV2) {
    const std::string dir = dirs_.unified + name;
    DS_RETURN_IF_ERROR(MakeDir(dir));
    DS_RETURN_IF_ERROR(WriteControl(dir + "/cpuset.cpus", cores));
    DS_RETURN_IF_ERROR(WriteControl(
        dir + "/cpu.max",
        (grant.cpus > 0 ? std::to_string(grant.cpus * kCfsPeriodUs) : std::string("max")) + " " +
            std::to_string(kCfsPeriodUs)));
    DS_RETURN_IF_ERROR(
        WriteControl(dir + "/memory.max", bytes > 0 ? std::to_string(bytes) : std::string("max")));
    if (Exists(dir + "/memory.swap.max")) {
      DS_RETURN_IF_ERROR(WriteControl(dir + "/memory.swap.max", bytes > 0 ? "0" : "max"));
    }
    return WriteControl(dir + "/cgroup.procs", pid_text);
  }
  const std::string cpuset = dirs_.cpuset + name;
  DS_RETURN_IF_ERROR(MakeDir(cpuset));
  DS_RETURN_IF_ERROR(WriteControl(cpuset + "/cpuset.cpus", cores));
  DS_RETURN_IF_ERROR(
      WriteControl(cpuset + "/cpuset.mems",
                   Trimmed(ReadAll(dirs_.cpuset + "/" + options_.group_name + "/cpuset.mems"))));
  const std::string memory = dirs_.memory + name;
  DS_RETURN_IF_ERROR(MakeDir(memory));
  const std::string limit = bytes > 0 ? std::to_string(bytes) : std::string("-1");
  // memsw (memory + swap) must stay at or above the memory limit: raised first, lowered after.
  const bool memsw = Exists(memory + "/memory.memsw.limit_in_bytes");
  if (memsw) DS_RETURN_IF_ERROR(WriteControl(memory + "/memory.memsw.limit_in_bytes", "-1"));
  DS_RETURN_IF_ERROR(WriteControl(memory + "/memory.limit_in_bytes", limit));
  if (memsw) DS_RETURN_IF_ERROR(WriteControl(memory + "/memory.memsw.limit_in_bytes", limit));
  std::vector<std::string> groups = {cpuset, memory};
  if (!dirs_.cpu.empty() && dirs_.cpu != dirs_.cpuset) {
    const std::string cpu = dirs_.cpu + name;
    DS_RETURN_IF_ERROR(MakeDir(cpu));
    DS_RETURN_IF_ERROR(WriteControl(cpu + "/cpu.cfs_period_us", std::to_string(kCfsPeriodUs)));
    DS_RETURN_IF_ERROR(
        WriteControl(cpu + "/cpu.cfs_quota_us",
                     grant.cpus > 0 ? std::to_string(grant.cpus * kCfsPeriodUs) : "-1"));
    groups.push_back(cpu);
  }
  for (const std::string& group : groups) {
    DS_RETURN_IF_ERROR(WriteControl(group + "/cgroup.procs", pid_text));
  }
  return Status::Ok();
}

Status HostEnforcer::Confine(JobId job, int pid) {
  HostGrant grant;
  {
    std::lock_guard lock(mu_);
    const auto it = held_.find(job);
    if (it == held_.end()) return Status::Ok();
    grant = it->second.grant;
  }
  if (grant.empty() || mode_ == HostEnforcement::kNone) return Status::Ok();
  if (mode_ == HostEnforcement::kAffinity) {
    if (grant.cores.empty()) return Status::Ok();
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int core : grant.cores) CPU_SET(core, &set);
    if (sched_setaffinity(pid, sizeof(set), &set) != 0) {
      return Internal("sched_setaffinity(" + std::to_string(pid) + ", " +
                      FormatCpuList(grant.cores) + "): " + std::strerror(errno));
    }
    return Status::Ok();
  }
  return WriteGroup(job, grant, pid);
}

void HostEnforcer::Readopt(JobId job, int pid, int64_t memory_mib) {
  if (mode_ == HostEnforcement::kNone) return;
  std::vector<int> cores;
  const std::string cpuset_file =
      (mode_ == HostEnforcement::kCgroupV2 ? dirs_.unified : dirs_.cpuset) + "/" +
      options_.group_name + "/job-" + std::to_string(job.value()) + "/cpuset.cpus";
  const bool grouped = mode_ != HostEnforcement::kAffinity && Exists(cpuset_file);
  if (grouped) {
    Result<std::vector<int>> listed = ParseCpuList(ReadAll(cpuset_file));
    if (listed.ok()) cores = *std::move(listed);
  } else {
    cores = AffinityOf(pid);
  }
  if (cores == options_.cores) cores.clear();
  std::lock_guard lock(mu_);
  if (held_.contains(job)) return;
  HostGrant grant;
  grant.cores = cores;
  grant.cpus = static_cast<int>(cores.size());
  grant.memory_mib = memory_mib;
  for (int core : grant.cores) ++holders_[core];
  held_[job] = {grant, false};
}

int64_t HostEnforcer::KilledForMemory(JobId job) const {
  HostGrant grant;
  {
    std::lock_guard lock(mu_);
    const auto it = held_.find(job);
    if (it == held_.end() || it->second.grant.memory_mib == 0) return 0;
    if (it->second.killed_for_memory) return it->second.grant.memory_mib;
    grant = it->second.grant;
  }
  const std::string group = "/" + options_.group_name + "/job-" + std::to_string(job.value());
  int64_t kills = 0;
  if (mode_ == HostEnforcement::kCgroupV2) {
    kills = KeyedValue(ReadAll(dirs_.unified + group + "/memory.events"), "oom_kill");
  } else if (mode_ == HostEnforcement::kCgroupV1) {
    kills = KeyedValue(ReadAll(dirs_.memory + group + "/memory.oom_control"), "oom_kill");
  }
  return kills > 0 ? grant.memory_mib : 0;
}

std::vector<JobId> HostEnforcer::OverMemory(const std::map<JobId, int>& groups) {
  std::vector<JobId> over;
  if (mode_ != HostEnforcement::kAffinity) return over;
  std::set<int> wanted;
  for (const auto& [job, pgid] : groups) {
    if (pgid > 0) wanted.insert(pgid);
  }
  const std::map<int, int64_t> resident = ResidentBytesByGroup(wanted);
  std::lock_guard lock(mu_);
  for (const auto& [job, pgid] : groups) {
    const auto it = held_.find(job);
    if (it == held_.end() || it->second.grant.memory_mib == 0 || it->second.killed_for_memory) {
      continue;
    }
    const auto used = resident.find(pgid);
    if (used != resident.end() && used->second > (it->second.grant.memory_mib << 20)) {
      it->second.killed_for_memory = true;
      over.push_back(job);
    }
  }
  return over;
}

bool HostEnforcer::RemoveGroup(const std::string& dir) {
  if (!Exists(dir)) return true;
  // What is left is the job's (a process it left behind): it goes with the job.
  std::istringstream procs(ReadAll(dir + "/cgroup.procs"));
  for (int pid; procs >> pid;) {
    if (pid > 0) kill(pid, SIGKILL);
  }
  return rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

void HostEnforcer::Release(JobId job) {
  std::lock_guard lock(mu_);
  const auto it = held_.find(job);
  if (it == held_.end()) return;
  for (int core : it->second.grant.cores) --holders_[core];
  held_.erase(it);
  if (mode_ != HostEnforcement::kCgroupV1 && mode_ != HostEnforcement::kCgroupV2) return;
  for (const std::string& dir : JobGroupDirs(job)) {
    if (!RemoveGroup(dir)) to_remove_.push_back(dir);
  }
}

void HostEnforcer::Sweep() {
  std::lock_guard lock(mu_);
  std::erase_if(to_remove_, [](const std::string& dir) { return RemoveGroup(dir); });
}

void HostEnforcer::RemoveStaleGroups(const std::set<JobId>& keep) {
  std::lock_guard lock(mu_);
  for (const std::string& group : DaemonGroupDirs()) {
    DIR* dir = opendir(group.c_str());
    if (dir == nullptr) continue;
    std::vector<std::string> stale;
    while (const dirent* entry = readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (!name.starts_with("job-")) continue;
      uint32_t id = 0;
      const auto [p, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), id);
      if (ec != std::errc() || p != name.data() + name.size()) continue;
      if (!keep.contains(JobId(id))) stale.push_back(group + "/" + std::string(name));
    }
    closedir(dir);
    for (const std::string& path : stale) {
      if (!RemoveGroup(path)) to_remove_.push_back(path);
    }
  }
}

}  // namespace dlsched::daemon
