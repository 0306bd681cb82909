#pragma once

// What the GPU monitor (exec/gpu_monitor.h) observed of each job: the processes of a sample are
// attributed to jobs through their process groups (every job runs in a process group of its
// own, led by the process the executor started), and each job's observations accumulate into
// its usage (latest, peak, count) and its demand history, which the sharing knowledge reads as
// the job's observed demand (docs/sharing.md, "Running it live").

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "daemon/exec/gpu_monitor.h"
#include "daemon/store/store.h"
#include "dlsched/common/ids.h"
#include "dlsched/common/time.h"
#include "dlsched/sharing/demand.h"

namespace dlsched::daemon {

// One observation of a job, as JobGpuUsage::recent lists it.
struct GpuUsagePoint {
  Timestamp at;
  int64_t memory_mib = 0;
  double utilization = 0;  // 0..1
  friend bool operator==(const GpuUsagePoint&, const GpuUsagePoint&) = default;
};

// One job's GPU use as the monitor observed it (GET /v1/jobs/{id}, /metrics).
struct JobGpuUsage {
  // How many of a job's latest observations `recent` keeps (the dashboard's memory chart: ten
  // minutes at the default monitor period of 5 s; about 3 KiB a job).
  static constexpr size_t kRecent = 120;

  int64_t latest_memory_mib = 0;
  int64_t peak_memory_mib = 0;
  double latest_utilization = 0;  // 0..1
  int64_t samples = 0;
  Timestamp latest_at = kTimeNever;
  // The latest observations, oldest first, at most kRecent (null: none). Immutable once
  // published: each Record makes a new one, so snapshots share it without copying.
  std::shared_ptr<const std::vector<GpuUsagePoint>> recent;

  // Field by field, `recent` by content (null and empty are the same).
  friend bool operator==(const JobGpuUsage& a, const JobGpuUsage& b);
};

// What one sample says of one job.
struct JobGpuObservation {
  JobId job;
  // Per GPU, as the sharing policies count demand: the most memory its processes held together
  // on any one device (a process whose memory the driver cannot tell counts 0).
  int64_t memory_mib = 0;
  // The mean utilisation of the devices its processes were on. NVML measures a device, not a
  // process: on a shared GPU this is the GPU's, partners included.
  double utilization = 0;
  friend bool operator==(const JobGpuObservation&, const JobGpuObservation&) = default;
};

// The jobs `sample` shows, by ascending id: a process belongs to the job whose process group it
// is in. `job_of_group` maps the process group id of each running job to the job;
// `group_of(pid)` is a process's group id (getpgid; <= 0 once it has gone). Processes of no
// job (another user's, the daemon's) are ignored.
std::vector<JobGpuObservation> AttributeGpuSample(const GpuSample& sample,
                                                  const std::map<int, JobId>& job_of_group,
                                                  const std::function<int(int pid)>& group_of);

// getpgid(pid), or -1 when there is no such process.
int ProcessGroupOf(int pid);

// Every job's observations. Scheduler thread only.
class GpuUsageBook {
 public:
  // How many of a job's latest samples its demand history keeps.
  static constexpr size_t kHistory = 256;

  // Adds one observation taken at `at`.
  void Record(const JobGpuObservation& observation, Timestamp at);
  // What a restarted daemon knows again: the stored totals and each job's newest samples
  // (Store::LoadGpuSampleTotals, LoadGpuSamples(kHistory)). Replaces what was recorded.
  void Restore(std::span<const GpuSampleTotals> totals, std::span<const GpuSampleRow> newest);

  // nullptr when nothing was observed of the job.
  const JobGpuUsage* Find(JobId job) const;
  const sharing::DemandHistory* History(JobId job) const;
  // An immutable copy for the published snapshot; the same pointer until the next Record or
  // Restore.
  std::shared_ptr<const std::map<JobId, JobGpuUsage>> Published();

 private:
  struct Entry {
    JobGpuUsage usage;
    sharing::DemandHistory history{kHistory};
  };
  std::map<JobId, Entry> jobs_;
  std::shared_ptr<const std::map<JobId, JobGpuUsage>> published_;
};

}  // namespace dlsched::daemon
