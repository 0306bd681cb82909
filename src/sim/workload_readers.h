#pragma once

// The trace readers behind LoadWorkload (sim/workload.h). Each reads one format into JobSpecs,
// in file order with submit times in the format's own epoch (LoadWorkload then sorts stably and
// shifts), except ReadPhillyTrace, which returns them already sorted and shifted to t = 0. Every
// row is checked with ValidateJobSpec. A bad row fails the read with
// InvalidArgument("<path>:<line>: <what>") (1-based line, the header counted), or, with
// ReadOptions::skip_bad_rows, is dropped and counted in `skipped_rows`. Blank lines are ignored
// and never count as bad. Header problems are never skipped. A file that cannot be opened is
// NotFound.

#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"
#include "sim/workload.h"

namespace dlsched::sim {

struct ParsedRows {
  std::vector<JobSpec> jobs;  // file order (Philly: sorted by submit time, first at t = 0)
  int skipped_rows = 0;
};

// Philly as processed by Pollux (traces/pollux/philly.csv): header
// `timestamp,duration,num_gpus,gpu_time,cluster` (columns found by name; gpu_time and any extra
// columns are ignored). timestamp "YYYY-MM-DD HH:MM:SS" is read as UTC; duration in seconds.
// name = 1-based data row number (line - 1), queue = cluster (VC hash), iterations = duration,
// ref_iters_per_s = 1.
Result<ParsedRows> ReadPhillyTrace(const std::string& path, const ReadOptions& options);

// Gavel traces (traces/gavel/SOURCE.md), tab-separated, no header. The field count of the first
// non-blank row picks the layout; every row must then have it:
//   7 fields  (msr): job_type, command, num_steps_arg, needs_data_dir, total_steps,
//                    arrival_time (s), scale_factor (#GPUs)
//   10 fields (physical_cluster): job_type, command, working_directory, num_steps_arg,
//                    needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
//                    arrival_time (s)
// job_type "ResNet-50 (batch size 64)" gives model "ResNet-50", batch_size 64; a type without
// "(batch size N)" ("A3C") is the model with batch_size 0. iterations = total_steps and
// ref_iters_per_s stays 1.0: Gavel traces carry no speeds, so ideal_duration() is NOT the real
// run time; the Gavel throughput model (perf, keyed by model + batch size + #GPUs + GPU type,
// from traces/gavel/simulation_throughputs.json) supplies real iteration rates.
// priority = round(priority_weight) (10-field only); SLO is ignored for now. name = 1-based
// row number. queue = the file's stem (the Philly VC hash) for the msr layout, empty for the
// physical-cluster layout.
// `path` may also be a directory: every "*.trace" file in it is read, in file-name order, and
// names become "<stem>:<row>".
Result<ParsedRows> ReadGavelTrace(const std::string& path, const ReadOptions& options);

// Tiresias (traces/tiresias/60_job.csv): header `job_id,num_gpu,submit_time,iterations,
// model_name,duration,interval` (by name; interval ignored). Seconds. name = job_id, model =
// model_name, iterations = iterations, ref_iters_per_s = iterations / duration, so
// ideal_duration() = duration.
Result<ParsedRows> ReadTiresiasTrace(const std::string& path, const ReadOptions& options);

// The project's own CSV. Header required; columns by name, any order, comma-separated, no
// quoting. Required: submit_time (s, fractional ok), num_gpus, duration (s, > 0). Optional
// (cells may be empty = unset): job_id (-> name; default the 1-based data row number), user,
// queue, model, batch_size, gpu_type, deadline (s after submit_time), qos_class (strict, soft,
// best-effort), priority, memory_mib, iterations (when set, ref_iters_per_s = iterations /
// duration; else iterations = duration at 1 it/s), runtime_estimate (s, the user's estimate,
// JobSpec::runtime_estimate). An unknown or repeated column is an error naming it.
Result<ParsedRows> ReadNativeCsv(const std::string& path, const ReadOptions& options);

}  // namespace dlsched::sim
