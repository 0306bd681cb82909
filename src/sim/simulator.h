#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/policy.h"
#include "sim/metrics.h"
#include "sim/sharing_world.h"
#include "sim/workload.h"

namespace dlsched::sim {

// How far a run has got; passed to SimOptions::on_progress.
struct SimProgress {
  size_t jobs_total = 0;
  size_t jobs_done = 0;  // finished or rejected
  Timestamp sim_time;
  double wall_s = 0;
};

// Where the policies' run-time estimates come from (docs/estimates.md).
enum class RuntimeEstimates {
  kHistory,  // HistoryRuntimeEstimator: past jobs of the same user / model / size (the default)
  kStated,   // StatedRuntimeEstimator: users' estimates (JobSpec::runtime_estimate, or made with
             // `estimate_error`); a job with neither gets its true run time
  kOracle,   // the true run time of every job (ideal_duration): the oracle, labelled as such
};
// "history", "stated", "oracle".
std::string_view RuntimeEstimatesName(RuntimeEstimates estimates);

struct SimOptions {
  // A preempted job keeps its GPUs this long while it checkpoints.
  Duration checkpoint_delay = std::chrono::seconds(30);
  // A resumed job holds its GPUs this long before it makes progress again.
  Duration restore_delay = std::chrono::seconds(30);
  // Seeds the policy's RNG and the runtime-estimate noise.
  uint64_t seed = 1;
  // Sigma of the lognormal error of users' runtime estimates, for jobs without one
  // (0 = estimates equal the ideal duration).
  double estimate_error = 0;
  RuntimeEstimates runtime_estimates = RuntimeEstimates::kHistory;
  // Sample why waiting jobs wait (Scheduler::ExplainPending) this often in simulated time, for
  // RunSummary::pending_s_by_cause; zero turns sampling off. Sampling never changes decisions.
  // With more than 2,000 jobs waiting the interval is multiplied by waiting / 2,000 (rounded
  // down; 4,000 waiting: twice as long), so the queue walks stay cheap beside the run.
  Duration explain_every = std::chrono::hours(1);
  // Online services lend the GPUs their load leaves idle to training jobs
  // (Scheduler::set_lend_idle_service_gpus); false: static reservations.
  bool lend_service_gpus = true;
  // GPU sharing: an out-of-memory kill throws away the progress since the job's last periodic
  // checkpoint, taken every `checkpoint_every` of its run time (zero: all of the segment's).
  Duration checkpoint_every = std::chrono::minutes(30);
  // After each change of a shared GPU's holders, the ground truth is checked for an
  // out-of-memory this far ahead (a group that fits that long is taken to keep fitting: the
  // noise of a demand pattern reaches its bound within a few hundred iterations).
  Duration oom_window = std::chrono::seconds(60);
  // Time-sliced GPUs: each of n holders runs at (1 - overhead) / n of its solo speed.
  double time_slice_overhead = 0.05;
  // Stop at this simulated time; jobs still waiting or running are reported unfinished.
  Timestamp stop_at = kTimeNever;
  // Called about every `progress_every` of wall time, from the simulating thread.
  std::function<void(const SimProgress&)> on_progress;
  std::chrono::milliseconds progress_every{2000};
};

// The world of one run. The policy sees `estimator`; jobs advance by `truth`.
struct SimInputs {
  const Cluster& cluster;
  const Workload& workload;
  const ThroughputModel& truth;
  const ThroughputModel& estimator;
  // Jobs' sharing features, ground-truth demand and what policies may know of it; nullptr: no
  // sharing (policies see no SharingView and the sharing figures stay zero). Fed by the run
  // (observed demand), so one world serves one run at a time.
  SharingWorld* sharing = nullptr;
  // What `estimator` is, for the outputs (RunResult::speed_estimator), e.g. "builtin+noise(0.2)".
  std::string speed_estimator = "builtin";
};

// Replays the workload on the cluster under the policy with a deterministic discrete-event loop:
// events ordered by (time, sequence); at each instant, executor events first, then arrivals,
// then one scheduling cycle. Same inputs and seed give the same RunResult (wall_s aside).
RunResult Simulate(const SimInputs& inputs, std::unique_ptr<SchedulingPolicy> policy,
                   const SimOptions& options);

}  // namespace dlsched::sim
