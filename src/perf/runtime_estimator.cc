#include "dlsched/perf/runtime_estimator.h"

#include <algorithm>
#include <cmath>

#include "dlsched/common/status.h"

namespace dlsched {

RuntimeEstimate EstimateRuntime(RuntimeEstimator& estimator, const JobSpec& spec,
                                double iterations_done, Timestamp now) {
  RuntimeEstimate estimate;
  estimate.total = std::max(Duration(1), estimator.EstimateTotal(spec, now));
  if (iterations_done >= spec.iterations) return estimate;  // nothing left
  const Duration done = Seconds(iterations_done / spec.ref_iters_per_s);
  // Outlived its estimate: double it until it exceeds the work done (bounded: done is finite).
  Duration total = estimate.total;
  while (total <= done) total *= 2;
  estimate.total = total;
  estimate.remaining = total - std::max(Duration(0), done);
  return estimate;
}

Duration StatedRuntimeEstimator::EstimateTotal(const JobSpec& spec, Timestamp) {
  return spec.runtime_estimate.value_or(spec.ideal_duration());
}

HistoryRuntimeEstimator::HistoryRuntimeEstimator(Options options) : options_(options) {
  DS_CHECK(options_.min_samples >= 1 && options_.prior > Duration(0))
      << "history estimator needs min_samples >= 1 and a positive prior";
}

void HistoryRuntimeEstimator::Observe(const JobSpec& spec, Duration run_time, Timestamp finish) {
  const double seconds = std::max(1.0, ToSeconds(run_time));
  const auto log_nano = static_cast<int64_t>(std::llround(std::log(seconds) * 1e9));
  pending_.push(Pending{finish, seq_++, spec.user, spec.model, spec.num_gpus, log_nano});
}

void HistoryRuntimeEstimator::Add(const Pending& p) {
  const Key keys[] = {{1, p.user, p.model, p.num_gpus},
                      {2, p.user, "", p.num_gpus},
                      {3, p.user, "", 0},
                      {4, "", "", p.num_gpus},
                      {5, "", "", 0}};
  for (const Key& key : keys) {
    Group& group = groups_[key];
    ++group.count;
    group.sum_log_nano += p.log_nano;
  }
  ++observed_;
}

void HistoryRuntimeEstimator::Advance(Timestamp now) {
  now_ = std::max(now_, now);
  while (!pending_.empty() && pending_.top().finish <= now_) {
    Add(pending_.top());
    pending_.pop();
  }
}

std::optional<Duration> HistoryRuntimeEstimator::From(const KeyView& key) const {
  const auto it = groups_.find(key);
  if (it == groups_.end() || it->second.count < options_.min_samples) return std::nullopt;
  const double mean_log_s =
      static_cast<double>(it->second.sum_log_nano) * 1e-9 / static_cast<double>(it->second.count);
  return Seconds(std::exp(mean_log_s));
}

Duration HistoryRuntimeEstimator::EstimateTotal(const JobSpec& spec, Timestamp now) {
  Advance(now);
  if (auto d = From({1, spec.user, spec.model, spec.num_gpus})) return *d;
  if (auto d = From({2, spec.user, "", spec.num_gpus})) return *d;
  if (auto d = From({3, spec.user, "", 0})) return *d;
  if (spec.runtime_estimate) return *spec.runtime_estimate;
  if (auto d = From({4, "", "", spec.num_gpus})) return *d;
  if (auto d = From({5, "", "", 0})) return *d;
  return options_.prior;
}

}  // namespace dlsched
