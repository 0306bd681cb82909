#include "lp/lp_allocators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/common/rng.h"
#include "support/allocation_problems.h"

namespace dlsched::hetero {
namespace {

using testing::RandomGavelLikeProblem;

void ExpectAllocation(const Allocation& x, const std::vector<double>& want) {
  ASSERT_EQ(x.fraction.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(x.fraction[i], want[i], 1e-6) << "entry " << i;
  }
}

struct Case {
  std::string name;
  AllocationProblem problem;
  std::vector<double> want;
};

TEST(AllocateMaxMinTest, HandCheckedOptima) {
  const std::vector<Case> cases = {
      // Job 1 runs 3x faster on type 1, job 0 the same on both: job 0 can reach at most its
      // fair rate (all its time), and then job 1 gains most with all of type 1.
      {"speedup decides the type", {2, {1, 1}, {1, 1}, {1, 1, 1, 3}, {}}, {1, 0, 0, 1}},
      // One GPU, two jobs: each gets half, whatever their speeds.
      {"time sharing", {1, {1}, {1, 1}, {1, 2}, {}}, {0.5, 0.5}},
      // A 2-GPU gang and a 1-GPU job on 2 GPUs: the equal share gives the gang half its time
      // and the small job all of its; max-min cannot beat that (2 x 0.5 + 1 x 1 = 2 GPUs).
      {"gangs", {1, {2}, {2, 1}, {1, 1}, {}}, {0.5, 1}},
      // Job 1 cannot run on type 1: it gets type 0, job 0 the (faster) type 1.
      {"infeasible type", {2, {1, 1}, {1, 1}, {1, 2, 1, 0}, {}}, {0, 1, 1, 0}},
      // No jobs.
      {"empty", {2, {1, 1}, {}, {}, {}}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Allocation> x = AllocateMaxMin(c.problem);
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    ExpectAllocation(*x, c.want);
    EXPECT_TRUE(CheckAllocation(c.problem, *x).ok());
  }
}

TEST(AllocateMinJctTest, HandCheckedOptima) {
  const std::vector<Case> cases = {
      // One GPU: all of it to the job closest to done (SRPT).
      {"shortest first", {1, {1}, {1, 1}, {1, 1}, {10, 100}}, {1, 0}},
      // Equal remaining work: the fast type to the job that gains most there.
      {"speedup decides the type", {2, {1, 1}, {1, 1}, {1, 1, 1, 4}, {10, 10}}, {1, 0, 0, 1}},
      // A 2-GPU gang of rate 3 vs two 1-GPU jobs of rate 1, equal work, 2 GPUs: the two small
      // jobs complete 2/s per 2 GPUs, the gang 3/s per 2 GPUs: the gang wins.
      {"gang", {1, {2}, {2, 1, 1}, {3, 1, 1}, {1, 1, 1}}, {1, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Allocation> x = AllocateMinJct(c.problem);
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    ExpectAllocation(*x, c.want);
    EXPECT_TRUE(CheckAllocation(c.problem, *x).ok());
  }
}

TEST(AllocateMinJctTest, NeedsRemainingWork) {
  EXPECT_FALSE(AllocateMinJct({1, {1}, {1}, {1}, {}}).ok());
}

TEST(AllocatorsTest, MalformedProblemsAreErrors) {
  EXPECT_FALSE(AllocateMaxMin({1, {1}, {0}, {1}, {}}).ok());
  EXPECT_FALSE(AllocateMinJct({1, {1}, {1}, {-1}, {1}}).ok());
}

// Random instances: every allocator's X is feasible, and the LPs are at least as good as the
// greedy at their own objectives.
TEST(AllocatorsTest, RandomInstancesAreFeasibleAndTheLpsOptimal) {
  Rng rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    AllocationProblem p;
    p.num_types = 1 + static_cast<int>(rng.Below(3));
    for (int t = 0; t < p.num_types; ++t) p.gpus_per_type.push_back(static_cast<int>(rng.Below(9)));
    const int n = static_cast<int>(rng.Below(25));
    for (int j = 0; j < n; ++j) {
      p.gang.push_back(1 << rng.Below(3));
      for (int t = 0; t < p.num_types; ++t) {
        p.iters_per_s.push_back(rng.Below(5) == 0 ? 0 : rng.Uniform(0.1, 5));
      }
      p.remaining_iters.push_back(rng.Uniform(1, 1000));
    }
    Result<Allocation> max_min = AllocateMaxMin(p);
    Result<Allocation> min_jct = AllocateMinJct(p);
    Result<Allocation> greedy = AllocateGreedy(p);
    ASSERT_TRUE(max_min.ok()) << max_min.status().ToString();
    ASSERT_TRUE(min_jct.ok()) << min_jct.status().ToString();
    ASSERT_TRUE(greedy.ok()) << greedy.status().ToString();
    for (const Allocation* x : {&*max_min, &*min_jct, &*greedy}) {
      const Status feasible = CheckAllocation(p, *x);
      EXPECT_TRUE(feasible.ok()) << feasible.ToString();
    }
    EXPECT_GE(MinNormalisedRate(p, *max_min), MinNormalisedRate(p, *greedy) - 1e-6);
    EXPECT_GE(MinNormalisedRate(p, *max_min), MinNormalisedRate(p, EqualShare(p)) - 1e-6);
    EXPECT_GE(CompletionRate(p, *min_jct), CompletionRate(p, *greedy) * (1 - 1e-6));
  }
}

TEST(PartitionedAllocatorsTest, OnePartitionIsTheExactLp) {
  const AllocationProblem p = RandomGavelLikeProblem(60, 3);
  Result<Allocation> exact = AllocateMaxMin(p);
  Result<Allocation> whole = AllocateMaxMinPartitioned(p, 60);
  Result<Allocation> unlimited = AllocateMaxMinPartitioned(p, 0);
  ASSERT_TRUE(exact.ok() && whole.ok() && unlimited.ok());
  EXPECT_EQ(exact->fraction, whole->fraction);
  EXPECT_EQ(exact->fraction, unlimited->fraction);
}

// Four like jobs on two GPUs in two partitions of two: each partition gets one GPU, each job half
// of it, the max-min optimum of the whole problem.
TEST(PartitionedAllocatorsTest, KnownOptima) {
  Result<Allocation> x = AllocateMaxMinPartitioned({1, {2}, {1, 1, 1, 1}, {1, 1, 1, 1}, {}}, 2);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ExpectAllocation(*x, {0.5, 0.5, 0.5, 0.5});
}

// Partitions are feasible for the whole problem and close to the exact LP's objective (POP
// reports within 1.5% at scale; small partitions here, so a looser bound).
TEST(PartitionedAllocatorsTest, FeasibleAndNearTheExactOptimum) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const AllocationProblem p = RandomGavelLikeProblem(400, seed);
    Result<Allocation> exact = AllocateMaxMinPartitioned(p, 0);
    Result<Allocation> parts = AllocateMaxMinPartitioned(p, 100);
    ASSERT_TRUE(exact.ok() && parts.ok());
    const Status feasible = CheckAllocation(p, *parts);
    EXPECT_TRUE(feasible.ok()) << feasible.ToString();
    EXPECT_LE(MinNormalisedRate(p, *parts), MinNormalisedRate(p, *exact) + 1e-6);
    EXPECT_GE(MinNormalisedRate(p, *parts), 0.95 * MinNormalisedRate(p, *exact));
  }
}

// The policies' allocator above kJobsPerLp distinct jobs: partitions of kJobsPerPartition,
// feasible and within 2% of the exact LP (BENCHMARKS.md measures about 1% at 1,000 jobs).
TEST(PartitionedAllocatorsTest, AboveTheLpLimitPartitionsNearTheExactOptimum) {
  const AllocationProblem p = RandomGavelLikeProblem(1000, 4);
  Result<Allocation> exact = AllocateMaxMinPartitioned(p, 0);
  Result<Allocation> x = AllocateMaxMin(p);
  Result<Allocation> limits = AllocateMaxMinWithLimits(p, kJobsPerLp, kJobsPerPartition);
  ASSERT_TRUE(exact.ok() && x.ok() && limits.ok());
  EXPECT_EQ(x->fraction, limits->fraction);
  const Status feasible = CheckAllocation(p, *x);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  EXPECT_LE(MinNormalisedRate(p, *x), MinNormalisedRate(p, *exact) + 1e-6);
  EXPECT_GE(MinNormalisedRate(p, *x), 0.98 * MinNormalisedRate(p, *exact));
}

// Many jobs of few kinds (Gavel's workloads: a few dozen model, batch size and gang
// combinations): the LP over the classes of like jobs reaches the exact LP's optimum, at both
// stages (min_j r_j / eq_j, then sum_j r_j / eq_j), most jobs on one type.
TEST(PartitionedAllocatorsTest, LikeJobsInOneLpAtTheExactOptimum) {
  Rng rng(5);
  const AllocationProblem kinds = RandomGavelLikeProblem(12, 9);
  AllocationProblem p;
  p.num_types = 3;
  p.gpus_per_type = {40, 30, 20};
  for (int j = 0; j < 300; ++j) {
    const int kind = static_cast<int>(rng.Below(12));
    p.gang.push_back(kinds.gang[kind]);
    for (int t = 0; t < 3; ++t) p.iters_per_s.push_back(kinds.thr(kind, t));
  }
  Result<Allocation> exact = AllocateMaxMinPartitioned(p, 0);
  Result<Allocation> classes = AllocateMaxMinPartitioned(p, 100);
  ASSERT_TRUE(exact.ok() && classes.ok());
  const Status feasible = CheckAllocation(p, *classes);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  EXPECT_NEAR(MinNormalisedRate(p, *classes), MinNormalisedRate(p, *exact), 1e-6);
  const Allocation equal = EqualShare(p);
  const auto normalised_sum = [&](const Allocation& x) {
    double sum = 0;
    for (int j = 0; j < p.num_jobs(); ++j) {
      sum += x.EffectiveThroughput(p, j) / equal.EffectiveThroughput(p, j);
    }
    return sum;
  };
  EXPECT_NEAR(normalised_sum(*classes), normalised_sum(*exact), 1e-6 * normalised_sum(*exact));
  int one_type = 0;
  for (int j = 0; j < p.num_jobs(); ++j) {
    int used = 0;
    for (int t = 0; t < 3; ++t) used += classes->at(j, t) > 0 ? 1 : 0;
    one_type += used == 1 ? 1 : 0;
  }
  EXPECT_GT(one_type, p.num_jobs() / 2);
}

// Rates a constant factor apart (models of one family, batch sizes; every job under an estimator
// that knows only per-type speed ratios) make like jobs too: the class LP over 400 jobs of 8
// kinds, each job's rates its kind's times a factor of its own, reaches the exact LP's optimum
// at both stages, gives every job of a kind the same normalised rate, and puts most jobs on one
// type.
TEST(PartitionedAllocatorsTest, RatesAFactorApartAreLikeJobs) {
  Rng rng(11);
  const AllocationProblem kinds = RandomGavelLikeProblem(8, 4);
  AllocationProblem p;
  p.num_types = 3;
  p.gpus_per_type = {36, 36, 36};
  for (int j = 0; j < 400; ++j) {
    const int kind = static_cast<int>(rng.Below(8));
    const double factor = rng.Uniform(0.1, 10);
    p.gang.push_back(kinds.gang[kind]);
    for (int t = 0; t < 3; ++t) p.iters_per_s.push_back(kinds.thr(kind, t) * factor);
  }
  Result<Allocation> exact = AllocateMaxMinPartitioned(p, 0);
  Result<Allocation> classes = AllocateMaxMin(p);
  ASSERT_TRUE(exact.ok() && classes.ok());
  const Status feasible = CheckAllocation(p, *classes);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  const double z = MinNormalisedRate(p, *exact);
  EXPECT_NEAR(MinNormalisedRate(p, *classes), z, 1e-6 * z);
  const Allocation equal = EqualShare(p);
  const auto normalised = [&](const Allocation& x, int j) {
    return x.EffectiveThroughput(p, j) / equal.EffectiveThroughput(p, j);
  };
  double sum_exact = 0;
  double sum_classes = 0;
  int one_type = 0;
  for (int j = 0; j < p.num_jobs(); ++j) {
    sum_exact += normalised(*exact, j);
    sum_classes += normalised(*classes, j);
    int used = 0;
    for (int t = 0; t < 3; ++t) used += classes->at(j, t) > 1e-9 ? 1 : 0;
    one_type += used == 1 ? 1 : 0;
  }
  EXPECT_NEAR(sum_classes, sum_exact, 1e-6 * sum_exact);
  EXPECT_GT(one_type, p.num_jobs() * 3 / 4);
}

// A known optimum on the class path: 200 like 1-GPU jobs (rates (1, 2) times 1, 2 or 3) on 100
// GPUs of type 0 and 200 of type 1. Each job's best rate is all its time on type 1, and type 1
// holds all of them, so the unique max-min optimum is X[j][1] = 1 for every job.
TEST(PartitionedAllocatorsTest, ASplitClassGivesEveryJobTheTimeItCanUse) {
  AllocationProblem p;
  p.num_types = 2;
  p.gpus_per_type = {100, 200};
  for (int j = 0; j < 200; ++j) {
    p.gang.push_back(1);
    p.iters_per_s.push_back(1.0 * (1 + j % 3));
    p.iters_per_s.push_back(2.0 * (1 + j % 3));
  }
  Result<Allocation> x = AllocateMaxMin(p);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_TRUE(CheckAllocation(p, *x).ok());
  for (int j = 0; j < p.num_jobs(); ++j) {
    SCOPED_TRACE("job " + std::to_string(j));
    // The faster type has room for all of them.
    EXPECT_NEAR(x->at(j, 0), 0, 1e-9);
    EXPECT_NEAR(x->at(j, 1), 1, 1e-9);
  }
}

}  // namespace
// Max-min's second-stage objective: sum_j r_j(X) / eq_j over the jobs with a fair rate.
double SumNormalisedRates(const AllocationProblem& p, const Allocation& x) {
  const Allocation equal = EqualShare(p);
  double sum = 0;
  for (int j = 0; j < p.num_jobs(); ++j) {
    const double eq = equal.EffectiveThroughput(p, j);
    if (eq > 0) sum += x.EffectiveThroughput(p, j) / eq;
  }
  return sum;
}

// `b` reaches `a`'s optimum at both stages of the max-min LP, to a relative 1e-6, and is
// feasible.
void ExpectSameMaxMinOptimum(const AllocationProblem& p, const Allocation& a, const Allocation& b) {
  const Status feasible = CheckAllocation(p, b);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  const double z = MinNormalisedRate(p, a);
  if (std::isfinite(z)) {
    EXPECT_NEAR(MinNormalisedRate(p, b), z, 1e-6 * std::max(1.0, z));
  } else {
    EXPECT_FALSE(std::isfinite(MinNormalisedRate(p, b)));
  }
  const double sum = SumNormalisedRates(p, a);
  EXPECT_NEAR(SumNormalisedRates(p, b), sum, 1e-6 * std::max(1.0, sum));
}

// A MIX2-like instance (issue 19): `types` types, every job its own class (per-job error on
// each rate), gangs 1-16, some jobs unable to use a type, capacity from scarce to ample.
AllocationProblem DistinctJobsProblem(int n, int types, uint64_t seed) {
  Rng rng(seed);
  AllocationProblem p;
  p.num_types = types;
  for (int t = 0; t < types; ++t) {
    p.gpus_per_type.push_back(1 + static_cast<int>(rng.Below(static_cast<uint64_t>(2 * n + 1))));
  }
  for (int j = 0; j < n; ++j) {
    p.gang.push_back(1 << rng.Below(5));
    const double base = rng.Uniform(0.5, 5);
    for (int t = 0; t < types; ++t) {
      p.iters_per_s.push_back(
          rng.Below(8) == 0 ? 0 : base * rng.Uniform(0.2, 1) * rng.LogNormal(0, 0.12));
    }
  }
  return p;
}

// The problem over `jobs` of `pool` (a job listed twice: two like jobs), on `gpus_per_type`.
AllocationProblem ProblemOver(const AllocationProblem& pool, const std::vector<int>& jobs,
                              std::vector<int> gpus_per_type) {
  AllocationProblem p;
  p.num_types = pool.num_types;
  p.gpus_per_type = std::move(gpus_per_type);
  for (int j : jobs) {
    p.gang.push_back(pool.gang[j]);
    for (int t = 0; t < pool.num_types; ++t) p.iters_per_s.push_back(pool.thr(j, t));
  }
  return p;
}

// The hand-checked optima of AllocateMaxMinTest.HandCheckedOptima, unique there: the first two
// solved by `solver`, the third by `third`.
void ExpectHandCheckedOptima(MaxMinSolver solver, MaxMinSolver third) {
  ExpectAllocation(*AllocateMaxMinPartitioned({2, {1, 1}, {1, 1}, {1, 1, 1, 3}, {}}, 0, solver),
                   {1, 0, 0, 1});
  ExpectAllocation(*AllocateMaxMinPartitioned({1, {2}, {2, 1}, {1, 1}, {}}, 0, solver), {0.5, 1});
  ExpectAllocation(*AllocateMaxMinPartitioned({2, {1, 1}, {1, 1}, {1, 2, 1, 0}, {}}, 0, third),
                   {0, 1, 1, 0});
}

// CLP's simplex (primal, and dual for the first stage) reaches GLPK's optimum at both stages on
// random instances of 1 to 300 distinct jobs on 1 to 4 types, and the hand-checked optima.
TEST(MaxMinSolversTest, ClpReachesGlpksOptimumAtBothStages) {
  Rng rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(trial < 50 ? 60 : 300));
    const int types = 1 + static_cast<int>(rng.Below(4));
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " jobs, " +
                 std::to_string(types) + " types");
    const AllocationProblem p = DistinctJobsProblem(n, types, 100 + trial);
    Result<Allocation> glpk = AllocateMaxMinPartitioned(p, 0, MaxMinSolver::kGlpk);
    Result<Allocation> primal = AllocateMaxMinPartitioned(p, 0, MaxMinSolver::kClpPrimal);
    Result<Allocation> dual = AllocateMaxMinPartitioned(p, 0, MaxMinSolver::kClpDual);
    ASSERT_TRUE(glpk.ok() && primal.ok() && dual.ok());
    ExpectSameMaxMinOptimum(p, *glpk, *primal);
    ExpectSameMaxMinOptimum(p, *glpk, *dual);
  }
  ExpectHandCheckedOptima(MaxMinSolver::kClpPrimal, MaxMinSolver::kClpDual);
}

// The dense simplex (MaxMinSolver::kDense) reaches GLPK's optimum at both stages on random
// instances of 1 to 150 distinct jobs on 1 to 4 types, cold and without falling back to GLPK,
// and the hand-checked optima.
TEST(MaxMinSolversTest, DenseReachesGlpksOptimumAtBothStages) {
  Rng rng(12);
  for (int trial = 0; trial < 80; ++trial) {
    const int n = 1 + static_cast<int>(rng.Below(trial < 70 ? kDenseLpJobsAtMost : 150));
    const int types = 1 + static_cast<int>(rng.Below(4));
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " jobs, " +
                 std::to_string(types) + " types");
    const AllocationProblem p = DistinctJobsProblem(n, types, 200 + trial);
    Result<Allocation> glpk = AllocateMaxMinPartitioned(p, 0, MaxMinSolver::kGlpk);
    MaxMinBasis basis;  // nothing saved: from the slack basis, counting fallbacks
    Result<Allocation> dense = AllocateMaxMinWarm(p, basis, MaxMinSolver::kDense);
    ASSERT_TRUE(glpk.ok() && dense.ok());
    EXPECT_EQ(basis.dense_failures(), 0);
    ExpectSameMaxMinOptimum(p, *glpk, *dense);
  }
  ExpectHandCheckedOptima(MaxMinSolver::kDense, MaxMinSolver::kDense);
}

// The dense simplex warm-started along a sequence of allocations as a policy makes them (one
// arrival or departure per call, 5 to 60 jobs on 3 types, some arrivals like an active job,
// capacity tight and loose), its basis inverse carried from call to call: GLPK's cold optimum
// at both stages at every call, no fallback to GLPK, and a few first-stage pivots a call.
TEST(MaxMinBasisTest, DenseWarmStartsKeepTheOptimum) {
  for (const std::vector<int>& capacity : {std::vector<int>{12, 8, 4}, {40, 24, 16}}) {
    const AllocationProblem pool = DistinctJobsProblem(400, 3, 13);
    Rng rng(14);
    std::vector<int> active(5);
    std::iota(active.begin(), active.end(), 0);
    int next = 5;
    MaxMinBasis basis;
    for (int call = 0; call < 200; ++call) {
      if ((call % 3 == 2 && active.size() > 1) ||
          active.size() >= static_cast<size_t>(kDenseLpJobsAtMost)) {
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(rng.Below(active.size())));
      } else if (call % 5 == 0) {
        active.push_back(active[rng.Below(active.size())]);  // a like job
      } else {
        active.push_back(next++);
      }
      const AllocationProblem p = ProblemOver(pool, active, capacity);
      SCOPED_TRACE("call " + std::to_string(call) + ", " + std::to_string(p.num_jobs()) + " jobs");
      Result<Allocation> warm = AllocateMaxMinWarm(p, basis, MaxMinSolver::kDense);
      Result<Allocation> glpk = AllocateMaxMinPartitioned(p, 0, MaxMinSolver::kGlpk);
      ASSERT_TRUE(warm.ok() && glpk.ok());
      ExpectSameMaxMinOptimum(p, *glpk, *warm);
    }
    EXPECT_EQ(basis.dense_failures(), 0);
    EXPECT_EQ(basis.solves(), 200);
    EXPECT_LT(basis.iterations(), 200 * 8);
  }
}

// MaxMinAllocator(kAutoGlpk), the `max-min-glpk` allocator, keeps GLPK's vertices on the small
// LPs: along a sequence of calls, X equal to AllocateMaxMinWarm's by GLPK, call by call.
TEST(MaxMinBasisTest, TheGlpkAllocatorKeepsGlpksVertices) {
  const AllocationProblem pool = DistinctJobsProblem(100, 3, 15);
  Allocator allocator = MaxMinAllocator(MaxMinSolver::kAutoGlpk);
  MaxMinBasis glpk;
  for (int jobs = 5; jobs <= 40; ++jobs) {
    std::vector<int> first(jobs);
    std::iota(first.begin(), first.end(), 0);
    const AllocationProblem p = ProblemOver(pool, first, {12, 8, 4});
    Result<Allocation> x = allocator(p);
    Result<Allocation> want = AllocateMaxMinWarm(p, glpk, MaxMinSolver::kGlpk);
    ASSERT_TRUE(x.ok() && want.ok());
    EXPECT_EQ(x->fraction, want->fraction) << jobs << " jobs";
  }
}

// A sequence of allocations as a policy makes them, one departure or arrival per call, from 140
// to 460 distinct jobs (GLPK's small LPs, CLP's LP over the jobs, then partitions): the warm
// starts reach the cold solves' optimum at both stages (the same partitions), and take few
// pivots (cold, the first stage of 300 jobs takes hundreds).
TEST(MaxMinBasisTest, WarmStartsKeepTheOptimumInFewPivots) {
  const AllocationProblem pool = DistinctJobsProblem(700, 2, 5);
  Rng rng(6);
  std::vector<int> active(140);
  std::iota(active.begin(), active.end(), 0);
  int next = 140;
  MaxMinBasis basis;
  double warm_pivots = 0;  // sums over the checked calls of the mean pivots per stage
  double cold_pivots = 0;
  for (int call = 0; call < 420; ++call) {
    if (call % 3 == 2 && active.size() > 1) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(rng.Below(active.size())));
    } else {
      active.push_back(next++);
    }
    AllocationProblem p = ProblemOver(pool, active, {256, 256});
    if (call % 20 != 0 && call < 400) {
      ASSERT_TRUE(AllocateMaxMinWarm(p, basis).ok());
      continue;
    }
    SCOPED_TRACE("call " + std::to_string(call) + ", " + std::to_string(p.num_jobs()) + " jobs");
    const int64_t solves = basis.solves();
    const int64_t iterations = basis.iterations();
    Result<Allocation> warm = AllocateMaxMinWarm(p, basis);
    Result<Allocation> cold = AllocateMaxMin(p);
    MaxMinBasis fresh;  // nothing saved: CLP from the slack basis, to count its pivots
    ASSERT_TRUE(warm.ok() && cold.ok() && AllocateMaxMinWarm(p, fresh).ok());
    ExpectSameMaxMinOptimum(p, *cold, *warm);
    if (fresh.solves() > 0) {
      warm_pivots += static_cast<double>(basis.iterations() - iterations) /
                     static_cast<double>(basis.solves() - solves);
      cold_pivots += static_cast<double>(fresh.iterations()) / static_cast<double>(fresh.solves());
    }
  }
  EXPECT_GT(cold_pivots, 0);
  EXPECT_LT(warm_pivots, cold_pivots / 10);
}

// GLPK's LPs (up to kClassLpAbove jobs) warm-started: a sequence of allocations as a policy makes
// them, from 10 to about 110 jobs on 3 types, one arrival or departure per call, some arrivals like
// an active job (the same gang and rates, so one JobKey): the warm first stage reaches the cold
// solve's optimum at both stages, in a tenth of the pivots of the presolved cold one or fewer
// (about 2 against 66 per first stage).
TEST(MaxMinBasisTest, GlpkWarmStartsKeepTheOptimumInFewPivots) {
  const AllocationProblem pool = DistinctJobsProblem(400, 3, 9);
  Rng rng(10);
  std::vector<int> active(10);
  std::iota(active.begin(), active.end(), 0);
  int next = 10;
  MaxMinBasis basis;
  int64_t warm_pivots = 0;
  int64_t cold_pivots = 0;
  int checked = 0;
  for (int call = 0; call < 300; ++call) {
    if (call % 3 == 2 || active.size() >= 140) {
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(rng.Below(active.size())));
    } else if (call % 5 == 0) {
      active.push_back(active[rng.Below(active.size())]);  // a like job
    } else {
      active.push_back(next++);
    }
    AllocationProblem p = ProblemOver(pool, active, {40, 24, 16});
    ASSERT_LE(p.num_jobs(), kClassLpAbove);
    if (call % 10 != 0) {
      ASSERT_TRUE(AllocateMaxMinWarm(p, basis).ok());
      continue;
    }
    SCOPED_TRACE("call " + std::to_string(call) + ", " + std::to_string(p.num_jobs()) + " jobs");
    const int64_t iterations = basis.iterations();
    Result<Allocation> warm = AllocateMaxMinWarm(p, basis);
    Result<Allocation> cold = AllocateMaxMin(p);
    MaxMinBasis fresh;  // nothing saved: GLPK presolved from scratch, to count its pivots
    ASSERT_TRUE(warm.ok() && cold.ok() && AllocateMaxMinWarm(p, fresh).ok());
    ExpectSameMaxMinOptimum(p, *cold, *warm);
    warm_pivots += basis.iterations() - iterations;
    cold_pivots += fresh.iterations();
    ++checked;
  }
  EXPECT_EQ(checked, 30);
  EXPECT_GT(cold_pivots, 0);
  EXPECT_LT(warm_pivots, cold_pivots / 10);
}

// A small instance against its known optimum, solved warm: the hand-checked optimum of
// AllocateMaxMinTest.HandCheckedOptima (unique) after a call with a third job, whose basis the
// warm start begins from.
TEST(MaxMinBasisTest, AWarmStartReachesAKnownOptimum) {
  MaxMinBasis basis;
  ASSERT_TRUE(AllocateMaxMinWarm({2, {1, 1}, {1, 1, 1}, {1, 1, 1, 3, 2, 2}, {}}, basis).ok());
  const int64_t solves = basis.solves();
  ExpectAllocation(*AllocateMaxMinWarm({2, {1, 1}, {1, 1}, {1, 1, 1, 3}, {}}, basis), {1, 0, 0, 1});
  EXPECT_EQ(basis.solves(), solves + 1);
}

// A tentative solve (a policy explaining) answers from the bases as the real one would, and
// leaves them as they were.
TEST(MaxMinBasisTest, ATentativeSolveLearnsNothing) {
  const AllocationProblem pool = DistinctJobsProblem(400, 2, 5);
  const auto first = [&pool](int jobs) {
    std::vector<int> first(jobs);
    std::iota(first.begin(), first.end(), 0);
    return ProblemOver(pool, first, {256, 256});
  };
  MaxMinBasis basis;
  ASSERT_TRUE(AllocateMaxMinWarm(first(300), basis).ok());
  const int64_t solves = basis.solves();
  ASSERT_GT(solves, 0);  // CLP's path: above kClassLpAbove distinct jobs
  AllocationProblem next = first(301);
  next.tentative = true;
  Result<Allocation> tentative = AllocateMaxMinWarm(next, basis);
  ASSERT_TRUE(tentative.ok());
  EXPECT_EQ(basis.solves(), solves);
  next.tentative = false;
  Result<Allocation> real = AllocateMaxMinWarm(next, basis);
  ASSERT_TRUE(real.ok());
  EXPECT_GT(basis.solves(), solves);
  EXPECT_EQ(tentative->fraction, real->fraction);
}

namespace {

// AllocateOnPartitions with an inner allocator that records what it is asked: up to the limit
// the whole problem once; above it every job in exactly one group, with its own per-job rows and
// the group's whole-GPU share of every type, the shares adding up to the capacity, and each
// group's answer back at its jobs.
struct RecordedCalls {
  std::vector<AllocationProblem> problems;

  Allocator Recorder() {
    return [this](const AllocationProblem& p) -> Result<Allocation> {
      problems.push_back(p);
      Allocation x{p.num_types, std::vector<double>(p.gang.size() * p.num_types, 0.0)};
      // An answer that names the job: its remaining work over 1e7 on type 0.
      for (int j = 0; j < p.num_jobs(); ++j) x.fraction[j * p.num_types] = p.remaining_iters[j] / 1e7;
      return x;
    };
  }
};

AllocationProblem NumberedProblem(int n) {
  AllocationProblem p = RandomGavelLikeProblem(n, 9);
  p.gpus_per_type = {7, 11, 13};
  for (int j = 0; j < n; ++j) {
    p.remaining_iters[j] = 1000 + j;
    p.elapsed_s.push_back(2000 + j);
    p.done_iters.push_back(3000 + j);
  }
  return p;
}

TEST(AllocateOnPartitionsTest, UpToTheLimitTheInnerAllocatorSeesTheWholeProblem) {
  const AllocationProblem p = NumberedProblem(12);
  RecordedCalls calls;
  ASSERT_TRUE(AllocateOnPartitions(p, 12, 5, calls.Recorder()).ok());
  ASSERT_EQ(calls.problems.size(), 1u);
  EXPECT_EQ(calls.problems[0].gpus_per_type, p.gpus_per_type);
  EXPECT_EQ(calls.problems[0].remaining_iters, p.remaining_iters);
}

TEST(AllocateOnPartitionsTest, AboveItEachGroupIsAProblemOfItsOwn) {
  const AllocationProblem p = NumberedProblem(13);
  RecordedCalls calls;
  Result<Allocation> x = AllocateOnPartitions(p, 12, 5, calls.Recorder());
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_EQ(calls.problems.size(), 3u);  // ceil(13 / 5)
  std::vector<int> seen(13, 0);
  std::vector<int> capacity(3, 0);
  for (const AllocationProblem& group : calls.problems) {
    for (int k = 0; k < group.num_jobs(); ++k) {
      const int j = static_cast<int>(group.remaining_iters[k]) - 1000;
      ASSERT_GE(j, 0);
      ASSERT_LT(j, 13);
      ++seen[j];
      EXPECT_EQ(group.gang[k], p.gang[j]);
      EXPECT_EQ(group.elapsed_s[k], p.elapsed_s[j]);
      EXPECT_EQ(group.done_iters[k], p.done_iters[j]);
      for (int t = 0; t < 3; ++t) EXPECT_EQ(group.thr(k, t), p.thr(j, t));
      if (k > 0) EXPECT_LT(group.remaining_iters[k - 1], group.remaining_iters[k]);  // in order
    }
    for (int t = 0; t < 3; ++t) capacity[t] += group.gpus_per_type[t];
  }
  EXPECT_EQ(seen, std::vector<int>(13, 1));
  EXPECT_EQ(capacity, p.gpus_per_type);
  for (int j = 0; j < 13; ++j) EXPECT_DOUBLE_EQ(x->at(j, 0), (1000 + j) / 1e7) << "job " << j;
}

TEST(AllocateOnPartitionsTest, AnErrorFromAGroupIsReturned) {
  const AllocationProblem p = NumberedProblem(13);
  int calls = 0;
  Result<Allocation> x = AllocateOnPartitions(p, 12, 5, [&](const AllocationProblem& group) {
    return ++calls == 2 ? Result<Allocation>(Internal("second group"))
                        : Allocation{3, std::vector<double>(group.iters_per_s.size(), 0.0)};
  });
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().ToString().find("second group"), std::string::npos);
}

TEST(AllocateOnPartitionsTest, AnAnswerOfTheWrongShapeIsAnError) {
  const AllocationProblem p = NumberedProblem(13);
  Result<Allocation> x =
      AllocateOnPartitions(p, 12, 5, [](const AllocationProblem&) { return Allocation{}; });
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().ToString().find("partition of"), std::string::npos);
}

}  // namespace
}  // namespace dlsched::hetero
