#include "lp/min_jct_flow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"
#include "lp/lp_allocators.h"
#include "support/allocation_problems.h"

namespace dlsched::hetero {
namespace {

// The flow's objective against GLPK's optimum of the same LP (one LP over all the jobs), to a
// relative 1e-9, and its allocation feasible.
void ExpectOptimal(const AllocationProblem& p) {
  Result<Allocation> flow = AllocateMinJctFlow(p);
  Result<Allocation> lp = AllocateMinJctLp(p);
  ASSERT_TRUE(flow.ok()) << flow.status().ToString();
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  const Status feasible = CheckAllocation(p, *flow, 1e-9);
  EXPECT_TRUE(feasible.ok()) << feasible.ToString();
  const double want = CompletionRate(p, *lp);
  EXPECT_NEAR(CompletionRate(p, *flow), want, 1e-9 * std::max(want, 1e-300));
}

// A known optimum, worked by hand. Two types of 2 GPUs each, four jobs (rates on type 0, type 1;
// remaining work; gang), per-GPU profit p = thr / remaining / gang:
//   job 0: (1, 4),  work 1, gang 1: p = (1, 4)
//   job 1: (2, 3),  work 1, gang 1: p = (2, 3)
//   job 2: (6, 6),  work 1, gang 2: p = (3, 3)
//   job 3: (1, 1),  work 1, gang 1: p = (1, 1)
// Type 1 is worth most to job 0 (4) and then to jobs 1 and 2 (3 each), type 0 most to job 2 (3).
// The optimum puts job 2's gang on type 0 (profit 6) and jobs 0 and 1 on type 1 (4 + 3): 13.
// Any other placement loses: job 2 on type 1 leaves type 0 to jobs 1 and 0 or 3 (6 + 2 + 1 = 9).
// The LP's dual proves it: GPU prices (3, 3) and job 0's surplus 1 cost 2 x 3 + 2 x 3 + 1 = 13.
TEST(MinJctFlowTest, AKnownOptimum) {
  const AllocationProblem p{2, {2, 2}, {1, 1, 2, 1}, {1, 4, 2, 3, 6, 6, 1, 1}, {1, 1, 1, 1}};
  Result<Allocation> x = AllocateMinJctFlow(p);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  const std::vector<double> want = {0, 1, 0, 1, 1, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(x->fraction[i], want[i], 1e-12) << i;
  EXPECT_NEAR(CompletionRate(p, *x), 13, 1e-12);
  ExpectOptimal(p);
}

// An optimum only an exchange reaches: job 0 gains most on type 1 (profit 10 vs 9 on type 0), so
// the first path puts it there; job 1 can run only on type 1 (profit 5). One GPU of each type:
// the optimum moves job 0 to type 0 (9) and gives type 1 to job 1 (5), 14 > 10 + 0.
TEST(MinJctFlowTest, APathMovesAPlacedJob) {
  const AllocationProblem p{2, {1, 1}, {1, 1}, {9, 10, 0, 5}, {1, 1}};
  Result<Allocation> x = AllocateMinJctFlow(p);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  const std::vector<double> want = {1, 0, 0, 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(x->fraction[i], want[i], 1e-12) << i;
  ExpectOptimal(p);
}

// The tie rule: jobs of equal profit per GPU (here identical jobs) are served in job index order,
// the lower index first and on the faster type. Three like jobs (rates 1 and 2 on the two types,
// work 10, gang 1), one GPU of each type: job 0 on type 1, job 1 on type 0, job 2 without a GPU.
TEST(MinJctFlowTest, TiesGoToTheLowerJobIndex) {
  const AllocationProblem p{2, {1, 1}, {1, 1, 1}, {1, 2, 1, 2, 1, 2}, {10, 10, 10}};
  Result<Allocation> x = AllocateMinJctFlow(p);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(x->fraction, (std::vector<double>{0, 1, 1, 0, 0, 0}));
  ExpectOptimal(p);
}

TEST(MinJctFlowTest, EdgeCases) {
  // No jobs; no GPUs; a job that can run nowhere; more GPUs than demand (every job all its
  // time on its best type).
  for (const AllocationProblem& p : std::vector<AllocationProblem>{
           {2, {1, 1}, {}, {}, {}},
           {2, {0, 0}, {1, 2}, {1, 2, 3, 4}, {5, 6}},
           {1, {4}, {1, 1}, {0, 1}, {1, 1}},
           {2, {8, 8}, {1, 2}, {1, 2, 3, 1}, {10, 20}},
       }) {
    SCOPED_TRACE(p.num_jobs());
    ExpectOptimal(p);
  }
  Result<Allocation> roomy = AllocateMinJctFlow({2, {8, 8}, {1, 2}, {1, 2, 3, 1}, {10, 20}});
  ASSERT_TRUE(roomy.ok());
  EXPECT_EQ(roomy->fraction, (std::vector<double>{0, 1, 1, 0}));
  EXPECT_FALSE(AllocateMinJctFlow({1, {1}, {1}, {1}, {}}).ok());
  EXPECT_FALSE(AllocateMinJctFlow({1, {1}, {0}, {1}, {1}}).ok());
}

// Random instances of every shape the policies produce: 1 to 8 types, gangs 1 to 8, some jobs
// unable to use some types, capacities from scarce to ample, remaining work over 3 decades; and
// ties (rates and work drawn from a few values), where the optimum is not unique.
TEST(MinJctFlowTest, RandomInstancesMatchTheLp) {
  Rng rng(19);
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const bool ties = trial % 3 == 0;
    AllocationProblem p;
    p.num_types = 1 + static_cast<int>(rng.Below(8));
    const int n = static_cast<int>(rng.Below(120));
    for (int t = 0; t < p.num_types; ++t) {
      p.gpus_per_type.push_back(static_cast<int>(rng.Below(2 + n)));
    }
    for (int j = 0; j < n; ++j) {
      p.gang.push_back(1 << rng.Below(4));
      for (int t = 0; t < p.num_types; ++t) {
        const double rate = ties ? 1 + static_cast<double>(rng.Below(3)) : rng.Uniform(0.1, 10);
        p.iters_per_s.push_back(rng.Below(6) == 0 ? 0 : rate);
      }
      p.remaining_iters.push_back(ties ? 100 * (1 + static_cast<double>(rng.Below(2)))
                                       : std::exp(rng.Uniform(std::log(1e3), std::log(1e6))));
    }
    ExpectOptimal(p);
  }
}

// At the policies' scale: 2,000 jobs on three types, the LP's optimum to 1e-9.
TEST(MinJctFlowTest, ThousandsOfJobsMatchTheLp) {
  AllocationProblem p = testing::RandomGavelLikeProblem(2000, 3);
  p.gpus_per_type = {500, 400, 300};
  ExpectOptimal(p);
}

}  // namespace
}  // namespace dlsched::hetero
