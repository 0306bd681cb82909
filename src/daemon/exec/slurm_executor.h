#pragma once

// Runs jobs as Slurm batch jobs on the nodes and GPUs dlsched chose: `dlsched serve --executor
// slurm`. dlsched keeps the queue and makes every decision; Slurm carries them out. The contract
// is JobExecutor's (job_executor.h); what is Slurm-specific:
//
// Launch: one `sbatch` per run segment, pinned with --nodelist / --nodes / --ntasks-per-node=1 /
//   --gres=gpu:TYPE:N, or --gres=shard:1 for a single-GPU job under a sharing profile
//   (Options::shards; slurm_batch.h has the script and the environment). sbatch runs with the
//   daemon's own environment (plus Options::extra_env), never the job's. The nodes and whether
//   the command runs in the batch step go to <job dir>/slurm_job before sbatch runs, the Slurm
//   job id once sbatch printed it (SlurmJobRecord). A submission Slurm has not started within
//   start_timeout (its nodes are busy with work dlsched does not know about, say) is cancelled
//   and reported as a failed launch, with Slurm's pending reason. If sbatch fails (an error, no
//   answer in time, an unreadable one), the job may still have got in: the segment is followed
//   without an id, and the next poll whose squeue answers matches it by job name and comment
//   (then follows it, and finishes a stop decided meanwhile) or reports the failed launch. So
//   nothing is reported while slurmctld does not answer.
// Stop (preempt, cancel, max run time): `scancel --signal=TERM` (with --full when the command
//   runs in the batch step), the grace period, then `scancel`. The intent goes to
//   <job dir>/stop first, in Flush itself (before the worker thread gets to the stop), so a
//   restarted daemon finishes an acknowledged stop and reports it rightly.
// State: one poll every poll_interval (default 1 s): `scontrol show node -o` for node health
//   and `squeue --me --states=all --partition=P` for the jobs (ended jobs stay listed for
//   Slurm's MinJobAge, 300 s by default), plus one `scontrol show job -o` per job that ended
//   other than COMPLETED, for its exit code. No accounting database (sacct) is needed. A job
//   Slurm has forgotten is judged by <job dir>/exit, which the batch script writes (the job
//   directory must therefore be on a file system the nodes and the daemon share).
// Outcomes, when dlsched did not stop the job itself: COMPLETED -> succeeded; FAILED -> failed
//   with the exit code; CANCELLED -> killed ("cancelled in Slurm"); TIMEOUT, DEADLINE,
//   OUT_OF_MEMORY -> failed; NODE_FAIL, BOOT_FAIL, PREEMPTED, REVOKED -> failed launch
//   (requeued); gone without an exit file -> failed launch (requeued).
// Nodes: a node's State is classified by ClassifyNodeState, first as discovery saw it (the
//   sites' state; Start reports the nodes not kUp then), then at every poll. A node that stops
//   being kUp leaves the placement pool (NodeReport available=false) and rejoins it when Slurm
//   reports it kUp again. The jobs on a kOut node (DOWN, DRAIN, FAIL, ...) are stopped as above and
//   reported as failed launches, so the scheduler requeues them and they resume from their
//   checkpoint elsewhere; a node report always precedes the reports of the jobs lost with it. A
//   launch on a node that is not kUp is refused at once (failed launch).
// Restart: Adopt finds the segment through <job dir>/slurm_job, else, when the record has no
//   id (sbatch failed, or the daemon died before recording it), through squeue by job name and
//   comment (dlsched-<id>,
//   dlsched:<job dir>): a live job, or an ended one if the segment's exit file exists. A
//   segment still queued or running is followed again, one that ended is reported as it ended
//   (with the stop intent from <job dir>/stop), one Slurm and the exit file know nothing of is
//   reported lost (requeued: it never ran). A segment's slurm_job, exit and stop files stay
//   until the next launch of the job is durable (Flush removes them), so a daemon that dies
//   after an outcome but before recording it reports that outcome again. If it dies after
//   recording a relaunch but before submitting it, the old files make the new segment end as
//   the old one did: suspended or a failed launch, both requeue it (a job only relaunches
//   after those). No job is submitted twice: a launch is only ever decided after the previous
//   segment's outcome was reported, and that happens only once Slurm lists it as ended (or, for
//   a failed sbatch, once squeue answered without it). Slurm jobs of this daemon's job directory
//   that no followed segment owns (orphans: of a job requeued at a restart, of a cluster that
//   shrank, a submission slurmctld accepted after its sbatch gave up) are cancelled at every
//   poll whose squeue answers.

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/exec/job_executor.h"
#include "daemon/exec/job_files.h"
#include "daemon/exec/slurm_command.h"
#include "daemon/exec/slurm_parse.h"

namespace dlsched::daemon {

class SlurmExecutor final : public JobExecutor {
 public:
  struct Options {
    std::string partition;                      // required
    std::string jobs_dir;                       // <workdir>/jobs: job dirs are below it
    Duration grace = std::chrono::seconds(10);  // TERM -> scancel
    Duration poll_interval = std::chrono::seconds(1);
    Duration start_timeout = std::chrono::seconds(60);
    Duration command_timeout = std::chrono::seconds(30);  // per Slurm command
    // Set in sbatch's environment, over the daemon's own (e.g. SLURM_CONF=...).
    std::vector<std::string> extra_env;
    // The daemon runs a sharing profile: every single-GPU segment holds one shard of its GPU
    // (--gres=shard:1) instead of the GPU, whether it shares now or not, since Slurm never lets
    // shards onto a GPU it granted whole and any such job may be joined later. Without it a
    // shared launch (Job::share not exclusive) fails at once. CheckSlurmShards says whether the
    // nodes declare enough shards.
    bool shards = false;
  };

  // `sites` are the cluster's nodes by NodeId (SlurmCluster::sites).
  SlurmExecutor(Options options, std::vector<SlurmNodeSite> sites, Sink sink, NodeSink node_sink);
  ~SlurmExecutor() override;
  SlurmExecutor(const SlurmExecutor&) = delete;
  SlurmExecutor& operator=(const SlurmExecutor&) = delete;

  Status Start() override;
  void Stop() override;

  void Launch(const Job& job, const Placement& placement, Result<LaunchSpec> spec) override;
  void Preempt(const Job& job, Timestamp now) override;
  void Kill(const Job& job, Timestamp now) override;
  std::vector<QueuedAction> Queued() const override;
  void Flush() override;

  void Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left,
             const Placement& placement) override;
  std::optional<ProcessInfo> Info(JobId job) const override;
  // `scancel` of every followed segment, now.
  void KillAll() override;

 private:
  using Clock = std::chrono::steady_clock;
  using Intent = StopIntent;
  struct Action {
    enum Kind { kLaunch, kPreempt, kKill } kind;
    JobId job;
    std::optional<LaunchSpec> launch;
    Placement placement;
    bool shard = false;  // --gres=shard:1 (Options::shards)
  };
  struct Run {
    JobId job;
    std::string job_dir;
    std::string slurm_id;  // "" until known
    std::vector<NodeId> nodes;
    bool command_in_batch_step = false;
    // Not yet matched against squeue: adopted, or its sbatch failed (then `submit_error`).
    bool unmatched = false;
    std::string submit_error;  // a failed sbatch's error, reported if Slurm has no such job
    bool started = false;      // seen running
    bool cancelled = false;    // the final scancel went out
    Intent intent = Intent::kNone;
    std::string why;             // for kNodeLost and kNotStarted
    std::string pending_reason;  // Slurm's, while pending
    Clock::time_point start_by = Clock::time_point::max();
    Clock::time_point deadline = Clock::time_point::max();  // max run time
    Clock::time_point kill_at = Clock::time_point::max();   // scancel after the grace period
  };
  // One Slurm job as squeue lists it (all components of a heterogeneous job).
  struct Listed {
    std::vector<std::string> states;  // by component
    std::string reason;
    std::string name;
    std::string comment;
    bool ended() const;
    bool running() const;
    std::string final_state() const;
  };

  void Loop();
  void DoLaunch(Action& action);
  // Records the intent in the run and <job dir>/stop (a kill overrides any other stop, another
  // stop none), then signals or cancels the Slurm job (worker thread).
  void DoStop(Run& run, Intent intent, const std::string& why);
  // A stop Flush acknowledges: writes it to <job dir>/stop unless the file already names a
  // stop that it does not override (the rule of DoStop). Caller holds mu_.
  void RecordStopLocked(const std::string& job_dir, Intent intent);
  void Poll();
  void PollNodes();
  void PollJobs();
  void RunTimers(Clock::time_point now);
  Clock::time_point NextTimer() const;
  ExecutorReport Outcome(const Run& run, const std::string& final_state, const std::string& reason);
  void Finish(JobId job, ExecutorReport report);
  // scancel [--signal=TERM [--full]] ID; logs a failure and returns false.
  bool Scancel(const std::string& slurm_id, bool term, bool full);
  CommandOptions Command() const;

  Options options_;
  std::vector<SlurmNodeSite> sites_;
  Sink sink_;
  NodeSink node_sink_;
  std::vector<Action> queued_;  // scheduler thread only

  // --- worker thread only ---
  std::vector<NodeHealth> health_;       // by NodeId, as last reported
  std::vector<std::string> health_why_;  // by NodeId: its state and reason
  // Orphans scancel took at the last poll (still listed while they end).
  std::set<std::string> cancelled_orphans_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Action> pending_;  // flushed, not yet carried out
  // Launches flushed and not yet carried out (until DoLaunch returns): their job directories.
  std::map<JobId, std::string> launching_;
  // <job dir>/stop files are written under mu_ (by Flush and the worker).
  std::map<JobId, Run> runs_;  // written by the worker under mu_; read by Info
  bool stopping_ = false;
  std::thread worker_;
};

// The cluster of a Slurm partition, for `serve --executor slurm`: `scontrol show partition -o`
// (only when `partition` is empty, to find the default one) and `scontrol show node -o`, then
// BuildSlurmCluster. Errors name the command and quote its stderr (Slurm not installed,
// slurmctld unreachable, no such partition, no GPUs in it).
struct SlurmDiscovery {
  std::string partition;
  SlurmCluster cluster;
};
Result<SlurmDiscovery> DiscoverSlurmCluster(std::string partition,
                                            Duration timeout = std::chrono::seconds(30));

}  // namespace dlsched::daemon
