#pragma once

// Deadline-aware QueueSort plugins (issue 4). Jobs with a deadline (JobSpec::deadline) come
// before every job without one; jobs without a deadline follow in FIFO order. Ties break on
// submit time, then id, so each is a strict total order (see QueueSortPlugin::Rank).

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Earliest deadline first. The key is the deadline itself, which never changes, so neither does
// the order, waiting or running. With `best_effort_shortest_first` (default false), the jobs
// without a deadline follow in order of estimated GPU-time (as sjf), not FIFO: a short
// best-effort job then does not wait behind a long one, so fewer of them wait long enough to
// need the starvation guard.
class EdfSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "edf";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  explicit EdfSort(bool best_effort_shortest_first = false)
      : best_effort_shortest_first_(best_effort_shortest_first) {}
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;

 private:
  bool best_effort_shortest_first_;
};

// Least laxity first. A job's laxity at time t is deadline - t - (its estimated remaining run
// time): how long it can still wait and finish in time. Comparing at one instant, the common
// "- t" drops out, so the key is
//   waiting job: deadline - estimated_remaining            (frozen while it waits)
//   running job: deadline - (estimated_remaining - current_segment)
// where the running job's current segment counts as done (as in srtf). Estimates are on the
// reference placement (JobView::estimated_remaining), not on the GPUs a job would get.
// Rank changes: two running jobs' keys grow at the same rate, so their order never changes
// (NextRankChange stays kTimeNever). Against waiting jobs a running job's rank falls as it runs
// (its laxity holds while theirs shrinks); a preemptive profile notices only at the next event.
class LaxitySort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "laxity";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
  // A running job's key grows with its current segment; kTimeNever does not move.
  int64_t RankDrift(const JobView& running) const override {
    return running.spec().deadline ? 1 : 0;
  }
  // The ordering key (see the class comment); kTimeNever for a job without a deadline.
  static Timestamp LaxityKey(const JobView& job);
};

}  // namespace dlsched
