#include "dlsched/model/job_lifecycle.h"

#include <utility>

namespace dlsched {

JobLifecycle LifecycleOf(const Job& job) {
  JobLifecycle l;
  l.state = job.state;
  l.queued_since = job.queued_since;
  l.segment_start = job.segment_start;
  l.first_start = job.first_start;
  l.finish_time = job.finish_time;
  l.run_time = job.run_time;
  l.attained_gpu_time = job.attained_gpu_time;
  l.iterations_done = job.iterations_done;
  l.preemptions = job.preemptions;
  l.reason = job.reason;
  return l;
}

void SetLifecycle(Job& job, JobLifecycle lifecycle) {
  job.state = lifecycle.state;
  job.queued_since = lifecycle.queued_since;
  job.segment_start = lifecycle.segment_start;
  job.first_start = lifecycle.first_start;
  job.finish_time = lifecycle.finish_time;
  job.run_time = lifecycle.run_time;
  job.attained_gpu_time = lifecycle.attained_gpu_time;
  job.iterations_done = lifecycle.iterations_done;
  job.preemptions = lifecycle.preemptions;
  job.reason = std::move(lifecycle.reason);
}

}  // namespace dlsched
