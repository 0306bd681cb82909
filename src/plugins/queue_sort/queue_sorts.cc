#include "plugins/queue_sort/queue_sorts.h"

#include <algorithm>

namespace dlsched {
namespace {

// The common tie-break that makes every order total: submit time, then id.
bool SubmittedEarlier(const JobView& a, const JobView& b) {
  if (a.submit_time() != b.submit_time()) return a.submit_time() < b.submit_time();
  return a.id() < b.id();
}

}  // namespace

Result<std::unique_ptr<Plugin>> FifoSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<FifoSort>());
}

bool FifoSort::Less(const JobView& a, const JobView& b) const { return SubmittedEarlier(a, b); }

Result<std::unique_ptr<Plugin>> SjfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<SjfSort>());
}

bool SjfSort::Less(const JobView& a, const JobView& b) const {
  const auto a_work = a.estimated_total() * a.num_gpus();
  const auto b_work = b.estimated_total() * b.num_gpus();
  if (a_work != b_work) return a_work < b_work;
  return SubmittedEarlier(a, b);
}

Result<std::unique_ptr<Plugin>> SrtfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<SrtfSort>());
}

bool SrtfSort::Less(const JobView& a, const JobView& b) const {
  // For a running job, the time run in its current segment counts as done.
  const Duration a_left = a.estimated_remaining() - a.current_segment();
  const Duration b_left = b.estimated_remaining() - b.current_segment();
  if (a_left != b_left) return a_left < b_left;
  return SubmittedEarlier(a, b);
}

Result<std::unique_ptr<Plugin>> LasSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"quantum_s"}));
  DS_ASSIGN_OR_RETURN(double quantum_s, args.GetDouble("quantum_s", 600));
  if (quantum_s <= 0) return InvalidArgument("quantum_s must be positive");
  return std::unique_ptr<Plugin>(std::make_unique<LasSort>(Seconds(quantum_s)));
}

Duration LasSort::AttainedForRank(const JobView& job) const {
  if (!job.running()) return job.attained_gpu_time();
  const int64_t q = quantum_.count();
  const Timestamp grid_point(Duration(job.now().time_since_epoch().count() / q * q));
  return job.attained_gpu_time_at(grid_point);
}

bool LasSort::Less(const JobView& a, const JobView& b) const {
  const Duration a_attained = AttainedForRank(a);
  const Duration b_attained = AttainedForRank(b);
  if (a_attained != b_attained) return a_attained < b_attained;
  return SubmittedEarlier(a, b);
}

Timestamp LasSort::NextRankChange(const JobView& running, Timestamp now) const {
  // A global grid, so all running jobs share one wake-up per quantum.
  const int64_t q = quantum_.count();
  const int64_t next = (now.time_since_epoch().count() / q + 1) * q;
  return Timestamp(Duration(next));
}

Result<std::unique_ptr<Plugin>> TiresiasSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"thresholds_gpu_s"}));
  DS_ASSIGN_OR_RETURN(std::vector<double> bounds,
                      args.GetDoubleList("thresholds_gpu_s", {3600, 36000, 360000, 3600000}));
  std::vector<Duration> thresholds;
  for (double b : bounds) {
    if (b <= 0) return InvalidArgument("thresholds_gpu_s must be positive");
    thresholds.push_back(Seconds(b));
  }
  if (!std::is_sorted(thresholds.begin(), thresholds.end())) {
    return InvalidArgument("thresholds_gpu_s must be ascending");
  }
  return std::unique_ptr<Plugin>(std::make_unique<TiresiasSort>(std::move(thresholds)));
}

int TiresiasSort::QueueOf(Duration attained) const {
  return static_cast<int>(std::upper_bound(thresholds_.begin(), thresholds_.end(), attained) -
                          thresholds_.begin());
}

bool TiresiasSort::Less(const JobView& a, const JobView& b) const {
  const int qa = QueueOf(a.attained_gpu_time());
  const int qb = QueueOf(b.attained_gpu_time());
  if (qa != qb) return qa < qb;
  return SubmittedEarlier(a, b);
}

Timestamp TiresiasSort::NextRankChange(const JobView& running, Timestamp now) const {
  const Duration attained = running.attained_gpu_time();
  const int q = QueueOf(attained);
  if (q >= static_cast<int>(thresholds_.size())) return kTimeNever;
  const Duration gpu_time_left = thresholds_[q] - attained;
  // Ceiling division: the first microsecond at which the threshold is reached.
  const int64_t gpus = running.num_gpus();
  return now + Duration((gpu_time_left.count() + gpus - 1) / gpus);
}

Result<std::unique_ptr<Plugin>> PrioritySort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<PrioritySort>());
}

bool PrioritySort::Less(const JobView& a, const JobView& b) const {
  if (a.priority() != b.priority()) return a.priority() > b.priority();
  return SubmittedEarlier(a, b);
}

}  // namespace dlsched
