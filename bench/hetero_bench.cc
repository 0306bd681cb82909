// Solve time of the heterogeneity-aware allocators (docs/hetero.md): the two GLPK LPs beside
// the greedy, at 100, 1,000 and 10,000 active jobs on Gavel's three GPU types.
// bench/run.sh --benchmark_filter=BM_Allocate

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "dlsched/common/rng.h"
#include "lp/lp_allocators.h"
#include "policy/hetero/allocation.h"

namespace dlsched::hetero {
namespace {

// `n` jobs on K80, P100 and V100 pools of max(36, n / 4) GPUs each (Gavel's simulated cluster
// is 36 of each; larger job counts get a proportionally larger cluster, 0.75 GPUs per job).
// Speedups in Gavel's measured ranges: P100 1.5-4x a K80, V100 1.2-2.5x a P100; 1 in 10 jobs
// cannot run on a K80 (out of memory); gangs 1 (70%), 2, 4 or 8 GPUs.
AllocationProblem GavelLikeProblem(int n) {
  Rng rng(42);
  AllocationProblem p;
  p.num_types = 3;
  const int per_type = std::max(36, n / 4);
  p.gpus_per_type = {per_type, per_type, per_type};
  for (int j = 0; j < n; ++j) {
    const double u = rng.Uniform();
    p.gang.push_back(u < 0.7 ? 1 : u < 0.85 ? 2 : u < 0.95 ? 4 : 8);
    const double k80 = rng.Uniform(0.5, 5);
    const double p100 = k80 * rng.Uniform(1.5, 4);
    const double v100 = p100 * rng.Uniform(1.2, 2.5);
    p.iters_per_s.push_back(rng.Below(10) == 0 ? 0 : k80);
    p.iters_per_s.push_back(p100);
    p.iters_per_s.push_back(v100);
    p.remaining_iters.push_back(rng.Uniform(1e3, 1e6));
  }
  return p;
}

void BM_Allocate(benchmark::State& state, const Allocator& allocate) {
  const AllocationProblem problem = GavelLikeProblem(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Result<Allocation> x = allocate(problem);
    if (!x.ok()) {
      state.SkipWithError(x.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(x->fraction.data());
  }
  state.counters["gpus"] = problem.total_gpus();
}

BENCHMARK_CAPTURE(BM_Allocate, max_min, Allocator(AllocateMaxMin))
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocate, min_jct, Allocator(AllocateMinJct))
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocate, greedy, Allocator(AllocateGreedy))
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dlsched::hetero
