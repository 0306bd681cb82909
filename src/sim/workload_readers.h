#pragma once

// The trace readers behind LoadWorkload (sim/workload.h). Each reads one format into JobSpecs,
// in file order with submit times in the format's own epoch (LoadWorkload then sorts stably and
// shifts), except ReadPhillyTrace, which returns them already sorted and shifted to t = 0. Every
// row is checked with ValidateJobSpec. A bad row fails the read with
// InvalidArgument("<path>:<line>: <what>") (1-based line, the header counted), or, with
// ReadOptions::skip_bad_rows, is dropped and counted in `skipped_rows`. Blank lines are ignored
// and never count as bad. Header problems are never skipped. A file that cannot be opened is
// NotFound.

#include <cstdint>
#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"
#include "sim/workload.h"

namespace dlsched::sim {

struct ParsedRows {
  std::vector<JobSpec> jobs;  // file order (Philly: sorted by submit time, first at t = 0)
  int skipped_rows = 0;       // malformed rows dropped under ReadOptions::skip_bad_rows
  // Well-formed rows the format leaves out by its own rule (alibaba: pods that never ran); never
  // errors, counted whatever ReadOptions says.
  int excluded_rows = 0;
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

// The GPU memory, in MiB, that a whole GPU of an Alibaba task stands for: a V100-16GB's. The
// trace gives a shared task's demand only as a fraction of one GPU (gpu_milli), so
// ReadAlibabaTrace turns that fraction into memory on a 16 GiB GPU.
inline constexpr int64_t kAlibabaGpuMemoryMib = 16384;

// Alibaba cluster-trace-gpu-v2023 ("openb") pod lists (traces/alibaba-gpu-v2023/SOURCE.md):
// header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
// deletion_time,scheduled_time`; columns found by name; gpu_spec and extra columns are ignored.
// A file without name, num_gpu, gpu_milli, qos, pod_phase, creation_time, deletion_time,
// scheduled_time, cpu_milli or memory_mib (openb_pod_list_multigpu50.csv has only the first five
// columns, so no times) is an error naming every missing column.
// One JobSpec per pod that ran, CPU-only pods (num_gpu 0) included as CPU jobs:
//   - excluded (counted in `excluded_rows`, not errors): pods that never ran (pod_phase Pending,
//     or an empty scheduled_time);
//   - name = the pod name; num_gpus = num_gpu; submit_time = creation_time (s);
//   - cpus = ceil(cpu_milli / 1000) (whole cores; cpu_milli 0..10^9) and host_memory_mib =
//     memory_mib (0..2^50), the pod's requests for the whole pod; 0 = the cluster's per-GPU
//     defaults. A CPU-only pod must request CPUs (ValidateJobSpec), or it is a bad row;
//   - work = the pod's run time, deletion_time - scheduled_time (s), at 1 iteration/s
//     (iterations = seconds, ref_iters_per_s = 1), so ideal_duration() is the run time. Pods
//     still Running when the trace was taken have their deletion time at the end of the
//     observation, so their work is truncated there. deletion_time < scheduled_time is a bad
//     row, and so is a zero run time (ValidateJobSpec: no work);
//   - a single-GPU pod with gpu_milli < 1000 asks for that fraction of one GPU: memory_mib =
//     ceil(gpu_milli / 1000 x kAlibabaGpuMemoryMib), the demand the GPU-sharing layer packs by.
//     Whole-GPU pods keep memory_mib = 0 (unknown). gpu_milli must be 0..1000, and 1..1000 when
//     num_gpu is 1; for multi-GPU pods it is ignored (the trace has 1000 there);
//   - qos (LS, BE, Burstable, Guaranteed; anything else is a bad row) sets priority: 1 for LS
//     (latency-sensitive) and Guaranteed, 0 for BE and Burstable. JobSpec::qos stays
//     best-effort;
//   - gpu_spec (allowed GPU models, G2/T4/V100M16/...) is ignored: our cluster specs name other
//     types (V100, K80, ...), so gpu_type stays empty (any);
//   - pod_phase must be Succeeded, Running, Pending or Failed; a Failed pod ran until deletion
//     and is kept like the others.
Result<ParsedRows> ReadAlibabaTrace(const std::string& path, const ReadOptions& options);

// The project's own CSV. Header required; columns by name, any order, comma-separated, no
// quoting. Required: submit_time (s, fractional ok), num_gpus (>= 0; 0 = a CPU job, which must
// state cpus), duration (s, > 0). Optional (cells may be empty = unset): job_id (-> name;
// default the 1-based data row number), user, queue, model, batch_size, gpu_type, deadline (s
// after submit_time), qos_class (strict, soft, best-effort), priority, memory_mib (GPU memory per
// GPU), iterations (when set, ref_iters_per_s = iterations / duration; else iterations = duration
// at 1 it/s), runtime_estimate (s, the user's estimate, JobSpec::runtime_estimate), selector and
// prefer (node labels, key=value;...), kind (training or service) and service_load, cpus (CPU
// cores for the whole job, 0..10,000,000) and host_memory_mib (host memory in MiB for the whole
// job, 0..2^50): JobSpec::cpus / host_memory_mib, where 0 or empty = the cluster's per-GPU
// defaults. An unknown or repeated column is an error naming it.
Result<ParsedRows> ReadNativeCsv(const std::string& path, const ReadOptions& options);

}  // namespace dlsched::sim
