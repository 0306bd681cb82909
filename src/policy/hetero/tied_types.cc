#include "policy/hetero/tied_types.h"

#include <vector>

namespace dlsched::hetero {

void SpreadOverTiedTypes(const AllocationProblem& problem, Allocation& x) {
  const int types = problem.num_types;
  const int n = problem.num_jobs();
  // group[t]: the first type tied with t (t itself when none before it is).
  std::vector<int> group(types);
  for (int t = 0; t < types; ++t) {
    group[t] = t;
    for (int u = 0; u < t && group[t] == t; ++u) {
      if (group[u] != u) continue;
      bool tied = true;
      for (int j = 0; j < n && tied; ++j) tied = problem.thr(j, u) == problem.thr(j, t);
      if (tied) group[t] = u;
    }
  }
  std::vector<double> capacity(types, 0.0);  // per group (at its first type): GPUs
  for (int t = 0; t < types; ++t) capacity[group[t]] += problem.gpus_per_type[t];
  std::vector<double> time(types);
  for (int j = 0; j < n; ++j) {
    std::fill(time.begin(), time.end(), 0.0);
    for (int t = 0; t < types; ++t) time[group[t]] += x.at(j, t);
    for (int t = 0; t < types; ++t) {
      const int g = group[t];
      if (capacity[g] > 0) {
        x.fraction[j * types + t] = time[g] * problem.gpus_per_type[t] / capacity[g];
      }
    }
  }
}

}  // namespace dlsched::hetero
