#pragma once

// How a job that an earlier daemon run stored comes back when the daemon starts again. The
// Daemon applies it to its store's rows (Daemon::Restore) and the replay (replay.h) to the jobs
// it replayed up to the logged start, so both restart the same way.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/store.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/runtime/scheduler.h"

namespace dlsched::daemon {

struct RestartedJob {
  Scheduler::RestoredJob job;
  // A running job that keeps its GPUs (the daemon re-adopts its process). False for a running
  // job whose placement `cluster` lacks or cannot give it (Scheduler::CanKeepGpus): it waits again
  // (suspended if it had made progress, else queued, since `now`, with the reason), and the daemon
  // stops its process.
  bool keeps_gpus = false;
};

// The stored job `row` with `spec` as the scheduler takes it back: its state, times and counters,
// without a placement.
Scheduler::RestoredJob RestoredFromRow(const JobRow& row, JobSpec spec);

// `row` is the stored job, `spec` its parsed spec (submit_time set), `scheduler` holds the jobs
// restored before it (Scheduler::CanKeepGpus: free GPUs, a service's loan, or, for a row stored
// with a share mode, a GPU free or already shared: the job keeps that mode). Placements are
// read by node name (ParsePlacementText), so a running job keeps its GPUs across a change of
// --gpus that keeps its node.
RestartedJob RestartJob(const JobRow& row, JobSpec spec, const Cluster& cluster,
                        const Scheduler& scheduler, Timestamp now);

// The running list's order (Scheduler::running, RestoreRunningOrder) across restarts: the store's
// meta row kRunningOrderKey holds it as RunningOrderText, written in the transaction of each
// commit that changed it.
inline constexpr std::string_view kRunningOrderKey = "running_order";
// The ids, space-separated ("" for none).
std::string RunningOrderText(std::span<const JobId> running);
// What RunningOrderText wrote; a malformed id ends the list there (the rest keep id order).
std::vector<JobId> ParseRunningOrder(std::string_view text);

}  // namespace dlsched::daemon
