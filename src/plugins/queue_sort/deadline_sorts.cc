#include "plugins/queue_sort/deadline_sorts.h"

#include <optional>

namespace dlsched {

Result<std::unique_ptr<Plugin>> EdfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<EdfSort>());
}

int64_t EdfSort::Rank(const JobView& job) const {
  // Jobs without a deadline last: they rank as kTimeNever, after every real deadline.
  const std::optional<Timestamp>& deadline = job.spec().deadline;
  return (deadline ? *deadline : kTimeNever).time_since_epoch().count();
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
