#include "daemon/exec/share_env.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace dlsched::daemon {
namespace {

void SetVar(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  const std::string prefix = std::string(name) + "=";
  std::string entry = prefix + std::string(value);
  const auto it = std::ranges::lower_bound(env, prefix);
  if (it != env.end() && it->starts_with(prefix)) {
    *it = std::move(entry);
  } else {
    env.insert(it, std::move(entry));
  }
}

std::vector<std::string> MpsEnv(const MpsDirs& dirs, std::string_view path) {
  std::vector<std::string> env = {"CUDA_MPS_LOG_DIRECTORY=" + dirs.log,
                                  "CUDA_MPS_PIPE_DIRECTORY=" + dirs.pipe};
  if (!path.empty()) env.push_back("PATH=" + std::string(path));
  return env;
}

}  // namespace

std::string_view ShareEnforcerName(ShareEnforcer enforcer) {
  return enforcer == ShareEnforcer::kMps ? "mps" : "none";
}

Result<ShareEnforcer> ParseShareEnforcer(std::string_view name) {
  if (name == "none") return ShareEnforcer::kNone;
  if (name == "mps") return ShareEnforcer::kMps;
  return InvalidArgument("share enforcer: want 'none' or 'mps', got '" + std::string(name) + "'");
}

MpsDirs MpsDirsFor(const std::string& workdir, std::string_view node, int gpu) {
  const std::string base = workdir + "/mps/" + std::string(node) + "/" + std::to_string(gpu);
  return {base + "/pipe", base + "/log"};
}

void AddShareEnv(const GpuShare& share, ShareEnforcer enforcer, const std::string& workdir,
                 std::vector<std::string>& env) {
  SetVar(env, "DLSCHED_GPU_MEMORY_LIMIT_MIB", std::to_string(share.memory_limit_mib));
  if (enforcer != ShareEnforcer::kMps) return;
  const MpsDirs dirs = MpsDirsFor(workdir, share.node, share.gpu);
  SetVar(env, "CUDA_MPS_PIPE_DIRECTORY", dirs.pipe);
  SetVar(env, "CUDA_MPS_LOG_DIRECTORY", dirs.log);
  SetVar(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
         "0=" + std::to_string(share.memory_limit_mib) + "M");
  SetVar(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
         std::to_string(std::clamp(share.active_thread_percentage, 1, 100)));
  SetVar(env, "CUDA_VISIBLE_DEVICES", "0");
}

MpsCommand MpsStartCommand(const std::string& binary, const MpsDirs& dirs, int gpu,
                           std::string_view path) {
  MpsCommand command{{binary, "-d"}, MpsEnv(dirs, path), ""};
  command.env.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  command.env.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(gpu));
  std::ranges::sort(command.env);
  return command;
}

MpsCommand MpsQuitCommand(const std::string& binary, const MpsDirs& dirs, std::string_view path) {
  return {{binary}, MpsEnv(dirs, path), "quit\n"};
}

bool MpsControlRunning(const MpsDirs& dirs) {
  std::ifstream in(dirs.pipe + "/nvidia-cuda-mps-control.pid");
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string FindOnPath(std::string_view name, std::string_view path) {
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find(':', begin), path.size());
    const std::string_view dir = path.substr(begin, end - begin);
    if (!dir.empty()) {
      const std::string candidate = std::string(dir) + "/" + std::string(name);
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    begin = end + 1;
  }
  return "";
}

Status RunMpsCommand(const MpsCommand& command) {
  const std::string what =
      command.argv.front() + (command.argv.size() > 1 ? " " + command.argv[1] : "");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + std::strerror(errno));
  // The input (a few bytes) goes into the pipe's buffer before the command starts: no write can
  // block on it or meet a reader that has gone.
  const ssize_t written = write(fds[1], command.input.data(), command.input.size());
  close(fds[1]);
  if (written != static_cast<ssize_t>(command.input.size())) {
    close(fds[0]);
    return IoError(what + ": could not write its input");
  }
  std::vector<char*> argv;
  for (const std::string& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : command.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  if (rc != 0) return IoError("cannot run " + what + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return IoError(what + ": waitpid: " + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return IoError(what + " failed (" +
                   (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                      : "killed by signal " + std::to_string(WTERMSIG(status))) +
                   ")");
  }
  return Status::Ok();
}

Status MpsControlDaemons::Start(const Cluster& cluster) {
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const NodeSpec& node = cluster.node(NodeId(n));
    for (size_t g = 0; g < node.gpus.size(); ++g) {
      const int gpu = static_cast<int>(g);
      const MpsDirs dirs = MpsDirsFor(workdir_, node.name, gpu);
      for (const std::string& dir : {dirs.pipe, dirs.log}) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) return IoError("cannot create " + dir + ": " + ec.message());
        std::filesystem::permissions(dir, std::filesystem::perms(0755), ec);
      }
      if (!MpsControlRunning(dirs)) {
        DS_RETURN_IF_ERROR(
            RunMpsCommand(MpsStartCommand(binary_, dirs, gpu, path_))
                .WithPrefix("MPS control daemon of " + node.name + " GPU " + std::to_string(gpu)));
      }
      running_.push_back(dirs);
    }
  }
  return Status::Ok();
}

Status MpsControlDaemons::Stop() {
  Status first = Status::Ok();
  for (const MpsDirs& dirs : running_) {
    Status quit = RunMpsCommand(MpsQuitCommand(binary_, dirs, path_));
    if (first.ok() && !quit.ok()) first = quit.WithPrefix(dirs.pipe);
  }
  running_.clear();
  return first;
}

}  // namespace dlsched::daemon
