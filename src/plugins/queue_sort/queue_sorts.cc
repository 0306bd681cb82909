#include "plugins/queue_sort/queue_sorts.h"

#include <algorithm>

namespace dlsched {

Result<std::unique_ptr<Plugin>> FifoSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<FifoSort>());
}

int64_t FifoSort::Rank(const JobView&) const { return 0; }  // submit time decides

Result<std::unique_ptr<Plugin>> SjfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<SjfSort>());
}

int64_t SjfSort::Rank(const JobView& job) const {
  return (job.estimated_total() * job.num_gpus()).count();  // estimated GPU-time
}

Result<std::unique_ptr<Plugin>> SrtfSort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<SrtfSort>());
}

int64_t SrtfSort::Rank(const JobView& job) const {
  // For a running job, the time run in its current segment counts as done.
  return (job.estimated_remaining() - job.current_segment()).count();
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

int64_t LasSort::Rank(const JobView& job) const { return AttainedForRank(job).count(); }

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

int64_t TiresiasSort::Rank(const JobView& job) const { return QueueOf(job.attained_gpu_time()); }

Timestamp TiresiasSort::NextRankChange(const JobView& running, Timestamp now) const {
  const Duration attained = running.attained_gpu_time();
  const int q = QueueOf(attained);
  if (q >= static_cast<int>(thresholds_.size())) return kTimeNever;
  const Duration gpu_time_left = thresholds_[q] - attained;
  // Ceiling division: the first microsecond at which the threshold is reached.
  const int64_t gpus = running.num_gpus();
  if (gpus == 0) return kTimeNever;  // a CPU job attains no GPU time: its queue never changes
  return now + Duration((gpu_time_left.count() + gpus - 1) / gpus);
}

Result<std::unique_ptr<Plugin>> PrioritySort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<PrioritySort>());
}

int64_t PrioritySort::Rank(const JobView& job) const { return -int64_t{job.priority()}; }

}  // namespace dlsched
