#pragma once

#include <string>
#include <variant>

#include "dlsched/common/ids.h"
#include "dlsched/model/job.h"

namespace dlsched {

// A job stopped on its own or was killed. `final_state` is kSucceeded, kFailed or kKilled.
struct JobFinished {
  JobId job;
  JobState final_state = JobState::kSucceeded;
  std::string detail;  // exit code, signal, "killed by user", ...
};

// A preempted job has checkpointed and released its GPUs.
struct JobSuspended {
  JobId job;
  double iterations_done = 0;  // progress saved in the checkpoint
};

// A job's run ended without its doing so itself; its GPUs are released and it waits again.
// `never_started`: the run could not start on its placement at all (the job cannot run on that
// GPU type); the scheduler places it on other GPU types from then on, and fails it once it has
// failed on every type it could use. Otherwise the run was lost (its node or process vanished)
// and the job is simply requeued.
struct JobLaunchFailed {
  JobId job;
  std::string reason;
  bool never_started = false;
  // The run died because the GPU it shared ran out of memory (Job::last_oom).
  bool out_of_memory = false;
};

// A user asked to cancel a job.
struct JobCancelRequested {
  JobId job;
};

// Everything that can happen to the scheduler, apart from submissions and cycles.
using Event = std::variant<JobFinished, JobSuspended, JobLaunchFailed, JobCancelRequested>;

}  // namespace dlsched
