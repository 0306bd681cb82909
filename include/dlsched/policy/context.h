#pragma once

#include <span>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/change_log.h"
#include "dlsched/policy/job_queue.h"
#include "dlsched/policy/running_index.h"
#include "dlsched/policy/shared_gpus.h"
#include "dlsched/policy/sharing_view.h"

namespace dlsched {

// What happened since the previous cycle, so a policy can skip work nothing has made useful.
// Every field defaults to true: a caller that does not track causes loses nothing but speed.
struct CycleTrigger {
  bool arrivals = true;     // new jobs entered the queue
  bool departures = true;   // jobs finished, failed, were killed, or failed to launch
  bool suspensions = true;  // preempted jobs stopped, returning GPUs already promised
  bool timer = true;        // a wake-up the policy asked for came due
};

// Everything a policy may know when it decides: the only door to the world. Policies read time
// from `now` and randomness from `rng`; they do no I/O. References are valid for one call.
struct SchedulingContext {
  Timestamp now;
  const Cluster& cluster;
  const ClusterState& state;  // current allocations (running jobs, including those preempting)
  const JobTable& jobs;
  const JobQueue& queue;                // waiting jobs in this policy's order
  std::span<const JobId> running;       // running jobs, in no particular (but deterministic) order
  const RunningIndex& running_by_rank;  // the same jobs in this policy's order: victims, guarded
  const ThroughputModel& estimator;     // the policy's performance predictor, never the truth
  Rng& rng;
  CycleTrigger trigger;
  // Fill Decisions::pending_reasons (costs string building; off in the simulator's hot loop).
  bool explain = false;
  // GPU sharing: what the policy may know of jobs' demand and interference; nullptr when the
  // driver offers no sharing (sharing policies then behave as their base policy).
  const SharingView* sharing = nullptr;
  // The GPUs running jobs hold in a shared mode and their holders (the same jobs as the running
  // ones whose Job::share is not kExclusive). Set whenever `sharing` is: the Scheduler's
  // contexts always have it.
  const SharedGpus* shared_gpus = nullptr;
  // With `explain`: also write each reason's text. False: causes only, texts left empty (the
  // simulator's why-pending sampler, which visits every waiting job many times a run).
  bool explain_text = true;
  // Every job that joined or left `running`, or was asked to stop (preempt_requested), since
  // some earlier cycle, by revision (ChangeLog): a running job's placement and state change only
  // then, so a policy that keeps what it derived from running jobs rereads only these. The Scheduler's
  // contexts always have it; nullptr: no log, take every running job as changed.
  const ChangeLog<JobId>* running_changes = nullptr;

  JobView View(JobId id) const { return JobView(jobs.at(id), now); }
};

struct LaunchDecision {
  JobId job;
  Placement placement;
  // kExclusive: every GPU of the placement must be free. A shared mode: a single-GPU job on one
  // GPU that is free or already shared (ClusterState::CanShare); the policy bounds the holders.
  ShareMode share = ShareMode::kExclusive;
};
struct PreemptDecision {
  JobId job;
  std::string reason;  // "for job 17 (higher priority)"
  // A migration: the job checkpoints to move to other GPUs (counted in Job::migrations, not in
  // Job::preemptions); it waits in the queue like any preempted job until it is placed again.
  bool migration = false;
};
struct RejectDecision {
  JobId job;
  std::string reason;
};
// Why a waiting job did not start, by kind (the text says the particulars).
enum class PendingCause {
  kOther,           // a policy-specific reason
  kGpusBusy,        // fewer GPUs free than the gang needs, and no victim it may preempt
  kNoMatchingGpus,  // enough GPUs free, but not of the required type / labels
  kFragmentation,   // enough eligible GPUs free in total, but no placement holds the gang
  kConsolidation,   // it would fit only spread over nodes, and it waits to be consolidated
  kLowerPriority,   // the jobs holding the GPUs it needs rank above it
  kHeadOfLine,      // behind a blocked job, and the policy does not backfill
  kPreempting,      // victims were asked to stop for it; it starts when they have
  kQuota,           // its tenant is at its quota
  // Host resources (CPU cores, host memory):
  kHostShort,  // enough GPUs free, but the nodes with them lack the CPUs or memory for it
  kCpusBusy,   // a CPU job: no node has its CPUs and memory free
};
inline constexpr int kNumPendingCauses = 11;
// "gpus-busy", "no-matching-gpus", "fragmentation", ...: stable names for CSV and JSON.
std::string_view PendingCauseName(PendingCause cause);

struct PendingReason {
  JobId job;
  std::string reason;  // why it was looked at and not started this cycle
  PendingCause cause = PendingCause::kOther;
};

// What a policy wants done. The scheduler validates each item against its own state before it
// acts: a launch on GPUs that are not free, or a preemption of a job not running, is refused.
struct Decisions {
  std::vector<LaunchDecision> launches;
  std::vector<PreemptDecision> preemptions;
  std::vector<RejectDecision> rejections;
  std::vector<PendingReason> pending_reasons;
  // Run another cycle no later than this, even if no event arrives (time slices, thresholds).
  Timestamp wake_at = kTimeNever;

  bool empty() const { return launches.empty() && preemptions.empty() && rejections.empty(); }
};

}  // namespace dlsched
