#pragma once

// Runs jobs as local processes: the daemon's Executor.
//
// Each run segment is /bin/sh running a small wrapper in a new session (so its own process
// group, pgid = pid), as the daemon's user: the wrapper enters the job directory and execs
// `dlsched __job-exec` (job_exec.h), which keeps the wrapper's pid and working directory, opens
// the logs (<job dir>/stdout.log and stderr.log, capped at
// Options::max_log_bytes each, plus one rotated file), starts the job's argv (as a program found
// through PATH, never as a shell builtin) with its environment (and nothing of the wrapper's)
// and its stdin on /dev/null and its output piped to
// the logs, as the job's Unix account (LaunchSpec::account) in its working directory, and
// writes the job's exit status to <job dir>/exit before it exits with the same status. The
// wrapper survives SIGTERM (it ignores it; the job gets the default), so a job that exits on
// SIGTERM still gets its status recorded. The daemon writes <job dir>/pid ("PID STARTTICKS")
// before the job runs and <job dir>/stop ("preempt", "kill" or "timeout") before it signals a
// job; together these let a restarted daemon re-adopt the processes the previous one started
// (Adopt) and learn how they ended, although it is not their parent. A segment's pid, exit and
// stop files stay until the job's next launch is durable, so a daemon that dies after an
// outcome but before recording it reports that outcome again.
//
// Isolation (docs/security.md): the job directory is created 0700 and, with an account, owned
// by it, so other users' jobs cannot read or write it. The job's account owns the directory and
// so may replace anything in it: the daemon reads and writes there only through job_files.h's
// functions, and adopts a recorded pid only if it is a job wrapper of that directory
// (IsJobWrapper), so a forged pid file cannot make it signal another process.
//
// Neither creating a process nor the file system work of a launch is on the path from a
// decision to its job running. Wrappers are spawned ahead of need ("spares", kept by the
// launcher thread): a spare waits, with an empty environment, for its job on a socket (its fd
// 3); one found dead when a launch needs it (killed from outside) is reaped and replaced. Launch
// has the launcher thread prepare the run while the daemon commits the decision: the job
// directory, its files and logs, a spare for it and <job dir>/pid.next (all harmless should the
// decision never become durable: the previous segment's pid, exit and stop files are left as
// they are, and pid.next is never read by Adopt). Flush, after the commit, replaces the
// previous segment's records (removes exit and stop, renames pid.next to pid), then gives the
// spare its job as a short script (WrapperScript), and the wrapper runs it. A spare that reads
// end-of-file without a whole script (its daemon stopped or died before Flush) exits without
// running anything.
//
// Stopping: preemption, cancellation and the max-run-time limit all send SIGTERM to the job's
// process group, wait the grace period, then send SIGKILL. The outcome is reported once per
// segment, through the sink, from the monitor thread:
//   preempt   -> JobSuspended (whatever the exit status)
//   kill      -> JobFinished(kKilled)
//   timeout   -> JobFinished(kFailed, "max run time ... exceeded")
//   killed for going over its host memory (the kernel in its cgroup, or the watchdog, which
//   sends SIGKILL at once: host_enforcer.h)
//             -> JobFinished(kFailed, "killed: host memory over its limit of N MiB")
//   otherwise -> JobFinished(kSucceeded) on exit status 0, else JobFinished(kFailed)
//   a spawn that fails, or an adopted process that vanished leaving no exit status
//             -> JobLaunchFailed (the scheduler requeues the job)
//
// CPUs and host memory (Options::host, host_enforcer.h): the launcher thread reserves the
// job's cores (those near its GPUs first, LaunchSpec::gpus and HostEnforcer::CoresNear) and
// confines its spare before the spare gets its job (so everything the job starts is confined from
// its first instruction); the monitor thread releases them when the segment's outcome is known, and
// runs the affinity mode's memory watchdog.
//
// Threading: the Executor methods, Flush and Adopt are called from the scheduler thread; the
// launcher thread spawns spare wrappers; the monitor thread waits for processes (pidfd where
// the kernel has it, else polling) and runs the timers. Info and watched are thread-safe.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/exec/host_enforcer.h"
#include "daemon/exec/job_env.h"
#include "daemon/exec/job_executor.h"
#include "daemon/exec/job_files.h"
#include "dlsched/runtime/events.h"
#include "dlsched/runtime/executor.h"

namespace dlsched::daemon {

class ProcessExecutor final : public JobExecutor {
 public:
  struct Options {
    Duration grace = std::chrono::seconds(10);  // SIGTERM -> SIGKILL
    // How often processes that cannot be waited on through a pidfd are checked.
    Duration poll_interval = std::chrono::milliseconds(200);
    // Wrappers kept spawned ahead of launches; 0: each launch spawns its own while it is
    // prepared.
    int spare_wrappers = 2;
    // The program wrappers run jobs through: the dlsched binary (`dlsched __job-exec`).
    std::string job_exec;
    // Largest size of each of a job's logs (stdout, stderr), in bytes; past it a log is
    // rotated, keeping one older file. 0: no cap. `serve --max-log-bytes`.
    int64_t max_log_bytes = kDefaultMaxLogBytes;
    // Holds jobs to their CPUs and host memory (LaunchSpec::cpus, host_memory_mib); null:
    // nothing is enforced. Shared with the daemon, which reports its mode.
    std::shared_ptr<HostEnforcer> host;
  };
  static constexpr int64_t kDefaultMaxLogBytes = int64_t{64} << 20;
  // The Sink receives outcomes from the monitor thread, or the scheduler thread for spawn
  // failures.
  ProcessExecutor(Options options, Sink sink);
  // Stop(). Job processes keep running (a restarted daemon re-adopts them).
  ~ProcessExecutor() override;
  ProcessExecutor(const ProcessExecutor&) = delete;
  ProcessExecutor& operator=(const ProcessExecutor&) = delete;

  // Starts the monitor and launcher threads (before any Launch).
  Status Start() override;
  // Stops both; the spare wrappers exit.
  void Stop() override;

  // Actions are queued, not carried out: Flush does that, once the daemon has made the
  // decisions durable (a crash between the two leaves the store ahead of the world, never
  // behind it). The job runs on the first node of the placement, as `spec` says.
  void Launch(const Job& job, const Placement& placement, Result<LaunchSpec> spec) override;
  void Preempt(const Job& job, Timestamp now) override;
  void Kill(const Job& job, Timestamp now) override;

  std::vector<QueuedAction> Queued() const override;
  void Flush() override;

  // Watches a job a previous daemon started, found through <job_dir>/pid. `time_left` is its
  // remaining run-time limit (nullopt: none). If the process is gone, reports how it ended
  // (from <job_dir>/exit and <job_dir>/stop) as if it had just ended. Its cores and memory
  // limit are taken back (HostEnforcer::Readopt); Start then removes the groups of jobs not
  // adopted.
  void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left,
             const Placement& placement) override;

  std::optional<ProcessInfo> Info(JobId job) const override;
  size_t watched() const;
  // SIGKILL to every watched process group (shutdown with --kill-jobs-on-exit, tests).
  void KillAll() override;

 private:
  // kPreempt, kKill and kTimeout (the max run time) are this executor's.
  using Intent = StopIntent;
  // A wrapper spawned ahead of its job, waiting for it on a socket.
  struct Spare {
    int pid = 0;
    int pidfd = -1;
    uint64_t start_ticks = 0;
    int socket = -1;  // our end; the wrapper reads its job from the other
  };
  // A launch made ready by the launcher thread: its spare, or why it cannot run.
  struct Prepared {
    Spare spare;  // pid 0 on failure
    std::string error;
  };
  struct Action {
    enum Kind { kLaunch, kPreempt, kKill } kind;
    JobId job;
    std::shared_ptr<const LaunchSpec> launch;  // launches; null if there was no spec
    std::future<Prepared> prepared;            // launches: the launcher thread's preparation
  };
  using Clock = std::chrono::steady_clock;
  struct Proc {
    JobId job;
    int pid = 0;
    int pidfd = -1;
    uint64_t start_ticks = 0;
    bool child = true;  // ours to waitpid; adopted processes are not
    std::string job_dir;
    Intent intent = Intent::kNone;
    Clock::time_point deadline = Clock::time_point::max();  // max run time
    Clock::time_point kill_at = Clock::time_point::max();   // SIGKILL after the grace period
  };

  // The job directory, files, logs, a spare and pid.next for `spec` (launcher thread).
  Prepared Prepare(const LaunchSpec& spec);
  // Gives the prepared spare its job and watches it (scheduler thread, from Flush).
  void Run(const LaunchSpec& spec, Prepared prepared);
  // Spawns a spare: empty environment, stdin and (until its script redirects them) stdout and
  // stderr on /dev/null, its end of a socket pair as fd 3, its own session.
  static Result<Spare> SpawnSpare();
  // Ends a spare that will run nothing (it reads end-of-file and exits) and reaps it.
  static void Discard(const Spare& spare);
  // Whether a spare has exited (it is left for Discard to reap).
  static bool Exited(const Spare& spare);
  // A live spare from the pool (dead ones are discarded), else a new one (launcher thread).
  Result<Spare> TakeSpare();
  // Prepares launches, in order, and keeps options_.spare_wrappers spares ready.
  void LauncherLoop();
  void DoStop(JobId job, Intent intent);
  // Records the intent, sends SIGTERM and arms SIGKILL. Caller holds mu_.
  void StopLocked(Proc& proc, Intent intent, Clock::time_point now);
  void Watch(Proc proc);
  void MonitorLoop();
  // Checks one process; returns a report if it has ended. Caller holds mu_.
  std::optional<ExecutorReport> CheckLocked(Proc& proc, Clock::time_point now);
  // `memory_limit_mib`: the limit it was killed for going over (0: it was not).
  ExecutorReport Outcome(const Proc& proc, std::optional<int> exit_code,
                         int64_t memory_limit_mib) const;
  // The memory watchdog's round (HostEnforcer::OverMemory) and the removal of groups left
  // busy (monitor thread, without mu_).
  void WatchHostMemory();
  void Wake();

  Options options_;
  Sink sink_;
  std::vector<Action> queued_;  // scheduler thread only

  std::mutex launcher_mu_;
  std::condition_variable launcher_cv_;
  std::deque<std::packaged_task<Prepared()>> preparations_;
  std::vector<Spare> spares_;  // launcher thread only
  bool launcher_stopping_ = false;
  std::thread launcher_;

  mutable std::mutex mu_;
  std::map<JobId, Proc> procs_;
  bool stopping_ = false;
  int wake_fd_ = -1;  // eventfd
  std::thread monitor_;
};

// The start of the reason of a job killed for going over its host memory; the limit in MiB
// follows.
inline constexpr std::string_view kHostMemoryKillReason = "killed: host memory over its limit of ";

// The script a spare wrapper runs for `spec` (see the header comment): enters the job directory
// and execs `job_exec __job-exec` (job_exec.h) with the job directory, working directory,
// account, log cap and argv, and the environment as a here-document on its stdin (exported, it
// would reach root's process; as arguments, anyone could read it),
// which starts argv[0] as a program (never a shell builtin such as echo or exit) and records the
// exit status. Every value is single-quoted, so any byte but NUL passes through unchanged. Ends
// with a marker line without which the wrapper runs nothing.
std::string WrapperScript(const LaunchSpec& spec, const std::string& job_exec,
                          int64_t max_log_bytes);

// Whether process `pid` (started at `start_ticks`) is a job wrapper of `job_dir`, so a daemon
// may signal its group: it runs as this process's user, and it is either a spare still waiting
// for its script or a wrapper whose working directory is `job_dir` (the script enters it). A
// job's processes run as the job's account, or lack that working directory, so a pid file the
// job forged never passes (when the daemon runs as root; as another user, jobs are not
// isolated from each other at all).
bool IsJobWrapper(int pid, uint64_t start_ticks, const std::string& job_dir);

// SIGKILL to the process group recorded in <job_dir>/pid ("PID STARTTICKS"), if that process
// still runs and is a job wrapper of `job_dir` (IsJobWrapper: the job may have forged the file).
// For a restarted daemon that will not re-adopt a job whose process may still hold GPUs.
void KillRecordedWrapper(const std::string& job_dir);

// Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or nullopt if
// there is no such process or it is a zombie. Pairs with the pid to identify a process across
// pid reuse.
std::optional<uint64_t> ProcessStartTicks(int pid);

}  // namespace dlsched::daemon
