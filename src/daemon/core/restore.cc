#include "daemon/core/restore.h"

#include <charconv>
#include <utility>

#include "daemon/exec/job_env.h"

namespace dlsched::daemon {

Scheduler::RestoredJob RestoredFromRow(const JobRow& row, JobSpec spec) {
  Scheduler::RestoredJob r;
  r.lifecycle() = row.lifecycle();
  r.spec = std::move(spec);
  r.migrations = row.migrations;
  return r;
}

RestartedJob RestartJob(const JobRow& row, JobSpec spec, const Cluster& cluster,
                        const Scheduler& scheduler, Timestamp now) {
  RestartedJob out{RestoredFromRow(row, std::move(spec))};
  Scheduler::RestoredJob& r = out.job;
  if (row.state != JobState::kRunning) return out;
  Result<Placement> placement = ParsePlacementText(cluster, row.placement);
  if (placement.ok() && placement->num_gpus() == r.spec.num_gpus &&
      scheduler.CanKeepGpus(r.spec, *placement, row.share)) {
    r.placement = *std::move(placement);
    r.share = row.share;
    out.keeps_gpus = true;
    return out;
  }
  // The cluster changed under the job (a different --gpus): it cannot keep GPUs that do not
  // exist, so it waits again.
  r.state = row.iterations_done > 0 ? JobState::kSuspended : JobState::kQueued;
  r.queued_since = now;
  r.reason = "requeued at restart: its GPUs " + row.placement + " are not in this cluster";
  return out;
}

std::string RunningOrderText(std::span<const JobId> running) {
  std::string text;
  for (JobId id : running) {
    if (!text.empty()) text += ' ';
    text += std::to_string(id.value());
  }
  return text;
}

std::vector<JobId> ParseRunningOrder(std::string_view text) {
  std::vector<JobId> order;
  while (!text.empty()) {
    uint32_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (error != std::errc() || (end != text.data() + text.size() && *end != ' ')) break;
    order.push_back(JobId(id));
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    if (!text.empty()) text.remove_prefix(1);
  }
  return order;
}

}  // namespace dlsched::daemon
