#pragma once

#include <cstdint>

#include "dlsched/common/rng.h"
#include "policy/hetero/allocation.h"

namespace dlsched::testing {

// A random Gavel-like allocation problem of `n` jobs: three types with n / 4 GPUs each, gangs of
// 1-8, each job 1.5-4x faster on type 1 and 3-8x on type 2 than on type 0, which one job in five
// cannot use; remaining work 1e3-1e6 iterations. The same (n, seed), the same problem.
inline hetero::AllocationProblem RandomGavelLikeProblem(int n, uint64_t seed) {
  Rng rng(seed);
  hetero::AllocationProblem p;
  p.num_types = 3;
  p.gpus_per_type = {n / 4, n / 4, n / 4};
  for (int j = 0; j < n; ++j) {
    p.gang.push_back(1 << rng.Below(4));
    const double slow = rng.Uniform(0.5, 5);
    p.iters_per_s.push_back(rng.Below(5) == 0 ? 0 : slow);
    p.iters_per_s.push_back(slow * rng.Uniform(1.5, 4));
    p.iters_per_s.push_back(slow * rng.Uniform(3, 8));
    p.remaining_iters.push_back(rng.Uniform(1e3, 1e6));
  }
  return p;
}

}  // namespace dlsched::testing
