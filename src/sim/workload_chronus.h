#pragma once

// The Chronus trace reader behind LoadWorkload's "chronus:" prefix (sim/workload.h). Same
// contract as the readers in sim/workload_readers.h: jobs in file order with the trace's own
// submit times (LoadWorkload sorts stably and shifts them, deadlines included), every row checked
// with ValidateJobSpec, a bad row fails the read with InvalidArgument("<path>:<line>: <what>")
// (1-based, header counted) or, with ReadOptions::skip_bad_rows, is dropped and counted in
// `skipped_rows`; blank lines are ignored; header problems are never skipped; a file that cannot
// be opened is NotFound.

#include <string>

#include "dlsched/common/status.h"
#include "sim/workload.h"
#include "sim/workload_readers.h"

namespace dlsched::sim {

// Chronus (SoCC'21) Philly-derived traces with SLOs (traces/chronus/trace_job_Philly_{SLO,MIX1,
// MIX2}.csv): header `job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,
// expect_time_list,expect_value_list,best_effort,job_type`, columns found by name (interval and
// any extra columns are ignored), comma-separated.
//
// Time unit: MINUTES. Upstream never states it, but its simulator steps `cur_time` by 1 and
// treats 60 units as an hour and 60 x 24 as a day (`hour_metric = 60`, turning servers off and on
// at `cur_time % (hour_metric * 24)`, hourly leases of 60 units), and in minutes the data look
// like Philly: submissions span 1..20,151 (14 days), durations 20..4,317 (20 min to 72 h, median
// 60 min). Every time column (submit_time, duration, expect_time_list) is read as minutes.
//
// Mapping: name = job_id; user = queue = user (a Philly virtual cluster); model = model_name;
// num_gpus = num_gpu (an integer >= 0); iterations = iterations and ref_iters_per_s =
// iterations / duration, so ideal_duration() = duration.
// CPU jobs: a 0-GPU row (205 in the SLO trace, which Chronus' own loader drops) is a CPU job of
// kChronusCpuJobCpus cores; host memory is left unstated (0). No GPU job states CPUs or memory,
// so it gets the cluster's per-GPU defaults.
// QoS: job_type `strict`, `soft` or `best`, which must agree with best_effort (1 exactly for
// `best`, else 0). For strict and soft jobs expect_time_list / expect_value_list are '-'-separated
// lists of equal length: times after submit_time (minutes, > 0, strictly ascending) and the
// utility of finishing within each (a number). A strict job has exactly one entry. They become
// JobSpec::utility_steps, and deadline = submit_time + the first time (a soft job that finishes
// by it earns full utility, as Chronus scores it). Best-effort jobs get no deadline and no steps;
// their lists (upstream fills them with the submit time) are not read.
// The CPU cores a 0-GPU Chronus row asks for. ASSUMPTION: the trace gives no CPU counts (nor
// does its SOURCE.md or Chronus' code, which drops these rows); 4 cores is one GPU's share of a
// typical GPU server's cores (a DGX-1 has 40 cores for 8 GPUs; an AWS p3.16xlarge 32 cores for
// 8), so a CPU job here weighs about what a one-GPU job's data loading does.
inline constexpr int kChronusCpuJobCpus = 4;

Result<ParsedRows> ReadChronusTrace(const std::string& path, const ReadOptions& options);

}  // namespace dlsched::sim
