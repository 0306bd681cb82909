#pragma once

// How one run segment of a dlsched job becomes one Slurm batch job. Pure (tested without Slurm).
//
// The submission pins exactly what dlsched chose:
//   sbatch --parsable --job-name=dlsched-<id> --comment=dlsched:<job dir> --no-requeue
//          --chdir=<job dir> --output=<job dir>/stdout.log --error=<job dir>/stderr.log
//          --open-mode=append --export=NONE
//          --partition=P --nodes=K --nodelist=a,b --ntasks-per-node=1 --gres=gpu:TYPE:N
//          [--cpus-per-task=C] [--mem=MM]
//          (a shared single-GPU segment: --gres=shard:1, below; a part without GPUs: no --gres;
//          C and M: the CPUs and host memory (MiB) of each node's part, when not 0, which
//          Slurm's cgroup plugin then enforces)
//          [: --partition=P --nodes=... (one component per distinct GPU count per node)]
//          <job dir>/slurm-batch.sh ARGV...
// A placement with the same number of GPUs (and CPUs and memory) on every node is one ordinary
// job; one with unequal counts (3 GPUs on one node, 1 on another) is a heterogeneous job with one
// component per count, since --gres, --cpus-per-task and --mem count per node. --no-requeue:
// dlsched owns the queue, Slurm never requeues on its own. The job's argv is passed as arguments
// (never through a shell command line). Its environment never reaches the sbatch process (which
// runs with the daemon's own, so nothing a request sets, such as LD_PRELOAD, runs on the daemon's
// machine): --export=NONE, and slurm-batch.sh exports the job's variables itself, without the
// SLURM_*, SBATCH_*, SRUN_* and SALLOC_* ones a request could use to change its steps (and without
// names that are not shell names). With --export=NONE Slurm loads the user's login environment on
// the first node
// (--get-user-env; slurmd must run as root), which the job's variables override. slurm-batch.sh
// then sets SLURM_EXPORT_ENV=ALL, so `srun` (its own, or one the job's launcher runs) passes that
// environment on to every task.
//
// slurm-batch.sh runs the task script on every node through one `srun` (one task per node),
// except for mpi and horovod, whose launcher runs once, in the batch step on the first node, and
// starts the other ranks itself from the hostfile. It then writes the exit status to
// <job dir>/exit (how a restarted daemon learns the outcome when Slurm has forgotten the job).
// slurm-task.sh picks the per-node variables by $SLURMD_NODENAME, enters the working directory
// and execs the job's argv. Per node i (in placement order, i.e. Slurm's node order):
//   CUDA_VISIBLE_DEVICES     the GPU indices dlsched chose on that node (they override Slurm's
//                            own choice, which equals them in count; see the README on
//                            ConstrainDevices)
//   DLSCHED_NODE_RANK=i, DLSCHED_NODE_NUM_GPUS   on every framework
//   pytorch     RANK=i, NODE_RANK=i, LOCAL_RANK=0, WORLD_SIZE=K, MASTER_ADDR=<first node's
//               NodeAddr> (127.0.0.1 on one node), MASTER_PORT: one process per node, the
//               launcher (torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK
//               --nproc_per_node=$DLSCHED_NODE_NUM_GPUS) starts the per-GPU workers
//   tensorflow  TF_CONFIG with every node's "addr:port" as workers and task index i
// Everything else is the LaunchSpec's environment (job_env.h), the same on every node.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/exec/job_env.h"
#include "daemon/exec/slurm_parse.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

// The Slurm job name and comment of a dlsched job's segments. The comment identifies the job
// across daemon restarts: the job directory is unique to one daemon's --workdir and job id.
std::string SlurmJobName(JobId job);
std::string SlurmJobComment(const std::string& job_dir);

struct SlurmSubmission {
  std::vector<std::string> argv;  // sbatch ... <batch script> ARGV...
  std::string batch_path;         // <job dir>/slurm-batch.sh
  std::string batch_script;
  std::string task_path;  // <job dir>/slurm-task.sh
  std::string task_script;
  // The command runs in the batch step (mpi, horovod): a preemption signal reaches it only with
  // `scancel --full`. Otherwise it runs in an srun step, which plain `scancel --signal` reaches.
  bool command_in_batch_step = false;
};

// Builds the submission of `spec` on `placement`. `sites` are the cluster's nodes by NodeId.
// With `shard`, the segment holds one shard of its GPU (--gres=shard:1) instead of the GPU, so
// that other segments holding shards may run on the same GPU (GPU sharing through Slurm's shard
// GRES: several jobs on a GPU, each with a shard, none fenced from the others). Slurm picks which
// GPU's shard it counts and sets CUDA_VISIBLE_DEVICES to it; as for whole GPUs, slurm-task.sh
// overrides that with the GPU dlsched chose. Precondition: the placement's nodes and GPUs exist
// in `sites`; with `shard`, it is one GPU of one node.
SlurmSubmission BuildSlurmSubmission(const LaunchSpec& spec, const Placement& placement,
                                     std::span<const SlurmNodeSite> sites,
                                     std::string_view partition, bool shard = false);

// <job dir>/slurm_job, one line: "<slurm id> <node>,<node> batch|srun". The id is "-" while
// unknown: the record is written before sbatch runs and again with the id it printed. The last
// field is SlurmSubmission::command_in_batch_step; records of dlsched versions before it lack it.
struct SlurmJobRecord {
  std::string slurm_id;  // "" when unknown
  std::vector<std::string> nodes;
  std::optional<bool> command_in_batch_step;  // nullopt: not recorded
  friend bool operator==(const SlurmJobRecord&, const SlurmJobRecord&) = default;
};
std::string FormatSlurmJobRecord(const SlurmJobRecord& record);
// The record in `text` (missing fields stay empty; "" gives an empty record).
SlurmJobRecord ParseSlurmJobRecord(std::string_view text);

}  // namespace dlsched::daemon
