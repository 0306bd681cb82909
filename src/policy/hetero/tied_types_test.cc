#include "policy/hetero/tied_types.h"

#include <gtest/gtest.h>

#include <vector>

namespace dlsched::hetero {
namespace {

// Types 0 and 2 are tied (every job's rate is the same on both, 1:3 GPUs), type 1 is not: each
// job's time on {0, 2} is split 1:3, its time on type 1 stays, and the result stays feasible.
TEST(SpreadOverTiedTypesTest, SplitsTiedTypesByCapacityOnly) {
  AllocationProblem problem{3, {2, 4, 6}, {1, 2}, {1, 3, 1, 2, 1, 2}, {}};
  const Allocation before{3, {1, 0, 0, 0, 0.5, 0.5}};
  ASSERT_TRUE(CheckAllocation(problem, before).ok());
  Allocation x = before;
  SpreadOverTiedTypes(problem, x);
  const std::vector<double> want = {0.25, 0, 0.75, 0.125, 0.5, 0.375};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(x.fraction[i], want[i]) << i;
  EXPECT_TRUE(CheckAllocation(problem, x).ok());
  for (int j = 0; j < 2; ++j) {
    EXPECT_DOUBLE_EQ(x.EffectiveThroughput(problem, j), before.EffectiveThroughput(problem, j));
  }
}

// No two types tied: X is left as it was.
TEST(SpreadOverTiedTypesTest, LeavesDistinctTypesAlone) {
  AllocationProblem problem{2, {1, 1}, {1, 1}, {1, 2, 1, 1}, {}};
  Allocation x{2, {0, 1, 1, 0}};
  SpreadOverTiedTypes(problem, x);
  EXPECT_EQ(x.fraction, (std::vector<double>{0, 1, 1, 0}));
}

}  // namespace
}  // namespace dlsched::hetero
