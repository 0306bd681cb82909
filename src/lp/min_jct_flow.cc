#include "lp/min_jct_flow.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace dlsched::hetero {
namespace {

// A job on an edge of the type graph: its profit there (a constant) and, for exchanges, the
// generation of its share of the source type it was listed under.
struct Entry {
  double key;
  int job;
  uint32_t generation;
};

// Max-heap order: higher key first, ties to the lower job index (a total order: deterministic).
struct EntryLess {
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.key != b.key) return a.key < b.key;
    return a.job > b.job;
  }
};

using Heap = std::priority_queue<Entry, std::vector<Entry>, EntryLess>;

constexpr double kNone = -std::numeric_limits<double>::infinity();

// Gains at or below this (profits are scaled so the largest per-GPU profit is at most 1) are
// round-off, not improvements: a path must gain more to be taken, a relaxation must improve by
// more to be kept, so round-off never makes a cycle look profitable.
constexpr double kGainEps = 1e-13;

class MinJctFlow {
 public:
  explicit MinJctFlow(const AllocationProblem& problem)
      : problem_(problem),
        n_(problem.num_jobs()),
        types_(problem.num_types),
        profit_(static_cast<size_t>(n_) * types_, 0.0),
        y_(static_cast<size_t>(n_) * types_, 0.0),
        generation_(static_cast<size_t>(n_) * types_, 0),
        supply_left_(n_),
        room_(problem.gpus_per_type.begin(), problem.gpus_per_type.end()),
        exchange_(static_cast<size_t>(types_) * types_) {
    double largest = 0;
    for (int j = 0; j < n_; ++j) {
      for (int t = 0; t < types_; ++t) {
        largest = std::max(largest, problem.thr(j, t) / problem.remaining_iters[j]);
      }
    }
    std::vector<std::vector<Entry>> free(types_);
    for (int j = 0; j < n_; ++j) {
      supply_left_[j] = problem.gang[j];
      for (int t = 0; t < types_; ++t) {
        if (problem.thr(j, t) <= 0) continue;
        const double p = problem.thr(j, t) / problem.remaining_iters[j] / largest / problem.gang[j];
        profit_[index(j, t)] = p;
        free[t].push_back({p, j, 0});
      }
    }
    // Heapified at once: O(n) per type, where n pushes cost O(n log n).
    for (int t = 0; t < types_; ++t) free_.emplace_back(EntryLess{}, std::move(free[t]));
  }

  // Augments until no path gains; false if the step limit (a guard, far above what the bound
  // in the header's comment gives in practice) ran out.
  bool Solve() {
    const int64_t limit = 16 * (static_cast<int64_t>(n_) + 1) * (types_ + 1);
    std::vector<double> best(types_);
    std::vector<int> pred(types_);
    std::vector<double> edge(static_cast<size_t>(types_) * types_);
    std::vector<int> path;
    for (int64_t step = 0; step < limit; ++step) {
      for (int t = 0; t < types_; ++t) {
        best[t] = FreeTop(t);
        pred[t] = -1;
      }
      for (int a = 0; a < types_; ++a) {
        for (int b = 0; b < types_; ++b) {
          edge[a * types_ + b] = a == b ? kNone : ExchangeTop(a, b);
        }
      }
      // Bellman-Ford from the jobs with demand left: T - 1 rounds reach every simple path.
      for (int round = 1; round < types_; ++round) {
        bool changed = false;
        for (int a = 0; a < types_; ++a) {
          if (best[a] == kNone) continue;
          for (int b = 0; b < types_; ++b) {
            const double w = edge[a * types_ + b];
            if (w == kNone || best[a] + w <= best[b] + kGainEps) continue;
            best[b] = best[a] + w;
            pred[b] = a;
            changed = true;
          }
        }
        if (!changed) break;
      }
      int end = -1;
      for (int t = 0; t < types_; ++t) {
        if (room_[t] > 0 && best[t] > kGainEps && (end < 0 || best[t] > best[end])) end = t;
      }
      if (end < 0) return true;  // no path gains: optimal
      path.clear();
      for (int t = end; t >= 0; t = pred[t]) {
        // A type twice on the walk would be a profitable cycle, which an optimal flow of its
        // size cannot have; kGainEps keeps round-off from making one. Stop rather than loop.
        if (std::ranges::find(path, t) != path.end()) return true;
        path.push_back(t);
      }
      std::ranges::reverse(path);
      Augment(path);
    }
    return false;
  }

  Allocation Extract() const {
    Allocation x{types_, std::vector<double>(y_.size(), 0.0)};
    for (int j = 0; j < n_; ++j) {
      for (int t = 0; t < types_; ++t) {
        x.fraction[index(j, t)] = std::clamp(y_[index(j, t)] / problem_.gang[j], 0.0, 1.0);
      }
    }
    return x;
  }

 private:
  size_t index(int job, int type) const { return static_cast<size_t>(job) * types_ + type; }

  // The profit of the best job with demand left that can use `type`, kNone if none.
  double FreeTop(int type) {
    Heap& heap = free_[type];
    while (!heap.empty() && supply_left_[heap.top().job] <= 0) heap.pop();
    return heap.empty() ? kNone : heap.top().key;
  }

  // The gain of the best job placed on `from` moving to `to`, kNone if none.
  double ExchangeTop(int from, int to) {
    Heap& heap = exchange_[from * types_ + to];
    while (!heap.empty() && heap.top().generation != generation_[index(heap.top().job, from)]) {
      heap.pop();
    }
    return heap.empty() ? kNone : heap.top().key;
  }

  // Adds `delta` GPUs of job `job` on `type`; a share that was empty lists the job on the
  // type's exchange edges.
  void AddShare(int job, int type, double delta) {
    double& y = y_[index(job, type)];
    if (y <= 0) {
      for (int to = 0; to < types_; ++to) {
        if (to == type || profit_[index(job, to)] <= 0) continue;
        exchange_[type * types_ + to].push({profit_[index(job, to)] - profit_[index(job, type)],
                                            job, generation_[index(job, type)]});
      }
    }
    y += delta;
  }

  // Takes `delta` GPUs of job `job` off `type`; a share that empties (to round-off) is zeroed
  // and its exchange entries made stale.
  void RemoveShare(int job, int type, double delta) {
    double& y = y_[index(job, type)];
    y -= delta;
    if (y <= 1e-13 * problem_.gang[job]) {
      y = 0;
      ++generation_[index(job, type)];
    }
  }

  // Sends the path's bottleneck along `path` (types, first fed by its best free job, each next
  // one reached by moving the best exchange job of the edge).
  void Augment(const std::vector<int>& path) {
    const int first_job = free_[path.front()].top().job;
    std::vector<int> movers;
    double delta = std::min(supply_left_[first_job], room_[path.back()]);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const int job = exchange_[path[i] * types_ + path[i + 1]].top().job;
      movers.push_back(job);
      delta = std::min(delta, y_[index(job, path[i])]);
    }
    supply_left_[first_job] -= delta;
    AddShare(first_job, path.front(), delta);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      AddShare(movers[i], path[i + 1], delta);
      RemoveShare(movers[i], path[i], delta);
    }
    room_[path.back()] -= delta;
  }

  const AllocationProblem& problem_;
  const int n_;
  const int types_;
  std::vector<double> profit_;        // per (job, type): scaled profit per GPU, 0 = cannot run
  std::vector<double> y_;             // per (job, type): GPUs held
  std::vector<uint32_t> generation_;  // per (job, type): bumped when the share empties
  std::vector<double> supply_left_;   // per job: gang - sum_t y
  std::vector<double> room_;          // per type: gpus - sum_j y
  std::vector<Heap> free_;            // per type: jobs that can run there, by profit
  std::vector<Heap> exchange_;        // per (from, to): jobs on `from`, by gain of moving
};

}  // namespace

Result<Allocation> AllocateMinJctFlow(const AllocationProblem& problem) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  if (static_cast<int>(problem.remaining_iters.size()) != problem.num_jobs()) {
    return InvalidArgument("min-jct needs remaining_iters for every job");
  }
  MinJctFlow flow(problem);
  if (!flow.Solve()) return Internal("min-jct flow did not converge within its step limit");
  return flow.Extract();
}

}  // namespace dlsched::hetero
