#pragma once

#include <memory>
#include <vector>

#include "dlsched/common/rng.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/job_queue.h"
#include "dlsched/policy/policy.h"
#include "dlsched/policy/running_index.h"
#include "dlsched/runtime/events.h"
#include "dlsched/runtime/executor.h"

namespace dlsched {

// What one cycle did.
struct CycleResult {
  int admitted = 0;
  int launched = 0;
  int preempted = 0;
  int rejected = 0;  // at admission or by the policy
  int refused = 0;   // decisions the scheduler's validation turned down (a policy bug)
  // Run the next cycle no later than this: the policy's request, or an earlier one still due.
  Timestamp wake_at = kTimeNever;

  bool changed() const { return admitted + launched + preempted + rejected > 0; }
};

// Owns the cluster state and the job table. Events (Submit, Handle) mutate state and never
// decide; RunCycle asks the policy and carries out what it decides: snapshot -> Decide ->
// validate -> assume (allocate at once) -> Executor. Single-threaded: the driver (simulator
// loop, daemon scheduler thread) calls everything from one thread.
class Scheduler {
 public:
  // `cluster`, `executor` and `estimator` must outlive the scheduler.
  Scheduler(const Cluster& cluster, std::unique_ptr<SchedulingPolicy> policy, Executor& executor,
            const ThroughputModel& estimator, uint64_t seed);

  // Accepts a job (state Pending; admitted on the next cycle). Fails on an invalid spec.
  Result<JobId> Submit(JobSpec spec, Timestamp now);
  // Applies an executor or user event. Fails (changing nothing) on an unknown job or an event
  // that does not match the job's state.
  Status Handle(const Event& event, Timestamp now);
  // Takes a node out of the placement pool (online = false) or puts it back, as the driver's
  // executor reports it (Slurm: a node DOWN or drained, then back). See ClusterState::SetOffline:
  // jobs running there keep their GPUs until they end or the driver reports them lost; the next
  // cycle after a node comes back looks at every waiting job. NotFound for an unknown node.
  Status SetNodeOnline(NodeId node, bool online);
  // One scheduling cycle at `now`.
  CycleResult RunCycle(Timestamp now);
  // Asks the policy, without acting, why each waiting job it looks at does not start.
  std::vector<PendingReason> ExplainPending(Timestamp now);

  const Cluster& cluster() const { return *cluster_; }
  const ClusterState& state() const { return state_; }
  const JobTable& jobs() const { return jobs_; }
  const JobQueue& queue() const { return queue_; }
  const std::vector<JobId>& running() const { return running_; }
  const RunningIndex& running_by_rank() const { return running_by_rank_; }
  size_t pending() const { return pending_.size(); }
  const SchedulingPolicy& policy() const { return *policy_; }
  void ReserveJobs(size_t n);

  // A job as a driver persisted it: what Restore needs to put it back.
  struct RestoredJob {
    JobSpec spec;
    JobState state = JobState::kPending;
    Placement placement;  // kRunning only: the GPUs it holds
    Timestamp queued_since;
    Timestamp segment_start;  // kRunning only
    Timestamp first_start = kTimeNever;
    Timestamp finish_time = kTimeNever;
    Duration run_time{0};
    Duration attained_gpu_time{0};
    double iterations_done = 0;
    int preemptions = 0;
    std::string reason;
  };
  // Puts back a job from durable state when a driver restarts (the daemon re-reading its
  // store), before any Submit. Ids are dense and assigned in call order, as Submit assigns them,
  // so restoring jobs in ascending id order reproduces their ids. kPending jobs wait for
  // admission; kQueued and kSuspended re-enter the queue (waiting since `queued_since`); a
  // kRunning job takes its placement's GPUs without an Executor call (the driver re-adopts its
  // process, or reports it lost through Handle); terminal jobs are kept as history. The next
  // RunCycle does a full pass. Fails, changing nothing, on an invalid spec or state, or a
  // running job whose placement has the wrong size or GPUs that are not free.
  Result<JobId> Restore(RestoredJob restored);

 private:
  SchedulingContext Context(Timestamp now);
  // Runs admission on pending jobs; returns how many were rejected.
  int Admit(Timestamp now);
  bool Apply(const LaunchDecision& launch, Timestamp now);
  // Ends the current run segment of a running job and frees its GPUs.
  void StopRunning(Job& job, Timestamp now);
  // Puts a job into the queue as `state` (kQueued or kSuspended) with fresh estimates.
  void Enqueue(Job& job, JobState state, Timestamp now);
  // Whether some GPU type the job may use is not among those it failed to start on.
  bool CanRunOnSomeGpuType(const Job& job) const;
  void AddRunning(JobId id);
  void RemoveRunning(JobId id);

  Status OnFinished(const JobFinished& e, Timestamp now);
  Status OnSuspended(const JobSuspended& e, Timestamp now);
  Status OnLaunchFailed(const JobLaunchFailed& e, Timestamp now);
  Status OnCancel(const JobCancelRequested& e, Timestamp now);

  const Cluster* cluster_;
  std::unique_ptr<SchedulingPolicy> policy_;
  Executor* executor_;
  const ThroughputModel* estimator_;
  Rng rng_;
  ClusterState state_;
  JobTable jobs_;
  JobQueue queue_;
  RunningIndex running_by_rank_;
  std::vector<JobId> pending_;
  std::vector<JobId> running_;
  std::vector<int32_t> running_pos_;  // per job: index in running_, or -1
  CycleTrigger since_last_cycle_{false, false, false, false};
  Timestamp wake_at_ = kTimeNever;  // what the last cycle asked for
};

}  // namespace dlsched
