#pragma once

#include <string>

#include "dlsched/common/time.h"
#include "dlsched/model/job.h"

namespace dlsched {

// Where a job is in its life and what it has used: the fields of a Job that a driver keeps
// across restarts. The daemon stores them in its rows (JobRow), shows them in its records
// (JobRecord) and gives them back through Scheduler::Restore (RestoredJob), each of which holds
// them as this struct. The Scheduler's own Job keeps the same fields as members of its own
// (the hot struct of every policy and the simulator); LifecycleOf and SetLifecycle are the one
// place that maps between the two.
struct JobLifecycle {
  JobState state = JobState::kPending;
  Timestamp queued_since;   // when it last entered the queue
  Timestamp segment_start;  // when the current run segment began (running)
  Timestamp first_start = kTimeNever;
  Timestamp finish_time = kTimeNever;
  Duration run_time{0};           // wall time of completed run segments
  Duration attained_gpu_time{0};  // GPU-time (GPUs x wall time) of completed run segments
  double iterations_done = 0;     // at the last checkpoint the executor reported
  int preemptions = 0;
  std::string reason;  // why rejected or failed, or the last why-pending explanation

  // The fields alone, for a struct that holds them as its base.
  JobLifecycle& lifecycle() { return *this; }
  const JobLifecycle& lifecycle() const { return *this; }
  friend bool operator==(const JobLifecycle&, const JobLifecycle&) = default;
};

// The lifecycle fields of `job`.
JobLifecycle LifecycleOf(const Job& job);
// Sets the lifecycle fields of `job` to `lifecycle`'s, and nothing else.
void SetLifecycle(Job& job, JobLifecycle lifecycle);

}  // namespace dlsched
