#pragma once

// The daemon's executors: they carry out the live scheduler's decisions. Two implementations:
// ProcessExecutor (jobs as local processes) and SlurmExecutor (jobs as Slurm batch jobs on the
// nodes dlsched chose). `dlsched serve --executor local|slurm` picks one.
//
// An executor is told everything it needs with each decision: a launch comes with the job's
// LaunchSpec (what to run, where, as whom, built by the daemon from the job's request with
// BuildLaunchSpec), so an executor never asks the daemon anything. It is not the Scheduler's
// core Executor: the daemon implements that one and hands each decision on (core/daemon.h).
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
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/runtime/events.h"

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

class JobExecutor {
 public:
  using Sink = std::function<void(ExecutorReport report)>;
  using NodeSink = std::function<void(NodeReport report)>;

  virtual ~JobExecutor() = default;

  // Queues the start (or resumption from its checkpoint) of a run segment of `job` on exactly
  // the GPUs of `placement`. `spec` is what to run, or why it could not be built (no Unix
  // account for the job's user): such a launch is queued all the same and reported at once as
  // JobLaunchFailed with that message.
  virtual void Launch(const Job& job, const Placement& placement, Result<LaunchSpec> spec) = 0;
  // Queues a stop that returns the job to the queue (JobSuspended follows).
  virtual void Preempt(const Job& job, Timestamp now) = 0;
  // Queues a stop for good (JobFinished with kKilled follows).
  virtual void Kill(const Job& job, Timestamp now) = 0;

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
  // directory; `time_left` its remaining run-time limit (nullopt: none); `placement` what it
  // holds (as restored from the store).
  virtual void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left,
                     const Placement& placement) = 0;

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
