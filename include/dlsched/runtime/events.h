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

// The executor could not start a job; its GPUs are released and it waits again.
struct JobLaunchFailed {
  JobId job;
  std::string reason;
};

// A user asked to cancel a job.
struct JobCancelRequested {
  JobId job;
};

// Everything that can happen to the scheduler, apart from submissions and cycles.
using Event = std::variant<JobFinished, JobSuspended, JobLaunchFailed, JobCancelRequested>;

}  // namespace dlsched
