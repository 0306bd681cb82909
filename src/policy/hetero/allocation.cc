#include "policy/hetero/allocation.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "policy/hetero/visit_in_order.h"

namespace dlsched::hetero {

int AllocationProblem::total_gpus() const {
  return std::accumulate(gpus_per_type.begin(), gpus_per_type.end(), 0);
}

double Allocation::EffectiveThroughput(const AllocationProblem& problem, int job) const {
  double rate = 0;
  for (int t = 0; t < problem.num_types; ++t) rate += at(job, t) * problem.thr(job, t);
  return rate;
}

Status ValidateProblem(const AllocationProblem& problem) {
  const int n = problem.num_jobs();
  if (problem.num_types < 0 ||
      static_cast<int>(problem.gpus_per_type.size()) != problem.num_types) {
    return InvalidArgument("gpus_per_type has " + std::to_string(problem.gpus_per_type.size()) +
                           " entries for " + std::to_string(problem.num_types) + " types");
  }
  if (problem.iters_per_s.size() != static_cast<size_t>(n) * problem.num_types) {
    return InvalidArgument("iters_per_s is not jobs x types");
  }
  if (!problem.remaining_iters.empty() && static_cast<int>(problem.remaining_iters.size()) != n) {
    return InvalidArgument("remaining_iters has not one entry per job");
  }
  for (const auto* per_job : {&problem.elapsed_s, &problem.done_iters}) {
    if (!per_job->empty() && static_cast<int>(per_job->size()) != n) {
      return InvalidArgument("elapsed_s or done_iters has not one entry per job");
    }
    for (double v : *per_job) {
      if (!(v >= 0)) return InvalidArgument("negative or NaN elapsed_s or done_iters");
    }
  }
  for (int t = 0; t < problem.num_types; ++t) {
    if (problem.gpus_per_type[t] < 0) return InvalidArgument("negative capacity");
  }
  for (int j = 0; j < n; ++j) {
    if (problem.gang[j] <= 0) return InvalidArgument("job " + std::to_string(j) + ": gang <= 0");
    for (int t = 0; t < problem.num_types; ++t) {
      if (!(problem.thr(j, t) >= 0)) {
        return InvalidArgument("job " + std::to_string(j) + ": negative or NaN throughput");
      }
    }
    if (!problem.remaining_iters.empty() && !(problem.remaining_iters[j] > 0)) {
      return InvalidArgument("job " + std::to_string(j) + ": remaining work <= 0");
    }
  }
  return Status::Ok();
}

Status CheckAllocation(const AllocationProblem& problem, const Allocation& allocation,
                       double tolerance) {
  const int n = problem.num_jobs();
  const int types = problem.num_types;
  if (allocation.num_types != types ||
      allocation.fraction.size() != static_cast<size_t>(n) * types) {
    return InvalidArgument("allocation is not jobs x types");
  }
  std::vector<double> used(types, 0.0);
  for (int j = 0; j < n; ++j) {
    double time = 0;
    for (int t = 0; t < types; ++t) {
      const double x = allocation.at(j, t);
      const std::string where = "X[" + std::to_string(j) + "][" + std::to_string(t) + "]";
      if (!(x >= -tolerance)) return InvalidArgument(where + " < 0");
      if (problem.thr(j, t) == 0 && x > tolerance) {
        return InvalidArgument(where + " > 0 on a type the job cannot run on");
      }
      time += x;
      used[t] += x * problem.gang[j];
    }
    if (time > 1 + tolerance) {
      return InvalidArgument("job " + std::to_string(j) + " gets " + std::to_string(time) +
                             " of the time (> 1)");
    }
  }
  for (int t = 0; t < types; ++t) {
    if (used[t] > problem.gpus_per_type[t] + tolerance * std::max(1, n)) {
      return InvalidArgument("type " + std::to_string(t) + " is allocated " +
                             std::to_string(used[t]) + " GPUs of " +
                             std::to_string(problem.gpus_per_type[t]));
    }
  }
  return Status::Ok();
}

namespace {

bool Usable(const AllocationProblem& problem, int job) {
  for (int t = 0; t < problem.num_types; ++t) {
    if (problem.thr(job, t) > 0) return true;
  }
  return false;
}

// The time share an equal split of the cluster gives job j (0 if it can run nowhere).
double EqualTimeShare(const AllocationProblem& problem, int job, int total_gpus) {
  if (!Usable(problem, job)) return 0;
  return std::min(1.0, static_cast<double>(total_gpus) /
                           (static_cast<double>(problem.num_jobs()) * problem.gang[job]));
}

}  // namespace

Allocation EqualShare(const AllocationProblem& problem) {
  const int n = problem.num_jobs();
  const int types = problem.num_types;
  const int total = problem.total_gpus();
  Allocation x{types, std::vector<double>(static_cast<size_t>(n) * types, 0.0)};
  if (total == 0) return x;
  for (int j = 0; j < n; ++j) {
    const double share = EqualTimeShare(problem, j, total);
    for (int t = 0; t < types; ++t) {
      if (problem.thr(j, t) > 0) {
        x.fraction[j * types + t] = share * problem.gpus_per_type[t] / total;
      }
    }
  }
  return x;
}

double MinNormalisedRate(const AllocationProblem& problem, const Allocation& x) {
  const Allocation equal = EqualShare(problem);
  double worst = std::numeric_limits<double>::infinity();
  for (int j = 0; j < problem.num_jobs(); ++j) {
    const double fair = equal.EffectiveThroughput(problem, j);
    if (fair > 0) worst = std::min(worst, x.EffectiveThroughput(problem, j) / fair);
  }
  return worst;
}

double CompletionRate(const AllocationProblem& problem, const Allocation& x) {
  double sum = 0;
  for (int j = 0; j < problem.num_jobs(); ++j) {
    sum += x.EffectiveThroughput(problem, j) / problem.remaining_iters[j];
  }
  return sum;
}

Result<Allocation> AllocateGreedy(const AllocationProblem& problem) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const int n = problem.num_jobs();
  const int types = problem.num_types;
  const int total = problem.total_gpus();
  Allocation x{types, std::vector<double>(static_cast<size_t>(n) * types, 0.0)};
  if (n == 0 || total == 0) return x;

  // Per job: mean and best rate over the types it can use.
  std::vector<double> mean(n, 0.0), best(n, 0.0), budget(n, 0.0);
  for (int j = 0; j < n; ++j) {
    int usable = 0;
    for (int t = 0; t < types; ++t) {
      const double r = problem.thr(j, t);
      if (r > 0) {
        mean[j] += r;
        best[j] = std::max(best[j], r);
        ++usable;
      }
    }
    if (usable > 0) mean[j] /= usable;
    budget[j] = EqualTimeShare(problem, j, total);
  }
  // Types fastest first: by the mean over jobs of rate there / the job's best rate.
  std::vector<double> type_speed(types, 0.0);
  for (int t = 0; t < types; ++t) {
    int count = 0;
    for (int j = 0; j < n; ++j) {
      if (problem.thr(j, t) > 0) {
        type_speed[t] += problem.thr(j, t) / best[j];
        ++count;
      }
    }
    if (count > 0) type_speed[t] /= count;
  }
  std::vector<int> type_order(types);
  std::iota(type_order.begin(), type_order.end(), 0);
  std::stable_sort(type_order.begin(), type_order.end(),
                   [&](int a, int b) { return type_speed[a] > type_speed[b]; });

  std::vector<double> capacity(problem.gpus_per_type.begin(), problem.gpus_per_type.end());
  // Each pass visits a type's jobs by a key computed once per job, (key, index) pairs ordered
  // lazily: a type's capacity is spent long before its last job when many jobs are active.
  std::vector<std::pair<double, int>> jobs;
  jobs.reserve(n);
  // Gives job j up to `want` of type t's time, as capacity allows.
  auto give = [&](int j, int t, double want) {
    const double amount = std::min(want, capacity[t] / problem.gang[j]);
    if (amount <= 0) return;
    x.fraction[j * types + t] += amount;
    capacity[t] = std::max(0.0, capacity[t] - amount * problem.gang[j]);
    budget[j] -= amount;
  };
  for (int t : type_order) {
    if (capacity[t] <= 0) continue;
    jobs.clear();
    for (int j = 0; j < n; ++j) {
      if (problem.thr(j, t) > 0 && budget[j] > 0) jobs.emplace_back(problem.thr(j, t) / mean[j], j);
    }
    // Highest relative speedup on t first; ties to the lower index.
    VisitInOrder(
        jobs,
        [](const auto& a, const auto& b) {
          return a.first != b.first ? a.first > b.first : a.second < b.second;
        },
        [&](const auto& job) {
          give(job.second, t, budget[job.second]);
          return capacity[t] > 0;
        });
  }
  // Idle capacity: up to all of its time for each job, jobs with the least time first.
  std::vector<double> time(n, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int t = 0; t < types; ++t) time[j] += x.at(j, t);
  }
  for (int t : type_order) {
    if (capacity[t] <= 0) continue;
    jobs.clear();
    for (int j = 0; j < n; ++j) {
      if (problem.thr(j, t) > 0 && time[j] < 1) jobs.emplace_back(time[j], j);
    }
    // Least time first; ties to the lower index (time[j] changes only for the job visited).
    VisitInOrder(jobs, std::less<>(), [&](const auto& job) {
      const int j = job.second;
      const double before = x.at(j, t);
      give(j, t, 1 - time[j]);
      time[j] += x.at(j, t) - before;
      return capacity[t] > 0;
    });
  }
  return x;
}

}  // namespace dlsched::hetero
