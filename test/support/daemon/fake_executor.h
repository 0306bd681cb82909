#pragma once

// A deterministic stand-in for the daemon's executors (daemon/exec/job_executor.h), for the
// daemon's unit tests: nothing runs; the test plays the job processes.
//
// FakeMachine is the machine the jobs run on. It outlives the daemon and its executor, as job
// processes outlive theirs, so a test can restart a daemon on the same machine and the new
// executor re-adopts what still runs. NewExecutor makes the executor a daemon gets
// (DaemonOptions::executor_factory); one is attached at a time, from its creation to its Stop.
//
// The executor keeps JobExecutor's contract: Launch, Preempt and Kill only queue; Flush carries
// the queued actions out in order (a launch starts a run segment with a new fake pid, unless the
// test made it fail; a preempt or kill records the stop under way); every segment's outcome is
// reported exactly once, through the sink, when the test says how the segment ends:
//   Exit(job, code)     its process exited: JobSuspended when a preemption was under way,
//                       JobFinished(kKilled) for a kill, else JobFinished kSucceeded on 0 and
//                       kFailed otherwise, with the detail "exit code N".
//   Lose(job, why)      it vanished or its node failed: JobLaunchFailed.
//   FailLaunches(job, n, why)   the next n launches of the job fail when carried out:
//                       JobLaunchFailed.
// A launch whose LaunchSpec cannot be resolved fails at once, from Launch, as the real executors
// do. A stop does not end the segment by itself: a preempted or cancelled job runs on until the
// test ends it (its grace period is the test's to play). An outcome while no executor is attached
// (the daemon is down) is kept and reported by the next executor's Adopt, as ProcessExecutor
// reads a segment's exit file; Adopt of a job without a segment reports it lost.
//
// Not thread-safe: the test drives the daemon on its own thread (Daemon::RunOnce), and the sink
// posts to the daemon's inbox.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/exec/job_executor.h"
#include "daemon/exec/job_files.h"

namespace dlsched::testing {

class FakeExecutor;

class FakeMachine {
 public:
  FakeMachine() = default;
  ~FakeMachine();
  FakeMachine(const FakeMachine&) = delete;
  FakeMachine& operator=(const FakeMachine&) = delete;

  // An executor on this machine, attached until its Stop (DaemonOptions::executor_factory's
  // sink).
  std::unique_ptr<daemon::JobExecutor> NewExecutor(daemon::JobExecutor::Sink sink);

  // What the executors carried out since the last TakeLog, in order: "launch 0" (every launch
  // Flush carried out, also one that failed), "preempt 0", "kill 0", "adopt 0".
  std::vector<std::string> TakeLog();
  // Whether a run segment of `job` runs (it started and has not ended).
  bool running(JobId job) const;
  // The fake pid of `job`'s running segment (0: none).
  int pid(JobId job) const;
  // The environment of `job`'s last launch ("NAME=value"; empty before one).
  std::vector<std::string> env(JobId job) const;

  // The segment's outcomes (see the header comment). Exit and Lose need a running segment.
  void Exit(JobId job, int exit_code);
  void Lose(JobId job, std::string reason);
  void FailLaunches(JobId job, int times, std::string reason);

 private:
  friend class FakeExecutor;
  struct Segment {
    int pid = 0;
    uint64_t start_ticks = 0;
    daemon::StopIntent intent = daemon::StopIntent::kNone;
    // The outcome, once it ended while no executor was attached (for Adopt to report).
    std::optional<daemon::ExecutorReport> outcome;
  };
  struct Failures {
    int times = 0;
    std::string reason;
  };
  // Reports `report` through the attached executor, or keeps it for Adopt.
  void End(JobId job, daemon::ExecutorReport report);

  FakeExecutor* attached_ = nullptr;
  std::map<JobId, Segment> segments_;
  std::map<JobId, Failures> failures_;
  std::map<JobId, std::vector<std::string>> env_;
  std::vector<std::string> log_;
  int next_pid_ = 1000;
};

class FakeExecutor final : public daemon::JobExecutor {
 public:
  FakeExecutor(FakeMachine& machine, Sink sink);
  ~FakeExecutor() override;
  FakeExecutor(const FakeExecutor&) = delete;
  FakeExecutor& operator=(const FakeExecutor&) = delete;

  Status Start() override { return Status::Ok(); }
  // Detaches from the machine: later outcomes wait for the next executor's Adopt.
  void Stop() override;
  void Launch(const Job& job, const Placement& placement, Result<daemon::LaunchSpec> spec) override;
  void Preempt(const Job& job, Timestamp now) override;
  void Kill(const Job& job, Timestamp now) override;
  std::vector<QueuedAction> Queued() const override;
  void Flush() override;
  void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left,
             const Placement& placement) override;
  std::optional<ProcessInfo> Info(JobId job) const override;
  // Every running segment exits as if by SIGKILL (exit code 137).
  void KillAll() override;

 private:
  friend class FakeMachine;
  struct Action {
    size_t kind;  // index into kActionKinds: launch, preempt, kill
    JobId job;
    bool resolved = true;  // a launch whose LaunchSpec was built
  };

  FakeMachine* machine_;
  Sink sink_;
  std::vector<Action> queued_;
};

}  // namespace dlsched::testing
