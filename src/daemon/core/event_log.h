#pragma once

// The daemon's event log (the `events` table of its Store): what its rows mean. The Daemon
// writes them; the replay (replay.h) reads them back into a fresh Scheduler and checks that it
// decides what the daemon decided.
//
// A daemon start writes one `start` row before its first iteration, holding what a fresh
// Scheduler needs. Each scheduler-loop iteration that runs a scheduling cycle then writes, all
// at the iteration's time and in this order:
//   inputs     submit | cancel | finished | suspended | launch_failed | node_up | node_down,
//              in the order they were applied
//   cycle      one row per cycle, also for a cycle that decided nothing (the replay runs a cycle
//              wherever the daemon ran one, so time-driven decisions match too)
//   decisions  kill | preempt | launch, in the order the executor received them (a kill comes
//              from a cancel applied before the cycle), then reject, by ascending job id
// A daemon stopping with --kill-jobs-on-exit (Daemon::KillRunningJobs) runs no cycle from then
// on: its iterations log a cancel and a kill per running job, then only the outcomes.
//
// Details by kind:
//   start          StartDetail: {"profile", "cluster", "seed", "jobs", "running",
//                  "policy_state", "predictor"}
//   submit         "" (the job's spec and user are its row in the jobs table)
//   cancel         ""
//   finished       "<final state>: <detail>"          ("failed: exit code 3")
//   suspended      "iterations_done=<number>"          (shortest exact form)
//   launch_failed  the reason; one beginning with kOutOfMemoryReason (oom_watchdog.h) is an
//                  out-of-memory restart (JobLaunchFailed::out_of_memory)
//   node_up/down   "<node name>: <reason>"
//   cycle          "launched=N preempted=N rejected=N"
//   launch         the placement (PlacementText: "n0000:0,1")
//   preempt, kill  ""
//   reject         the reason

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "dlsched/runtime/events.h"
#include "io/profile.h"

namespace dlsched::daemon::event_kind {

inline constexpr std::string_view kStart = "start";
inline constexpr std::string_view kSubmit = "submit";
inline constexpr std::string_view kCancel = "cancel";
inline constexpr std::string_view kFinished = "finished";
inline constexpr std::string_view kSuspended = "suspended";
inline constexpr std::string_view kLaunchFailed = "launch_failed";
inline constexpr std::string_view kNodeUp = "node_up";
inline constexpr std::string_view kNodeDown = "node_down";
inline constexpr std::string_view kCycle = "cycle";
inline constexpr std::string_view kLaunch = "launch";
inline constexpr std::string_view kPreempt = "preempt";
inline constexpr std::string_view kKill = "kill";
inline constexpr std::string_view kReject = "reject";

}  // namespace dlsched::daemon::event_kind

namespace dlsched::daemon {

// The row of an executor report or cancellation (JobFinished, JobSuspended, JobLaunchFailed,
// JobCancelRequested): its kind and detail.
std::string_view EventKind(const Event& event);
std::string EventDetail(const Event& event);
// The inverse, for the job the row names. InvalidArgument on an unknown kind or a malformed
// detail.
Result<Event> ParseEvent(std::string_view kind, JobId job, std::string_view detail);

// What a daemon start logs: the profile (PolicyProfileToJson: any kind), the cluster
// (ClusterLogJson), the policy's seed, how many jobs it restored and how many of those kept
// running, the policy's state it restored (SchedulingPolicy::SaveState's text; "" when it
// started fresh or keeps none), and the profile store its predictor was fitted to ("" for the
// built-in model).
struct StartRecord {
  PolicyProfile profile;
  Cluster cluster;
  uint64_t seed = 1;
  int64_t jobs = 0;
  int64_t running = 0;
  std::string policy_state;
  std::string predictor;
};
std::string StartDetail(const PolicyProfile& profile, const Cluster& cluster, uint64_t seed,
                        int64_t jobs, int64_t running, std::string_view policy_state,
                        std::string_view predictor);
// InvalidArgument naming what is missing or malformed. "policy_state" and "predictor" may be
// missing (logs of older versions): empty.
Result<StartRecord> ParseStartDetail(std::string_view detail);

// The exact JSON of a cluster: GPU type and rack names in id order, and every node with its
// rack, labels, CPUs, memory and each GPU's type, memory and interconnect group. Unlike a
// cluster spec it describes any cluster (NVML's mixed nodes too), and ParseClusterLogJson
// builds it back with the same ids.
nlohmann::json ClusterLogJson(const Cluster& cluster);
Result<Cluster> ParseClusterLogJson(const nlohmann::json& doc);

}  // namespace dlsched::daemon
