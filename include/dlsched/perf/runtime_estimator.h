#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/job.h"

namespace dlsched {

// What policies are told of a job's run time: the one door through which every run-time estimate
// (sjf's and srtf's order, the deadline plugins' laxity, backfill, the round-based policies'
// remaining work) reaches them. The Scheduler asks it whenever a job is admitted or (re)queued
// and writes the answer into Job::estimated_total / estimated_remaining (EstimateRuntime below);
// it reports every job that ends succeeded through Observe. The simulator's truth (how long a
// job really runs) lives in src/sim and never passes through here.
// Single-threaded: one estimator per Scheduler, called from the scheduler's thread.
class RuntimeEstimator {
 public:
  virtual ~RuntimeEstimator() = default;
  // A short stable name for reports: "stated", "history".
  virtual std::string_view Name() const = 0;
  // The estimated run time of the whole job on its reference placement (JobSpec::ref_iters_per_s)
  // as known at `now`; positive. Callers pass a `now` that does not decrease (a daemon whose
  // clock steps back gets what the latest `now` saw).
  virtual Duration EstimateTotal(const JobSpec& spec, Timestamp now) = 0;
  // A job ended succeeded at `finish` after `run_time` of wall time on its GPUs (all its run
  // segments). May be called out of finish order (a daemon restoring its history) and for
  // finishes after the next `now`: an estimate at time t uses only observations with finish <= t.
  virtual void Observe(const JobSpec& spec, Duration run_time, Timestamp finish) = 0;
};

// A job's estimate given the work it has done: `iterations_done` at ref_iters_per_s is
// done_time of reference-speed work. remaining = total - done_time while the job is within its
// estimate; a job that has outlived it gets the estimate doubled until it exceeds done_time
// (Tsafrir et al.'s prediction correction, docs/estimates.md), so the remaining time is positive
// and never reads the job's true total work. Both zero for a job with nothing left to do.
struct RuntimeEstimate {
  Duration total{0};
  Duration remaining{0};
};
RuntimeEstimate EstimateRuntime(RuntimeEstimator& estimator, const JobSpec& spec,
                                double iterations_done, Timestamp now);

// The job's own statement: JobSpec::runtime_estimate when set, else JobSpec::ideal_duration().
// In the daemon that is what the user stated (the request's runtime estimate is the job's work);
// in the simulator, on a trace without users' estimates, it is the true run time: the oracle,
// which `simulate` offers only behind --oracle. Observes nothing.
class StatedRuntimeEstimator final : public RuntimeEstimator {
 public:
  std::string_view Name() const override { return "stated"; }
  Duration EstimateTotal(const JobSpec& spec, Timestamp now) override;
  void Observe(const JobSpec&, Duration, Timestamp) override {}
};

// A history-based predictor computed online (the QSSF estimator of Helios, Hu et al., SC '21,
// and the user-history predictor of Tsafrir, Etsion and Feitelson, TPDS 2007; docs/estimates.md):
// the geometric mean of the run times of past succeeded jobs of the most specific group that has
// at least `min_samples` of them, among
//   1. same user, model and GPU count     3. same user                 5. every job
//   2. same user and GPU count            4. same GPU count
// A job with a user's estimate (JobSpec::runtime_estimate) takes that before levels 4 and 5: a
// statement about the job beats the cluster's average. With no level and no statement: `prior`.
// Only jobs that finished at or before the estimate's `now` count (no look-ahead). Deterministic:
// the estimate is a function of the observations' (spec, run time, finish) and `now` only.
class HistoryRuntimeEstimator final : public RuntimeEstimator {
 public:
  struct Options {
    int min_samples = 3;
    Duration prior = std::chrono::hours(1);
  };
  HistoryRuntimeEstimator() : HistoryRuntimeEstimator(Options{}) {}
  explicit HistoryRuntimeEstimator(Options options);

  std::string_view Name() const override { return "history"; }
  Duration EstimateTotal(const JobSpec& spec, Timestamp now) override;
  void Observe(const JobSpec& spec, Duration run_time, Timestamp finish) override;

  // Observations folded into the groups so far (those with finish <= the last `now`).
  int64_t observed() const { return observed_; }

 private:
  struct Group {
    int64_t count = 0;
    // Sum of ln(run time in seconds) (run times clamped to >= 1 s) in units of 1e-9, an integer
    // so that the estimate does not depend on the order observations were folded in.
    int64_t sum_log_nano = 0;
  };
  struct Pending {
    Timestamp finish;
    int64_t seq;  // arrival order: ties on finish fold in the order observed
    std::string user;
    std::string model;
    int num_gpus;
    int64_t log_nano;  // ln(run time in seconds) x 1e9, rounded
    bool operator>(const Pending& o) const {
      return std::tie(finish, seq) > std::tie(o.finish, o.seq);
    }
  };
  // Folds the pending observations with finish <= now into the groups.
  void Advance(Timestamp now);
  void Add(const Pending& p);
  // Keyed by (level 1-5, user, model, GPU count), the parts a level ignores left empty / 0.
  using Key = std::tuple<int, std::string, std::string, int>;
  // A Key's parts as looked up, without copying the names (an estimate is made at every
  // admission and every re-queue: a preempted job is estimated again).
  using KeyView = std::tuple<int, std::string_view, std::string_view, int>;
  // Orders Keys and KeyViews alike (Key's own order), so groups_ finds a KeyView.
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyView(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
             KeyView(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b));
    }
  };
  // The group's geometric mean when it has at least min_samples observations.
  std::optional<Duration> From(const KeyView& key) const;

  Options options_;
  Timestamp now_ = Timestamp(Duration::min());
  int64_t seq_ = 0;
  int64_t observed_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  // Iteration order never matters here; an ordered map keeps the structure free of hash seeds.
  std::map<Key, Group, KeyLess> groups_;
};

}  // namespace dlsched
