#pragma once

// What HTTP threads read: an immutable picture of the daemon's state that the scheduler thread
// publishes after each loop iteration. Readers never lock the scheduler; they hold a
// shared_ptr<const Snapshot> for as long as they need it.
//
// The job table is persistent: records live in fixed-size chunks shared between consecutive
// snapshots, and publishing copies only the chunks that changed, so a table of 100,000 jobs costs
// O(changed jobs + chunks) per publish, not O(jobs).

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/gpu_usage.h"
#include "daemon/job/job_request.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched::daemon {

// One entry of a job's timeline: a row of the daemon's event log about the job (event_log.h has
// the kinds and their details), except that a preemption to move the job elsewhere says
// "migration" (the log's detail is empty for every preemption).
struct JobTimelineEvent {
  Timestamp at;
  std::string kind;
  std::string detail;
  friend bool operator==(const JobTimelineEvent&, const JobTimelineEvent&) = default;
};

// One job as the API shows it: the scheduler's lifecycle of it (the base; iterations_done in
// scheduler units, seconds of estimated work), its request, and what runs it.
struct JobRecord : JobLifecycle {
  JobId id;
  std::shared_ptr<const JobRequest> request;  // spec.submit_time is the acceptance time
  Placement placement;
  std::string placement_text;               // PlacementText
  ShareMode share = ShareMode::kExclusive;  // while running: how it holds its GPU
  int pid = 0;                              // while running
  uint64_t pid_start = 0;
  std::string stopping;  // a stop signal was sent: "preempt", "kill" or "timeout"
  std::optional<int> exit_code;
  // Out-of-memory restarts of its runs (oom_watchdog.h), and its runs in a row that ended out
  // of memory (capped by OomOptions::max_restarts); both kept across daemon restarts.
  int oom_restarts = 0;
  int oom_in_a_row = 0;
  int migrations = 0;  // completed migrations (Job::migrations), kept across daemon restarts
  // What happened to it since this daemon started, oldest first, the latest kTimeline at most
  // (GET /v1/jobs/{id}); null before anything did. Shared between records, never changed.
  static constexpr size_t kTimeline = 64;
  std::shared_ptr<const std::vector<JobTimelineEvent>> timeline;

  const std::string& user() const { return request->spec.user; }
  Timestamp submit_time() const { return request->spec.submit_time; }
};

// An immutable-once-published table of JobRecords indexed by dense JobId.
class JobIndex {
 public:
  static constexpr size_t kChunkSize = 1024;

  size_t size() const { return size_; }
  // nullptr when the id is not in the table.
  const JobRecord* Find(JobId id) const {
    if (!id.valid() || id.index() >= size_) return nullptr;
    return (*chunks_[id.index() / kChunkSize])[id.index() % kChunkSize].get();
  }
  const JobRecord& at(size_t index) const {
    return *(*chunks_[index / kChunkSize])[index % kChunkSize];
  }
  std::shared_ptr<const JobRecord> Share(JobId id) const {
    return (*chunks_[id.index() / kChunkSize])[id.index() % kChunkSize];
  }

  // Builder side (the scheduler thread, on its private copy). Between two Seal calls, the first
  // Set into a chunk copies it, so earlier snapshots sharing the chunk never see a change.
  // Precondition: record->id.index() <= size() (replace, or append the next id).
  void Set(std::shared_ptr<const JobRecord> record);
  // Ends a batch of Sets: the chunks become shared with whatever copies this index next.
  void Seal() { fresh_.clear(); }

 private:
  using Chunk = std::vector<std::shared_ptr<const JobRecord>>;
  std::vector<std::shared_ptr<Chunk>> chunks_;
  std::vector<size_t> fresh_;  // chunks copied since the last Seal (builder only)
  size_t size_ = 0;
};

// Upper bounds (seconds) of the scheduling-cycle latency histogram; the last bucket is +Inf.
inline constexpr std::array<double, 14> kCycleBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

struct DaemonMetrics {
  uint64_t submissions = 0;  // accepted since the daemon started
  uint64_t cycles = 0;
  std::array<uint64_t, kCycleBuckets.size() + 1> cycle_buckets{};  // not cumulative
  double cycle_seconds_sum = 0;
  double cycle_seconds_max = 0;  // the slowest cycle's
  uint64_t events = 0;           // executor reports handled
  uint64_t store_commits = 0;
  uint64_t launches = 0;
  uint64_t preemptions = 0;
  uint64_t migrations = 0;         // of the preemptions, migrations (PreemptDecision::migration)
  uint64_t oom_restarts = 0;       // runs requeued out of GPU memory (oom_watchdog.h)
  uint64_t host_memory_kills = 0;  // runs killed for going over their host memory

  void RecordCycle(double seconds);
};

// What the daemon's predictor (`serve --predictor`) says of a running job, as of the last read of
// its progress (ProgressFeed).
struct JobPrediction {
  // Corrected predicted speed on the job's placement, in JobSpec units (seconds of estimated
  // work per second; 1 = the job runs as fast as its runtime estimate says).
  double iters_per_s = 0;
  double correction = 1;  // the OnlineCorrector's factor in iters_per_s (1 = none)
};

// One GPU as a snapshot shows it.
struct GpuHolding {
  // The jobs holding it, by ascending id: none (free, or withheld by an offline node), one, or
  // several sharing it (ClusterState::AllocateShared).
  std::vector<JobId> holders;
  // The service whose placement has the GPU while it lends it (the GPU is then free, or held by
  // its borrower); invalid otherwise.
  JobId lent_by;
  friend bool operator==(const GpuHolding&, const GpuHolding&) = default;
};

// Who holds each GPU, and what each node's jobs hold of it (GET /v1/nodes). The daemon rebuilds
// it only when a placement, a node's service or a lent GPU changed, and the snapshots in between
// share it: at 10,000 GPUs, rebuilding it at every publish cost more than the cycle.
struct NodeHoldings {
  // Per node, per GPU: who holds it.
  std::vector<std::vector<GpuHolding>> gpus;
  // Per node: out of service (ClusterState::offline; its executor reported it down or drained).
  std::vector<bool> offline;
  // Per node: the CPUs and host memory (MiB) its running jobs hold (their placements' parts).
  struct HostHeld {
    int64_t cpus = 0;
    int64_t memory_mib = 0;
  };
  std::vector<HostHeld> host_held;
};

struct Snapshot {
  uint64_t version = 0;
  Timestamp published_at;
  Timestamp started_at;
  const Cluster* cluster = nullptr;  // lives as long as the daemon
  std::string profile;               // policy profile name
  JobIndex jobs;
  // Never null; empty (every GPU free, every node online) in a snapshot built by hand.
  std::shared_ptr<const NodeHoldings> nodes = std::make_shared<const NodeHoldings>();
  std::array<int64_t, 8> jobs_by_state{};  // indexed by JobState
  int gpus_allocated = 0;
  // How jobs are held to their CPUs and host memory: a HostEnforcementName ("cgroup-v1", ...),
  // "executor" (the Slurm executor: Slurm's own), or "none".
  std::string host_enforcement;
  size_t inbox_length = 0;
  DaemonMetrics metrics;
  // Running jobs the predictor predicts (never null; empty without --predictor).
  std::shared_ptr<const std::map<JobId, JobPrediction>> predictions =
      std::make_shared<const std::map<JobId, JobPrediction>>();

  // What the GPU monitor observed of each job (never null; empty without a monitor), and its
  // latest sample of the devices (null before the first).
  std::shared_ptr<const std::map<JobId, JobGpuUsage>> gpu_usage =
      std::make_shared<const std::map<JobId, JobGpuUsage>>();
  std::shared_ptr<const GpuSample> gpu_devices;

  int64_t count(JobState s) const { return jobs_by_state[static_cast<size_t>(s)]; }
  // nullptr when nothing was observed of the job's GPU use.
  const JobGpuUsage* gpu_usage_of(JobId id) const {
    const auto it = gpu_usage->find(id);
    return it == gpu_usage->end() ? nullptr : &it->second;
  }
  // nullptr when the job has no prediction.
  const JobPrediction* prediction(JobId id) const {
    const auto it = predictions->find(id);
    return it == predictions->end() ? nullptr : &it->second;
  }
};

}  // namespace dlsched::daemon
