#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/runtime/events.h"
#include "dlsched/runtime/executor.h"
#include "dlsched/sharing/interference.h"
#include "sim/event_queue.h"
#include "sim/sharing_world.h"
#include "sim/simulator.h"

namespace dlsched::sim {

// The ground truth of a job's progress; only the SimExecutor sees it. Progress at time t of the
// current segment: iterations_done + max(0, t - progress_start) x iters_per_s (a change of rate
// banks the progress so far and moves progress_start to the change).
struct TrueProgress {
  double iterations_done = 0;
  double iters_per_s = 0;
  double solo_iters_per_s = 0;  // alone on its placement; iters_per_s = this x speed
  double speed = 1.0;           // fraction of solo speed its GPU's sharers leave it
  double min_speed = 1.0;       // the lowest `speed` it ever ran at
  Timestamp launched_at;        // the current segment's launch (its demand pattern's zero)
  Timestamp segment_begin;      // progress_start of the segment before any rate change
  double segment_begin_iterations = 0;
  Timestamp progress_start;  // when the current segment starts making progress
  Timestamp finish_at = kTimeNever;
  uint32_t generation = 0;
  double total_iterations = 0;  // JobSpec::iterations
  int num_gpus = 0;
  int shared_gpu = -1;  // index into SimExecutor::sharers_ while it shares a GPU
  bool in_use = false;  // it holds GPUs and counts in the usage figures
  bool has_run = false;
};

// What sharing did over a run, from the executor's ground truth.
struct SharingTally {
  double mem_mib_s = 0;  // integral of the running jobs' mean memory demand
  double sm_s = 0;       // integral of the running jobs' SM use (mean SM x speed), GPUs
  double shared_gpu_s = 0;
  int oom_restarts = 0;
  double oom_lost_gpu_s = 0;
};

// Runs jobs in virtual time at the speed of the ground-truth model and reports back through the
// event queue, with checkpoint and restore costs. Jobs sharing a GPU run at their solo speed
// times the interference of the others (packed) or 1/n of it (time-sliced); each change of a
// GPU's sharers re-times all of them and looks for an out-of-memory in the next oom_window.
class SimExecutor final : public Executor {
 public:
  SimExecutor(const Cluster& cluster, const ThroughputModel& truth, const SimOptions& options,
              SharingWorld* sharing, EventQueue& events)
      : cluster_(cluster),
        truth_(truth),
        options_(options),
        sharing_(sharing),
        events_(events),
        sharers_(static_cast<size_t>(cluster.total_gpus())) {}

  void Reserve(size_t n) { progress_.reserve(n); }
  void AddJob() { progress_.emplace_back(); }
  uint32_t generation(JobId id) const { return progress_[id.index()].generation; }
  const SharingTally& tally() const { return tally_; }
  double min_speed(JobId id) const { return progress_[id.index()].min_speed; }

  void Launch(const Job& job, const Placement& placement, Timestamp now) override;
  void Preempt(const Job& job, Timestamp now) override;
  void Kill(const Job& job, Timestamp now) override;

  // A finish the scheduler accepted: the job leaves its GPU, and events still pending for the
  // run (an out-of-memory kill due later) are stale.
  void Finished(const Job& job, Timestamp now);

  // An out-of-memory kill at `now`: the job loses its progress since its last periodic
  // checkpoint (every options.checkpoint_every of progress time) and leaves its GPU; its history
  // learns the demand that killed it.
  void OutOfMemory(const Job& job, Timestamp now);

  // Integrates the usage figures up to `now`.
  void Account(Timestamp now);

 private:
  struct Sharers {
    NodeId node;
    ShareMode mode = ShareMode::kPacked;
    std::vector<JobId> jobs;
  };

  // Banks the progress up to `now` at the current rate.
  static void Bank(TrueProgress& p, Timestamp now);

  // Runs the job at `speed` of its solo rate from `now`, with a fresh finish event.
  void Retime(JobId id, TrueProgress& p, double speed, Timestamp now);

  // Re-times every job sharing `gpu` after a change, and schedules the first out-of-memory kill
  // the next oom_window holds (a later change re-times them all, so a stale kill is ignored).
  void Regroup(int gpu_index, Timestamp now);

  // The job stops using its GPU(s): usage figures, and its sharers re-timed.
  void Leave(const Job& job, Timestamp now);

  // Adds (sign +1) or removes (-1) the job's demand from the usage figures.
  void AddUse(JobId id, TrueProgress& p, int sign);

  const Cluster& cluster_;
  const ThroughputModel& truth_;
  const SimOptions& options_;
  SharingWorld* sharing_;  // nullptr: no sharing figures, shared launches run as exclusive
  EventQueue& events_;
  std::vector<TrueProgress> progress_;
  std::vector<Sharers> sharers_;                   // per GPU of the cluster: the jobs sharing it
  std::vector<sharing::SharedJobDemand> demands_;  // Regroup's scratch
  SharingTally tally_;
  Timestamp accounted_at_ = kTimeZero;
  double mem_in_use_mib_ = 0;
  double sm_in_use_ = 0;
  int shared_gpus_ = 0;  // GPUs with two jobs or more
};

// The scheduler event for a popped executor event of `job` (not for kWake, which is the loop's).
Event ToSchedulerEvent(const SimEvent& e, const Cluster& cluster, const Job& job);

}  // namespace dlsched::sim
