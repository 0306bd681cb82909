#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/context.h"

namespace dlsched::sim {

// What happened to one job in a simulated run. Filled by the simulator when the run ends.
struct JobRecord {
  JobId id;
  std::string name;
  std::string user;
  std::string queue;
  int num_gpus = 0;
  JobState final_state = JobState::kQueued;  // kSucceeded, kRejected, or still waiting/running
                                             // when the run was cut short
  Timestamp submit_time;
  Timestamp first_start = kTimeNever;  // kTimeNever if it never started
  Timestamp finish_time = kTimeNever;  // kTimeNever if it did not finish
  Duration ideal_duration{0};          // run time alone, reference GPUs, consolidated (JobSpec)
  Duration run_time{0};                // wall time it held GPUs, all segments
  int preemptions = 0;
  std::string reason;  // rejection reason, or why it was still pending at the end
  // JobSpec::deadline and JobSpec::qos: finish by `deadline` (none = no QoS target).
  std::optional<Timestamp> deadline;
  QosClass qos = QosClass::kBestEffort;
  // Sampled waiting time by cause (SimOptions::explain_every; zero when sampling is off).
  std::array<double, kNumPendingCauses> pending_s_by_cause{};

  bool completed() const { return final_state == JobState::kSucceeded; }
  // Completed no later than its deadline. False without a deadline, and for rejected or
  // unfinished jobs.
  bool met_deadline() const { return deadline && completed() && finish_time <= *deadline; }
  // Job completion time: finish - submit. Only meaningful when completed().
  Duration jct() const { return finish_time - submit_time; }
  // Time spent waiting before the first start.
  Duration first_queue_delay() const { return first_start - submit_time; }
};

// The cluster at one instant; the simulator appends one whenever a cycle changes something,
// thinned so a run keeps at most a few thousand samples.
struct TimeSample {
  Timestamp time;
  int gpus_allocated = 0;
  int queue_length = 0;  // queued + suspended jobs
  int running_jobs = 0;
};

// Wall time of a run's scheduling cycles (Scheduler::RunCycle, one per instant with events), as
// the simulator measured it: like RunSummary::wall_s it varies between runs of the same inputs,
// so `dlsched simulate` shows it only on request (`--timings`). Percentiles nearest-rank; all 0
// when there was no cycle.
struct CycleTimes {
  int64_t cycles = 0;
  double p50_s = 0;
  double p99_s = 0;
  double max_s = 0;
};

// CycleTimes of cycles that took `seconds` each (reordered in place).
CycleTimes SummarizeCycleTimes(std::vector<float>& seconds);

// The per-run figures of `dlsched simulate`. Times in seconds, shares in [0, 1].
// The run's window is [first submission, last completion] (the simulator's t = 0 is the first
// submission); "completed" means JobState::kSucceeded.
struct RunSummary {
  int jobs = 0;
  // Of them, CPU jobs (no GPUs): in the JCT, queue and slowdown figures like any job; they hold
  // no GPU, so they add nothing to gpu_utilization.
  int cpu_jobs = 0;
  int completed = 0;
  int rejected = 0;
  int unfinished = 0;  // neither completed nor rejected when the run ended (failed and killed
                       // jobs count here too)
  // JCT of completed jobs: mean and nearest-rank percentiles. 0 when none completed.
  double avg_jct_s = 0;
  double p50_jct_s = 0;
  double p95_jct_s = 0;
  double p99_jct_s = 0;
  double avg_queue_s = 0;  // average first-start delay of started jobs (completed or not)
  double makespan_s = 0;   // first submission (any job) to last completion; 0 if none completed
  // Allocated GPU-time / (total GPUs x makespan), integrated over the run's window. With a
  // series, gpus_allocated is a step function: each sample holds until the next, the last until
  // the window ends, and nothing is allocated before the first sample. Without a series, the
  // jobs' run_time x num_gpus is used instead (clamped to 1, since it may include work done after
  // the last completion). 0 when makespan or total_gpus is 0.
  double gpu_utilization = 0;
  int preemptions = 0;  // over all jobs
  // JCT / ideal duration over completed jobs with a non-zero ideal duration: mean and p95.
  double avg_slowdown = 0;
  double p95_slowdown = 0;
  // Finish-time fairness (Themis): rho = JCT / (ideal duration x N_avg), where N_avg is the
  // average number of jobs in the system over the job's lifetime, approximated here by the
  // time-average queue_length + running_jobs over the run's window (from the series; without
  // one, from the jobs' submit-to-finish intervals), at least 1. Reported over the same jobs as
  // slowdown: mean and max rho.
  double avg_ftf = 0;
  double max_ftf = 0;
  double wall_s = 0;  // wall-clock seconds the simulation took
  CycleTimes cycle_times;
  // QoS guarantee (issue 4), over the jobs with a deadline (JobRecord::deadline): a job meets it
  // when it completed by the deadline (JobRecord::met_deadline); rejected and unfinished jobs
  // miss. Rates are 0 when there are no such jobs.
  int qos_jobs = 0;                  // jobs with a deadline, any class
  double qos_met_rate = 0;           // share of qos_jobs that met their deadline
  double qos_met_rate_strict = 0;    // the same over strict jobs with a deadline
  double qos_met_rate_soft = 0;      // the same over soft jobs with a deadline (first step)
  double best_effort_avg_jct_s = 0;  // mean JCT of completed best-effort jobs; 0 if none
  // Why jobs waited (issue 5), in job-seconds per PendingCause, sampled every
  // SimOptions::explain_every (each sample's explanation counts until the next sample);
  // fragmentation_blocked_s is the fragmentation and consolidation entries: jobs blocked while
  // enough GPUs they could use were free in total.
  std::array<double, kNumPendingCauses> pending_s_by_cause{};
  double fragmentation_blocked_s = 0;
  // Share of the allocated GPU-time each tenant (JobSpec::queue; "" for none) received, by name.
  std::vector<std::pair<std::string, double>> tenant_share;
  // Per GPU type: allocated GPU-time / (GPUs of the type x makespan), by type name.
  std::vector<std::pair<std::string, double>> gpu_type_utilization;
  // RunResult::host_blocked_gpu_s / (total GPUs x makespan): the share of the cluster's GPU-time
  // that sat idle for lack of CPUs or memory; nullopt when not measured.
  std::optional<double> host_blocked_gpu_share;
};

// Allocated GPU-time per GPU type over the run's window, measured by the simulator.
struct GpuTypeUsage {
  std::string type;
  int gpus = 0;
  double allocated_gpu_s = 0;
};

// The run's online services (JobSpec::service). They are not in RunResult::jobs: a service's
// lifetime is not a completion time, and it never waits behind training.
struct ServiceSummary {
  int services = 0;
  int reserved_gpus = 0;  // their num_gpus, summed
  double lent_gpu_s = 0;  // GPU-time training jobs ran on GPUs services lent them
  int yields = 0;         // training jobs preempted to give a service its GPUs (back)
  // GPU-time services needed but had lent out, while their borrowers checkpointed.
  double shortfall_gpu_s = 0;
};

// GPU sharing (seed 000) over a run, as the simulator's ground truth saw it. Filled for every
// run the simulator had a SharingWorld for, exclusive policies included, so runs compare.
struct SharingSummary {
  // Running jobs' mean memory demand over the cluster's GPU memory, averaged over the run.
  double gpu_mem_utilization = 0;
  // Running jobs' SM use (mean SM utilisation x the speed sharing leaves them) over the GPUs.
  double gpu_sm_utilization = 0;
  int migrations = 0;         // Job::migrations, summed
  int oom_restarts = 0;       // runs killed because their GPU's sharers ran out of memory
  double oom_lost_gpu_s = 0;  // GPU-time of the progress those kills threw away
  double shared_gpu_s = 0;    // GPU-time during which two jobs or more held a GPU
  int jobs_shared = 0;        // jobs that ran slowed by a GPU's other holders at some point
  // The largest slowdown (1 / speed) each of jobs_shared ran at: the largest, and its p95.
  double max_slowdown = 1;
  double p95_slowdown = 1;
};

// Everything one policy's run produced.
struct RunResult {
  std::string policy;
  // What the policy was told (docs/estimates.md): its run-time estimates ("history", "stated",
  // "oracle": RuntimeEstimatesName) and speed estimator (SimInputs::speed_estimator). `oracle`:
  // the run saw true run times and speeds; every output labels it so.
  std::string runtime_estimator = "history";
  std::string speed_estimator = "builtin";
  bool oracle = false;
  int total_gpus = 0;
  std::vector<JobRecord> jobs;           // in JobId order
  std::vector<TimeSample> series;        // in time order
  std::vector<GpuTypeUsage> type_usage;  // in GpuTypeId order; empty when not measured
  // GPU-seconds idle for lack of host CPUs or memory (HostBlockedMeter); nullopt when not
  // measured (no node states host resources).
  std::optional<double> host_blocked_gpu_s;
  ServiceSummary services;
  SharingSummary sharing;
  RunSummary summary;
};

// Computes the summary figures from jobs and series. `wall_s` and `cycle_times` are left as
// they were.
// Percentiles use the nearest-rank method on the sorted JCTs; all sums are in a fixed order so
// the result is deterministic.
void ComputeSummary(RunResult& run);

// The nearest-rank `percent` percentile of `sorted` (ascending): the value at 1-based rank
// ceil(percent / 100 x n), clamped to [1, n]. 0 for an empty input. `percent` is in [0, 100].
double NearestRankPercentile(std::span<const double> sorted, double percent);

}  // namespace dlsched::sim
