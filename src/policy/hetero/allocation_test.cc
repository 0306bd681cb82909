#include "policy/hetero/allocation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlsched::hetero {
namespace {

// 2 jobs x 2 types of one GPU each; job 1 runs 3x faster on type 1, job 0 the same on both.
AllocationProblem SpeedupInstance() {
  AllocationProblem p;
  p.num_types = 2;
  p.gpus_per_type = {1, 1};
  p.gang = {1, 1};
  p.iters_per_s = {1, 1,   // job 0
                   1, 3};  // job 1
  return p;
}

void ExpectAllocation(const Allocation& x, const std::vector<double>& want) {
  ASSERT_EQ(x.fraction.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(x.fraction[i], want[i], 1e-6) << "entry " << i;
  }
}

TEST(EqualShareTest, SplitsEveryTypeEvenlyAndIsFeasible) {
  const AllocationProblem p = SpeedupInstance();
  const Allocation x = EqualShare(p);
  ExpectAllocation(x, {0.5, 0.5, 0.5, 0.5});
  EXPECT_TRUE(CheckAllocation(p, x).ok());
  EXPECT_DOUBLE_EQ(x.EffectiveThroughput(p, 0), 1.0);
  EXPECT_DOUBLE_EQ(x.EffectiveThroughput(p, 1), 2.0);
}

TEST(EqualShareTest, CapsAJobAtAllOfItsTimeAndSkipsTypesItCannotUse) {
  AllocationProblem p;
  p.num_types = 2;
  p.gpus_per_type = {4, 4};
  p.gang = {1, 2};
  p.iters_per_s = {1, 1,   // job 0: share min(1, 8 / 2) = 1
                   0, 2};  // job 1: only type 1; share min(1, 8 / 4) = 1, half of it lost
  const Allocation x = EqualShare(p);
  ExpectAllocation(x, {0.5, 0.5, 0, 0.5});
  EXPECT_TRUE(CheckAllocation(p, x).ok());
}

TEST(CheckAllocationTest, NamesTheViolatedConstraint) {
  const AllocationProblem p = SpeedupInstance();
  struct Case {
    std::string name;
    std::vector<double> x;
    std::string want;  // empty: feasible
  };
  const std::vector<Case> cases = {
      {"feasible", {1, 0, 0, 1}, ""},
      {"negative", {-0.1, 0, 0, 1}, "< 0"},
      {"more than all of a job's time", {0.6, 0.6, 0, 0}, "of the time"},
      {"over capacity", {1, 0, 1, 0}, "type 0 is allocated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Status status = CheckAllocation(p, {2, c.x});
    if (c.want.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      EXPECT_NE(status.message().find(c.want), std::string::npos) << status.ToString();
    }
  }
  AllocationProblem no_type_1 = p;
  no_type_1.iters_per_s = {1, 0, 1, 1};
  EXPECT_FALSE(CheckAllocation(no_type_1, {2, {0, 0.5, 0, 0}}).ok());
}

TEST(ValidateProblemTest, RejectsMalformedProblems) {
  AllocationProblem p = SpeedupInstance();
  EXPECT_TRUE(ValidateProblem(p).ok());
  p.gang[1] = 0;
  EXPECT_FALSE(ValidateProblem(p).ok());
  p = SpeedupInstance();
  p.iters_per_s.pop_back();
  EXPECT_FALSE(ValidateProblem(p).ok());
  p = SpeedupInstance();
  p.remaining_iters = {1, 0};
  EXPECT_FALSE(ValidateProblem(p).ok());
}

TEST(AllocateGreedyTest, GivesTheFastTypeToTheJobThatGainsMost) {
  const AllocationProblem p = SpeedupInstance();
  Result<Allocation> x = AllocateGreedy(p);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ExpectAllocation(*x, {1, 0, 0, 1});
}

TEST(AllocateGreedyTest, TimeSharesOneGpuEquallyAndFillsIdleCapacity) {
  AllocationProblem p;
  p.num_types = 1;
  p.gpus_per_type = {1};
  p.gang = {1, 1};
  p.iters_per_s = {1, 2};
  Result<Allocation> x = AllocateGreedy(p);
  ASSERT_TRUE(x.ok());
  ExpectAllocation(*x, {0.5, 0.5});

  // One job, two GPUs: its share is all of its time.
  p.gpus_per_type = {2};
  p.gang = {1};
  p.iters_per_s = {1};
  x = AllocateGreedy(p);
  ASSERT_TRUE(x.ok());
  ExpectAllocation(*x, {1});
}

TEST(AllocateGreedyTest, AJobThatCannotUseTheFastTypeGetsTheSlowOne) {
  AllocationProblem p;
  p.num_types = 2;
  p.gpus_per_type = {2, 2};  // type 0 slow, type 1 fast
  p.gang = {2, 2};
  p.iters_per_s = {1, 4,   // job 0
                   1, 0};  // job 1 cannot run on type 1
  Result<Allocation> x = AllocateGreedy(p);
  ASSERT_TRUE(x.ok());
  ExpectAllocation(*x, {0, 1, 1, 0});
}

}  // namespace
}  // namespace dlsched::hetero
