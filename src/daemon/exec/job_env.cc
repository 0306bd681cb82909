#include "daemon/exec/job_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daemon/exec/job_files.h"

namespace dlsched::daemon {
namespace {

constexpr std::array<const char*, 10> kInherited = {"PATH",  "HOME",           "LANG", "LC_ALL",
                                                    "TZ",    "TMPDIR",         "USER", "LOGNAME",
                                                    "SHELL", "LD_LIBRARY_PATH"};

std::optional<double> ParseNumber(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (const char* name : kInherited) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  if (!env.contains("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return env;
}

int FrameworkPort(Framework framework) {
  if (framework != Framework::kPyTorch && framework != Framework::kTensorFlow) return 0;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string GpuList(GpuMask gpus) {
  std::string out;
  for (int i = 0; i < kMaxGpusPerNode; ++i) {
    if ((gpus >> i) & 1) {
      if (!out.empty()) out += ',';
      out += std::to_string(i);
    }
  }
  return out;
}

namespace {

// "n0000:0,1" per part, ';' between parts; with `host`, each part's non-zero CPUs and memory
// after it ("/cpus=8/mem=4096").
std::string PartsText(const Cluster& cluster, const Placement& placement, bool host) {
  std::string out;
  for (const NodeGpus& part : placement.parts) {
    if (!out.empty()) out += ';';
    out += cluster.node(part.node).name;
    out += ':';
    out += GpuList(part.gpus);
    if (host && part.cpus != 0) out += "/cpus=" + std::to_string(part.cpus);
    if (host && part.memory_mib != 0) out += "/mem=" + std::to_string(part.memory_mib);
  }
  return out;
}

// A non-negative decimal integer that is all of `text`.
template <typename Int>
std::optional<Int> ParseCount(std::string_view text) {
  Int value = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// The "/cpus=N/mem=M" suffixes of a part into `part`.
Status ParseHostSuffixes(std::string_view whole, std::string_view suffixes, NodeGpus& part) {
  while (!suffixes.empty()) {
    suffixes.remove_prefix(1);  // the '/'
    const size_t end = std::min(suffixes.find('/'), suffixes.size());
    const std::string_view item = suffixes.substr(0, end);
    suffixes.remove_prefix(end);
    std::optional<int64_t> value;
    if (item.starts_with("cpus=")) {
      const std::optional<int> cpus = ParseCount<int>(item.substr(5));
      if (cpus) part.cpus = *cpus;
      value = cpus;
    } else if (item.starts_with("mem=")) {
      value = ParseCount<int64_t>(item.substr(4));
      if (value) part.memory_mib = *value;
    }
    if (!value) {
      return InvalidArgument("bad '" + std::string(item) + "' in placement part '" +
                             std::string(whole) + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string PlacementText(const Cluster& cluster, const Placement& placement) {
  return PartsText(cluster, placement, /*host=*/true);
}

std::string PlacementGpusText(const Cluster& cluster, const Placement& placement) {
  return PartsText(cluster, placement, /*host=*/false);
}

Result<Placement> ParsePlacementText(const Cluster& cluster, std::string_view text) {
  Placement placement;
  while (!text.empty()) {
    const size_t end = std::min(text.find(';'), text.size());
    const std::string_view part = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgument("placement part '" + std::string(part) + "' lacks ':'");
    }
    const std::string_view name = part.substr(0, colon);
    NodeId node;
    for (int n = 0; n < cluster.num_nodes(); ++n) {
      if (cluster.node(NodeId(n)).name == name) node = NodeId(n);
    }
    if (!node.valid()) return InvalidArgument("no node '" + std::string(name) + "'");
    NodeGpus gpus{node, 0};
    std::string_view list = part.substr(colon + 1);
    const size_t slash = std::min(list.find('/'), list.size());
    DS_RETURN_IF_ERROR(ParseHostSuffixes(part, list.substr(slash), gpus));
    list = list.substr(0, slash);
    while (!list.empty()) {
      const size_t comma = std::min(list.find(','), list.size());
      int index = -1;
      const auto [p, ec] = std::from_chars(list.data(), list.data() + comma, index);
      const int have = static_cast<int>(cluster.node(node).gpus.size());
      if (ec != std::errc() || p != list.data() + comma || index < 0 || index >= have) {
        return InvalidArgument("bad GPU index in '" + std::string(part) + "'");
      }
      gpus.gpus |= GpuMask{1} << index;
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
    if (gpus.gpus == 0 && gpus.cpus == 0 && gpus.memory_mib == 0) {
      return InvalidArgument("nothing held in '" + std::string(part) + "'");
    }
    placement.parts.push_back(gpus);
  }
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return placement;
}

LaunchSpec BuildLaunchSpec(const JobRequest& request, const Job& job, const Placement& placement,
                           const Cluster& cluster, const std::string& job_dir,
                           const std::map<std::string, std::string>& inherited, int port,
                           const std::optional<UnixAccount>& account) {
  LaunchSpec launch;
  launch.job = job.id;
  launch.argv = request.command;
  launch.workdir = request.workdir.empty() ? job_dir : request.workdir;
  launch.job_dir = job_dir;
  launch.framework = request.framework;
  launch.port = port;
  if (!placement.parts.empty()) {
    launch.cpus = placement.parts.front().cpus;
    launch.host_memory_mib = placement.parts.front().memory_mib;
    launch.gpus = placement.parts.front().gpus;
  }
  if (request.max_run_time) {
    launch.time_limit = std::max(Duration(0), *request.max_run_time - job.run_time);
  }

  std::map<std::string, std::string> env = inherited;
  if (account) {
    launch.account = account;
    env["USER"] = account->name;
    env["LOGNAME"] = account->name;
    env["HOME"] = account->home.empty() ? job_dir : account->home;
  }
  for (const auto& [name, value] : request.env) env[name] = value;
  const GpuMask first = placement.parts.empty() ? 0 : placement.parts.front().gpus;
  env["CUDA_VISIBLE_DEVICES"] = GpuList(first);
  // Indices are NVML's (PCI bus order); CUDA numbers fastest-first unless told otherwise.
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["DLSCHED_JOB_ID"] = std::to_string(job.id.value());
  env["DLSCHED_JOB_NAME"] = request.spec.name;
  env["DLSCHED_USER"] = request.spec.user;
  env["DLSCHED_NUM_GPUS"] = std::to_string(placement.num_gpus());
  env["DLSCHED_CHECKPOINT_DIR"] = job_dir + "/checkpoint";
  env["DLSCHED_PROGRESS_FILE"] = job_dir + "/progress";
  env["DLSCHED_RESTART_COUNT"] = std::to_string(job.preemptions);
  env["DLSCHED_NODES"] = PlacementGpusText(cluster, placement);

  switch (request.framework) {
    case Framework::kCustom:
      break;
    case Framework::kPyTorch:
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(port);
      env["WORLD_SIZE"] = "1";
      env["RANK"] = "0";
      env["LOCAL_RANK"] = "0";
      break;
    case Framework::kTensorFlow: {
      nlohmann::json tf = {{"cluster", {{"worker", {"127.0.0.1:" + std::to_string(port)}}}},
                           {"task", {{"type", "worker"}, {"index", 0}}}};
      env["TF_CONFIG"] = tf.dump();
      break;
    }
    case Framework::kMpi:
    case Framework::kHorovod: {
      std::string hosts;
      std::string hostfile;
      for (const NodeGpus& part : placement.parts) {
        const std::string host =
            placement.parts.size() == 1 ? "localhost" : cluster.node(part.node).name;
        const std::string slots = std::to_string(CountGpus(part.gpus));
        hosts += (hosts.empty() ? "" : ",") + host + ":" + slots;
        hostfile += host + " slots=" + slots + "\n";
      }
      const std::string path = job_dir + "/hostfile";
      env["DLSCHED_HOSTS"] = hosts;
      env["DLSCHED_HOSTFILE"] = path;
      env["OMPI_MCA_orte_default_hostfile"] = path;
      launch.files.emplace_back(path, hostfile);
      break;
    }
  }
  for (auto& [name, value] : env) launch.env.push_back(name + "=" + value);
  return launch;
}

std::optional<Progress> ParseProgress(std::string_view line) {
  const size_t slash = line.find('/');
  Progress progress;
  const std::optional<double> done = ParseNumber(line.substr(0, slash));
  if (!done) return std::nullopt;
  progress.done = *done;
  if (slash != std::string_view::npos) {
    const std::optional<double> total = ParseNumber(line.substr(slash + 1));
    if (!total || *total <= 0) return std::nullopt;
    progress.total = *total;
  }
  return progress;
}

std::optional<Progress> ReadProgress(const std::string& job_dir) {
  // The job's file: never through a link, never blocking, one short line at most.
  const std::string text = ReadSmallFile(job_dir + "/progress", 256);
  if (text.empty()) return std::nullopt;
  return ParseProgress(std::string_view(text).substr(0, text.find('\n')));
}

std::string FormatProgress(const Progress& progress) {
  // Shortest text that reads back to the same double.
  auto number = [](double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, ec == std::errc() ? end : buf);
  };
  std::string line = number(progress.done);
  if (progress.total > 0) line += "/" + number(progress.total);
  return line;
}

Status WriteProgress(const std::string& job_dir, const Progress& progress) {
  const std::string path = job_dir + "/progress";
  // A temporary name of its own per writer: two concurrent reports never share one.
  std::string tmp = path + ".XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return IoError("cannot write " + path + ": " + std::strerror(errno));
  const std::string line = FormatProgress(progress) + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int write_errno = errno;
  // mkstemp creates the file 0600; the job and readers expect an ordinary file of the job's
  // account (the directory's owner), which the job may overwrite with its next report.
  fchmod(fd, 0644);
  struct stat dir {};
  if (geteuid() == 0 && stat(job_dir.c_str(), &dir) == 0) {
    [[maybe_unused]] const int owned = fchown(fd, dir.st_uid, dir.st_gid);
  }
  close(fd);
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(written ? errno : write_errno);
    unlink(tmp.c_str());
    return IoError("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace dlsched::daemon
