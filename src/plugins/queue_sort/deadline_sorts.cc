#include "plugins/queue_sort/deadline_sorts.h"

#include <algorithm>
#include <optional>

namespace dlsched {

Result<std::unique_ptr<Plugin>> EdfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"best_effort_shortest_first"}));
  DS_ASSIGN_OR_RETURN(bool shortest_first, args.GetBool("best_effort_shortest_first", false));
  return std::unique_ptr<Plugin>(std::make_unique<EdfSort>(shortest_first));
}

int64_t EdfSort::Rank(const JobView& job) const {
  const std::optional<Timestamp>& deadline = job.spec().deadline;
  if (deadline) return deadline->time_since_epoch().count();
  // Jobs without a deadline last: from kTimeNever / 2 on, after every real deadline (years
  // past any trace), FIFO at one rank or by their estimated GPU-time, which stays far below
  // the other half of the range.
  constexpr int64_t kBestEffortFrom = kTimeNever.time_since_epoch().count() / 2;
  if (!best_effort_shortest_first_) return kBestEffortFrom;
  const int64_t gpu_time = (job.estimated_total() * job.num_gpus()).count();
  return kBestEffortFrom + std::clamp<int64_t>(gpu_time, 0, kBestEffortFrom - 1);
}

Result<std::unique_ptr<Plugin>> LaxitySort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<LaxitySort>());
}

Timestamp LaxitySort::LaxityKey(const JobView& job) {
  const std::optional<Timestamp>& deadline = job.spec().deadline;
  if (!deadline) return kTimeNever;
  // current_segment() is zero unless the job runs. Not clamped at zero when a running job
  // outlives its estimate: clamping would reorder running jobs between announced changes.
  return *deadline - (job.estimated_remaining() - job.current_segment());
}

int64_t LaxitySort::Rank(const JobView& job) const {
  return LaxityKey(job).time_since_epoch().count();
}

}  // namespace dlsched
