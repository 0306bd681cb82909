#include "lp/dense_simplex.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "dlsched/common/rng.h"

namespace dlsched::hetero {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using S = DenseSimplex::Status;

// maximise 3x + 2y subject to x + y <= 4, x + 3y <= 7, 0 <= x <= 3, y >= 0: by hand, x = 3 at
// its upper bound (a bound flip), y = 1, the first row tight and the second not, objective 11
// (the other vertices: 10.5 at x = 2.5, y = 1.5; 9 at x = 3, y = 0).
TEST(DenseSimplexTest, AKnownOptimum) {
  DenseSimplex lp(2, 2);
  lp.AddColumn(std::vector<int>{0, 1}, std::vector<double>{1, 1});
  lp.AddColumn(std::vector<int>{0, 1}, std::vector<double>{1, 3});
  lp.SetBounds(0, 0, 3);
  lp.SetBounds(1, 0, kInf);
  lp.SetBounds(2, -kInf, 4);
  lp.SetBounds(3, -kInf, 7);
  lp.SetObjective(0, 3);
  lp.SetObjective(1, 2);
  ASSERT_TRUE(lp.Solve());
  EXPECT_NEAR(lp.value(0), 3, 1e-12);
  EXPECT_NEAR(lp.value(1), 1, 1e-12);
  EXPECT_NEAR(lp.value(2), 4, 1e-12);
  EXPECT_EQ(lp.status(0), S::kAtUpper);
  EXPECT_EQ(lp.status(1), S::kBasic);
  EXPECT_EQ(lp.status(2), S::kAtUpper);
  EXPECT_EQ(lp.status(3), S::kBasic);
  EXPECT_NEAR(lp.value(3), 6, 1e-12);
}

// Solve() again after x's upper bound drops from 3 to 2 (x nonbasic at it): the basic values
// must follow the move (y = 2 from the first row would break the second, x + 3y <= 7), so
// phase 1 runs; by hand, x = 2, y = 5/3, the second row tight. A second Solve() after a change
// of costs only, from the same basis, reaches the same values as a new object.
TEST(DenseSimplexTest, ASecondSolveFollowsTheNonbasicValues) {
  const auto build = [](double x_upper) {
    DenseSimplex lp(2, 2);
    lp.AddColumn(std::vector<int>{0, 1}, std::vector<double>{1, 1});
    lp.AddColumn(std::vector<int>{0, 1}, std::vector<double>{1, 3});
    lp.SetBounds(0, 0, x_upper);
    lp.SetBounds(1, 0, kInf);
    lp.SetBounds(2, -kInf, 4);
    lp.SetBounds(3, -kInf, 7);
    lp.SetObjective(0, 3);
    lp.SetObjective(1, 2);
    return lp;
  };
  DenseSimplex lp = build(3);
  ASSERT_TRUE(lp.Solve());
  ASSERT_EQ(lp.status(0), S::kAtUpper);
  lp.SetBounds(0, 0, 2);
  ASSERT_TRUE(lp.Solve());
  EXPECT_NEAR(lp.value(0), 2, 1e-12);
  EXPECT_NEAR(lp.value(1), 5.0 / 3, 1e-12);
  EXPECT_EQ(lp.status(3), S::kAtUpper);
  lp.SetObjective(0, 1);
  lp.SetObjective(1, 1);
  ASSERT_TRUE(lp.Solve());
  DenseSimplex fresh = build(2);
  fresh.SetObjective(0, 1);
  fresh.SetObjective(1, 1);
  ASSERT_TRUE(fresh.Solve());
  EXPECT_NEAR(lp.value(0) + lp.value(1), fresh.value(0) + fresh.value(1), 1e-12);
}

// maximise -x - 2y subject to x + y >= 2, 0 <= x <= 1.5, y >= 0: the slack basis (x = y = 0) is
// infeasible, so phase 1 runs first; by hand, x = 1.5, y = 0.5.
TEST(DenseSimplexTest, PhaseOneFromAnInfeasibleBasis) {
  DenseSimplex lp(1, 2);
  lp.AddColumn(std::vector<int>{0}, std::vector<double>{1});
  lp.AddColumn(std::vector<int>{0}, std::vector<double>{1});
  lp.SetBounds(0, 0, 1.5);
  lp.SetBounds(1, 0, kInf);
  lp.SetBounds(2, 2, kInf);
  lp.SetObjective(0, -1);
  lp.SetObjective(1, -2);
  ASSERT_TRUE(lp.Solve());
  EXPECT_NEAR(lp.value(0), 1.5, 1e-12);
  EXPECT_NEAR(lp.value(1), 0.5, 1e-12);
}

TEST(DenseSimplexTest, InfeasibleAndUnboundedLpsFail) {
  DenseSimplex infeasible(1, 1);  // x >= 2 with x <= 1
  infeasible.AddColumn(std::vector<int>{0}, std::vector<double>{1});
  infeasible.SetBounds(0, 0, 1);
  infeasible.SetBounds(1, 2, kInf);
  EXPECT_FALSE(infeasible.Solve());
  DenseSimplex unbounded(1, 2);  // maximise x subject to x - y <= 1, x, y >= 0
  unbounded.AddColumn(std::vector<int>{0}, std::vector<double>{1});
  unbounded.AddColumn(std::vector<int>{0}, std::vector<double>{-1});
  unbounded.SetBounds(0, 0, kInf);
  unbounded.SetBounds(1, 0, kInf);
  unbounded.SetBounds(2, -kInf, 1);
  unbounded.SetObjective(0, 1);
  EXPECT_FALSE(unbounded.Solve());
}

// A random packing LP: maximise c x subject to A x <= b, 0 <= x <= 1, A >= 0 with about
// three nonzeros per column (the max-min LPs' shape). Column c's entries from `entries[c]`.
struct Packing {
  std::vector<std::vector<std::pair<int, double>>> entries;
  std::vector<double> cost, capacity;
};

Packing RandomPacking(Rng& rng, int rows, int cols) {
  Packing p;
  for (int c = 0; c < cols; ++c) {
    std::vector<std::pair<int, double>> column;
    for (int r = 0; r < rows; ++r) {
      if (rng.Below(rows) < 3) column.push_back({r, rng.Uniform(0.1, 4)});
    }
    p.entries.push_back(column);
    p.cost.push_back(rng.Uniform(0.5, 3));
  }
  for (int r = 0; r < rows; ++r) p.capacity.push_back(rng.Uniform(1, 6));
  return p;
}

// Builds `p` into `lp` (DenseSimplex::Reset: whatever it held before is gone).
void BuildInto(const Packing& p, DenseSimplex& lp) {
  const int rows = static_cast<int>(p.capacity.size());
  const int cols = static_cast<int>(p.cost.size());
  lp.Reset(rows, cols);
  for (int c = 0; c < cols; ++c) {
    std::vector<int> at;
    std::vector<double> value;
    for (const auto& [r, v] : p.entries[c]) {
      at.push_back(r);
      value.push_back(v);
    }
    lp.AddColumn(at, value);
    lp.SetBounds(c, 0, 1);
    lp.SetObjective(c, p.cost[c]);
  }
  for (int r = 0; r < rows; ++r) lp.SetBounds(cols + r, -kInf, p.capacity[r]);
}

DenseSimplex Build(const Packing& p) {
  DenseSimplex lp(0, 0);
  BuildInto(p, lp);
  return lp;
}

double Objective(const DenseSimplex& lp, const Packing& p) {
  double sum = 0;
  for (size_t c = 0; c < p.cost.size(); ++c) sum += p.cost[c] * lp.value(static_cast<int>(c));
  return sum;
}

// Reset: one object solving LPs of growing and shrinking sizes, each built after the last's
// solve (and the last's second stage, its costs changed), takes the same pivots to the same
// values as a new object: nothing of the last LP remains.
TEST(DenseSimplexTest, AResetLpSolvesAsANewOne) {
  Rng rng(5);
  DenseSimplex reused(0, 0);
  for (int trial = 0; trial < 100; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Packing p = RandomPacking(rng, 2 + static_cast<int>(rng.Below(40)),
                                    2 + static_cast<int>(rng.Below(60)));
    BuildInto(p, reused);
    DenseSimplex fresh = Build(p);
    ASSERT_TRUE(fresh.Solve());
    ASSERT_TRUE(reused.Solve());
    EXPECT_EQ(reused.iterations(), fresh.iterations());
    for (int v = 0; v < fresh.rows() + fresh.cols(); ++v) {
      EXPECT_EQ(reused.value(v), fresh.value(v)) << v;
      EXPECT_EQ(reused.status(v), fresh.status(v)) << v;
    }
    for (int c = 0; c < reused.cols(); ++c) reused.SetObjective(c, 1.0);
    ASSERT_TRUE(reused.Solve());
  }
}

// WarmFrom: the last LP's optimum carried to one with a row and a column dropped, a row and a
// column added, and every remaining column's entries rescaled in one row (the max-min LPs' z
// column after a change of the equal shares) reaches the cold solve's optimum.
TEST(DenseSimplexTest, WarmFromReachesTheColdOptimum) {
  Rng rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int rows = 3 + static_cast<int>(rng.Below(30));
    const int cols = 2 + static_cast<int>(rng.Below(50));
    const Packing last_lp = RandomPacking(rng, rows, cols);
    DenseSimplex last = Build(last_lp);
    ASSERT_TRUE(last.Solve());
    // next: row `drop_row` and column `drop_col` gone, a new last row and column, row
    // `scaled` of every column times 1.5.
    const int drop_row = static_cast<int>(rng.Below(rows));
    const int drop_col = static_cast<int>(rng.Below(cols));
    const int scaled = static_cast<int>(rng.Below(rows));
    Packing next_lp;
    std::vector<int> row_to(rows, -1);
    for (int r = 0, k = 0; r < rows; ++r) {
      if (r == drop_row) continue;
      row_to[r] = k++;
      next_lp.capacity.push_back(last_lp.capacity[r]);
    }
    next_lp.capacity.push_back(rng.Uniform(1, 6));
    std::vector<int> col_from;
    for (int c = 0; c < cols; ++c) {
      if (c == drop_col) continue;
      std::vector<std::pair<int, double>> column;
      for (const auto& [r, v] : last_lp.entries[c]) {
        if (row_to[r] >= 0) column.push_back({row_to[r], r == scaled ? 1.5 * v : v});
      }
      if (rng.Below(3) == 0) column.push_back({rows - 1, rng.Uniform(0.1, 4)});
      next_lp.entries.push_back(column);
      next_lp.cost.push_back(last_lp.cost[c]);
      col_from.push_back(c);
    }
    next_lp.entries.push_back({{0, 1.0}, {rows - 1, 2.0}});
    next_lp.cost.push_back(2.5);
    col_from.push_back(-1);
    std::vector<int> row_from(rows, -1);
    for (int r = 0; r < rows; ++r) {
      if (row_to[r] >= 0) row_from[row_to[r]] = r;
    }
    DenseSimplex warm = Build(next_lp);
    DenseSimplex cold = Build(next_lp);
    ASSERT_TRUE(cold.Solve());
    ASSERT_TRUE(warm.WarmFrom(last, row_from, col_from));
    ASSERT_TRUE(warm.Solve());
    EXPECT_NEAR(Objective(warm, next_lp), Objective(cold, next_lp), 1e-9);
  }
}

}  // namespace
}  // namespace dlsched::hetero
