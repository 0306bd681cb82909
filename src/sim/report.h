#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/version.h"
#include "sim/metrics.h"

// The outputs of `dlsched simulate`: a text comparison table (stdout), a JSON summary that other
// tools parse, a per-job CSV and a self-contained HTML report. Every writer is deterministic:
// the same runs and meta give the same bytes (no dates, no hash-ordered containers). Each takes
// RunResults whose `summary` was already filled by ComputeSummary. Not thread-safe per stream.

namespace dlsched::sim {

// A duration for humans, one decimal, in the largest unit that keeps the number below the next
// unit: "12.3s" below a minute, "35.0m" below an hour, "1.2h" below a day, "3.4d" beyond.
// Rounding never yields "60.0s" / "60.0m" / "24.0h" (those become "1.0m" / "1.0h" / "1.0d").
// Negative inputs get a leading '-'; NaN gives "-".
std::string FormatDuration(double seconds);

// Writes a fixed-width text table, one row per run in the given order: policy, jobs, done,
// rejected, avg / p50 / p95 / p99 JCT, avg queue, makespan (FormatDuration), GPU util %,
// preemptions, mean slowdown, [qos met %,] wall seconds. A run that saw the oracle is named
// "<policy> (oracle)" here and in the HTML report. The "qos met" column (qos_met_rate)
// appears only when some run has qos_jobs > 0. Cells without data (no completed job; no job with
// a deadline) show "-".
// Numbers are right-aligned. The table is followed by one "Best avg JCT" line. It compares only
// runs that completed the same jobs: those with no unfinished job that completed exactly the
// jobs of the run that completed the most, so that a policy is not crowned for rejecting jobs.
// The others are named as left out, with why ("qos (completed 841 of 3000)", "fifo (3
// unfinished)"). The lowest avg JCT wins only when no other compared run is within 1% of it;
// otherwise the line says "no clear winner" and names the runs within 1%, lowest first. A last
// line says which estimates the policies saw ("Estimates the policies saw: run times from ...").
// With `timings`, four columns follow: "cycles" (the run's scheduling cycles) and the wall time
// of a cycle, "cycle p50", "cycle p99" and "cycle max" (RunSummary::cycle_times, in ms, three
// decimals); without, the table holds nothing else that varies between runs but "wall s".
void WriteComparisonTable(const std::vector<RunResult>& runs, std::ostream& out,
                          bool timings = false);

// Top-level fields of the JSON summary.
struct JsonMeta {
  std::string trace;    // the workload spec, e.g. "philly:traces/philly.csv"
  std::string cluster;  // the cluster spec or file
  uint64_t seed = 0;
  // How GPU jobs' host CPUs were set (simulate --host-allocation) when not their own requests;
  // "" = requested, and the key is left out.
  std::string host_allocation;
};

// The JSON summary, pretty-printed with 2-space indents and a trailing newline:
//   {"trace": str, "cluster": str, "seed": uint[, "host_allocation": str], "dlsched_version": str,
//    "runs": [{"policy": str, "oracle": bool, "runtime_estimator": str, "speed_estimator": str,
//              "jobs": int, "completed": int, "rejected": int, "unfinished": int,
//              "avg_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "avg_queue_s", "makespan_s",
//              "gpu_utilization", "preemptions": int, "avg_slowdown", "p95_slowdown",
//              "avg_ftf", "max_ftf", "wall_s"
//              [, "qos_jobs": int, "qos_met_rate", "qos_met_rate_strict", "qos_met_rate_soft",
//               "best_effort_avg_jct_s"]}, ...]}
// The bracketed QoS keys appear, in every run, only when some run has qos_jobs > 0 (so the
// output for workloads without deadlines is unchanged). With `timings`, every run also has
// "cycles": int, "cycle_p50_s", "cycle_p99_s", "cycle_max_s" (RunSummary::cycle_times) after
// "wall_s"; without, "wall_s" is the only key whose value varies between runs. Keys appear in
// exactly this order; runs in the given order; doubles print in the shortest form that round-trips.
// Invalid UTF-8 in strings is replaced with U+FFFD.
std::string RunsToJson(const std::vector<RunResult>& runs, const JsonMeta& meta,
                       bool timings = false);

// Writes one CSV row per job (in run.jobs order) under the header
//   job_id,name,user,queue,num_gpus,state,submit_s,start_s,finish_s,jct_s,queue_s,ideal_s,run_s,
//   slowdown,preemptions,reason
// Times in seconds with 3 decimals ("%.3f"). start_s / queue_s are empty when the job never
// started, finish_s when it did not finish, jct_s / slowdown unless it completed (slowdown also
// when its ideal duration is 0). Text cells are quoted per RFC 4180 when needed. Rows end in
// "\n". Returns IoError when the stream fails.
Status WriteJobsCsv(const RunResult& run, std::ostream& out);

// What the HTML report says about its inputs.
struct ReportMeta {
  std::string title;  // empty -> "dlsched simulation report"
  std::string trace;
  std::string cluster;
  uint64_t seed = 0;
};

// Writes one self-contained HTML5 page (inline CSS and SVG; no script, no network, no external
// fonts): the meta, the comparison table (WriteComparisonTable's columns without wall seconds),
// and five plots, each one <svg>: a JCT CDF per run (log x axis), GPU utilisation over time,
// queue length over time, per-run slowdown percentiles (box p25-p75, median, whiskers p5-p95)
// and a heat map of GPU allocation (one row per run, 60 time slices); then, where the runs have
// them, a table of waiting by why-pending cause per run and one of each tenant's jobs, mean JCT
// and GPU-time share per run. Time series are downsampled to at most 600 points per line by
// time-weighted bucket means, so size grows with the number of runs, not jobs. All text is
// HTML-escaped. Returns IoError when the stream fails.
Status WriteHtmlReport(const std::vector<RunResult>& runs, const ReportMeta& meta,
                       std::ostream& out);

}  // namespace dlsched::sim
