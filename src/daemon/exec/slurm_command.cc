#include "daemon/exec/slurm_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace dlsched::daemon {
namespace {

constexpr size_t kMaxOutputBytes = 64 << 20;

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

// Closes both ends of the pipes made so far.
void ClosePipes(std::array<std::array<int, 2>, 2>& pipes) {
  for (auto& p : pipes) {
    for (int& fd : p) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }
}

}  // namespace

std::string CommandLineText(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += a.size() > 80 ? a.substr(0, 77) + "..." : a;
  }
  return out;
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const CommandOptions& options) {
  if (argv.empty()) return InvalidArgument("RunCommand: empty argv");
  const std::string& name = argv[0];
  std::array<std::array<int, 2>, 2> pipes = {{{-1, -1}, {-1, -1}}};
  for (auto& p : pipes) {
    if (pipe2(p.data(), O_CLOEXEC) != 0) {
      const std::string why = std::strerror(errno);
      ClosePipes(pipes);
      return Unavailable(name + ": pipe: " + why);
    }
  }
  std::vector<std::string> args = argv;
  std::vector<char*> c_argv;
  for (std::string& a : args) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  std::vector<std::string> env = options.env;
  std::vector<char*> c_env;
  for (std::string& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipes[0][1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  // The daemon blocks its stop signals; the command must not inherit that.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, name.c_str(), &actions, &attr, c_argv.data(),
                              options.env.empty() ? environ : c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipes[0][1]);
  close(pipes[1][1]);
  pipes[0][1] = pipes[1][1] = -1;
  if (rc != 0) {
    ClosePipes(pipes);
    return Unavailable(name + ": cannot run: " + std::strerror(rc));
  }

  CommandOutput output;
  std::array<std::string*, 2> sinks = {&output.out, &output.err};
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  bool timed_out = false;
  std::array<pollfd, 2> fds = {pollfd{pipes[0][0], POLLIN, 0}, pollfd{pipes[1][0], POLLIN, 0}};
  char buffer[65536];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int n =
        poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
      if (got > 0) {
        const size_t room = kMaxOutputBytes - std::min(kMaxOutputBytes, sinks[i]->size());
        sinks[i]->append(buffer, std::min(static_cast<size_t>(got), room));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;  // EOF (or a read error): closed below
      }
    }
  }
  if (timed_out) kill(pid, SIGKILL);
  ClosePipes(pipes);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
    return Unavailable(CommandLineText(argv) + ": no answer within " + std::to_string(ms.count()) +
                       " ms (killed)");
  }
  if (WIFEXITED(status)) output.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) output.exit_code = 128 + WTERMSIG(status);
  return output;
}

Result<std::string> RunChecked(const std::vector<std::string>& argv,
                               const CommandOptions& options) {
  DS_ASSIGN_OR_RETURN(CommandOutput output, RunCommand(argv, options));
  if (output.exit_code != 0) {
    std::string err = Trimmed(std::move(output.err));
    if (err.empty()) err = Trimmed(std::move(output.out));
    if (err.size() > 2000) err = err.substr(0, 2000) + "...";
    return Unavailable(CommandLineText(argv) + " failed (exit " + std::to_string(output.exit_code) +
                       ")" + (err.empty() ? "" : ": " + err));
  }
  return std::move(output.out);
}

}  // namespace dlsched::daemon
