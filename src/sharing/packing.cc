#include "dlsched/sharing/packing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

namespace dlsched::sharing {
namespace {

// Slowdowns within this of the bound count as within it (products of float table entries).
constexpr double kSlowdownTolerance = 1e-9;
// A local-search step must lower the total slowdown by more than this.
constexpr double kMinImprovement = 1e-9;

// Predicted slowdowns of small groups, with scratch buffers reused across calls.
class GroupEvaluator {
 public:
  GroupEvaluator(std::span<const PackJob> jobs, const InterferenceModel& model, double bound)
      : jobs_(jobs), model_(model), bound_(bound) {}

  // Sum of slowdowns of `members` without `skip` and with `add` (-1 = none), or nullopt when a
  // job's slowdown exceeds the bound. 0 for an empty group.
  std::optional<double> Cost(std::span<const int> members, int skip, int add) {
    group_.clear();
    for (int m : members) {
      if (m != skip) group_.push_back(jobs_[m].job);
    }
    if (add >= 0) group_.push_back(jobs_[add].job);
    speeds_.resize(group_.size());
    GroupSpeeds(model_, group_, speeds_);
    double total = 0.0;
    for (double speed : speeds_) {
      const double slowdown = SlowdownOf(speed);
      if (slowdown > bound_ + kSlowdownTolerance) return std::nullopt;
      total += slowdown;
    }
    return total;
  }

  // Writes each member's slowdown into `slowdown` (indexed by job).
  void Slowdowns(std::span<const int> members, std::vector<double>& slowdown) {
    group_.clear();
    for (int m : members) group_.push_back(jobs_[m].job);
    speeds_.resize(group_.size());
    GroupSpeeds(model_, group_, speeds_);
    for (size_t i = 0; i < members.size(); ++i) slowdown[members[i]] = SlowdownOf(speeds_[i]);
  }

 private:
  std::span<const PackJob> jobs_;
  const InterferenceModel& model_;
  double bound_;
  std::vector<SharingJob> group_;
  std::vector<double> speeds_;
};

// A max-tree over GPU slots' free memory (-1 for a full GPU) answering "the lowest slot >= pos
// with at least `need` free" in O(log n).
class FreeMemoryTree {
 public:
  FreeMemoryTree(size_t slots, int64_t initial) : size_(std::bit_ceil(std::max<size_t>(slots, 1))) {
    tree_.assign(2 * size_, -1);
    for (size_t i = 0; i < slots; ++i) tree_[size_ + i] = initial;
    for (size_t i = size_ - 1; i >= 1; --i) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }

  void Set(size_t slot, int64_t free_mib) {
    size_t i = size_ + slot;
    tree_[i] = free_mib;
    for (i /= 2; i >= 1; i /= 2) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }

  // -1 when no slot qualifies.
  int64_t FindFirst(size_t pos, int64_t need) const { return Find(1, 0, size_, pos, need); }

 private:
  int64_t Find(size_t node, size_t lo, size_t hi, size_t pos, int64_t need) const {
    if (hi <= pos || tree_[node] < need) return -1;
    if (hi - lo == 1) return static_cast<int64_t>(lo);
    const size_t mid = (lo + hi) / 2;
    const int64_t left = Find(2 * node, lo, mid, pos, need);
    return left >= 0 ? left : Find(2 * node + 1, mid, hi, pos, need);
  }

  size_t size_;
  std::vector<int64_t> tree_;
};

// Fills slowdowns and the total from the GPU lists; sorts each list and drops empty ones.
Packing Finish(std::vector<std::vector<int>> gpus, std::vector<int> unplaced, GroupEvaluator& eval,
               size_t num_jobs) {
  Packing packing;
  packing.slowdown.assign(num_jobs, 0.0);
  for (std::vector<int>& members : gpus) {
    if (members.empty()) continue;
    std::sort(members.begin(), members.end());
    eval.Slowdowns(members, packing.slowdown);
    packing.gpus.push_back(std::move(members));
  }
  std::sort(unplaced.begin(), unplaced.end());
  packing.unplaced = std::move(unplaced);
  for (double s : packing.slowdown) packing.total_slowdown += s;
  return packing;
}

}  // namespace

Status ValidatePackOptions(const PackOptions& options) {
  if (options.gpu_memory_mib <= 0) return InvalidArgument("pack: gpu_memory_mib must be > 0");
  if (options.max_jobs_per_gpu < 1) return InvalidArgument("pack: max_jobs_per_gpu must be >= 1");
  if (!(options.max_slowdown >= 1.0)) return InvalidArgument("pack: max_slowdown must be >= 1");
  if (options.max_gpus < 0) return InvalidArgument("pack: max_gpus must be >= 0");
  if (options.max_probes < 1) return InvalidArgument("pack: max_probes must be >= 1");
  if (options.max_rounds < 0) return InvalidArgument("pack: max_rounds must be >= 0");
  return Status::Ok();
}

Result<Packing> GreedyPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                           const PackOptions& options) {
  DS_RETURN_IF_ERROR(ValidatePackOptions(options));
  const size_t n = jobs.size();
  const int64_t capacity = options.gpu_memory_mib;
  const size_t k = static_cast<size_t>(options.max_jobs_per_gpu);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (jobs[a].memory_mib != jobs[b].memory_mib) return jobs[a].memory_mib > jobs[b].memory_mib;
    if (jobs[a].job.sm_util != jobs[b].job.sm_util)
      return jobs[a].job.sm_util > jobs[b].job.sm_util;
    return a < b;
  });

  const size_t slots = options.max_gpus > 0 ? static_cast<size_t>(options.max_gpus) : n;
  FreeMemoryTree tree(slots, capacity);
  std::vector<std::vector<int>> gpus;  // opened slots
  std::vector<int64_t> used_mib;
  std::vector<int> unplaced;
  GroupEvaluator eval(jobs, model, options.max_slowdown);
  const auto place = [&](size_t slot, int job) {
    if (slot == gpus.size()) {
      gpus.emplace_back();
      used_mib.push_back(0);
    }
    gpus[slot].push_back(job);
    used_mib[slot] += jobs[job].memory_mib;
    tree.Set(slot, gpus[slot].size() >= k ? -1 : capacity - used_mib[slot]);
  };

  for (int job : order) {
    const int64_t need = jobs[job].memory_mib;
    if (need > capacity) {
      unplaced.push_back(job);
      continue;
    }
    int probes = 0;
    size_t pos = 0;
    bool placed = false;
    while (!placed) {
      const int64_t found = tree.FindFirst(pos, need);
      if (found < 0) break;
      const size_t slot = static_cast<size_t>(found);
      // Unopened slots are all free, so the first one found is the next to open.
      if (slot >= gpus.size() || eval.Cost(gpus[slot], -1, job).has_value()) {
        place(slot, job);
        placed = true;
      } else if (++probes >= options.max_probes) {
        if (gpus.size() < slots) {
          place(gpus.size(), job);
          placed = true;
        }
        break;
      } else {
        pos = slot + 1;
      }
    }
    if (!placed) unplaced.push_back(job);
  }
  return Finish(std::move(gpus), std::move(unplaced), eval, n);
}

Result<Packing> HeuristicPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                              const PackOptions& options) {
  DS_ASSIGN_OR_RETURN(Packing greedy, GreedyPack(jobs, model, options));
  const size_t n = jobs.size();
  const size_t k = static_cast<size_t>(options.max_jobs_per_gpu);
  const int64_t capacity = options.gpu_memory_mib;
  const size_t budget =
      options.max_gpus > 0 ? static_cast<size_t>(options.max_gpus) : greedy.gpus.size();
  std::vector<std::vector<int>> gpus = std::move(greedy.gpus);
  gpus.resize(std::max(budget, gpus.size()));
  std::vector<int> gpu_of(n, -1);
  std::vector<int64_t> used_mib(gpus.size(), 0);
  std::vector<double> cost(gpus.size(), 0.0);
  std::vector<double>& slowdown = greedy.slowdown;
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (int j : gpus[g]) {
      gpu_of[j] = static_cast<int>(g);
      used_mib[g] += jobs[j].memory_mib;
      cost[g] += slowdown[j];
    }
  }
  GroupEvaluator eval(jobs, model, options.max_slowdown);
  const int rounds = options.max_rounds > 0
                         ? options.max_rounds
                         : static_cast<int>(std::bit_width(static_cast<uint64_t>(n)));

  std::vector<int> order;
  for (size_t j = 0; j < n; ++j) {
    if (gpu_of[j] >= 0) order.push_back(static_cast<int>(j));
  }
  int rounds_run = 0;
  for (int round = 0; round < rounds; ++round) {
    ++rounds_run;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return slowdown[a] != slowdown[b] ? slowdown[a] > slowdown[b] : a < b;
    });
    bool moved = false;
    for (int i : order) {
      const size_t g = static_cast<size_t>(gpu_of[i]);
      const std::optional<double> without = eval.Cost(gpus[g], i, -1);
      double best = -kMinImprovement;
      int best_gpu = -1;
      int best_partner = -1;  // -1: a move, else a swap with this job
      const auto consider = [&](double delta, size_t h, int partner) {
        if (delta >= best) return;
        best = delta;
        best_gpu = static_cast<int>(h);
        best_partner = partner;
      };
      bool tried_empty = false;
      for (size_t h = 0; h < gpus.size(); ++h) {
        if (h == g) continue;
        const std::vector<int>& there = gpus[h];
        if (there.empty()) {
          // Every empty GPU is alike: evaluate one.
          if (tried_empty || !without.has_value()) continue;
          tried_empty = true;
          consider(*without + 1.0 - cost[g], h, -1);
          continue;
        }
        if (without.has_value() && there.size() < k &&
            used_mib[h] + jobs[i].memory_mib <= capacity) {
          if (const std::optional<double> c = eval.Cost(there, -1, i); c.has_value()) {
            consider(*without - cost[g] + *c - cost[h], h, -1);
          }
        }
        for (int j : there) {
          const int64_t diff = jobs[j].memory_mib - jobs[i].memory_mib;
          if (used_mib[g] + diff > capacity || used_mib[h] - diff > capacity) continue;
          const std::optional<double> cg = eval.Cost(gpus[g], i, j);
          if (!cg.has_value()) continue;
          const std::optional<double> ch = eval.Cost(there, j, i);
          if (!ch.has_value()) continue;
          consider(*cg + *ch - cost[g] - cost[h], h, j);
        }
      }
      if (best_gpu < 0) continue;
      const size_t h = static_cast<size_t>(best_gpu);
      std::erase(gpus[g], i);
      used_mib[g] -= jobs[i].memory_mib;
      if (best_partner >= 0) {
        std::erase(gpus[h], best_partner);
        used_mib[h] -= jobs[best_partner].memory_mib;
        gpus[g].push_back(best_partner);
        used_mib[g] += jobs[best_partner].memory_mib;
        gpu_of[best_partner] = static_cast<int>(g);
      }
      gpus[h].push_back(i);
      used_mib[h] += jobs[i].memory_mib;
      gpu_of[i] = static_cast<int>(h);
      for (size_t slot : {g, h}) {
        eval.Slowdowns(gpus[slot], slowdown);
        cost[slot] = 0.0;
        for (int j : gpus[slot]) cost[slot] += slowdown[j];
      }
      moved = true;
    }
    if (!moved) break;
  }
  Packing packing = Finish(std::move(gpus), std::move(greedy.unplaced), eval, n);
  packing.rounds = rounds_run;
  return packing;
}

Status CheckPacking(const Packing& packing, std::span<const PackJob> jobs,
                    const InterferenceModel& model, const PackOptions& options) {
  const auto broken = [](std::string what) { return FailedPrecondition("packing: " + what); };
  std::vector<int> seen(jobs.size(), 0);
  const auto mark = [&](int j) {
    if (j < 0 || static_cast<size_t>(j) >= jobs.size()) return false;
    return ++seen[j] == 1;
  };
  if (options.max_gpus > 0 && packing.gpus.size() > static_cast<size_t>(options.max_gpus)) {
    return broken("uses " + std::to_string(packing.gpus.size()) + " GPUs, max_gpus is " +
                  std::to_string(options.max_gpus));
  }
  if (packing.slowdown.size() != jobs.size()) return broken("slowdown has the wrong size");
  std::vector<SharingJob> group;
  std::vector<double> speeds;
  for (size_t g = 0; g < packing.gpus.size(); ++g) {
    const std::vector<int>& members = packing.gpus[g];
    const std::string where = "GPU " + std::to_string(g) + ": ";
    if (members.empty()) return broken(where + "empty");
    if (members.size() > static_cast<size_t>(options.max_jobs_per_gpu)) {
      return broken(where + std::to_string(members.size()) + " jobs, k is " +
                    std::to_string(options.max_jobs_per_gpu));
    }
    int64_t used = 0;
    group.clear();
    for (int j : members) {
      if (!mark(j)) return broken(where + "job " + std::to_string(j) + " bad or placed twice");
      used += jobs[j].memory_mib;
      group.push_back(jobs[j].job);
    }
    if (used > options.gpu_memory_mib) {
      return broken(where + std::to_string(used) + " MiB over " +
                    std::to_string(options.gpu_memory_mib));
    }
    speeds.resize(group.size());
    GroupSpeeds(model, group, speeds);
    for (size_t m = 0; m < members.size(); ++m) {
      const double s = SlowdownOf(speeds[m]);
      if (s > options.max_slowdown + kSlowdownTolerance) {
        return broken(where + "job " + std::to_string(members[m]) + " slowdown " +
                      std::to_string(s) + " over the bound");
      }
      if (std::abs(s - packing.slowdown[members[m]]) > 1e-9 * s) {
        return broken(where + "job " + std::to_string(members[m]) + " slowdown mismatch");
      }
    }
  }
  for (int j : packing.unplaced) {
    if (!mark(j)) return broken("unplaced job " + std::to_string(j) + " bad or listed twice");
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (seen[j] == 0) return broken("job " + std::to_string(j) + " missing");
  }
  return Status::Ok();
}

}  // namespace dlsched::sharing
