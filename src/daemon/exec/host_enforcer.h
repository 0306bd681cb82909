#pragma once

// How the process executor holds each job to the CPU cores and host memory of its placement
// (NodeGpus::cpus, memory_mib of the part it runs on). Four modes, chosen once at start-up
// (`serve --host-enforcer auto|cgroup|affinity|none`, auto by default) and said in the daemon's
// start-up line, GET /v1/nodes and /metrics:
//   cgroup-v2  a group per job, <the daemon's own group>/<group name>/job-<id> in the unified
//              hierarchy: cpuset.cpus (its cores), cpu.max (its CPUs' worth of time),
//              memory.max and memory.swap.max 0 (its memory); the kernel kills a job over its
//              memory (memory.events oom_kill). Usable where the daemon's group may enable the
//              cpu, cpuset and memory controllers for its children.
//   cgroup-v1  the same with the v1 controllers: cpuset.cpus/cpuset.mems, cpu.cfs_quota_us,
//              memory.limit_in_bytes (and memory.memsw.limit_in_bytes where there is swap
//              accounting); memory.oom_control's oom_kill tells a kill for memory. Groups go
//              under the group the daemon itself is in, per controller (/proc/self/cgroup), so a
//              daemon confined to a group (a container) confines its jobs within it.
//   affinity   where neither is usable: the job's wrapper gets the cores as its CPU affinity
//              (sched_setaffinity; what it starts inherits it), and a watchdog sums the resident
//              memory of the job's process group (/proc) every memory_poll and kills the group
//              (SIGKILL) once it is over the job's memory.
//   none       nothing is enforced (accounting only).
// A job that asks for no CPUs gets every core (and no CPU limit); one that asks no memory, no
// memory limit; one that asks neither is left alone in every mode.
//
// Cores: the executor runs every job on this machine, so one allocator covers this machine's
// cores (those the daemon may use, sched_getaffinity). A job gets `cpus` cores: the ones fewest
// jobs hold, among them first those near its GPUs (Reserve's `near`), then the lowest numbers;
// deterministic, and never refused (on a machine with fewer cores than the cluster spec states,
// jobs share cores; the CPU limit still holds each to its CPUs' worth). They are the job's until
// Release. A restarted daemon re-adopts a running job's cores from its group (cpuset.cpus) or its
// wrapper's affinity (Readopt), and removes the groups of jobs that no longer run
// (RemoveStaleGroups).
//
// Thread-safe: the launcher thread reserves and confines, the monitor thread releases and
// watches.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

enum class HostEnforcement { kCgroupV2, kCgroupV1, kAffinity, kNone };
// "cgroup-v2", "cgroup-v1", "affinity", "none".
std::string_view HostEnforcementName(HostEnforcement mode);

// What `serve --host-enforcer` asks for: the best usable mode (cgroups, else affinity), cgroups
// or an error, affinity, or nothing.
enum class HostEnforcerChoice { kAuto, kCgroup, kAffinity, kNone };
// "auto", "cgroup", "affinity", "none"; InvalidArgument otherwise.
Result<HostEnforcerChoice> ParseHostEnforcerChoice(std::string_view text);

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11} (sorted, no duplicates). InvalidArgument on anything
// else (an empty text is the empty list).
Result<std::vector<int>> ParseCpuList(std::string_view text);
std::string FormatCpuList(const std::vector<int>& cores);

// Where this process's own groups are: the directory of its group in each hierarchy ("" where
// there is none), from /proc/self/cgroup and /proc/self/mountinfo (their texts).
struct CgroupDirs {
  std::string unified;              // cgroup v2
  std::string cpu, cpuset, memory;  // cgroup v1, per controller (cpu may share cpuacct's mount)
  friend bool operator==(const CgroupDirs&, const CgroupDirs&) = default;
};
CgroupDirs ParseCgroupDirs(std::string_view self_cgroup, std::string_view mountinfo);

// The daemon's group name for a workdir: "dlsched-" and 16 hex digits of a hash of its path, so
// a restarted daemon finds its groups and two daemons never share one.
std::string HostGroupName(std::string_view workdir);

// This machine as the local executor's node: the cores this process may run on
// (sched_getaffinity) and its host memory (MemTotal, or its memory cgroup's limit when lower).
struct LocalHost {
  int cpus = 0;
  int64_t memory_mib = 0;
};
LocalHost DetectLocalHost();
// `cluster` with `host`'s CPUs and memory on every node that states none (the local executor
// runs every node's jobs on this machine); the rest as it is.
Cluster WithLocalHost(const Cluster& cluster, const LocalHost& host);

// The cores one job holds and its memory limit (0: none).
struct HostGrant {
  std::vector<int> cores;  // empty: every core (no CPU limit)
  int cpus = 0;            // its CPU limit in cores; 0: none
  int64_t memory_mib = 0;
  bool empty() const { return cpus == 0 && memory_mib == 0; }
};

class HostEnforcer {
 public:
  struct Options {
    HostEnforcerChoice choice = HostEnforcerChoice::kAuto;
    // The daemon's group under its own ones ("dlsched-<hash of its workdir>"): one daemon's
    // jobs never meet another's.
    std::string group_name = "dlsched";
    // Where this process's groups are; unset: ParseCgroupDirs of /proc/self (tests give a
    // directory tree of their own).
    std::optional<CgroupDirs> dirs;
    // The cores jobs may get; empty: those this process may run on (sched_getaffinity).
    std::vector<int> cores;
    // The cores near each of this machine's GPUs ([GPU index] -> cores, DiscoverGpuTopology in
    // nvml.h); empty, or an empty list for a GPU: its topology is unknown.
    std::vector<std::vector<int>> gpu_cores;
    // How often the affinity mode's watchdog sums a job's resident memory.
    Duration memory_poll = std::chrono::milliseconds(250);
  };
  // Chooses the mode (see the header comment). FailedPrecondition, saying why, when `choice` is
  // kCgroup and no cgroup hierarchy is usable.
  static Result<std::unique_ptr<HostEnforcer>> Create(Options options);
  // Removes the daemon's groups when no job group is left in them.
  ~HostEnforcer();
  HostEnforcer(const HostEnforcer&) = delete;
  HostEnforcer& operator=(const HostEnforcer&) = delete;

  HostEnforcement mode() const { return mode_; }
  // One line for the start-up log: the mode, where its groups are, how many cores it deals.
  std::string Describe() const;
  Duration memory_poll() const { return options_.memory_poll; }
  // Whether the watchdog must look at `job` (affinity mode and a memory limit).
  bool Watches(JobId job) const;
  // Whether the executor must call OverMemory and Sweep every memory_poll: some job is watched
  // or some group awaits removal.
  bool NeedsTicks() const;

  // The cores near the GPUs of `gpus` (this machine's GPU indices), for Reserve's `near`:
  // the union of their Options::gpu_cores, sorted; empty when none is known.
  std::vector<int> CoresNear(GpuMask gpus) const;
  // Chooses the cores of `job` (`cpus` of them; `near`: cores to prefer, e.g. those near its
  // GPUs) and records them with its memory limit, until Release. A job already holding some
  // gets them back unchanged. In mode none, an empty grant.
  HostGrant Reserve(JobId job, int cpus, int64_t memory_mib, const std::vector<int>& near = {});
  // Confines process `pid` (the job's wrapper; what it starts inherits it) to the job's grant:
  // its group made and written and `pid` moved in (cgroups), or its affinity set. Internal,
  // saying which file or call failed, when it cannot.
  Status Confine(JobId job, int pid);
  // Takes back the grant of a job a previous daemon started and `pid` (its wrapper, 0 if gone)
  // runs: its cores from its group's cpuset.cpus, else the wrapper's affinity; its memory limit
  // `memory_mib` (the placement's).
  void Readopt(JobId job, int pid, int64_t memory_mib);
  // The job's memory limit in MiB when it was killed for going over it (the kernel's OOM kill in
  // its group, or the watchdog), else 0. Asked once its run has ended, before Release.
  int64_t KilledForMemory(JobId job) const;
  // The watchdog (affinity mode): the jobs of `groups` (job -> its process group) whose
  // processes together hold more resident memory than their limit; each is recorded as killed
  // for memory. The caller kills them.
  std::vector<JobId> OverMemory(const std::map<JobId, int>& groups);
  // Frees the job's cores and removes its group (killing what is left in it); a group whose
  // processes have not gone yet is removed by a later Release or Sweep.
  void Release(JobId job);
  // Removes groups whose removal failed earlier.
  void Sweep();
  // Removes (killing what runs in them) the job groups under the daemon's group of jobs not in
  // `keep` (left by a previous daemon). Called once, after the Readopts.
  void RemoveStaleGroups(const std::set<JobId>& keep);

  // The directories of a job's group, one per hierarchy (cgroup modes; empty otherwise).
  std::vector<std::string> JobGroupDirs(JobId job) const;

 private:
  struct Held {
    HostGrant grant;
    bool killed_for_memory = false;
  };
  HostEnforcer(Options options, HostEnforcement mode, CgroupDirs dirs);
  // The daemon's group directories (under the process's own), made when missing.
  Status MakeDaemonGroups();
  Status WriteGroup(JobId job, const HostGrant& grant, int pid);
  // Kills what is left in `dir` and removes it; false if it is still busy.
  static bool RemoveGroup(const std::string& dir);
  std::vector<std::string> DaemonGroupDirs() const;

  Options options_;
  HostEnforcement mode_;
  CgroupDirs dirs_;
  mutable std::mutex mu_;
  std::map<int, int> holders_;  // core -> how many jobs hold it
  std::map<JobId, Held> held_;
  std::vector<std::string> to_remove_;  // groups whose removal failed
};

}  // namespace dlsched::daemon
