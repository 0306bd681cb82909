#pragma once

// Out of GPU memory, live (issue 18 item 7; docs/sharing.md, "Out of memory and migration,
// live"). Two ways the daemon learns that a run is out of GPU memory:
//   - the watchdog: the GPU monitor (gpu_usage.h) observes the run holding more than its limit
//     (GpuMemoryLimitMib) plus a slack, in several consecutive samples; the daemon then stops the
//     run (SIGTERM and the grace period, as a preemption, so it may checkpoint);
//   - the exit: a run that exits non-zero and whose log ends with a CUDA out-of-memory message
//     (FindCudaOutOfMemory).
// Either way the scheduler gets the run's end as JobLaunchFailed with out_of_memory set and a
// reason starting with kOutOfMemoryReason, the event the simulator gives it when a shared GPU
// runs out of memory: the job is requeued (not failed), Job::last_oom is set, and the back-off
// is the policies' own (a sharing policy keeps the job off shared GPUs for its min_residence),
// the same code in both drivers. A job that runs out of memory max_restarts times in a row
// fails instead, so that a job that can never fit does not restart for ever.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/gpu_usage.h"
#include "dlsched/common/ids.h"
#include "dlsched/model/job.h"

namespace dlsched::daemon {

// How a JobLaunchFailed reason of an out-of-memory restart begins (the simulator's words too);
// the event log's `launch_failed` rows are read back as out-of-memory restarts by it.
inline constexpr std::string_view kOutOfMemoryReason = "out of GPU memory: ";

struct OomWatchdogOptions {
  // A run is over its limit when it holds more than limit + slack_mib on one GPU (the slack
  // covers the CUDA context and allocator rounding a framework does not count).
  int64_t slack_mib = 256;
  // ... in this many consecutive monitor samples (0: no watchdog; exits are still detected).
  int samples = 3;
  // A job that runs out of memory this many times in a row fails (>= 1).
  int max_restarts = 5;
};

// The GPU memory a run of `job` may hold per GPU (MiB), or nullopt when it has no limit (then
// the watchdog leaves it alone): the job's memory request (JobSpec::memory_mib). The one place
// the limit is decided: a shared job's DLSCHED_GPU_MEMORY_LIMIT_MIB is to be this value too.
std::optional<int64_t> GpuMemoryLimitMib(const Job& job);

// A run the watchdog found over its limit.
struct OomVerdict {
  JobId job;
  std::string reason;  // starts with kOutOfMemoryReason
};

// Counts each running job's consecutive samples over its limit. Scheduler thread only.
class OomWatchdog {
 public:
  explicit OomWatchdog(OomWatchdogOptions options) : options_(options) {}

  // One monitor sample's observations (AttributeGpuSample). `limit_of(job)` is the job's limit
  // (GpuMemoryLimitMib) while the job runs and the watchdog may stop it, else nullopt. A job
  // over limit + slack gets one more sample in its streak; any other job, observed or not, loses
  // its streak. Returns the jobs whose streak reached options.samples in this sample, by
  // ascending id (their streaks restart).
  std::vector<OomVerdict> Check(std::span<const JobGpuObservation> observations,
                                const std::function<std::optional<int64_t>(JobId)>& limit_of);

  const OomWatchdogOptions& options() const { return options_; }

 private:
  OomWatchdogOptions options_;
  std::map<JobId, int> streaks_;
};

// The CUDA out-of-memory messages FindCudaOutOfMemory knows: PyTorch's
// ("CUDA out of memory", torch.OutOfMemoryError / torch.cuda.OutOfMemoryError), the CUDA driver
// API's (CUDA_ERROR_OUT_OF_MEMORY), the runtime API's (cudaErrorMemoryAllocation, and its text
// "out of memory" as cudaGetErrorString prints it after "CUDA error: "), TensorFlow's
// (ResourceExhaustedError ... "OOM when allocating"), JAX/XLA's (RESOURCE_EXHAUSTED: Out of
// memory) and cuDNN's/cuBLAS's allocation failures.
inline constexpr std::string_view kCudaOutOfMemoryPatterns[] = {
    "CUDA out of memory",
    "OutOfMemoryError",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "cudaErrorMemoryAllocation",
    "CUDA error: out of memory",
    "OOM when allocating tensor",
    "RESOURCE_EXHAUSTED: Out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
};

// The first pattern of kCudaOutOfMemoryPatterns that `log_tail` contains (case-sensitive, as
// the libraries print them), or nullopt.
std::optional<std::string_view> FindCudaOutOfMemory(std::string_view log_tail);

// How many bytes of a log's end FindCudaOutOfMemory is given.
inline constexpr int64_t kOomLogTailBytes = 64 * 1024;

}  // namespace dlsched::daemon
