#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"

namespace dlsched::sim {

// A workload: jobs to submit, sorted by (submit_time, original row order), submit times shifted
// so the first job arrives at t = 0. JobSpec::name carries the trace's job id (or the row number
// when the trace has none).
struct Workload {
  std::string source;  // e.g. "philly:../shared/traces/pollux/philly.csv"
  std::vector<JobSpec> jobs;
  int skipped_rows = 0;  // rows dropped by --skip-bad-rows (always 0 without it)
  // Well-formed rows the format leaves out by rule (alibaba: pods that never ran).
  int excluded_rows = 0;
};

struct ReadOptions {
  // Skip malformed rows (counted in Workload::skipped_rows) instead of failing on the first.
  bool skip_bad_rows = false;
  // Keep only the first `max_jobs` jobs after sorting by submit time (0 = all).
  size_t max_jobs = 0;
  // Third-party traces (synthetic:mix=gavel reads gavel/simulation_throughputs.json there).
  std::string traces_dir = "../shared/traces";
};

// Reads "FORMAT:PATH" (philly:, gavel:, tiresias:, chronus:, alibaba:, csv:) or builds
// "synthetic[:k=v,...]".
// Errors name the file and the 1-based line of the first bad row.
//   philly:PATH     Pollux-processed Philly trace (timestamp,duration,num_gpus,gpu_time,cluster)
//   gavel:PATH      Gavel .trace file (7-field msr or 10-field physical_cluster layout), or a
//                   directory of them; iterations = total_steps at a placeholder 1 it/s (the
//                   Gavel throughput model supplies real rates)
//   tiresias:PATH   Tiresias job CSV (job_id,num_gpu,submit_time,iterations,model_name,...)
//   chronus:PATH    Chronus SLO trace (Tiresias columns + expect_time_list,expect_value_list,
//                   best_effort,job_type; times in minutes; deadlines and QoS classes; 0-GPU
//                   rows as CPU jobs)
//   alibaba:PATH    Alibaba cluster-trace-gpu-v2023 pod list (openb_pod_list_*.csv): one job per
//                   pod that ran (CPU-only pods as CPU jobs), work = its run time; cpu_milli ->
//                   cpus, memory_mib -> host_memory_mib, gpu_milli < 1000 -> memory_mib
//   csv:PATH        the native CSV (submit_time,num_gpus,duration + optional columns)
//   synthetic[:k=v,...]  Philly-like generator; keys jobs, seed, load, gpus, users
// The per-format contracts are in sim/workload_readers.h, sim/workload_chronus.h and
// sim/workload_synthetic.h.
// Results: InvalidArgument("<path>:<line>: <what>") for a bad row or header (1-based lines,
// header counted; bad rows are skipped and counted instead under skip_bad_rows),
// InvalidArgument for an unknown prefix or synthetic option, NotFound for a missing file.
// Deadlines move with the shift of submit times. Workload::source = `spec` as given.
Result<Workload> LoadWorkload(std::string_view spec, const ReadOptions& options);

// Offered load of `jobs` on a cluster of `cluster_gpus` GPUs: sum of num_gpus x
// ideal_duration() over (last submit - first submit) x cluster_gpus. 0 when the jobs span no
// time (fewer than two distinct submit times) or cluster_gpus <= 0. Sums in vector order.
double OfferedLoad(const std::vector<JobSpec>& jobs, int cluster_gpus);

}  // namespace dlsched::sim
