#pragma once

// Runs jobs as local processes: the daemon's Executor.
//
// Each run segment is /bin/sh running a small wrapper in a new session (so its own process
// group, pgid = pid): the wrapper enters the working directory, runs the job's argv with its
// stdin on /dev/null and stdout/stderr appended to <job dir>/stdout.log and stderr.log, and
// writes the job's exit status to <job dir>/exit before it exits with the same status. The
// wrapper survives SIGTERM (it traps it), so a job that exits on SIGTERM still gets its status
// recorded. The daemon writes <job dir>/pid ("PID STARTTICKS") right after the spawn and
// <job dir>/stop ("preempt", "kill" or "timeout") before it signals a job; together these let a
// restarted daemon re-adopt the processes the previous one started (Adopt) and learn how they
// ended, although it is not their parent.
//
// Stopping: preemption, cancellation and the max-run-time limit all send SIGTERM to the job's
// process group, wait the grace period, then send SIGKILL. The outcome is reported once per
// segment, through the sink, from the monitor thread:
//   preempt   -> JobSuspended (whatever the exit status)
//   kill      -> JobFinished(kKilled)
//   timeout   -> JobFinished(kFailed, "max run time ... exceeded")
//   otherwise -> JobFinished(kSucceeded) on exit status 0, else JobFinished(kFailed)
//   a spawn that fails, or an adopted process that vanished leaving no exit status
//             -> JobLaunchFailed (the scheduler requeues the job)
//
// Threading: the Executor methods, Flush and Adopt are called from the scheduler thread; the
// monitor thread waits for processes (pidfd where the kernel has it, else polling) and runs the
// timers. Info and watched are thread-safe.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/exec/job_env.h"
#include "dlsched/runtime/events.h"
#include "dlsched/runtime/executor.h"

namespace dlsched::daemon {

// An outcome for the scheduler, with the exit status when one is known.
struct ExecutorReport {
  Event event;
  std::optional<int> exit_code;  // 128+N for a job killed by signal N
};

class ProcessExecutor final : public Executor {
 public:
  struct Options {
    Duration grace = std::chrono::seconds(10);  // SIGTERM -> SIGKILL
    // How often processes that cannot be waited on through a pidfd are checked.
    Duration poll_interval = std::chrono::milliseconds(200);
  };
  // Builds a launch when the scheduler decides one (scheduler thread).
  using Resolver = std::function<Result<LaunchSpec>(const Job& job, const Placement& placement)>;
  // Receives outcomes (monitor thread, or scheduler thread for spawn failures). Must not call
  // back into the executor.
  using Sink = std::function<void(ExecutorReport report)>;

  ProcessExecutor(Options options, Resolver resolver, Sink sink);
  // Stops the monitor. Processes keep running (a restarted daemon re-adopts them).
  ~ProcessExecutor() override;
  ProcessExecutor(const ProcessExecutor&) = delete;
  ProcessExecutor& operator=(const ProcessExecutor&) = delete;

  // Starts the monitor thread.
  Status Start();
  void Stop();

  // Executor. Actions are queued, not carried out: Flush does that, once the daemon has made
  // the decisions durable (a crash between the two leaves the store ahead of the world, never
  // behind it).
  void Launch(const Job& job, const Placement& placement, Timestamp now) override;
  void Preempt(const Job& job, Timestamp now) override;
  void Kill(const Job& job, Timestamp now) override;

  // The queued actions, in order: the job and "launch", "preempt" or "kill".
  struct QueuedAction {
    JobId job;
    std::string_view kind;
  };
  std::vector<QueuedAction> Queued() const;
  // Carries out the queued actions.
  void Flush();

  // Watches a job a previous daemon started, found through <job_dir>/pid. `time_left` is its
  // remaining run-time limit (nullopt: none). If the process is gone, reports how it ended
  // (from <job_dir>/exit and <job_dir>/stop) as if it had just ended.
  void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left);

  struct ProcessInfo {
    int pid = 0;
    uint64_t start_ticks = 0;
    std::string stopping;  // "", "preempt", "kill" or "timeout"
  };
  std::optional<ProcessInfo> Info(JobId job) const;
  size_t watched() const;
  // SIGKILL to every watched process group (shutdown with --kill-jobs-on-exit, tests).
  void KillAll();

 private:
  enum class Intent { kNone, kPreempt, kKill, kTimeout };
  struct Action {
    enum Kind { kLaunch, kPreempt, kKill } kind;
    JobId job;
    std::optional<LaunchSpec> launch;
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

  void DoLaunch(const LaunchSpec& spec);
  void DoStop(JobId job, Intent intent);
  // Records the intent, sends SIGTERM and arms SIGKILL. Caller holds mu_.
  void StopLocked(Proc& proc, Intent intent, Clock::time_point now);
  void Watch(Proc proc);
  void MonitorLoop();
  // Checks one process; returns a report if it has ended. Caller holds mu_.
  std::optional<ExecutorReport> CheckLocked(Proc& proc, Clock::time_point now);
  ExecutorReport Outcome(const Proc& proc, std::optional<int> exit_code) const;
  void Wake();

  Options options_;
  Resolver resolver_;
  Sink sink_;
  std::vector<Action> queued_;  // scheduler thread only

  mutable std::mutex mu_;
  std::map<JobId, Proc> procs_;
  bool stopping_ = false;
  int wake_fd_ = -1;  // eventfd
  std::thread monitor_;
};

// Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or nullopt if
// there is no such process or it is a zombie. Pairs with the pid to identify a process across
// pid reuse.
std::optional<uint64_t> ProcessStartTicks(int pid);

}  // namespace dlsched::daemon
