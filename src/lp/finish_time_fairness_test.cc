#include "lp/finish_time_fairness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dlsched/common/rng.h"
#include "lp/lp_allocators.h"
#include "support/allocation_problems.h"

namespace dlsched::hetero {
namespace {

// One GPU, two 1-GPU jobs of rate 1 with 100 iterations left, nothing done yet; job 0 has waited
// 100 s. The equal share gives each 0.5 (isolated finish 200 s); rho_0 = (100 + 100 / x0) / 200
// and rho_1 = (100 / x1) / 200 are equal at the optimum: x0^2 + x0 - 1 = 0, x0 = (sqrt 5 - 1) / 2,
// rho = (3 + sqrt 5) / 4.
TEST(AllocateFinishTimeFairnessTest, WaitedJobGetsMoreAtTheKnownOptimum) {
  AllocationProblem problem{1, {1}, {1, 1}, {1, 1}, {100, 100}, {100, 0}, {0, 0}};
  Result<Allocation> x = AllocateFinishTimeFairness(problem);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_TRUE(CheckAllocation(problem, *x).ok());
  const double golden = (std::sqrt(5.0) - 1) / 2;
  EXPECT_NEAR(x->at(0, 0), golden, 1e-5);
  EXPECT_NEAR(x->at(1, 0), 1 - golden, 1e-5);
  EXPECT_NEAR(MaxFinishTimeRatio(problem, *x), (3 + std::sqrt(5.0)) / 4, 1e-5);
}

// With no time elapsed and no work done, rho_j = eq_j / r_j(X): minimising the worst ratio is
// max-min fairness, so the optimum is 1 / AllocateMaxMin's (an exact LP) on random problems with
// gangs and types some jobs cannot use. Work left does not matter there, so it is random too.
// AllocateMaxMinOneStage's optimum is max-min's too.
TEST(AllocateFinishTimeFairnessTest, MatchesMaxMinWithoutHistory) {
  Rng rng(19);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    AllocationProblem problem;
    problem.num_types = 3;
    problem.gpus_per_type = {4, 8, 12};
    const int n = 3 + static_cast<int>(rng.Below(31));
    for (int j = 0; j < n; ++j) {
      problem.gang.push_back(1 << static_cast<int>(rng.Below(3)));
      for (int t = 0; t < 3; ++t) {
        problem.iters_per_s.push_back(rng.Uniform(0, 1) < 0.1 ? 0.0 : rng.Uniform(0.2, 5));
      }
      problem.remaining_iters.push_back(rng.Uniform(10, 1e5));
      problem.elapsed_s.push_back(0);
      problem.done_iters.push_back(0);
    }
    Result<Allocation> max_min = AllocateMaxMin(problem);
    ASSERT_TRUE(max_min.ok());
    for (const auto allocate : {AllocateFinishTimeFairness, AllocateFinishTimeFairnessMinMax}) {
      Result<Allocation> ftf = allocate(problem);
      ASSERT_TRUE(ftf.ok()) << ftf.status().ToString();
      EXPECT_TRUE(CheckAllocation(problem, *ftf).ok());
      EXPECT_NEAR(MaxFinishTimeRatio(problem, *ftf), 1 / MinNormalisedRate(problem, *max_min),
                  1e-5);
    }
    // max-min's first stage alone reaches the same optimum.
    Result<Allocation> one_stage = AllocateMaxMinOneStage(problem);
    ASSERT_TRUE(one_stage.ok()) << one_stage.status().ToString();
    EXPECT_TRUE(CheckAllocation(problem, *one_stage).ok());
    EXPECT_NEAR(MinNormalisedRate(problem, *one_stage), MinNormalisedRate(problem, *max_min), 1e-6);
  }
}

// Two 1-GPU jobs on 4 GPUs each run all the time (the fill: the min-max optimum needs less),
// and a job that can run nowhere gets nothing and does not count.
TEST(AllocateFinishTimeFairnessTest, RunnableJobsUseFreeGpusOthersGetNothing) {
  AllocationProblem problem{1, {4}, {1, 1, 1}, {1, 2, 0}, {10, 50, 5}, {30, 0, 7}, {5, 0, 0}};
  Result<Allocation> x = AllocateFinishTimeFairness(problem);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_NEAR(x->at(0, 0), 1, 1e-6);
  EXPECT_NEAR(x->at(1, 0), 1, 1e-6);
  EXPECT_EQ(x->at(2, 0), 0);
  EXPECT_TRUE(std::isfinite(MaxFinishTimeRatio(problem, *x)));
}

TEST(AllocateFinishTimeFairnessTest, NeedsTheJobsHistory) {
  AllocationProblem problem{1, {1}, {1}, {1}, {100}, {}, {}};
  EXPECT_FALSE(AllocateFinishTimeFairness(problem).ok());
  problem.elapsed_s = {-1};
  problem.done_iters = {0};
  EXPECT_FALSE(AllocateFinishTimeFairness(problem).ok());
}

// Gavel's max-min program above kOneProgramJobsAtMost jobs: POP partitions, feasible and within
// 1% of the one program over all of them (BENCHMARKS.md measures 0.3% at 2,000 jobs in groups of
// 500); the limits as the profiles use them (one program up to 1,000 jobs, groups of 500).
TEST(AllocateMaxMinGavelTest, AboveTheLimitPartitionsNearTheOneProgram) {
  const int n = kOneProgramJobsAtMost + 200;
  const AllocationProblem p = testing::RandomGavelLikeProblem(n, 11);
  const auto level = [&](const Allocation& x) {  // the program's objective
    double worst = 1e300;
    for (int j = 0; j < n; ++j) {
      double share = 0;
      for (int t = 0; t < 3; ++t) share += p.thr(j, t) * p.gpus_per_type[t];
      worst = std::min(worst, x.EffectiveThroughput(p, j) / (share / p.total_gpus() / p.gang[j]));
    }
    return worst;
  };
  Result<Allocation> one = AllocateMaxMinGavelWithLimits(p, n, 0);
  Result<Allocation> parts = AllocateMaxMinGavel(p);
  ASSERT_TRUE(one.ok() && parts.ok());
  const Status feasible = CheckAllocation(p, *parts);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  EXPECT_NE(one->fraction, parts->fraction);  // the partitions did answer
  EXPECT_LE(level(*parts), level(*one) * (1 + 1e-4));
  EXPECT_GE(level(*parts), 0.99 * level(*one));
}

}  // namespace
}  // namespace dlsched::hetero
