#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Seed 001's multi-dimensional priority: a job's score, in points, is
//     queue_weights[queue]                       tenant / queue class (0 for unlisted queues)
//   + priority_weight  x JobSpec::priority       the user's priority
//   + wait_weight      x hours since submission  aging
//   - remaining_weight x estimated hours left    shorter remaining work first
//   - size_weight      x GPUs                    smaller gangs first
//   + slack_weight     x hours past latest start deadline urgency; latest start = deadline -
//                                                estimated remaining; a job without a deadline
//                                                counts as due `no_deadline_horizon_s` after
//                                                submission
// and higher scores run first. Every time-dependent term grows at the same rate for all jobs,
// so dropping it ("now" is common) leaves a rank that never changes while a job waits, as
// JobQueue requires: rank = -(score without now) in milli-points.
class MultiPrioritySort final : public QueueSortPlugin {
 public:
  struct Weights {
    std::map<std::string, double, std::less<>> queue_weights;
    double priority_weight = 1;
    double wait_weight = 1;
    double remaining_weight = 0;
    double size_weight = 0;
    double slack_weight = 0;
    Duration no_deadline_horizon = std::chrono::hours(24 * 7);
  };

  static constexpr std::string_view kName = "multi_priority";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  explicit MultiPrioritySort(Weights weights) : weights_(std::move(weights)) {}
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;

 private:
  Weights weights_;
};

}  // namespace dlsched
