#pragma once

// The live scheduler: one scheduler thread owns the Scheduler (the same policies as the
// simulator), the Store and the executor's decisions; every other thread talks to it
// through the inbox or reads the published Snapshot.
//
// One iteration of the scheduler thread (Loop, Iterate):
//   1. drain the inbox (submissions, cancellations, executor reports, queue queries);
//   2. in ONE store transaction: journal the inputs (JournalInputs: insert each submission's
//      row, log every input event, apply it with Scheduler::Submit / Handle), decide (Decide:
//      a scheduling cycle, RunCycle at the clock's now, which returns what it applied),
//      and commit (CommitDecisions: log the cycle's decisions, write the rows of every job that
//      changed);
//   3. only after the commit: carry out the cycle's launches and stops (CarryOut:
//      JobExecutor::Flush), publish a new Snapshot (Publish), and answer the waiting callers
//      (Reply: a submitter's 201 therefore follows the commit of its row: submissions are
//      durable before they are acknowledged);
//   4. wait for the next inbox item or the policy's wake-up time.
// Time: every timing the daemon decides by (its wake-ups, the launch back-off, how often the
// headroom is checked) is read from the Clock given to Create (the SystemClock in `serve`); a
// test gives a VirtualClock and drives the iterations itself (RunOnce) instead of the thread.
// A store failure is fail-stop: the batch's callers get Unavailable, nothing of the batch is
// acknowledged, and the daemon stops (failure() says why).
//
// Decisions reach the executor through the daemon: the Scheduler's Executor is the daemon's
// ExecutorPort, which hands each decision on to the JobExecutor in the order the scheduler made
// it, a launch with the job's LaunchSpec (LaunchSpecFor: the request's command, environment,
// framework and working directory, the job directory, a port, the user's Unix account). The
// executor never calls back into the daemon; its outcomes come back through the inbox.
//
// Restart: Create re-reads the store and restores every job into a fresh Scheduler with its id
// (Scheduler::Restore). Jobs that were running are re-adopted through their pid files when the
// process still runs (same pid and start time); a process that ended while the daemon was down
// is reported as it ended (its exit file); one that vanished without an exit status is reported
// lost and requeued (JobLaunchFailed), resuming from its checkpoint. The policy's state across
// cycles comes back too when the store holds one for the same profile (policy_state.h; written
// with each cycle that changes it).
//
// Ownership (store/ownership.h): Create takes an exclusive lock on the workdir and the database
// before it writes anything, and refuses (FailedPrecondition naming the holder's pid, host and
// start time) while another process holds either; it then checks that the workdir belongs to
// the database (the store id) and refuses a lost or replaced database. A job directory that
// exists when a new job of its id is submitted is moved aside, never read.
//
// Shutdown: Stop leaves the job processes running (a restart re-adopts them). KillRunningJobs,
// called before Stop (`serve --kill-jobs-on-exit`), stops them the way a cancellation does and
// records them as killed, so that no restart runs them again.
//
// A failed launch (its job directory cannot be created, the process cannot be spawned, it
// vanished) is retried after a back-off (LaunchRetry: 1 s, doubling, at most 5 min): the failure
// report is held that long before the scheduler sees it, the job keeping its GPUs meanwhile, so
// a fault that lasts a while (a full disk) does not burn the tries in milliseconds. A job whose
// launch fails LaunchRetry::max_failures times in a row fails instead of being requeued once
// more, so a lasting fault cannot make the daemon retry it forever.
//
// Headroom (DaemonOptions::min_free_bytes): while the file system of the store or of the
// workdir has less free space than that, no cycle runs, so nothing new is launched (running
// jobs go on; submissions are taken and stay pending); queued jobs give that as their
// why-pending, and the daemon logs when it pauses and resumes. A job filling the disk therefore
// leaves the store room to record what happens.
//
// Unix accounts (DaemonOptions::account_for, set by `serve` when it runs as root): a submission
// whose user has no account is refused (InvalidArgument on "user"), and every launch runs as
// the account its user maps to then (docs/security.md).
//
// With a predictor (DaemonOptions::predictor, `serve --predictor`), the policies estimate with it,
// and the scheduler thread reads each running job's progress at most once a second
// (ProgressFeed): the observed speed of its run segment corrects the prediction, and the
// corrected prediction is published with each snapshot (Snapshot::predictions) for the ETA.

#include <array>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "daemon/core/gpu_sampler.h"
#include "daemon/core/gpu_usage.h"
#include "daemon/core/inbox.h"
#include "daemon/core/live_sharing.h"
#include "daemon/core/oom_watchdog.h"
#include "daemon/core/progress_feed.h"
#include "daemon/core/snapshot.h"
#include "daemon/exec/host_enforcer.h"
#include "daemon/exec/job_executor.h"
#include "daemon/exec/job_files.h"
#include "daemon/exec/share_env.h"
#include "daemon/exec/unix_account.h"
#include "daemon/job/job_request.h"
#include "daemon/store/ownership.h"
#include "daemon/store/store.h"
#include "dlsched/perf/predictor.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/runtime/executor.h"
#include "dlsched/runtime/scheduler.h"
#include "io/profile.h"

namespace dlsched::daemon {

// Wall-clock time as scheduler Timestamps: microseconds since the Unix epoch.
class SystemClock final : public Clock {
 public:
  Timestamp Now() const override;
};

// The back-off between a job's failed launches (see the header comment).
struct LaunchRetry {
  Duration first = std::chrono::seconds(1);
  Duration max = std::chrono::minutes(5);
  int max_failures = 10;  // in a row; then the job fails
};
// How long the report of the `failures`-th failed launch in a row (1, 2, ...) is held before the
// scheduler requeues the job: first x 2^(failures-1), at most max.
Duration LaunchRetryDelay(const LaunchRetry& retry, int failures);

struct DaemonOptions {
  std::string db_path;
  std::string workdir;  // job directories live in <workdir>/jobs/<id>
  // Any kind (io/profile.h).
  PolicyProfile profile;
  // A sharing profile's knowledge (live_sharing.h: models, job features, the GPU monitor's
  // histories) is refreshed before each cycle and handed to the scheduler; its models come from
  // this traces folder's measurements (LoadSharingModels; "" = the built-in ones, `serve
  // --sharing-data`), logged in the start record for the replay.
  std::string sharing_data;
  // How jobs that share a GPU are held to their part of it (share_env.h, `serve
  // --share-enforcer`); under kMps no two users' jobs share a GPU. The MPS control daemons are
  // `serve`'s to start.
  ShareEnforcer share_enforcer = ShareEnforcer::kNone;
  // Set: what sharing policies see instead of the live knowledge (a test's fixed view; nothing
  // is refreshed then); must outlive the daemon.
  const SharingView* sharing_view = nullptr;
  Duration grace = std::chrono::seconds(10);  // SIGTERM -> SIGKILL for preemption and cancel
  uint64_t seed = 1;
  size_t max_inbox = 100000;  // further posts are refused (HTTP 429)
  Durability durability = Durability::kFull;
  // Builds the executor from the daemon's sinks; unset: a ProcessExecutor with `grace`
  // (`serve --executor local`). `serve --executor slurm` sets one for a SlurmExecutor.
  using ExecutorFactory =
      std::function<Result<std::unique_ptr<JobExecutor>>(JobExecutor::Sink, JobExecutor::NodeSink)>;
  ExecutorFactory executor_factory;
  // The executor runs a gang across nodes (Slurm does; local processes stay on one node).
  bool multi_node_gangs = false;
  // Set: the policies' estimator (instead of the built-in SimpleThroughputModel), corrected by
  // the running jobs' progress reports for their ETAs. `serve --predictor FILE` fits it.
  std::shared_ptr<const PerfPredictor> predictor;
  // The profile store `predictor` was fitted to, logged in the start record for the replay.
  std::string predictor_source;
  // The local executor's job wrapper program (required with it: the dlsched binary, whose
  // `__job-exec` runs each job) and log cap (ProcessExecutor::Options).
  std::string job_exec;
  int64_t max_log_bytes = int64_t{64} << 20;
  // The local executor's hold on jobs' CPUs and host memory (ProcessExecutor::Options::host;
  // `serve --host-enforcer`); null: none.
  std::shared_ptr<HostEnforcer> host_enforcer;
  // Set: the Unix account each user's jobs run as (called from HTTP threads and the scheduler
  // thread; must be thread-safe). Unset: every job runs as the daemon's own user.
  std::function<Result<UnixAccount>(std::string_view user)> account_for;
  // Launches wait while the store's or the workdir's file system has less free space; 0: off.
  int64_t min_free_bytes = int64_t{256} << 20;
  LaunchRetry launch_retry;
  // Opens the daemon's store; unset: the SQLite Store at db_path with `durability`. The daemon's
  // unit tests set one for an in-memory store (the workdir and db_path locks are taken either
  // way).
  using StoreFactory = std::function<Result<std::unique_ptr<StateStore>>()>;
  StoreFactory store_factory;
  // Free bytes for unprivileged users on the file system of a path (nullopt: unknown, taken as
  // enough), for the min_free_bytes check; unset: statvfs(3). Called from the scheduler thread.
  std::function<std::optional<int64_t>(const std::string& path)> free_bytes;
  // Set: the GPUs are sampled every monitor_period (`serve --monitor-period`, NVML) and each
  // running job's processes' memory and utilisation recorded (gpu_usage.h), persisted in the
  // store, published with each snapshot and kept across restarts.
  std::shared_ptr<GpuMonitor> gpu_monitor;
  Duration monitor_period = std::chrono::seconds(5);
  // Out of GPU memory (oom_watchdog.h): the watchdog over gpu_monitor's samples, and the
  // restarts allowed in a row (`serve --oom-slack-mib`, `--oom-samples`).
  OomWatchdogOptions oom;
};

// Why-pending and order of the waiting jobs, computed by the scheduler thread on request.
struct QueueView {
  Timestamp at;
  std::vector<JobId> order;  // waiting jobs (queued, suspended), first to run first
  // The policy's reason (text and cause) for each waiting job it looked at in the last cycle.
  std::map<JobId, PendingReason> reasons;
};

// What a submission gets: its job, and whether the job was there before (a retry carrying the
// Idempotency-Key of an earlier submission by the same user gets that job back). `->` and `*`
// reach the job.
struct SubmittedJob {
  std::shared_ptr<const JobRecord> job;
  bool existing = false;
  const JobRecord& operator*() const { return *job; }
  const JobRecord* operator->() const { return job.get(); }
};
using SubmitResult = Result<SubmittedJob>;

class Daemon {
 public:
  // Takes the workdir and database locks, opens the store, checks the workdir's store id,
  // restores its jobs and re-adopts their processes. Starts no thread. FailedPrecondition when
  // another process holds the workdir or the database, or the workdir is not the database's
  // (ownership.h). `clock` must outlive the daemon.
  static Result<std::unique_ptr<Daemon>> Create(Cluster cluster, DaemonOptions options,
                                                const Clock& clock);
  // Stop(), then closes the store. Job processes keep running.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the scheduler thread and the process monitor.
  Status Start();
  // Instead of Start, for a caller that drives the daemon itself (the daemon's unit tests, with a
  // VirtualClock and an executor that needs no thread of its own): runs one iteration of the
  // scheduler thread at the clock's now over what the inbox holds, without waiting. False once
  // the daemon has stopped (Stop, a fail-stop). Never call it after Start.
  bool RunOnce();
  // When the scheduler thread wakes up next without new input: the policy's wake-up, the end of
  // a held failed launch's back-off, a running job's next progress read (kTimeNever: none).
  // Scheduler thread, or RunOnce's caller.
  Timestamp NextWakeAt() const;
  // Finishes the current iteration and stops both threads; callers still waiting get
  // Unavailable. Idempotent. Job processes keep running (a restart re-adopts them).
  void Stop();
  // Stops every running job as a cancellation does (the executor's SIGTERM, the grace period,
  // then SIGKILL) and records each as killed with `reason` (its row and event log), so that no
  // restart runs it again; from then on no scheduling cycle runs, so nothing else starts. Waits
  // until no job runs or `wait` has passed. Returns how many jobs were still running then
  // (KillAllJobs after Stop ends them), or Unavailable if the daemon has stopped. Call before
  // Stop, once nothing submits any more (the HTTP server stopped).
  Result<int64_t> KillRunningJobs(std::string reason, Duration wait);
  // SIGKILL to every job process, recording nothing (the last resort after KillRunningJobs,
  // tests); call after Stop.
  void KillAllJobs();
  // The error that stopped the daemon, if one did.
  std::optional<Status> failure() const;

  // --- thread-safe, for HTTP threads ---
  const Cluster& cluster() const { return cluster_; }
  // The profile the scheduler was built from (its tenant quotas: GET /v1/tenants).
  // The profile's tenant quotas: a pipeline's, or a sharing profile's pipeline base's; none for
  // a round-based profile.
  const std::map<std::string, PipelineConfig::Quota, std::less<>>& tenant_quotas() const;
  bool multi_node_gangs() const { return options_.multi_node_gangs; }
  const std::string& workdir() const { return options_.workdir; }
  std::string JobDir(JobId id) const;
  // The latest published snapshot (never null after Create).
  std::shared_ptr<const Snapshot> snapshot() const;
  // Submits a request (already checked with ParseJobRequest and CheckFitsCluster). Ready once
  // the job's row has committed (with its record), or with Unavailable (stopping, store
  // failure) or ResourceExhausted (inbox full). A request with the idempotency_key of an
  // earlier job of the same user (this run or, stored, an earlier one) makes no job: it gets
  // that job (existing), or AlreadyExists if it asks for something else.
  std::future<SubmitResult> Submit(JobRequest request);
  // Cancels a job: NotFound, FailedPrecondition (already ended), or OK once the cancellation is
  // durable (a running job is then being stopped; it ends as killed).
  std::future<Status> Cancel(JobId id);
  // The queue in order, with why each waiting job does not start.
  std::future<Result<QueueView>> Queue();

 private:
  struct SubmitItem {
    JobRequest request;
    std::promise<SubmitResult> reply;
  };
  struct CancelItem {
    JobId job;
    std::promise<Status> reply;
  };
  struct QueueItem {
    std::promise<Result<QueueView>> reply;
  };
  struct ReportItem {
    ExecutorReport report;
    bool held = false;  // a failed launch's report released after its back-off
  };
  struct NodeItem {
    NodeReport report;
  };
  // A GPU monitor's sample (DaemonOptions::gpu_monitor).
  struct GpuSampleItem {
    GpuSample sample;
    Timestamp at;
  };
  // KillRunningJobs: cancel every running job, then drain.
  struct KillRunningItem {
    std::string reason;
    std::promise<Status> reply;
  };
  // A failed launch's report, held back until `due` (LaunchRetryDelay).
  struct HeldReport {
    Timestamp due;
    ExecutorReport report;
  };
  using Item = std::variant<SubmitItem, CancelItem, QueueItem, ReportItem, NodeItem,
                            KillRunningItem, GpuSampleItem>;

  // Per job, what the daemon knows beyond the Scheduler's Job.
  struct LiveJob {
    std::shared_ptr<const JobRequest> request;
    std::optional<int> exit_code;
    int launch_failures = 0;  // in a row; reset when a run ends normally
    // kPreempt or kKill once the decision to stop it committed, until the run's outcome arrives.
    StopIntent stopping = StopIntent::kNone;
    // The running segment's process (also once the executor has seen it end, until its outcome
    // is handled).
    int pid = 0;
    uint64_t pid_start = 0;
    // Being killed by KillRunningJobs: its kKilled outcome carries the shutdown's reason.
    bool killed_at_shutdown = false;
    // Set while the OOM watchdog stops the run: why (its outcome becomes an out-of-memory
    // restart).
    std::string oom_stop;
    int oom_in_a_row = 0;  // out-of-memory ends of its runs in a row (JobRecord)
    int oom_restarts = 0;  // out-of-memory restarts (JobRecord)
    // The sizes of its stdout.log and stderr.log when the run started: the log the run wrote
    // begins there (FindCudaOutOfMemory reads no earlier run's).
    std::array<int64_t, 2> log_start{};
    std::shared_ptr<const std::vector<JobTimelineEvent>> timeline;  // JobRecord::timeline
  };

  // The Scheduler's Executor (see the header comment). Scheduler thread only.
  class ExecutorPort final : public Executor {
   public:
    explicit ExecutorPort(Daemon& daemon) : daemon_(&daemon) {}
    void Launch(const Job& job, const Placement& placement, Timestamp now) override;
    void Preempt(const Job& job, Timestamp now) override;
    void Kill(const Job& job, Timestamp now) override;

   private:
    Daemon* daemon_;
  };

  Daemon(Cluster cluster, DaemonOptions options, const Clock& clock);
  // Names this process as the database's holder (meta `owner`), for a refused second daemon.
  Status RecordOwner();
  // Brings back the stored jobs. A row that cannot come back (its spec does not parse, the
  // scheduler refuses it) does not stop the start: it is reported on stderr, and unless it had
  // already ended it fails with the reason; the other jobs are restored.
  Status Restore();
  // Gives `policy` the state the store holds for this profile (policy_state.h) and remembers it
  // as saved. A state the policy cannot read is reported on stderr and dropped (the policy
  // starts afresh); errors are the store's.
  Status RestorePolicyState(SchedulingPolicy& policy);
  void Loop();
  // One iteration over `items`, its steps in this order (each below says its contract): the
  // held reports that are due join `items`; unless `items` holds only queue queries and no
  // cycle is due, JournalInputs, Decide and CommitDecisions run in one store transaction; then
  // CarryOut, Publish (with ReadRunningProgress), Reply, and the commit of CarryOut's rows.
  // Returns false after a fail-stop (FailStop has answered every caller).
  bool Iterate(std::vector<Item>& items);
  // Appends to `items` the held reports (failed launches) whose back-off is over or whose job is
  // being cancelled.
  void ReleaseHeldReports(std::vector<Item>& items);
  // Journal inputs: begins the iteration's transaction and applies `items` in order (Apply: each
  // logs its input event and changes the scheduler's state), collecting their replies; clears
  // `items`. On a failure it rolls back and leaves in `items` those not yet applied.
  Status JournalInputs(std::vector<Item>& items, Timestamp now);
  // Decide: the scheduling cycle at `now` (RunCycle), counted in the metrics, unless launches
  // are paused for lack of disk space or the daemon is draining (then nullopt: no cycle). Sets
  // the next wake-up. Writes nothing to the store.
  std::optional<CycleResult> Decide(Timestamp now);
  // Commit: logs the cycle and its decisions in the event log's order (event_log.h: the cycle
  // row, the executor's queued kills, preemptions and launches as it got them, the cycle's
  // rejections by job id), records the stop intents, writes the rows of every job the inputs
  // or the cycle changed, and commits (durably). On a failure it rolls back.
  Status CommitDecisions(std::optional<CycleResult> cycle, Timestamp now);
  // Appends a row about job `job` to the event log (store_->AppendEvent) and the event to the
  // job's timeline (LiveJob::timeline; the caller marks the job dirty). Precondition: the job
  // exists.
  Status LogEvent(Timestamp now, int64_t job, std::string_view kind, std::string_view detail);
  // Carry out: the committed decisions go to the executor (JobExecutor::Flush); then the rows of
  // the jobs it acted on get their processes, in a transaction without an fsync of its own that
  // stays open until the replies are sent (nothing acknowledged depends on those rows: a restart
  // finds the processes through their pid files). True when that transaction is open. On a
  // failure it rolls back.
  Result<bool> CarryOut();
  // Reply: answers the callers waiting on this iteration, once what they asked for is durable:
  // submitters with their job's record, cancellers, and queue queries (those in the reply list,
  // and the ones left in `items` when no transaction ran) with one ComputeQueue; clears `items`.
  void Reply(std::vector<Item>& items, Timestamp now);
  // Applies one input inside the open transaction; collects replies to send after commit.
  Status Apply(Item& item, Timestamp now);
  // What a new run segment of `job` on `placement` runs (BuildLaunchSpec; a job in a shared mode
  // also its GpuShareFor), or why it cannot run (its user has no Unix account). Forgets the
  // previous segment's exit code.
  Result<LaunchSpec> LaunchSpecFor(const Job& job, const Placement& placement);
  // A shared job's part of its GPU (docs/sharing.md, "Running it live"): its memory request
  // (GpuMemoryLimitMib, what the OOM watchdog holds it to) when it has one; else the memory the
  // GPU has less what its other holders demand at the policy's memory percentile (time-sliced:
  // the whole GPU's), never less than its own demand; and 100 / the policy's jobs per GPU
  // percent of the SMs.
  GpuShare GpuShareFor(const Job& job, const Placement& placement) const;
  void MarkDirty(JobId id);
  std::shared_ptr<const JobRecord> BuildRecord(JobId id) const;
  // Writes the rows of the dirty jobs and refreshes their records in the index.
  Status FlushDirty();
  // With a predictor: reads the progress of the running jobs that are due (ProgressFeed) and
  // refreshes predictions_.
  void ReadRunningProgress(Timestamp now);
  void Publish(Timestamp now);
  // The snapshot's GPU holdings: holdings_ again while what they are built from is unchanged,
  // else rebuilt (O(running jobs) to check, O(GPUs) to rebuild).
  std::shared_ptr<const NodeHoldings> Holdings();
  void FailStop(Status why, std::vector<Item>& items);
  Result<QueueView> ComputeQueue(Timestamp now);
  void Post(Item item);
  // Takes the GPU samples out of `items`: attributes each to the running jobs (their process
  // groups), records it in gpu_usage_ and stores it, in a transaction of its own without an
  // fsync (a sample lost with the machine is harmless). A sample alone runs no cycle.
  Status RecordGpuSamples(std::vector<Item>& items);
  // The watchdog's stop of a run over its GPU memory limit (oom_watchdog.h): SIGTERM through the
  // executor at once (at the start of an iteration, when nothing else is queued), recorded in
  // live_jobs_ so that its outcome becomes an out-of-memory restart.
  void StopOutOfMemory(const OomVerdict& verdict, Timestamp now);
  // Turns the report of a run that ran out of GPU memory (the watchdog stopped it, or it exited
  // non-zero with a CUDA out-of-memory message in its log) into JobLaunchFailed with
  // out_of_memory, or into a failure after OomWatchdogOptions::max_restarts in a row.
  void MarkOutOfMemory(ExecutorReport& report, JobId id);
  // Refreshes low_on_space_ (at most once a second); true while launches must wait.
  bool LowOnSpace();

  Cluster cluster_;
  DaemonOptions options_;
  const Clock* clock_;
  std::shared_ptr<const ThroughputModel> estimator_;  // the predictor or the built-in model
  std::map<std::string, std::string> inherited_env_;
  // Declared before store_, so released after it closes: closing the lock's descriptor on the
  // database file would drop this process's SQLite locks on it.
  StateLock lock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<JobExecutor> executor_;
  ExecutorPort port_{*this};  // the scheduler's executor: before scheduler_, which holds it
  std::unique_ptr<Scheduler> scheduler_;
  Inbox<Item> inbox_;

  // --- scheduler thread only ---
  std::vector<LiveJob> live_jobs_;  // by JobId
  std::vector<JobId> dirty_;
  std::vector<bool> is_dirty_;
  JobIndex index_;
  std::array<int64_t, 8> by_state_{};
  DaemonMetrics metrics_;
  Timestamp wake_at_ = kTimeNever;
  // The policy's state as the store has it (policy_state.h), to write it only when it changes.
  std::string saved_policy_state_;
  std::string saved_running_order_;  // the stored meta row kRunningOrderKey (restore.h)
  std::string host_enforcement_;     // Snapshot::host_enforcement
  // Set by KillRunningJobs: the reason its kills record; no cycle runs any more.
  std::optional<std::string> draining_;
  Timestamp started_at_;
  uint64_t version_ = 0;
  std::shared_ptr<const NodeHoldings> holdings_;  // the last snapshot's
  std::vector<uint64_t> holdings_key_;            // what holdings_ was built from (Holdings)
  std::optional<QueueView> queue_cache_;
  std::unique_ptr<ProgressFeed> feed_;  // with a predictor only
  GpuUsageBook gpu_usage_;
  // With a sharing profile: the scheduler's SharingView, refreshed before each cycle.
  std::unique_ptr<LiveSharingKnowledge> sharing_;
  OomWatchdog oom_watchdog_{options_.oom};
  std::shared_ptr<const GpuSample> gpu_devices_;  // the latest sample, for /metrics
  std::unique_ptr<GpuSampler> sampler_;           // with a GPU monitor only
  std::vector<HeldReport> held_reports_;
  // Why launches are paused for lack of disk space ("" while they are not); checked at most
  // once a second.
  std::string low_on_space_;
  std::optional<Timestamp> space_checked_;
  std::shared_ptr<const std::map<JobId, JobPrediction>> predictions_ =
      std::make_shared<const std::map<JobId, JobPrediction>>();
  // (user, Idempotency-Key) of the jobs submitted with one.
  std::map<std::pair<std::string, std::string>, JobId> by_idempotency_key_;
  // Replies to send once the iteration's transaction has committed.
  struct SubmitReply {
    JobId job;
    bool existing = false;
    std::promise<SubmitResult> reply;
  };
  std::vector<SubmitReply> submit_replies_;
  std::vector<std::pair<Status, std::promise<Status>>> cancel_replies_;
  std::vector<std::promise<Result<QueueView>>> queue_replies_;

  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const Snapshot> snapshot_;
  mutable std::mutex failure_mu_;
  std::optional<Status> failure_;
  std::thread thread_;
};

}  // namespace dlsched::daemon
