#pragma once

// What a job's process sees: its command, working directory, environment and files. Pure
// functions of the request, the job and its placement (tested without starting anything).
//
// Environment, from lowest to highest precedence (a later source overrides an earlier one):
//  1. the daemon's own PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, USER, LOGNAME, SHELL,
//     LD_LIBRARY_PATH (nothing else of the daemon's environment reaches jobs), except that a
//     job run as another Unix account gets that account's USER and LOGNAME (its name, or its
//     uid where passwd has none) and HOME (its home, or the job directory where it has none);
//  2. the request's "env";
//  3. dlsched's variables, which a request cannot override:
//     CUDA_VISIBLE_DEVICES     the GPUs of the job on its (first) node, as the node's GPU
//                              indices ("0,2"), in ascending order; with
//                              CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers GPUs as NVML does
//     DLSCHED_JOB_ID, DLSCHED_JOB_NAME, DLSCHED_USER, DLSCHED_NUM_GPUS
//     DLSCHED_CHECKPOINT_DIR   <job dir>/checkpoint: kept across preemptions; a job resumes
//                              from what it left there
//     DLSCHED_PROGRESS_FILE    <job dir>/progress: see ReadProgress
//     DLSCHED_RESTART_COUNT    how many times the job was preempted before this run
//     DLSCHED_NODES            the whole placement, "node:gpu,gpu;node:gpu"
//     framework variables:
//       pytorch     MASTER_ADDR=127.0.0.1, MASTER_PORT=<free port>, WORLD_SIZE=1, RANK=0,
//                   LOCAL_RANK=0 (the one process dlsched starts is rank 0 of a world of one;
//                   a launcher such as torchrun --nproc_per_node=$DLSCHED_NUM_GPUS sets its
//                   workers' own values)
//       tensorflow  TF_CONFIG={"cluster":{"worker":["127.0.0.1:<port>"]},
//                              "task":{"type":"worker","index":0}}
//       mpi,        DLSCHED_HOSTS ("localhost:<gpus>" on one node, else "node:gpus,...") and
//       horovod     DLSCHED_HOSTFILE (<job dir>/hostfile, "host slots=N" lines); Open MPI's
//                   OMPI_MCA_orte_default_hostfile points at the same file
//       custom      nothing

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/exec/unix_account.h"
#include "daemon/job/job_request.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched::daemon {

// Everything the process executor needs to start one run segment of a job.
struct LaunchSpec {
  JobId job;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value", sorted by name, the complete environment
  std::string workdir;           // the process's working directory
  std::string job_dir;           // logs, pid and exit files, checkpoint, progress
  // Files to write (path, content) before the process starts.
  std::vector<std::pair<std::string, std::string>> files;
  // Run time left for this segment (max_run_time minus what earlier segments used).
  std::optional<Duration> time_limit;
  // The request's framework and the port given for it (0: none): an executor that runs a gang
  // across nodes sets the per-node part of the framework variables itself.
  Framework framework = Framework::kCustom;
  int port = 0;
  // The Unix account the job runs as; none: the daemon's own (docs/security.md). The daemon
  // sets it when it runs as root.
  std::optional<UnixAccount> account;
  // The CPU cores and host memory (MiB) it holds on its first node (NodeGpus::cpus,
  // memory_mib; 0: none asked), which the process executor holds it to (host_enforcer.h).
  int cpus = 0;
  int64_t host_memory_mib = 0;
  // Its GPUs on that node (this machine's GPU indices, as CUDA_VISIBLE_DEVICES lists them): the
  // process executor prefers the cores near them.
  GpuMask gpus = 0;
};

// The variables of source 1 above, read from the daemon's environment.
std::map<std::string, std::string> InheritedEnv();

// The port for BuildLaunchSpec: for a framework whose processes rendezvous over TCP (pytorch,
// tensorflow) a TCP port on the loopback interface that nothing listens on right now (another
// process may take it before the job does; a job that fails that way fails like any other);
// 0 for the others.
int FrameworkPort(Framework framework);

// Builds the launch of `job` (its request `request`) on `placement`. `job_dir` is
// <workdir>/jobs/<id>; `port` is a free TCP port for frameworks that need one; `account`, when
// given, the Unix account the job runs as (LaunchSpec::account).
LaunchSpec BuildLaunchSpec(const JobRequest& request, const Job& job, const Placement& placement,
                           const Cluster& cluster, const std::string& job_dir,
                           const std::map<std::string, std::string>& inherited, int port,
                           const std::optional<UnixAccount>& account = std::nullopt);

// "0,1,3": the set bits of a node's GPU mask.
std::string GpuList(GpuMask gpus);
// "n0000:0,1;n0001:2" (empty placement: ""), each part followed by the CPUs and host memory
// (MiB) it holds when not 0: "n0000:0,1/cpus=8/mem=4096;n0001:/cpus=2" (a part without GPUs
// has an empty list). Node names, so it stays meaningful if the cluster spec changes between
// daemon runs. What the store, the event log and the API keep.
std::string PlacementText(const Cluster& cluster, const Placement& placement);
// The GPUs alone, "n0000:0,1;n0001:2": DLSCHED_NODES, whose format jobs parse.
std::string PlacementGpusText(const Cluster& cluster, const Placement& placement);
// The inverse of PlacementText (text without the suffixes, as stored before them, reads as
// holding no CPUs or memory); InvalidArgument on an unknown node, a GPU index the node does not
// have, a malformed suffix, or a part that holds nothing.
Result<Placement> ParsePlacementText(const Cluster& cluster, std::string_view text);

// The progress protocol: the job (over)writes DLSCHED_PROGRESS_FILE with one line,
// "<iterations done>" or "<iterations done>/<total iterations>" (numbers, e.g. "1200/5000";
// done >= 0, total > 0). Without a total in the file the request's "iterations" is the total.
// The daemon reads it when the job is shown and when it is preempted (the saved progress
// shortens its remaining-time estimate). POST /v1/jobs/{id}/progress writes the same file
// (WriteProgress), so both ways of reporting end in one place and the last report wins.
struct Progress {
  double done = 0;
  double total = 0;  // 0: unknown
};
std::optional<Progress> ReadProgress(const std::string& job_dir);
// The same line, parsed; nullopt when malformed.
std::optional<Progress> ParseProgress(std::string_view line);
// The line for `progress` ("done" or "done/total", numbers in their shortest exact form), which
// ParseProgress reads back to the same values.
std::string FormatProgress(const Progress& progress);
// Replaces <job_dir>/progress with FormatProgress(progress) atomically (a temporary file
// renamed over it), so a reader never sees a partial line. IoError when the file cannot be
// written. Thread-safe: concurrent writers each leave a whole line, the last rename wins.
Status WriteProgress(const std::string& job_dir, const Progress& progress);

}  // namespace dlsched::daemon
