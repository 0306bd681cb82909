#pragma once

// The in-tree QueueSort plugins. Each is a strict total order: the policy key first, then
// submit time, then id (see QueueSortPlugin::Rank for the full contract).

#include <memory>
#include <string_view>
#include <vector>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// First come, first served.
class FifoSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "fifo";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
};

// Shortest job first by the estimator's whole-job run time x GPUs (GPU-time), so a short wide
// job does not jump ahead of a long narrow one it would block just as much.
class SjfSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "sjf";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
};

// Shortest remaining time first (estimated remaining run time at the last checkpoint). A
// running job's remaining time only shrinks, so its rank never falls: no wake-ups needed.
class SrtfSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "srtf";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
  int64_t RankDrift(const JobView&) const override { return -1; }
};

// Least attained service (GPU-time), re-evaluated every `quantum_s` (default 600) on a global
// grid: a running job ranks by what it had attained at the last grid point, so ranks change
// only at grid points (and the pipeline wakes there while jobs wait).
class LasSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "las";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  explicit LasSort(Duration quantum) : quantum_(quantum) {}
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
  Timestamp NextRankChange(const JobView& running, Timestamp now) const override;

 private:
  Duration AttainedForRank(const JobView& job) const;
  Duration quantum_;
};

// Tiresias' discretised 2D-LAS: queue k holds jobs whose attained GPU-time is in
// [threshold[k-1], threshold[k]); lower queues first, FIFO (submit time) inside a queue.
// `thresholds_gpu_s` defaults to a decade ladder, 1, 10, 100 and 1,000 GPU-hours (five queues):
// Tiresias derives its thresholds from the job-size distribution, and Philly's run times span
// seconds to weeks (on the Philly trace this ladder gives about 4x lower average JCT than two
// thresholds at 3,200 and 32,000 GPU-s). Rank changes exactly when a job crosses a threshold.
class TiresiasSort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "tiresias";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  explicit TiresiasSort(std::vector<Duration> thresholds) : thresholds_(std::move(thresholds)) {}
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
  Timestamp NextRankChange(const JobView& running, Timestamp now) const override;
  // The queue index of a job with this much attained GPU-time.
  int QueueOf(Duration attained_gpu_time) const;

 private:
  std::vector<Duration> thresholds_;  // ascending GPU-time bounds
};

// Higher JobSpec::priority first, then FIFO.
class PrioritySort final : public QueueSortPlugin {
 public:
  static constexpr std::string_view kName = "priority";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  int64_t Rank(const JobView& job) const override;
};

}  // namespace dlsched
