#pragma once

// The daemon's executors: what the live scheduler needs beyond the core's Executor. Two
// implementations: ProcessExecutor (jobs as local processes) and SlurmExecutor (jobs as Slurm
// batch jobs on the nodes dlsched chose). `dlsched serve --executor local|slurm` picks one.
//
// The contract both keep:
//  - Launch, Preempt and Kill only queue an action; Flush carries the queued actions out, and
//    the daemon calls it once the decisions are durable (a crash between the two leaves the
//    store ahead of the world, never behind it).
//  - Every run segment's outcome is reported exactly once through the Sink:
//      preempted -> JobSuspended          cancelled -> JobFinished(kKilled)
//      run time limit -> JobFinished(kFailed)   exit 0 -> JobFinished(kSucceeded)
//      non-zero exit -> JobFinished(kFailed)
//      could not start, or lost (vanished without a status, or its node failed)
//                -> JobLaunchFailed (the scheduler requeues the job)
//  - Adopt, called before Start for each job the store says is running, re-attaches a run
//    segment that a previous daemon started; a segment that is gone is reported as it ended.
//    No segment is ever started twice.
//  - An executor that knows its nodes' health reports nodes leaving and rejoining service
//    through the NodeSink, before it reports the jobs it lost with them.
//
// Threading: Launch, Preempt, Kill, Queued, Flush and Adopt are called from the scheduler
// thread; Info and KillAll from any thread. Sinks are called from the executor's own thread
// (or the scheduler thread for a launch that fails at once) and must not call back into it.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

// A node left service (its jobs will be reported lost) or came back.
struct NodeReport {
  NodeId node;
  bool available = true;
  std::string reason;  // e.g. "DOWN+NOT_RESPONDING: Not responding"
};

class JobExecutor : public Executor {
 public:
  // Builds a launch when the scheduler decides one (scheduler thread).
  using Resolver = std::function<Result<LaunchSpec>(const Job& job, const Placement& placement)>;
  using Sink = std::function<void(ExecutorReport report)>;
  using NodeSink = std::function<void(NodeReport report)>;

  // Starts the executor's thread.
  virtual Status Start() = 0;
  // Stops it. Jobs keep running (a restarted daemon re-adopts them). Idempotent.
  virtual void Stop() = 0;

  // The queued actions, in order: the job and "launch", "preempt" or "kill".
  struct QueuedAction {
    JobId job;
    std::string_view kind;
  };
  virtual std::vector<QueuedAction> Queued() const = 0;
  // Carries out the queued actions.
  virtual void Flush() = 0;

  // Re-attaches a running segment a previous daemon started (see above). `job_dir` is the job's
  // directory; `time_left` its remaining run-time limit (nullopt: none).
  virtual void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left) = 0;

  // What runs a job now: for local processes the process (pid and start time in clock ticks),
  // for Slurm nothing local (0, 0); and the stop under way: "", "kill", "timeout" (the
  // executor's own max-run-time stop) or "preempt" (any stop that returns the job to the queue).
  struct ProcessInfo {
    int pid = 0;
    uint64_t start_ticks = 0;
    std::string stopping;
  };
  virtual std::optional<ProcessInfo> Info(JobId job) const = 0;
  // Ends every followed segment at once (shutdown with --kill-jobs-on-exit, tests).
  virtual void KillAll() = 0;
};

}  // namespace dlsched::daemon
