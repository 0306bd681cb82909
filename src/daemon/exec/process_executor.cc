#include "daemon/exec/process_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/exec/job_exec.h"
#include "daemon/exec/job_files.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

// A spare wrapper: reads its job's script (WrapperScript) from fd 3 to end-of-file and runs it
// if it arrived whole (it ends with the marker line); otherwise exits having run nothing.
// `trap : TERM` (a no-op handler, not an ignore) lets the wrapper outlive the SIGTERM sent to
// the group while the job itself still sees the default disposition.
constexpr const char* kWrapper =
    "trap : TERM INT HUP\n"
    "s=\n"
    "while IFS= read -r l <&3; do s=\"$s$l\n\"; done\n"
    "exec 3<&-\n"
    "case \"$s\" in *\"\n# dlsched: end\n\") eval \"$s\" ;; esac\n";

constexpr std::string_view kScriptEnd = "# dlsched: end\n";

// How long after preparing a launch the launcher waits before it spawns a spare.
constexpr std::chrono::milliseconds kRefillDelay{10};

int PidfdOpen(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

// Signals the process group led by `pid`. Never with a pid <= 0: kill(0, ...) and kill(-1, ...)
// would signal the daemon's own group or every process it may signal. (An adopted job whose pid
// file was never written has pid 0 until the monitor reports it lost.)
void SignalGroup(int pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

// Creates the job directory (0700; the account's, when there is one) and, once, its checkpoint
// directory. The directory's parent is the daemon's, so the job cannot have replaced
// `job_dir` itself; what is inside may be the job's doing and is never followed.
Status PrepareJobDir(const std::string& job_dir, const std::optional<UnixAccount>& account) {
  auto failed = [&job_dir](int error) {
    return IoError("cannot create " + job_dir + ": " + std::strerror(error));
  };
  if (mkdir(job_dir.c_str(), 0700) != 0 && errno != EEXIST) return failed(errno);
  const int dir = open(job_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return failed(errno);
  int error = 0;
  if (fchmod(dir, 0700) != 0 || (account && fchown(dir, account->uid, account->gid) != 0)) {
    error = errno;
  }
  // An existing checkpoint entry is the job's (perhaps a link to its own storage): left alone.
  if (error == 0 && mkdirat(dir, "checkpoint", 0700) == 0) {
    if (account && fchownat(dir, "checkpoint", account->uid, account->gid, AT_SYMLINK_NOFOLLOW)) {
      error = errno;
    }
  } else if (error == 0 && errno != EEXIST) {
    error = errno;
  }
  close(dir);
  return error == 0 ? Status::Ok() : failed(error);
}

// The command line of a spare wrapper, as /proc/PID/cmdline shows it.
std::string SpareCmdline() {
  std::string cmdline = "/bin/sh";
  for (const char* arg : {"-c", kWrapper, "dlsched-job"}) cmdline += '\0' + std::string(arg);
  return cmdline + '\0';
}

std::string SignalText(int sig) {
  const char* name = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
}

}  // namespace

bool IsJobWrapper(int pid, uint64_t start_ticks, const std::string& job_dir) {
  const std::optional<uint64_t> start = ProcessStartTicks(pid);
  if (!start || *start != start_ticks) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  // "Uid:\treal\teffective\tsaved\tfs": all of them ours.
  std::istringstream status(ReadSmallFile(proc + "/status"));
  const std::string me = std::to_string(geteuid());
  bool ours = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream ids(line.substr(4));
    ours = true;
    for (std::string id; ids >> id;) ours = ours && id == me;
  }
  if (!ours) return false;
  // Just after posix_spawn returns, the spare's exec has not set up its arguments yet: for a few
  // microseconds /proc/PID/cmdline reads empty (and the working directory is still ours). Waited
  // out, briefly; a process whose command line stays empty (a kernel thread) is no wrapper.
  std::string cmdline = ReadSmallFile(proc + "/cmdline");
  for (int i = 0; cmdline.empty() && i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cmdline = ReadSmallFile(proc + "/cmdline");
  }
  if (cmdline == SpareCmdline()) return true;
  struct stat cwd {
  }, dir{};
  return stat((proc + "/cwd").c_str(), &cwd) == 0 && stat(job_dir.c_str(), &dir) == 0 &&
         cwd.st_dev == dir.st_dev && cwd.st_ino == dir.st_ino;
}

void KillRecordedWrapper(const std::string& job_dir) {
  std::istringstream file(ReadSmallFile(job_dir + "/pid"));
  int pid = 0;
  uint64_t start = 0;
  if (!(file >> pid >> start) || pid <= 0) return;
  if (IsJobWrapper(pid, start, job_dir)) kill(-pid, SIGKILL);
}

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

ProcessExecutor::ProcessExecutor(Options options, Sink sink)
    : options_(options), sink_(std::move(sink)) {}

ProcessExecutor::~ProcessExecutor() { Stop(); }

Status ProcessExecutor::Start() {
  if (options_.host) {
    // What a previous daemon's jobs left that no adopted job holds.
    std::set<JobId> adopted;
    {
      std::lock_guard lock(mu_);
      for (const auto& [job, proc] : procs_) adopted.insert(job);
    }
    options_.host->RemoveStaleGroups(adopted);
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Internal(std::string("eventfd: ") + std::strerror(errno));
  monitor_ = std::thread([this] { MonitorLoop(); });
  launcher_ = std::thread([this] { LauncherLoop(); });
  return Status::Ok();
}

void ProcessExecutor::LauncherLoop() {
  Clock::time_point last_preparation;
  std::unique_lock lock(launcher_mu_);
  while (true) {
    launcher_cv_.wait(lock, [&] {
      return launcher_stopping_ || !preparations_.empty() ||
             static_cast<int>(spares_.size()) < options_.spare_wrappers;
    });
    // Launches first: one is waiting on each. Stopping drains them, so every one gets its
    // result.
    if (!preparations_.empty()) {
      std::packaged_task<Prepared()> prepare = std::move(preparations_.front());
      preparations_.pop_front();
      lock.unlock();
      prepare();
      lock.lock();
      last_preparation = Clock::now();
      continue;
    }
    if (launcher_stopping_) return;
    if (!spares_.empty() && Clock::now() < last_preparation + kRefillDelay) {
      // Spawning competes for the CPU with the run just launched and the reply to its
      // submitter: it waits for a quiet moment unless the pool is empty.
      launcher_cv_.wait_until(lock, last_preparation + kRefillDelay,
                              [&] { return launcher_stopping_ || !preparations_.empty(); });
      continue;
    }
    lock.unlock();
    Result<Spare> spare = SpawnSpare();
    lock.lock();
    if (spare.ok()) {
      spares_.push_back(*spare);
    } else {
      // Try again in a while; a launch arriving meanwhile is prepared at once (it spawns its own
      // wrapper and reports what fails).
      launcher_cv_.wait_for(lock, std::chrono::seconds(1),
                            [&] { return launcher_stopping_ || !preparations_.empty(); });
    }
  }
}

bool ProcessExecutor::Exited(const Spare& spare) {
  siginfo_t info{};
  // WNOWAIT: a dead spare stays a zombie until Discard reaps it.
  const int r = waitid(P_PID, spare.pid, &info, WEXITED | WNOHANG | WNOWAIT);
  return r != 0 || info.si_pid != 0;
}

Result<ProcessExecutor::Spare> ProcessExecutor::TakeSpare() {
  while (!spares_.empty()) {
    const Spare spare = spares_.back();
    spares_.pop_back();
    if (!Exited(spare)) return spare;
    Discard(spare);  // killed from outside (out of memory, say): it cannot take a job
  }
  return SpawnSpare();
}

void ProcessExecutor::Discard(const Spare& spare) {
  close(spare.socket);
  if (spare.pidfd >= 0) close(spare.pidfd);
  waitpid(spare.pid, nullptr, 0);
}

void ProcessExecutor::Stop() {
  {
    std::lock_guard lock(launcher_mu_);
    launcher_stopping_ = true;
  }
  launcher_cv_.notify_all();
  if (launcher_.joinable()) launcher_.join();
  for (const Spare& spare : spares_) Discard(spare);
  spares_.clear();
  // Launches prepared but never flushed (the daemon stopped before their commit): nothing ran.
  for (Action& a : queued_) {
    if (!a.prepared.valid()) continue;
    const Prepared prepared = a.prepared.get();
    if (prepared.spare.pid <= 0) continue;
    Discard(prepared.spare);
    if (options_.host) options_.host->Release(a.job);
    std::error_code ec;
    fs::remove(a.launch->job_dir + "/pid.next", ec);
  }
  queued_.clear();
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

void ProcessExecutor::Launch(const Job& job, const Placement&, Result<LaunchSpec> spec) {
  if (!spec.ok()) {
    queued_.push_back({Action::kLaunch, job.id, nullptr, {}});
    sink_({JobLaunchFailed{job.id, spec.status().message()}, std::nullopt});
    return;
  }
  DS_CHECK(launcher_.joinable()) << "Launch before Start";
  auto launch = std::make_shared<const LaunchSpec>(std::move(spec).value());
  std::packaged_task<Prepared()> prepare([this, launch] { return Prepare(*launch); });
  queued_.push_back({Action::kLaunch, job.id, launch, prepare.get_future()});
  {
    std::lock_guard lock(launcher_mu_);
    preparations_.push_back(std::move(prepare));
  }
  launcher_cv_.notify_one();
}

void ProcessExecutor::Preempt(const Job& job, Timestamp) {
  queued_.push_back({Action::kPreempt, job.id, nullptr, {}});
}

void ProcessExecutor::Kill(const Job& job, Timestamp) {
  queued_.push_back({Action::kKill, job.id, nullptr, {}});
}

std::vector<ProcessExecutor::QueuedAction> ProcessExecutor::Queued() const {
  std::vector<QueuedAction> actions;
  for (const Action& a : queued_) actions.push_back({a.job, kActionKinds[a.kind]});
  return actions;
}

void ProcessExecutor::Flush() {
  std::vector<Action> actions;
  actions.swap(queued_);
  for (Action& a : actions) {
    switch (a.kind) {
      case Action::kLaunch:
        if (a.launch) Run(*a.launch, a.prepared.get());
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

Result<ProcessExecutor::Spare> ProcessExecutor::SpawnSpare() {
  // [0] ours, [1] the wrapper's fd 3. A stream socket rather than a pipe, so giving a script to
  // a wrapper that is already gone is an error, not a SIGPIPE.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Internal(std::string("socketpair: ") + std::strerror(errno));
  }
  if (sv[1] == 3) {
    // dup2(3, 3) would keep the close-on-exec flag: move it out of the way first.
    const int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
    close(sv[1]);
    sv[1] = moved;
    if (moved < 0) {
      close(sv[0]);
      return Internal(std::string("fcntl: ") + std::strerror(errno));
    }
  }
  std::vector<std::string> args = {"/bin/sh", "-c", kWrapper, "dlsched-job"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  // No other descriptor of the daemon (listening socket, database) leaks into a job.
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return Internal(std::string("spawn: ") + std::strerror(rc));
  }
  Spare spare;
  spare.pid = pid;
  spare.pidfd = PidfdOpen(pid);
  spare.start_ticks = ProcessStartTicks(pid).value_or(0);
  spare.socket = sv[0];
  return spare;
}

std::string WrapperScript(const LaunchSpec& spec, const std::string& job_exec,
                          int64_t max_log_bytes) {
  std::string script;
  JobExecRequest request;
  request.job_dir = spec.job_dir;
  request.workdir = spec.workdir;
  request.account = spec.account;
  request.max_log_bytes = max_log_bytes;
  // On its stdin, neither exported (job_exec runs as root) nor as arguments (public).
  request.env = spec.env;
  request.argv = spec.argv;
  // The wrapper enters the job directory before it execs job_exec, so a restarted daemon
  // recognises it (IsJobWrapper) at every moment after its spare stage.
  script += "cd " + ShellQuote(spec.job_dir) + " || exit 126\n";
  script += "exec " + ShellQuote(job_exec);
  for (const std::string& arg : JobExecArgs(request)) script += " " + ShellQuote(arg);
  script += " <<'DLSCHED_ENV'\n" + EncodeEnvironment(request.env) + "DLSCHED_ENV\n";
  return script + std::string(kScriptEnd);
}

ProcessExecutor::Prepared ProcessExecutor::Prepare(const LaunchSpec& spec) {
  Prepared prepared;
  auto fail = [&prepared](std::string why) {
    prepared.error = std::move(why);
    return prepared;
  };
  if (access(options_.job_exec.c_str(), X_OK) != 0) {
    return fail("cannot run " + options_.job_exec + " (the job wrapper): " + std::strerror(errno));
  }
  std::error_code ec;
  fs::create_directories(fs::path(spec.job_dir).parent_path(), ec);
  if (ec) return fail("cannot create " + spec.job_dir + ": " + ec.message());
  if (Status made = PrepareJobDir(spec.job_dir, spec.account); !made.ok()) {
    return fail(made.message());
  }
  for (const auto& [path, content] : spec.files) {
    if (!WriteSmallFile(path, content)) return fail("cannot write " + path);
  }
  // The logs open here first, so one that cannot be written fails the launch, not the job.
  for (const char* log : {"/stdout.log", "/stderr.log"}) {
    Result<int> fd = OpenLog(spec.job_dir + log);
    if (!fd.ok()) return fail(fd.status().message());
    close(*fd);
  }
  Result<Spare> spare = TakeSpare();
  if (!spare.ok()) return fail(spare.status().message());
  if (options_.host) {
    // Before it runs anything: what the job starts inherits its group or affinity.
    options_.host->Reserve(spec.job, spec.cpus, spec.host_memory_mib,
                           options_.host->CoresNear(spec.gpus));
    if (Status confined = options_.host->Confine(spec.job, spare->pid); !confined.ok()) {
      Discard(*spare);
      options_.host->Release(spec.job);
      return fail("cannot hold the job to its CPUs and memory: " + confined.message());
    }
  }
  // Not yet the pid file: until the decision is durable, a restarted daemon must find the
  // previous segment's (Run moves this one into place).
  if (!WriteSmallFile(spec.job_dir + "/pid.next", std::to_string(spare->pid) + " " +
                                                      std::to_string(spare->start_ticks) + "\n")) {
    Discard(*spare);
    if (options_.host) options_.host->Release(spec.job);
    return fail("cannot write " + spec.job_dir + "/pid.next");
  }
  prepared.spare = *spare;
  return prepared;
}

void ProcessExecutor::Run(const LaunchSpec& spec, Prepared prepared) {
  // The decision is durable: the previous segment's records go, and a restarted daemon finds
  // this one (before it can run) through the pid file, or none if it could not start.
  std::error_code ec;
  fs::remove(spec.job_dir + "/exit", ec);
  fs::remove(spec.job_dir + "/stop", ec);
  if (prepared.spare.pid <= 0) {
    fs::remove(spec.job_dir + "/pid", ec);
    sink_({JobLaunchFailed{spec.job, prepared.error}, std::nullopt});
    return;
  }
  const Spare& spare = prepared.spare;
  fs::rename(spec.job_dir + "/pid.next", spec.job_dir + "/pid", ec);
  if (ec) {
    Discard(spare);
    if (options_.host) options_.host->Release(spec.job);
    sink_({JobLaunchFailed{spec.job, "cannot write " + spec.job_dir + "/pid: " + ec.message()},
           std::nullopt});
    return;
  }
  const std::string script = WrapperScript(spec, options_.job_exec, options_.max_log_bytes);
  size_t sent = 0;
  int send_errno = 0;
  while (sent < script.size()) {
    const ssize_t n = send(spare.socket, script.data() + sent, script.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      send_errno = errno;
      break;
    }
    sent += static_cast<size_t>(n);
  }
  if (sent < script.size()) {
    // The spare died before its job (killed from outside): it ran nothing.
    Discard(spare);
    if (options_.host) options_.host->Release(spec.job);
    fs::remove(spec.job_dir + "/pid", ec);
    sink_({JobLaunchFailed{
               spec.job, std::string("its wrapper process was gone: ") + std::strerror(send_errno)},
           std::nullopt});
    return;
  }
  close(spare.socket);
  Proc proc;
  proc.job = spec.job;
  proc.pid = spare.pid;
  proc.pidfd = spare.pidfd;
  proc.start_ticks = spare.start_ticks;
  proc.job_dir = spec.job_dir;
  if (spec.time_limit) {
    proc.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(*spec.time_limit);
  }
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
  WriteSmallFile(proc.job_dir + "/stop", std::string(StopIntentName(proc.intent)));
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
                            std::optional<Duration> time_left, const Placement& placement) {
  Proc proc;
  proc.job = job;
  proc.child = false;
  proc.job_dir = job_dir;
  std::istringstream pid_line(ReadSmallFile(job_dir + "/pid"));
  pid_line >> proc.pid >> proc.start_ticks;
  const Intent stop = ParseStopIntent(ReadSmallFile(job_dir + "/stop"));
  if (stop == Intent::kPreempt || stop == Intent::kKill || stop == Intent::kTimeout) {
    proc.intent = stop;
  }
  const auto now = Clock::now();
  if (time_left) {
    proc.deadline = now + std::chrono::duration_cast<Clock::duration>(*time_left);
  }
  if (proc.pid > 0 && ProcessStartTicks(proc.pid) == proc.start_ticks &&
      !IsJobWrapper(proc.pid, proc.start_ticks, job_dir)) {
    // Not the wrapper of this job (its pid file was forged, or the pid reused): never
    // signalled; the job counts as lost unless its exit file says how it ended.
    std::cerr << "dlsched: job " << job << ": " << job_dir << "/pid names process " << proc.pid
              << ", which is not its wrapper; not adopted\n";
    proc.pid = 0;
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
  if (options_.host) {
    options_.host->Readopt(job, proc.pid,
                           placement.parts.empty() ? 0 : placement.parts.front().memory_mib);
  }
  Watch(std::move(proc));
}

std::optional<ProcessExecutor::ProcessInfo> ProcessExecutor::Info(JobId job) const {
  std::lock_guard lock(mu_);
  auto it = procs_.find(job);
  if (it == procs_.end()) return std::nullopt;
  return ProcessInfo{it->second.pid, it->second.start_ticks,
                     std::string(StopIntentName(it->second.intent))};
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

ExecutorReport ProcessExecutor::Outcome(const Proc& proc, std::optional<int> exit_code,
                                        int64_t memory_limit_mib) const {
  switch (proc.intent) {
    case Intent::kPreempt:
      return {JobSuspended{proc.job, 0}, exit_code};
    case Intent::kKill:
      return {JobFinished{proc.job, JobState::kKilled, "cancelled"}, exit_code};
    case Intent::kTimeout:
      return {JobFinished{proc.job, JobState::kFailed, "max run time exceeded"}, exit_code};
    case Intent::kNone:
    case Intent::kNodeLost:  // the Slurm executor's; never set here
    case Intent::kNotStarted:
      break;
  }
  if (memory_limit_mib > 0) {
    return {
        JobFinished{proc.job, JobState::kFailed,
                    std::string(kHostMemoryKillReason) + std::to_string(memory_limit_mib) + " MiB"},
        exit_code};
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
    const int64_t memory_limit = options_.host ? options_.host->KilledForMemory(proc.job) : 0;
    if (options_.host) options_.host->Release(proc.job);
    return Outcome(proc, exit_code, memory_limit);
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

void ProcessExecutor::WatchHostMemory() {
  HostEnforcer& host = *options_.host;
  if (!host.NeedsTicks()) return;
  host.Sweep();
  std::map<JobId, int> groups;
  {
    std::lock_guard lock(mu_);
    for (const auto& [job, proc] : procs_) {
      if (proc.pid > 0 && host.Watches(job)) groups.emplace(job, proc.pid);
    }
  }
  if (groups.empty()) return;
  const std::vector<JobId> over = host.OverMemory(groups);
  std::lock_guard lock(mu_);
  for (JobId job : over) {
    const auto it = procs_.find(job);
    // Killed at once, as the kernel's OOM killer would: a grace period lets it grow further.
    if (it != procs_.end()) SignalGroup(it->second.pid, SIGKILL);
  }
}

void ProcessExecutor::MonitorLoop() {
  std::vector<pollfd> fds;
  std::vector<JobId> fd_jobs;  // fd_jobs[i]'s pidfd is fds[i + 1]
  std::set<JobId> ready;
  while (true) {
    int timeout_ms = -1;
    fds.clear();
    fd_jobs.clear();
    ready.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const auto now = Clock::now();
      auto next = Clock::time_point::max();
      for (const auto& [job, proc] : procs_) {
        if (proc.pidfd >= 0) {
          fds.push_back({proc.pidfd, POLLIN, 0});
          fd_jobs.push_back(job);
        } else {
          next = std::min(
              next, now + std::chrono::duration_cast<Clock::duration>(options_.poll_interval));
        }
        next = std::min({next, proc.deadline, proc.kill_at});
      }
      if (options_.host && options_.host->NeedsTicks()) {
        next = std::min(
            next, now + std::chrono::duration_cast<Clock::duration>(options_.host->memory_poll()));
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
    if (options_.host) WatchHostMemory();
    for (size_t i = 1; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) ready.insert(fd_jobs[i - 1]);
    }
    std::vector<ExecutorReport> reports;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      const auto now = Clock::now();
      for (auto it = procs_.begin(); it != procs_.end();) {
        // Only what may have changed: a process whose pidfd says it ended, one without a pidfd
        // (polled), one whose deadline or kill time is due. Checking every process at every
        // wake-up read /proc for each adopted one: O(running) per exit, quadratic as a
        // restarted daemon's thousands of adopted jobs end.
        const Proc& proc = it->second;
        if (proc.pidfd >= 0 && !ready.contains(it->first) && now < proc.deadline &&
            now < proc.kill_at) {
          ++it;
          continue;
        }
        std::optional<ExecutorReport> report = CheckLocked(it->second, now);
        if (!report) {
          ++it;
          continue;
        }
        // The segment's exit and stop files stay until its job's next launch is durable (Run):
        // a daemon that dies before it records this outcome finds it again.
        if (it->second.pidfd >= 0) close(it->second.pidfd);
        reports.push_back(std::move(*report));
        it = procs_.erase(it);
      }
    }
    for (ExecutorReport& report : reports) sink_(std::move(report));
  }
}

}  // namespace dlsched::daemon
