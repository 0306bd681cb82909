#include "daemon/exec/process_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

// Runs "$@" in $2 and records its exit status in $1 (see the header). `trap : TERM` (a no-op
// handler, not an ignore) lets the wrapper outlive the SIGTERM sent to the group while the job
// itself still sees the default disposition.
constexpr const char* kWrapper =
    "trap : TERM INT HUP\n"
    "f=$1\n"
    "cd \"$2\" || { echo \"dlsched: cannot enter working directory $2\" >&2; "
    "echo 126 > \"$f\"; exit 126; }\n"
    "shift 2\n"
    "\"$@\"\n"
    "c=$?\n"
    "echo \"$c\" > \"$f\"\n"
    "exit \"$c\"\n";

int PidfdOpen(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return {};
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Writes `content` to `path` atomically (temp file + rename).
bool WriteSmallFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    if (!file) return false;
    file << content;
    if (!file.flush()) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

const char* IntentName(int intent) {
  static constexpr const char* kNames[] = {"", "preempt", "kill", "timeout"};
  return kNames[intent];
}

// Signals the process group led by `pid`. Never with a pid <= 0: kill(0, ...) and kill(-1, ...)
// would signal the daemon's own group or every process it may signal. (An adopted job whose pid
// file was never written has pid 0 until the monitor reports it lost.)
void SignalGroup(int pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

std::string SignalText(int sig) {
  const char* name = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
}

}  // namespace

std::optional<uint64_t> ProcessStartTicks(int pid) {
  if (pid <= 0) return std::nullopt;
  const std::string stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) S ppid ..." — comm may contain spaces and parentheses; fields after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  std::string state;
  rest >> state;  // field 3
  if (state == "Z" || state == "X" || state.empty()) return std::nullopt;
  for (int i = 4; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  uint64_t ticks = 0;
  try {
    ticks = std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return ticks;
}

ProcessExecutor::ProcessExecutor(Options options, Resolver resolver, Sink sink)
    : options_(options), resolver_(std::move(resolver)), sink_(std::move(sink)) {}

ProcessExecutor::~ProcessExecutor() { Stop(); }

Status ProcessExecutor::Start() {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Internal(std::string("eventfd: ") + std::strerror(errno));
  monitor_ = std::thread([this] { MonitorLoop(); });
  return Status::Ok();
}

void ProcessExecutor::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !monitor_.joinable()) return;
    stopping_ = true;
  }
  Wake();
  if (monitor_.joinable()) monitor_.join();
  std::lock_guard lock(mu_);
  for (auto& [job, proc] : procs_) {
    if (proc.pidfd >= 0) close(proc.pidfd);
    proc.pidfd = -1;
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
}

void ProcessExecutor::Wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void ProcessExecutor::Launch(const Job& job, const Placement& placement, Timestamp) {
  Result<LaunchSpec> spec = resolver_(job, placement);
  if (!spec.ok()) {
    queued_.push_back({Action::kLaunch, job.id, std::nullopt});
    sink_({JobLaunchFailed{job.id, spec.status().message()}, std::nullopt});
    return;
  }
  queued_.push_back({Action::kLaunch, job.id, std::move(spec).value()});
}

void ProcessExecutor::Preempt(const Job& job, Timestamp) {
  queued_.push_back({Action::kPreempt, job.id, std::nullopt});
}

void ProcessExecutor::Kill(const Job& job, Timestamp) {
  queued_.push_back({Action::kKill, job.id, std::nullopt});
}

std::vector<ProcessExecutor::QueuedAction> ProcessExecutor::Queued() const {
  static constexpr std::string_view kKinds[] = {"launch", "preempt", "kill"};
  std::vector<QueuedAction> actions;
  for (const Action& a : queued_) actions.push_back({a.job, kKinds[a.kind]});
  return actions;
}

void ProcessExecutor::Flush() {
  std::vector<Action> actions;
  actions.swap(queued_);
  for (Action& a : actions) {
    switch (a.kind) {
      case Action::kLaunch:
        if (a.launch) DoLaunch(*a.launch);
        break;
      case Action::kPreempt:
        DoStop(a.job, Intent::kPreempt);
        break;
      case Action::kKill:
        DoStop(a.job, Intent::kKill);
        break;
    }
  }
}

void ProcessExecutor::DoLaunch(const LaunchSpec& spec) {
  auto fail = [&](const std::string& why) {
    sink_({JobLaunchFailed{spec.job, why}, std::nullopt});
  };
  std::error_code ec;
  fs::create_directories(spec.job_dir + "/checkpoint", ec);
  if (ec) return fail("cannot create " + spec.job_dir + ": " + ec.message());
  fs::remove(spec.job_dir + "/exit", ec);
  fs::remove(spec.job_dir + "/stop", ec);
  for (const auto& [path, content] : spec.files) {
    if (!WriteSmallFile(path, content)) return fail("cannot write " + path);
  }
  const std::string exit_file = spec.job_dir + "/exit";
  const std::string out_log = spec.job_dir + "/stdout.log";
  const std::string err_log = spec.job_dir + "/stderr.log";

  // argv: sh -c WRAPPER dlsched-job EXIT_FILE WORKDIR ARGV...
  std::vector<std::string> args = {"/bin/sh",     "-c",      kWrapper,
                                   "dlsched-job", exit_file, spec.workdir};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  // No descriptor of the daemon (listening socket, database) leaks into a job.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail(std::string("spawn: ") + std::strerror(rc));

  Proc proc;
  proc.job = spec.job;
  proc.pid = pid;
  proc.pidfd = PidfdOpen(pid);
  proc.start_ticks = ProcessStartTicks(pid).value_or(0);
  proc.job_dir = spec.job_dir;
  if (spec.time_limit) {
    proc.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(*spec.time_limit);
  }
  WriteSmallFile(spec.job_dir + "/pid",
                 std::to_string(pid) + " " + std::to_string(proc.start_ticks) + "\n");
  Watch(std::move(proc));
}

void ProcessExecutor::Watch(Proc proc) {
  {
    std::lock_guard lock(mu_);
    const JobId job = proc.job;
    auto [it, inserted] = procs_.try_emplace(job, std::move(proc));
    DS_CHECK(inserted) << "job " << job << " launched twice";
  }
  Wake();
}

void ProcessExecutor::StopLocked(Proc& proc, Intent intent, Clock::time_point now) {
  if (proc.intent == Intent::kNone || intent == Intent::kKill) proc.intent = intent;
  WriteSmallFile(proc.job_dir + "/stop", std::string(IntentName(static_cast<int>(proc.intent))));
  SignalGroup(proc.pid, SIGTERM);
  proc.kill_at =
      std::min(proc.kill_at, now + std::chrono::duration_cast<Clock::duration>(options_.grace));
}

void ProcessExecutor::DoStop(JobId job, Intent intent) {
  {
    std::lock_guard lock(mu_);
    auto it = procs_.find(job);
    // Not found: the process has already ended and its outcome is on its way.
    if (it == procs_.end()) return;
    StopLocked(it->second, intent, Clock::now());
  }
  Wake();
}

void ProcessExecutor::Adopt(JobId job, const std::string& job_dir,
                            std::optional<Duration> time_left) {
  Proc proc;
  proc.job = job;
  proc.child = false;
  proc.job_dir = job_dir;
  std::istringstream pid_line(ReadSmallFile(job_dir + "/pid"));
  pid_line >> proc.pid >> proc.start_ticks;
  const std::string stop = ReadSmallFile(job_dir + "/stop");
  if (stop == "preempt") proc.intent = Intent::kPreempt;
  if (stop == "kill") proc.intent = Intent::kKill;
  if (stop == "timeout") proc.intent = Intent::kTimeout;
  const auto now = Clock::now();
  if (time_left) {
    proc.deadline = now + std::chrono::duration_cast<Clock::duration>(*time_left);
  }
  const std::optional<uint64_t> start = ProcessStartTicks(proc.pid);
  if (proc.pid > 0 && start && *start == proc.start_ticks) {
    proc.pidfd = PidfdOpen(proc.pid);
    // Checked again after opening the pidfd: the pid cannot be reused while we hold it.
    const std::optional<uint64_t> again = ProcessStartTicks(proc.pid);
    if (!again || *again != proc.start_ticks) {
      if (proc.pidfd >= 0) close(proc.pidfd);
      proc.pidfd = -1;
    }
    if (proc.intent != Intent::kNone) {
      std::lock_guard lock(mu_);
      // A stop was under way when the previous daemon died: finish it.
      SignalGroup(proc.pid, SIGTERM);
      proc.kill_at = now + std::chrono::duration_cast<Clock::duration>(options_.grace);
    }
  }
  Watch(std::move(proc));
}

std::optional<ProcessExecutor::ProcessInfo> ProcessExecutor::Info(JobId job) const {
  std::lock_guard lock(mu_);
  auto it = procs_.find(job);
  if (it == procs_.end()) return std::nullopt;
  return ProcessInfo{it->second.pid, it->second.start_ticks,
                     IntentName(static_cast<int>(it->second.intent))};
}

size_t ProcessExecutor::watched() const {
  std::lock_guard lock(mu_);
  return procs_.size();
}

void ProcessExecutor::KillAll() {
  std::lock_guard lock(mu_);
  for (auto& [job, proc] : procs_) {
    SignalGroup(proc.pid, SIGKILL);
  }
}

ExecutorReport ProcessExecutor::Outcome(const Proc& proc, std::optional<int> exit_code) const {
  switch (proc.intent) {
    case Intent::kPreempt:
      return {JobSuspended{proc.job, 0}, exit_code};
    case Intent::kKill:
      return {JobFinished{proc.job, JobState::kKilled, "cancelled"}, exit_code};
    case Intent::kTimeout:
      return {JobFinished{proc.job, JobState::kFailed, "max run time exceeded"}, exit_code};
    case Intent::kNone:
      break;
  }
  if (!exit_code) {
    return {JobLaunchFailed{proc.job, "process lost while the daemon was down (no exit status)"},
            std::nullopt};
  }
  if (*exit_code == 0) return {JobFinished{proc.job, JobState::kSucceeded, "exit code 0"}, 0};
  std::string detail = "exit code " + std::to_string(*exit_code);
  if (*exit_code > 128 && *exit_code < 128 + 65)
    detail += " (" + SignalText(*exit_code - 128) + ")";
  return {JobFinished{proc.job, JobState::kFailed, detail}, exit_code};
}

std::optional<ExecutorReport> ProcessExecutor::CheckLocked(Proc& proc, Clock::time_point now) {
  std::optional<int> exit_code;
  bool ended = false;
  if (proc.child) {
    int status = 0;
    const pid_t r = waitpid(proc.pid, &status, WNOHANG);
    if (r == proc.pid) {
      ended = true;
      if (WIFEXITED(status)) exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exit_code = 128 + WTERMSIG(status);
    } else if (r < 0 && errno == ECHILD) {
      ended = true;  // reaped elsewhere; fall back to the exit file
    }
  } else {
    const std::optional<uint64_t> start = ProcessStartTicks(proc.pid);
    ended = proc.pid <= 0 || !start || *start != proc.start_ticks;
  }
  if (ended) {
    if (!proc.child || !exit_code) {
      const std::string text = ReadSmallFile(proc.job_dir + "/exit");
      try {
        if (!text.empty()) exit_code = std::stoi(text);
      } catch (const std::exception&) {
        // A torn write: no status.
      }
    }
    return Outcome(proc, exit_code);
  }
  if (now >= proc.deadline && proc.intent == Intent::kNone) {
    proc.deadline = Clock::time_point::max();
    StopLocked(proc, Intent::kTimeout, now);
  }
  if (now >= proc.kill_at) {
    SignalGroup(proc.pid, SIGKILL);
    proc.kill_at = Clock::time_point::max();
  }
  return std::nullopt;
}

void ProcessExecutor::MonitorLoop() {
  std::vector<pollfd> fds;
  while (true) {
    int timeout_ms = -1;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const auto now = Clock::now();
      auto next = Clock::time_point::max();
      for (const auto& [job, proc] : procs_) {
        if (proc.pidfd >= 0) {
          fds.push_back({proc.pidfd, POLLIN, 0});
        } else {
          next = std::min(
              next, now + std::chrono::duration_cast<Clock::duration>(options_.poll_interval));
        }
        next = std::min({next, proc.deadline, proc.kill_at});
      }
      if (next != Clock::time_point::max()) {
        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
        timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 60000));
      }
    }
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      std::cerr << "dlsched: process monitor: poll: " << std::strerror(errno) << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] const ssize_t r = read(wake_fd_, &count, sizeof(count));
    }
    std::vector<ExecutorReport> reports;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const auto now = Clock::now();
      for (auto it = procs_.begin(); it != procs_.end();) {
        std::optional<ExecutorReport> report = CheckLocked(it->second, now);
        if (!report) {
          ++it;
          continue;
        }
        if (it->second.pidfd >= 0) close(it->second.pidfd);
        std::error_code ec;
        fs::remove(it->second.job_dir + "/stop", ec);
        reports.push_back(std::move(*report));
        it = procs_.erase(it);
      }
    }
    for (ExecutorReport& report : reports) sink_(std::move(report));
  }
}

}  // namespace dlsched::daemon
