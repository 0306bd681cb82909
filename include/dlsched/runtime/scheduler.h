#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/runtime_estimator.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/change_log.h"
#include "dlsched/policy/job_queue.h"
#include "dlsched/policy/policy.h"
#include "dlsched/policy/running_index.h"
#include "dlsched/policy/shared_gpus.h"
#include "dlsched/runtime/events.h"
#include "dlsched/runtime/executor.h"

namespace dlsched {

class Placer;

// What one cycle applied, each list in the order the cycle applied it. Decisions the scheduler's
// validation turned down are only counted (`refused`). A cycle kills nothing: a kill follows a
// cancellation (Handle), not a decision.
struct CycleResult {
  struct Preemption {
    JobId job;
    bool migration = false;    // the policy moves it to other GPUs (PreemptDecision::migration)
    bool for_service = false;  // it yields GPUs to a service (Scheduler::service_yields)
  };
  struct Rejection {
    JobId job;
    std::string reason;  // as in the job's Job::reason
  };
  std::vector<JobId> admissions;  // pending jobs admission accepted: queued now
  // Launches (services first, then the policy's), in the order the executor got them.
  std::vector<JobId> launches;
  // Preemptions (a service's first, then the policy's), in the order the executor got them.
  std::vector<Preemption> preemptions;
  std::vector<Rejection> rejections;  // at admission, then by the policy
  int refused = 0;  // decisions the scheduler's validation turned down (a policy bug)
  // Run the next cycle no later than this: the policy's request, or an earlier one still due.
  Timestamp wake_at = kTimeNever;

  int admitted() const { return static_cast<int>(admissions.size()); }
  int launched() const { return static_cast<int>(launches.size()); }
  int preempted() const { return static_cast<int>(preemptions.size()); }
  int rejected() const { return static_cast<int>(rejections.size()); }
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
  // Asks the policy, without acting, why each waiting job it looks at does not start;
  // `with_text` false leaves the reasons' texts empty (causes only, cheaper).
  std::vector<PendingReason> ExplainPending(Timestamp now, bool with_text = true);

  const Cluster& cluster() const { return *cluster_; }
  const ClusterState& state() const { return state_; }
  const JobTable& jobs() const { return jobs_; }
  const JobQueue& queue() const { return queue_; }
  const std::vector<JobId>& running() const { return running_; }
  const RunningIndex& running_by_rank() const { return running_by_rank_; }
  // Each job added to or removed from running(), or asked to stop (SchedulingContext::
  // running_changes).
  const ChangeLog<JobId>& running_changes() const { return running_changes_; }
  // The GPUs running jobs hold in a shared mode, with their holders (SchedulingContext::
  // shared_gpus).
  const SharedGpus& shared_gpus() const { return shared_gpus_; }
  size_t pending() const { return pending_.size(); }
  // Jobs submitted since the last cycle, not yet admitted, in submission order.
  const std::vector<JobId>& pending_jobs() const { return pending_; }
  const SchedulingPolicy& policy() const { return *policy_; }
  void ReserveJobs(size_t n);
  // What policies may know about GPU sharing (SchedulingContext::sharing); nullptr (the
  // default) turns sharing off. `view` must outlive the scheduler.
  void set_sharing_view(const SharingView* view) { sharing_ = view; }
  // Where the policies' run-time estimates come from (Job::estimated_total / _remaining, set at
  // admission and whenever a job is queued again); succeeded jobs are reported to it, restored
  // ones included. nullptr (the default) = the scheduler's own StatedRuntimeEstimator. Set it
  // before the first Submit or Restore; `estimator` must outlive the scheduler.
  void set_runtime_estimator(RuntimeEstimator* estimator);
  const RuntimeEstimator& runtime_estimator() const { return *runtime_estimator_; }

  // Online services (JobSpec::service) are the scheduler's own, not the policy's: they are in
  // none of queue(), running() or running_by_rank(), so no policy can order, place or preempt
  // them. Each cycle, before the policy decides, waiting services start in submission order
  // (preempting training jobs, lowest rank first, when one does not fit: a service's
  // reservation is steady); then each running service lends the GPUs its load leaves idle to
  // the free pool, and takes back what its load needs again, preempting the training jobs that
  // borrowed them.
  const std::vector<JobId>& waiting_services() const { return waiting_services_; }
  const std::vector<JobId>& running_services() const { return running_services_; }
  // Whether running services lend their idle GPUs (default true). Off, a service holds its whole
  // reservation whatever its load: the static-reservation baseline.
  void set_lend_idle_service_gpus(bool lend) { lend_idle_service_gpus_ = lend; }
  // Training jobs preempted to give a service its GPUs (back).
  int service_yields() const { return service_yields_; }
  // GPU-time training jobs ran on GPUs services lent them, up to `now`.
  Duration lent_gpu_time(Timestamp now) const;
  // GPU-time services needed but still had lent out (their borrowers were checkpointing), up to
  // the last cycle.
  Duration service_shortfall_gpu_time() const { return shortfall_gpu_time_; }

  // A job as a driver persisted it: what Restore needs to put it back. Its lifecycle (the
  // base) as stored; segment_start counts for kRunning only.
  struct RestoredJob : JobLifecycle {
    JobSpec spec;
    Placement placement;  // kRunning only: the GPUs it holds
    // kRunning only: how it holds them; a shared mode needs one GPU (ClusterState::CanShare).
    ShareMode share = ShareMode::kExclusive;
    int migrations = 0;  // Job::migrations (a sharing policy caps them per job)
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
  // After the Restore calls, puts the running list (running()) back in the order a driver saved
  // (`order`, as running() was): the order depends on history (a job that stops leaves its slot
  // to the last one), and policies break ties by it, so a restarted driver decides as an
  // uninterrupted one only with it. The running jobs in `order` come first, in its order; the
  // other running jobs follow in their present order; ids of jobs not running are skipped.
  void RestoreRunningOrder(std::span<const JobId> order);
  // Whether Restore would let a running job with `spec` keep `placement` now: its GPUs are free,
  // or the overlap is a loan between it and running services (a training job on a service's GPUs,
  // or a service under its borrowers). Held in a shared mode (`share`), the placement must be one
  // GPU that is free or already shared (ClusterState::CanShare). Placement validity (size, nodes)
  // is not checked here.
  bool CanKeepGpus(const JobSpec& spec, const Placement& placement,
                   ShareMode share = ShareMode::kExclusive) const;

 private:
  SchedulingContext Context(Timestamp now);
  // Runs admission on pending jobs, adding what it did to `result`.
  void Admit(Timestamp now, CycleResult& result);
  // Carries out a launch decision; a launch it carries out gives the job its placement (moved
  // out of `launch`).
  bool Apply(LaunchDecision& launch, Timestamp now);
  // Ends the current run segment of a running job and frees its GPUs.
  void StopRunning(Job& job, Timestamp now);
  // Puts a job into the queue as `state` (kQueued or kSuspended) with fresh estimates.
  void Enqueue(Job& job, JobState state, Timestamp now);
  // Sets the job's estimated_total / estimated_remaining from the run-time estimator at `now`.
  void RefreshEstimates(Job& job, Timestamp now);
  // Takes a waiting job out of the queue (or the waiting services).
  void Dequeue(const Job& job);
  // Whether some GPU type the job may use is not among those it failed to start on.
  bool CanRunOnSomeGpuType(const Job& job) const;
  void AddRunning(JobId id);
  void RemoveRunning(JobId id);
  // Asks a running job to stop (preempt_requested), in every index that follows it, and logs it.
  void MarkStopping(Job& job);

  // Services: see waiting_services(). PlaceServices starts what fits and makes room for the
  // first that does not; SyncServiceLoans moves each running service's lent GPUs to its load.
  void PlaceServices(Timestamp now, CycleResult& result);
  void StartService(Job& service, Placement placement, Timestamp now);
  // Preempts training jobs, lowest rank first, until the service would fit in `available` (the
  // GPUs services may take); holds the free part of its future placement until the next cycle.
  // False when even that cannot make room.
  bool MakeRoomFor(Job& service, const Placer& placer, ClusterState& available, Timestamp now,
                   CycleResult& result);
  void SyncServiceLoans(Timestamp now, CycleResult& result);
  // Frees `gpus` more of the service's own GPUs into the pool, as loans.
  void Lend(Job& service, int gpus);
  // Takes back `gpus` lent GPUs: free ones at once, the rest by preempting their borrowers.
  void TakeBack(Job& service, int gpus, CycleResult& result, Timestamp now);
  // A stopping service: releases its own GPUs; its lent GPUs stay with their borrowers.
  void StopService(Job& service, Timestamp now);
  // The placement's GPUs that services lend (LentGpus, without host resources) or that are not
  // lent (OwnGpus, with all the placement's CPUs and memory: a service lends GPUs only).
  Placement LentGpus(const Placement& placement) const;
  Placement OwnGpus(const Placement& placement) const;
  int CountLent(const Placement& placement) const;
  // Every GPU of the cluster, as one placement.
  Placement AllGpus() const;
  // GPUs two placements share.
  static int Overlap(const Placement& a, const Placement& b);
  // Books a training job's loan time so far and recounts its loaned GPUs.
  void SettleLoan(Job& job, Timestamp now);
  // The earliest change of a running service's load.
  Timestamp NextLoadChange(Timestamp now) const;
  // Restore: a running job takes its placement's free GPUs; the rest become loans. A job held in
  // a shared mode joins its GPU's holders instead.
  void AdoptRunning(Job& job);

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
  StatedRuntimeEstimator stated_estimator_;
  RuntimeEstimator* runtime_estimator_;  // stated_estimator_ or the driver's
  std::vector<JobId> pending_;
  std::vector<JobId> running_;
  std::vector<int32_t> running_pos_;     // per job: index in running_, or -1
  ChangeLog<JobId> running_changes_;     // each job added to or removed from running_, or stopping
  SharedGpus shared_gpus_;               // the running jobs held in a shared mode
  std::vector<JobId> waiting_services_;  // submission order
  std::vector<JobId> running_services_;
  std::vector<GpuMask> lent_mask_;  // per node: GPUs lent by services (free or borrowed)
  Placement service_hold_;          // free GPUs held for a service whose room is being made
  bool lend_idle_service_gpus_ = true;
  int service_yields_ = 0;
  Duration lent_gpu_time_{0};  // booked by SettleLoan
  // Services' GPUs needed but lent, summed over services, as of the last SyncServiceLoans.
  int shortfall_gpus_ = 0;
  Timestamp shortfall_since_;
  Duration shortfall_gpu_time_{0};
  const SharingView* sharing_ = nullptr;
  CycleTrigger since_last_cycle_{false, false, false, false};
  Timestamp wake_at_ = kTimeNever;  // what the last cycle asked for
};

}  // namespace dlsched
