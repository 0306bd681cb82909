#include "plugins/queue_sort/deadline_sorts.h"

#include <optional>

namespace dlsched {
namespace {

bool SubmittedEarlier(const JobView& a, const JobView& b) {
  if (a.submit_time() != b.submit_time()) return a.submit_time() < b.submit_time();
  return a.id() < b.id();
}

// Orders by `key` among jobs with a deadline, puts jobs without one last, and breaks ties on
// submit time, then id.
template <typename KeyFn>
bool DeadlineFirst(const JobView& a, const JobView& b, KeyFn key) {
  const bool a_has = a.spec().deadline.has_value();
  const bool b_has = b.spec().deadline.has_value();
  if (a_has != b_has) return a_has;
  if (a_has) {
    const Timestamp a_key = key(a);
    const Timestamp b_key = key(b);
    if (a_key != b_key) return a_key < b_key;
  }
  return SubmittedEarlier(a, b);
}

}  // namespace

Result<std::unique_ptr<Plugin>> EdfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<EdfSort>());
}

bool EdfSort::Less(const JobView& a, const JobView& b) const {
  return DeadlineFirst(a, b, [](const JobView& job) { return *job.spec().deadline; });
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

bool LaxitySort::Less(const JobView& a, const JobView& b) const {
  return DeadlineFirst(a, b, &LaxityKey);
}

}  // namespace dlsched
