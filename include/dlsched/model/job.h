#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"

namespace dlsched {

// Pending -> Queued -> Running <-> Suspended -> Succeeded | Failed | Killed | Rejected.
// Pending: submitted, not yet admitted. Queued: admitted, never run. Suspended: preempted (or
// failed to launch) and waiting to resume from its checkpoint.
enum class JobState {
  kPending,
  kQueued,
  kRunning,
  kSuspended,
  kSucceeded,
  kFailed,
  kKilled,
  kRejected
};

std::string_view JobStateName(JobState state);  // "pending", "queued", ...
Result<JobState> ParseJobState(std::string_view name);
inline bool IsTerminal(JobState s) { return s >= JobState::kSucceeded; }
inline bool IsWaiting(JobState s) { return s == JobState::kQueued || s == JobState::kSuspended; }

// How a running job holds its GPU (seed 000): alone; packed with other jobs that run on it at
// the same time (they interfere, and their memory must fit together); or time-sliced with them
// (each takes turns on the whole GPU; Gandiva swaps the others' memory out). Shared modes are
// for single-GPU jobs only.
enum class ShareMode : uint8_t { kExclusive, kPacked, kTimeSliced };
std::string_view ShareModeName(ShareMode mode);  // "exclusive", "packed", "time-sliced"

enum class QosClass { kBestEffort, kSoft, kStrict };
std::string_view QosClassName(QosClass qos);  // "best-effort", "soft", "strict"
Result<QosClass> ParseQosClass(std::string_view name);

// An online service's load (seed 001): how many of its reserved GPUs it needs at each time of
// day. The rest are idle, and the scheduler lends them to training jobs, which yield them when
// the service needs them back.
struct ServiceLoad {
  static constexpr Duration kPeriod = Hours(24);
  // (offset into the day, GPUs needed from then on until the next step): offsets ascending in
  // [0, kPeriod), the first at 0. Empty: it needs every reserved GPU all the time.
  std::vector<std::pair<Duration, int>> steps;

  // GPUs needed at time `t` (of `reserved`, the service's gang).
  int NeedAt(Timestamp t, int reserved) const;
  // The first step change after `t`; kTimeNever when the need never changes.
  Timestamp NextChangeAfter(Timestamp t) const;
};

// "SECONDS:GPUS;SECONDS:GPUS..." (offsets into the day), e.g. "0:2;28800:8;72000:2". Fails
// naming the bad step.
Result<ServiceLoad> ParseServiceLoad(std::string_view text);
std::string FormatServiceLoad(const ServiceLoad& load);
// Steps at offsets 0 = first < ... < kPeriod, each needing 0..`reserved` GPUs.
Status ValidateServiceLoad(const ServiceLoad& load, int reserved);

// What a user asks for. Immutable once submitted.
struct JobSpec {
  std::string name;  // the trace's job id or the user's name for it; need not be unique
  std::string user;
  std::string queue;  // tenant / virtual cluster
  std::string model;  // e.g. "ResNet-50"; empty when unknown
  int batch_size = 0;
  int num_gpus = 1;      // gang size: all or nothing; 0 = a CPU job (one node, needs cpus)
  std::string gpu_type;  // required GPU type; empty = any
  // Node labels the job requires (every key=value must match the node's) and prefers (placement
  // favours nodes matching more of them, but takes others rather than wait).
  Labels selector;
  Labels preferences;
  Timestamp submit_time;
  // Work: `iterations` at `ref_iters_per_s` when run on `num_gpus` GPUs of the reference type,
  // consolidated on one node. A trace with durations only uses 1 iteration per second.
  double iterations = 0;
  double ref_iters_per_s = 1.0;
  int priority = 0;  // larger runs first under priority policies
  std::optional<Timestamp> deadline;
  QosClass qos = QosClass::kBestEffort;
  int64_t memory_mib = 0;  // peak GPU memory per GPU; 0 = unknown
  // Host resources for the whole job: CPU cores and host memory (MiB). A gang over several nodes
  // takes them on each node in proportion to the GPUs it has there. 0 = not stated: the job gets
  // the cluster's defaults per GPU (Cluster::host_defaults), like Slurm's DefCpuPerGPU and
  // DefMemPerGPU. A CPU job (num_gpus 0) must state cpus.
  int cpus = 0;
  int64_t host_memory_mib = 0;
  // The user's estimate of the run time (like Slurm's --time); unset = the ideal duration.
  // Policies that need run times (sjf, srtf) see this, never the truth.
  std::optional<Duration> runtime_estimate;
  // The user's utility curve (Chronus' expect_time_list / expect_value_list): finishing within
  // `first` of submit_time earns `second`. Times strictly ascending; `deadline` is submit_time
  // plus the first time. Relative to submit_time, so it needs no shifting. Empty = none given
  // (a strict job has at most one step; a soft job's utility decays over several).
  std::vector<std::pair<Duration, double>> utility_steps;
  // Set for a long-running online service: it holds its num_gpus GPUs as a steady reservation
  // from its start until its work (its lifetime: iterations / ref_iters_per_s, on any GPU type)
  // is done or it is cancelled, is placed before every training job, is never preempted, and
  // lends the GPUs its load leaves idle (see Scheduler). Policies never see services.
  std::optional<ServiceLoad> service;

  bool is_service() const { return service.has_value(); }
  // The run time at the reference speed: iterations / ref_iters_per_s.
  Duration ideal_duration() const;
};

// What a job asks of its hosts in all: CPU cores and host memory (MiB).
struct HostRequest {
  int cpus = 0;
  int64_t memory_mib = 0;
  friend bool operator==(const HostRequest&, const HostRequest&) = default;
};
// The spec's own request, with the cluster's per-GPU defaults for what it leaves unstated (0).
HostRequest EffectiveHostRequest(const JobSpec& spec, const HostDefaults& defaults);
// The share of a job's host request (`whole`, for a gang of `job_gpus`) that its part with
// `part_gpus` GPUs on one node takes: in proportion to the GPUs, rounded up, so each part's share
// depends on its own GPUs alone and the parts together hold at least the request (exactly when
// the proportion divides, as with the per-GPU defaults). A CPU job (job_gpus 0) runs on one node,
// which takes it all. Placement, backfill and victim searches, the sharing layer and the
// executors all use this one split.
HostRequest SplitHostRequest(const HostRequest& whole, int job_gpus, int part_gpus);

// Checks a spec for values no scheduler can honour (zero GPUs, no work, ...). Names the field.
Status ValidateJobSpec(const JobSpec& spec);

// Where a job is in its life and what it has used: the fields of a Job that a driver keeps
// across restarts. The daemon stores them in its rows (JobRow), shows them in its records
// (JobRecord) and gives them back through Scheduler::Restore (RestoredJob); each of them, and
// the Scheduler's own Job, holds them as this base, so a copy between them is one assignment of
// lifecycle().
struct JobLifecycle {
  JobState state = JobState::kPending;
  Timestamp queued_since;   // when it last entered the queue
  Timestamp segment_start;  // when the current run segment began (running)
  Timestamp first_start = kTimeNever;
  Timestamp finish_time = kTimeNever;
  Duration run_time{0};           // wall time of completed run segments
  Duration attained_gpu_time{0};  // GPU-time (GPUs x wall time) of completed run segments
  double iterations_done = 0;     // at the last checkpoint the executor reported
  int preemptions = 0;
  std::string reason;  // why rejected or failed, or the last why-pending explanation

  // The fields alone, for a struct that holds them as its base.
  JobLifecycle& lifecycle() { return *this; }
  const JobLifecycle& lifecycle() const { return *this; }
  friend bool operator==(const JobLifecycle&, const JobLifecycle&) = default;
};

// A job as the scheduler tracks it: its lifecycle (the base) and what only a running scheduler
// needs. Owned by JobTable; mutated only by the Scheduler.
struct Job : JobLifecycle {
  JobId id;
  JobSpec spec;

  Placement placement;                      // while running
  ShareMode share = ShareMode::kExclusive;  // while running: how it holds its GPU
  Duration last_segment{0};                 // length of the last completed run segment
  // GPU types a run of this job could not start on (JobLaunchFailed::never_started); placement
  // avoids them.
  std::vector<GpuTypeId> failed_gpu_types;
  bool preempt_requested = false;  // a Preempt was sent; GPUs stay held until it is confirmed
  bool migrating = false;          // ... to move it to other GPUs (PreemptDecision::migration)
  int migrations = 0;              // completed migrations (not counted in `preemptions`)
  // When a run of it last died because its shared GPU ran out of memory (kTimeNever: never);
  // sharing policies give it a GPU of its own for a while after.
  Timestamp last_oom = kTimeNever;
  // The estimator's view, refreshed by the scheduler whenever the job is (re)queued or placed.
  Duration estimated_total{0};      // whole job on its reference placement
  Duration estimated_remaining{0};  // at the last checkpoint, reference placement
  // A training job: how many of its GPUs are on loan from services (it yields them when a
  // service needs them back), since when.
  int loaned_gpus = 0;
  Timestamp loan_since;
};

// A read-only view of a job at an instant: time-dependent quantities (attained service of a
// running job) are computed at `now`. Cheap to copy.
class JobView {
 public:
  JobView(const Job& job, Timestamp now) : job_(&job), now_(now) {}

  const Job& job() const { return *job_; }
  const JobSpec& spec() const { return job_->spec; }
  JobId id() const { return job_->id; }
  JobState state() const { return job_->state; }
  Timestamp submit_time() const { return job_->spec.submit_time; }
  int num_gpus() const { return job_->spec.num_gpus; }
  int priority() const { return job_->spec.priority; }
  bool running() const { return job_->state == JobState::kRunning; }
  // GPU-time consumed so far (GPUs x wall time), including the current run segment.
  Duration attained_gpu_time() const;
  // GPU-time consumed by time `t` (clamped to the current segment's start and now).
  Duration attained_gpu_time_at(Timestamp t) const;
  Timestamp now() const { return now_; }
  // Wall time run so far, including the current segment.
  Duration run_time() const;
  // Length of the current run segment (zero when not running).
  Duration current_segment() const;
  // The estimator's remaining run time on the reference placement, at the last checkpoint.
  Duration estimated_remaining() const { return job_->estimated_remaining; }
  Duration estimated_total() const { return job_->estimated_total; }
  Timestamp queued_since() const { return job_->queued_since; }

 private:
  const Job* job_;
  Timestamp now_;
};

// Every job the scheduler knows, indexed by dense JobId (assigned in submission order).
class JobTable {
 public:
  JobId Add(JobSpec spec);
  Job& at(JobId id) { return jobs_[id.index()]; }
  const Job& at(JobId id) const { return jobs_[id.index()]; }
  bool contains(JobId id) const { return id.valid() && id.index() < jobs_.size(); }
  size_t size() const { return jobs_.size(); }
  const std::vector<Job>& all() const { return jobs_; }
  void Reserve(size_t n) { jobs_.reserve(n); }

 private:
  std::vector<Job> jobs_;
};

}  // namespace dlsched
