#pragma once

// Parsers for the Slurm client commands' text output, and the daemon's Cluster built from it.
// Pure functions (tested on inline fixtures); slurm_executor.h runs the commands.
//
// Output formats relied on (stable across Slurm 20.11 .. 23.x):
//   scontrol show node -o     one line per node, "Key=Value" tokens separated by spaces. Some
//   scontrol show job -o      values contain spaces (OS=Linux 6.1 #1 SMP, Reason=Not responding
//   scontrol show partition -o [root@...]): a token that does not start with "Key=" continues the
//                             previous value.
//   squeue --format=%i|%T|%r|%j|%k   id|state|reason|name|comment, one line per job (per
//                             component for heterogeneous jobs: id "12+1"). The name and the
//                             comment come last because users choose them; dlsched's own never
//                             contain '|'.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

// One "Key=Value ..." record of `scontrol show ... -o`, in order; later duplicates win.
using SlurmRecord = std::map<std::string, std::string, std::less<>>;
std::vector<SlurmRecord> ParseScontrolRecords(std::string_view text);

// One gres entry: "gpu:v100:4(S:0-1)" -> {gpu, v100, 4}; "gpu:2" -> {gpu, "", 2}.
struct SlurmGres {
  std::string name;
  std::string type;  // "" when untyped
  int count = 0;
  friend bool operator==(const SlurmGres&, const SlurmGres&) = default;
};
// A node's Gres field ("gpu:a100:2,gpu:v100:2(S:0),nic:1", "(null)"). InvalidArgument on an
// entry without a count.
Result<std::vector<SlurmGres>> ParseGres(std::string_view text);

// What dlsched makes of a node's State ("IDLE", "MIXED+DRAIN", "DOWN+NOT_RESPONDING", ...):
//   kUp           placeable (base IDLE, ALLOCATED, MIXED or COMPLETING, no flag below);
//   kUnreachable  not placeable, but its jobs are left to run: NOT_RESPONDING (slurmd missed a
//                 ping; Slurm marks it DOWN after SlurmdTimeout), UNKNOWN (not yet registered),
//                 MAINT, RESERVED, POWERING_UP, REBOOT_REQUESTED;
//   kOut          out of service, its jobs are requeued: base DOWN, ERROR or FUTURE, or a flag
//                 DRAIN (drained or draining), FAIL, POWERED_DOWN, POWERING_DOWN, POWER_DOWN,
//                 REBOOT_ISSUED, INVALID_REG.
// An unknown base state is kUnreachable; unknown flags are ignored.
enum class NodeHealth { kUp, kUnreachable, kOut };
NodeHealth ClassifyNodeState(std::string_view state);

// A Slurm node as dlsched uses it.
struct SlurmNode {
  std::string name;
  std::string addr;  // NodeAddr (falls back to NodeHostName, then the name)
  std::string state;
  std::string reason;  // Reason, "" when none
  std::vector<std::string> partitions;
  std::vector<SlurmGres> gres;
  std::vector<std::string> features;  // AvailableFeatures
  int cpus = 0;
  int64_t memory_mib = 0;  // RealMemory
};
// The nodes of `scontrol show node -o`, in its order. InvalidArgument naming the node on a record
// without NodeName or with a malformed Gres.
Result<std::vector<SlurmNode>> ParseNodes(std::string_view scontrol_output);

// The default partition's name from `scontrol show partition -o` (Default=YES), or NotFound.
Result<std::string> DefaultPartition(std::string_view scontrol_output);

// Per dlsched node: what the Slurm executor needs to address it.
struct SlurmNodeSite {
  std::string name;
  std::string addr;
  // Per GPU index: the gres type as Slurm spells it ("" untyped), for --gres=gpu:TYPE:N.
  std::vector<std::string> gres_types;
  // Its State and Reason when the cluster was built (SlurmNode's), for the executor's first view
  // of its health.
  std::string state;
  std::string reason;
  // Its gres "shard" count (Gres=...,shard:N; Slurm spreads them over the node's GPUs), 0 when
  // it declares none: the GPU sharing of a sharing profile (slurm_batch.h).
  int shards = 0;
};

// Whether the nodes can carry a sharing profile that puts up to `jobs_per_gpu` jobs on one GPU,
// each holding one shard: every node declares at least that many shards per GPU. Otherwise
// FailedPrecondition naming the nodes and what to configure in slurm.conf and gres.conf, or to
// run a non-sharing profile; `profile` names the profile in the message.
Status CheckSlurmShards(const std::vector<SlurmNodeSite>& sites, int jobs_per_gpu,
                        std::string_view profile);

// The daemon's cluster from a partition's nodes, in Slurm's order (NodeId i = i-th node with at
// least one GPU in `partition`; nodes without GPUs are left out). GPU type names are Slurm's gres
// types in upper case ("v100" -> "V100", so built-in profiles and throughput tables apply), "GPU"
// for untyped gres; memory per GPU from DefaultGpuMemoryMib. Labels: each feature "k=v" as k=v,
// a bare feature "ib" as ib=true, plus gpu=<type> and rack=<the "rack" feature, else the
// partition name>; one rack per distinct rack label. FailedPrecondition when the partition has
// no node with a GPU.
struct SlurmCluster {
  Cluster cluster;
  std::vector<SlurmNodeSite> sites;  // by NodeId
};
Result<SlurmCluster> BuildSlurmCluster(const std::vector<SlurmNode>& nodes,
                                       std::string_view partition);

// One line of squeue (see above), components of a heterogeneous job separately.
struct SlurmQueueEntry {
  std::string job_id;  // "12" (without "+N" or "_N")
  int component = 0;   // N of "12+N"
  std::string state;   // PENDING, RUNNING, COMPLETED, ...
  std::string reason;  // why pending, or "None"
  std::string name;
  std::string comment;  // "" when Slurm prints "(null)"
};
// Malformed lines (fewer than five fields, an empty id) are skipped: squeue's output is read
// every poll, and a line dlsched cannot read is no job of dlsched's.
std::vector<SlurmQueueEntry> ParseSqueue(std::string_view text);
inline constexpr std::string_view kSqueueFormat = "%i|%T|%r|%j|%k";

// A job state Slurm never leaves (COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED,
// BOOT_FAIL, DEADLINE, OUT_OF_MEMORY, REVOKED, SPECIAL_EXIT).
bool IsTerminalJobState(std::string_view state);

// The batch script's exit status from a job record's ExitCode ("2:0" -> 2, "0:15" -> 128+15);
// nullopt when absent or malformed.
std::optional<int> ParseExitCode(std::string_view exit_code);

// The job id `sbatch --parsable` prints ("12" or "12;cluster"); InvalidArgument otherwise.
Result<std::string> ParseSbatchJobId(std::string_view output);

}  // namespace dlsched::daemon
