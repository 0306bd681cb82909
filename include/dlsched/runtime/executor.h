#pragma once

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched {

// Carries out the scheduler's decisions: the simulator's SimExecutor, the daemon's process
// executor, the Slurm executor. Calls return at once; outcomes come back as events
// (JobFinished, JobSuspended, JobLaunchFailed) through the driver's event source.
// Called only from the scheduler's thread.
class Executor {
 public:
  virtual ~Executor() = default;
  // Starts (or resumes from its checkpoint) `job` on exactly the GPUs of `placement`.
  virtual void Launch(const Job& job, const Placement& placement, Timestamp now) = 0;
  // Asks a running job to checkpoint and stop. Its GPUs stay held until JobSuspended arrives
  // (or JobFinished, if it ends first).
  virtual void Preempt(const Job& job, Timestamp now) = 0;
  // Stops a running job for good; JobFinished with kKilled follows.
  virtual void Kill(const Job& job, Timestamp now) = 0;
};

// The source of "now" for drivers. Policies never read a clock: they get ctx.now.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp Now() const = 0;
};

// A clock that moves only when told to: the simulator's, and tests'.
class VirtualClock final : public Clock {
 public:
  Timestamp Now() const override { return now_; }
  void AdvanceTo(Timestamp t) { now_ = t; }

 private:
  Timestamp now_ = kTimeZero;
};

}  // namespace dlsched
