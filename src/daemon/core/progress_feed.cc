#include "daemon/core/progress_feed.h"

#include <algorithm>

namespace dlsched::daemon {

std::optional<double> SpecIterationsDone(const Progress& progress, const JobRequest& request) {
  const double total = progress.total > 0 ? progress.total : request.total_iterations;
  if (total <= 0) return std::nullopt;
  return std::clamp(progress.done / total, 0.0, 1.0) * request.spec.iterations;
}

std::optional<double> SegmentItersPerSecond(double done_now, double done_at_start,
                                            Duration elapsed) {
  if (elapsed <= Duration(0) || done_now <= done_at_start) return std::nullopt;
  return (done_now - done_at_start) / ToSeconds(elapsed);
}

bool ProgressFeed::Due(JobId id, Timestamp now) const {
  const auto it = last_read_.find(id);
  return it == last_read_.end() || now - it->second >= kReadInterval;
}

std::optional<JobPrediction> ProgressFeed::Read(JobId id, const JobRequest& request,
                                                const GpuShape& shape,
                                                const std::optional<Progress>& progress,
                                                double done_at_start, Duration segment_elapsed,
                                                Timestamp now) {
  last_read_[id] = now;
  const JobSpec& spec = request.spec;
  if (progress) {
    if (const std::optional<double> done = SpecIterationsDone(*progress, request)) {
      if (const std::optional<double> rate =
              SegmentItersPerSecond(*done, done_at_start, segment_elapsed)) {
        corrector_.Observe(id, spec, shape, *rate);
      }
    }
  }
  const std::optional<double> rate = corrector_.ItersPerSecondOn(id, spec, shape);
  if (!rate) return std::nullopt;
  return JobPrediction{*rate, corrector_.Factor(id, spec)};
}

void ProgressFeed::Forget(JobId id) {
  corrector_.Forget(id);
  last_read_.erase(id);
}

}  // namespace dlsched::daemon
