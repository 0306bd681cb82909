// Solve time of the heterogeneity-aware allocators (docs/hetero.md): max-min (GLPK and CLP, as
// the policies call it: the class LP or POP partitions above kJobsPerLp jobs; and exact, one LP;
// on MIX2-like jobs by each solver, and warm-started along a sequence of calls),
// min-jct (the transportation flow, and GLPK's LP over all jobs) and the greedy, at 100, 1,000
// and 10,000 active jobs on Gavel's three GPU types. The `objective`
// counter is the allocation's value at its LP's objective (max-min: min_j r_j / eq_j; min-jct:
// sum_j r_j / remaining_j), to compare partitioned with exact.
// bench/run.sh --benchmark_filter=BM_Allocate --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/common/rng.h"
#include "lp/finish_time_fairness.h"
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

// The same cluster and distributions, but jobs drawn from `kinds` kinds (gang and rates shared
// by all jobs of a kind), as in Gavel's workloads: a few dozen model, batch size and scale
// factor combinations.
AllocationProblem GavelMixProblem(int n, int kinds) {
  const AllocationProblem kind = GavelLikeProblem(kinds);
  Rng rng(43);
  AllocationProblem p;
  p.num_types = 3;
  p.gpus_per_type = GavelLikeProblem(n).gpus_per_type;
  for (int j = 0; j < n; ++j) {
    const int k = static_cast<int>(rng.Below(kinds));
    p.gang.push_back(kind.gang[k]);
    for (int t = 0; t < 3; ++t) p.iters_per_s.push_back(kind.thr(k, t));
    p.remaining_iters.push_back(rng.Uniform(1e3, 1e6));
  }
  return p;
}

using Objective = double (*)(const AllocationProblem&, const Allocation&);

void BM_Allocate(benchmark::State& state, const Allocator& allocate, Objective objective,
                 int kinds = 0) {
  const int n = static_cast<int>(state.range(0));
  const AllocationProblem problem = kinds > 0 ? GavelMixProblem(n, kinds) : GavelLikeProblem(n);
  Result<Allocation> x = Allocation{};
  for (auto _ : state) {
    x = allocate(problem);
    if (!x.ok()) {
      state.SkipWithError(x.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(x->fraction.data());
  }
  state.counters["gpus"] = problem.total_gpus();
  state.counters["objective"] = objective(problem, *x);
}

// As the policies call them.
BENCHMARK_CAPTURE(BM_Allocate, max_min, Allocator(AllocateMaxMin), &MinNormalisedRate)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocate, min_jct, Allocator(AllocateMinJct), &CompletionRate)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocate, min_jct_lp, Allocator(AllocateMinJctLp), &CompletionRate)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocate, greedy, Allocator(AllocateGreedy), &MinNormalisedRate)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
// The partitioned max-min LP with jobs_per_lp = range(1) (0: one LP, exact), for the trade
// between partition size, time and quality. One LP at 10,000 jobs is left out: GLPK fails after
// minutes.
void BM_AllocatePartitioned(benchmark::State& state) {
  const int jobs_per_lp = static_cast<int>(state.range(1));
  BM_Allocate(
      state,
      [jobs_per_lp](const AllocationProblem& p) {
        return AllocateMaxMinPartitioned(p, jobs_per_lp);
      },
      &MinNormalisedRate);
}

BENCHMARK(BM_AllocatePartitioned)
    ->ArgsProduct({{1000}, {0, 100, 250, 400}})
    ->Args({2000, 0})
    ->ArgsProduct({{10000}, {100, 250, 400, 1000}})
    ->Unit(benchmark::kMillisecond);

// Gavel's max-min program (max-min-gavel, the gavel-max-min profiles' allocator) with one
// program up to range(1) jobs and POP partitions of range(2) jobs above it; range(1) =
// kOneProgramJobsAtMost, range(2) = kJobsPerProgramPartition is the allocator as the profiles
// call it. `objective`: the program's, min_j r_j(X) / (sum_t thr(j, t) gpus_t / total / gang_j).
double MinProportionalRate(const AllocationProblem& p, const Allocation& x) {
  double worst = std::numeric_limits<double>::infinity();
  for (int j = 0; j < p.num_jobs(); ++j) {
    double share = 0;
    for (int t = 0; t < p.num_types; ++t) share += p.thr(j, t) * p.gpus_per_type[t];
    if (share <= 0) continue;
    worst = std::min(worst, x.EffectiveThroughput(p, j) / (share / p.total_gpus() / p.gang[j]));
  }
  return worst;
}

void BM_AllocateGavelProgram(benchmark::State& state) {
  const int jobs_at_most = static_cast<int>(state.range(1));
  const int per_partition = static_cast<int>(state.range(2));
  BM_Allocate(
      state,
      [=](const AllocationProblem& p) {
        return AllocateMaxMinGavelWithLimits(p, jobs_at_most, per_partition);
      },
      &MinProportionalRate);
}

BENCHMARK(BM_AllocateGavelProgram)
    ->Args({100, kOneProgramJobsAtMost, kJobsPerProgramPartition})
    ->Args({1000, kOneProgramJobsAtMost, kJobsPerProgramPartition})
    ->Args({2000, 2000, 0})
    ->ArgsProduct({{2000}, {0}, {250, 500, 1000}})
    ->ArgsProduct({{10000}, {0}, {250, 500, 1000}})
    ->Unit(benchmark::kMillisecond);

// Jobs of 48 kinds (max-min: one LP over the kinds above kJobsPerLp jobs, exact).
void BM_AllocateMix(benchmark::State& state, const Allocator& allocate, Objective objective) {
  BM_Allocate(state, allocate, objective, 48);
}

BENCHMARK_CAPTURE(BM_AllocateMix, max_min, Allocator(AllocateMaxMin), &MinNormalisedRate)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocateMix, max_min_exact, Allocator([](const AllocationProblem& p) {
                    return AllocateMaxMinPartitioned(p, 0);
                  }),
                  &MinNormalisedRate)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocateMix, min_jct, Allocator(AllocateMinJct), &CompletionRate)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
// Chronus MIX2 on 512 GPUs as hetero-las sees it (issue 19): V100 and K80 pools of 256 GPUs,
// every job its own class (the estimator's per-job error, lognormal sigma 0.12, on each rate),
// K80 2-5x slower than a V100, Philly's gangs (1 GPU 70%, 2, 4, 8 or 16). `n` jobs.
AllocationProblem Mix2LikeProblem(int n) {
  Rng rng(44);
  AllocationProblem p;
  p.num_types = 2;
  p.gpus_per_type = {256, 256};
  for (int j = 0; j < n; ++j) {
    const double u = rng.Uniform();
    p.gang.push_back(u < 0.7 ? 1 : u < 0.8 ? 2 : u < 0.9 ? 4 : u < 0.98 ? 8 : 16);
    const double v100 = rng.Uniform(0.5, 5);
    p.iters_per_s.push_back(v100 * rng.LogNormal(0, 0.12));
    p.iters_per_s.push_back(v100 / rng.Uniform(2, 5) * rng.LogNormal(0, 0.12));
  }
  return p;
}

// The exact max-min LP (one LP over all the jobs) by solver range(1) (MaxMinSolver: 1 GLPK,
// 2 CLP primal, 3 CLP dual) on MIX2-like jobs; range(1) = 0 is AllocateMaxMin as the policies
// call it (partitions above kJobsPerLp jobs).
void BM_AllocateMix2(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto solver = static_cast<MaxMinSolver>(state.range(1));
  const AllocationProblem problem = Mix2LikeProblem(n);
  Result<Allocation> x = Allocation{};
  for (auto _ : state) {
    x = solver == MaxMinSolver::kAuto ? AllocateMaxMin(problem)
                                      : AllocateMaxMinPartitioned(problem, 0, solver);
    if (!x.ok()) {
      state.SkipWithError(x.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(x->fraction.data());
  }
  state.counters["objective"] = MinNormalisedRate(problem, *x);
  double sum = 0;
  const Allocation equal = EqualShare(problem);
  for (int j = 0; j < n; ++j) {
    sum += x->EffectiveThroughput(problem, j) / equal.EffectiveThroughput(problem, j);
  }
  state.counters["stage2"] = sum;
}

BENCHMARK(BM_AllocateMix2)
    ->ArgsProduct({{150, 250, 400, 1000}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond);

// `calls` problems over `pool`'s jobs (its types and GPUs): the first over jobs 0..n-1, then
// alternately one departure (a random active job, by `seed`) and one arrival (the pool's next
// job). The pool holds at least n + calls / 2 jobs.
std::vector<AllocationProblem> ChurnSequence(const AllocationProblem& pool, int n, int calls,
                                             uint64_t seed) {
  Rng rng(seed);
  std::vector<int> active(n);
  std::iota(active.begin(), active.end(), 0);
  std::vector<AllocationProblem> sequence;
  for (int i = 0; static_cast<int>(sequence.size()) < calls; ++i) {
    if (i % 2 == 0) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(rng.Below(active.size())));
    } else {
      active.push_back(n + i / 2);
    }
    AllocationProblem p;
    p.num_types = pool.num_types;
    p.gpus_per_type = pool.gpus_per_type;
    for (int j : active) {
      p.gang.push_back(pool.gang[j]);
      for (int t = 0; t < pool.num_types; ++t) p.iters_per_s.push_back(pool.thr(j, t));
    }
    sequence.push_back(std::move(p));
  }
  return sequence;
}

// A sequence of MIX2-like allocations as a policy makes them: `n` active jobs drawn from a pool,
// each step one departure (a random active job) and one arrival (the next job of the pool),
// each a call. range(1): 0 AllocateMaxMin, cold; 1 AllocateMaxMinWarm, one MaxMinBasis across
// the calls. Time per call; `pivots` (warm): CLP's mean simplex iterations per LP stage.
void BM_AllocateMix2Sequence(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool warm = state.range(1) != 0;
  constexpr int kCalls = 200;
  const AllocationProblem pool = Mix2LikeProblem(n + kCalls);
  const std::vector<AllocationProblem> calls = ChurnSequence(pool, n, kCalls, /*seed=*/45);
  MaxMinBasis basis;
  size_t next = 0;
  for (auto _ : state) {
    const AllocationProblem& problem = calls[next++ % calls.size()];
    Result<Allocation> x = warm ? AllocateMaxMinWarm(problem, basis) : AllocateMaxMin(problem);
    if (!x.ok()) {
      state.SkipWithError(x.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(x->fraction.data());
  }
  if (warm && basis.solves() > 0) {
    state.counters["pivots"] = static_cast<double>(basis.iterations()) / basis.solves();
  }
}

BENCHMARK(BM_AllocateMix2Sequence)
    ->ArgsProduct({{250, 400, 1000}, {0, 1}})
    ->Iterations(200)
    ->Unit(benchmark::kMillisecond);

// GLPK's range, as `hetero-las` meets it on Gavel's cluster: a sequence of allocations of
// about range(0) active jobs of 30 Gavel-like kinds (36 GPUs of each type), each step one departure (a
// random active job) and one arrival (the next job of a pool), each a call of
// AllocateMaxMinWarm with one MaxMinBasis by solver range(1) (MaxMinSolver: 1 GLPK, 4 the dense
// simplex). Time per call; `pivots`: the mean first-stage simplex iterations per LP.
void BM_AllocateSmallSequence(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto solver = static_cast<MaxMinSolver>(state.range(1));
  constexpr int kCalls = 400;
  AllocationProblem gavel_pool = GavelMixProblem(n + kCalls, 30);
  gavel_pool.gpus_per_type = {36, 36, 36};
  const std::vector<AllocationProblem> calls = ChurnSequence(gavel_pool, n, kCalls, /*seed=*/46);
  MaxMinBasis basis;
  size_t next = 0;
  for (auto _ : state) {
    Result<Allocation> x = AllocateMaxMinWarm(calls[next++ % calls.size()], basis, solver);
    if (!x.ok()) {
      state.SkipWithError(x.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(x->fraction.data());
  }
  if (basis.solves() > 0) {
    state.counters["pivots"] = static_cast<double>(basis.iterations()) / basis.solves();
  }
  state.counters["dense_failures"] = static_cast<double>(basis.dense_failures());
}

BENCHMARK(BM_AllocateSmallSequence)
    ->ArgsProduct({{20, 34, 50, 70, 100, 150}, {1, 4}})
    ->Iterations(4000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace dlsched::hetero
