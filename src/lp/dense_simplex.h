#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dlsched::hetero {

// A bounded primal simplex for small LPs (up to about a hundred rows: each pivot costs
// O(rows^2)), with an explicit dense basis inverse: no factorisation to set up, each pivot a
// rank-one update skipping the inverse's zero multipliers. Written for the max-min LPs of AllocateMaxMin (lp_allocators.h): about 70 rows, a
// few structural nonzeros per column, and a warm basis a few pivots from the optimum.
//
//   maximise   c^T x
//   subject to lower_r <= A_r x <= upper_r     every row r (its auxiliary variable, A_r x)
//              lower_c <= x_c <= upper_c        every column c
//
// Variables 0..cols-1 are the columns, cols..cols+rows-1 the rows' auxiliary variables; every
// variable has at least one finite bound. Solve() runs a composite phase 1 (the sum of bound
// violations) where the starting basis is infeasible, then phase 2, Dantzig's pricing and a
// Harris ratio test, Bland's rule after a run of degenerate pivots; it ends with a check of the
// solution against the original A (row activities to 1e-9 relative; bounds, dual residuals and
// reduced-cost signs to GLPK's 1e-7): a false Solve() (numerical trouble, the iteration limit,
// an unbounded or infeasible LP) means the caller should solve the LP another way. Copyable (a
// copy keeps the basis and its inverse); not thread-safe per object.
class DenseSimplex {
 public:
  enum class Status : uint8_t { kBasic, kAtLower, kAtUpper };

  DenseSimplex(int rows, int cols);

  // Makes this a new LP of `rows` rows and `cols` columns, as constructed, keeping the storage's
  // capacity: the max-min LPs are built anew at every call, in the same objects.
  void Reset(int rows, int cols);

  // Appends the next column of A (columns 0, 1, ... in order, all before the first Solve()):
  // its nonzero entries, distinct rows.
  void AddColumn(std::span<const int> rows, std::span<const double> values);
  void SetBounds(int var, double lower, double upper);  // +-infinity for none
  void SetObjective(int var, double cost);              // 0 unless set
  // The starting basis: `status` per variable (rows' after columns'), built from the slack basis:
  // columns marked basic are brought in in index order, each replacing a row's auxiliary
  // variable marked nonbasic (the one with the largest pivot); those that find none stay
  // nonbasic at their lower bound, and auxiliary variables left over stay basic. A new LP starts
  // from the slack basis (every auxiliary variable basic, the columns at their lower bound).
  void SetBasis(std::span<const Status> status);

  // Starts this LP (built, not yet solved) from `last`'s basis, without refactorising: row r
  // and column c of this LP are row row_from[r] and column col_from[c] of `last` (-1: new; one to
  // one), with the same entries but for columns whose entries changed. Dropped columns leave
  // `last`'s basis (for auxiliary variables of dropped rows where it can), dropped rows'
  // auxiliary variables enter it (for the kept variable with the largest pivot), the new rows'
  // auxiliary variables are basic (a bordered inverse), new columns at their lower bound, kept
  // basic columns whose entries changed exchanged in place (a rank-one update each); the kept
  // nonbasic variables keep their status. Consumes `last`. False where a pivot falls below
  // tolerance: then this LP must be built again.
  bool WarmFrom(DenseSimplex& last, std::span<const int> row_from, std::span<const int> col_from);

  // Solves from the current basis (nonbasic variables placed at their bounds first); true when
  // optimal and checked. The basis, its inverse and the values stay, for a next Solve() after
  // changes of bounds or costs (max-min's second stage) or for WarmFrom.
  bool Solve();

  double value(int var) const { return x_[var]; }
  Status status(int var) const { return status_[var]; }
  int64_t iterations() const { return iterations_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }

 private:
  int num_vars() const { return rows_ + cols_; }
  // Every auxiliary variable basic (B = -I); the columns' statuses untouched, none basic. B^-1
  // is written when first needed (WriteSlackInverse, at Solve() or SetBasis()): a warm start
  // (WarmFrom) writes its own instead.
  void ResetToSlackBasis();
  void WriteSlackInverse();  // B^-1 = -I where ResetToSlackBasis left it unwritten
  double* inverse_row(int pos) { return &inverse_[static_cast<size_t>(pos) * rows_]; }
  // alpha = B^-1 a_var (a row's auxiliary variable has the column -e_row).
  void Ftran(int var, std::vector<double>& alpha) const;
  // Makes `var` basic in position `pos` (alpha = B^-1 a_var, alpha[pos] != 0).
  void Pivot(int var, int pos, const std::vector<double>& alpha);
  void PlaceNonbasic(int var, Status status);
  // The index among `among` of the largest |values[i]|, -1 if none.
  static int LargestIn(std::span<const double> values, std::span<const int> among);
  // x_B from the nonbasic values: B x_B = -N x_N.
  void ComputeBasicValues();
  // y = c_B^T B^-1 for phase 2's costs, or phase 1's (+1 below a lower bound, -1 above an upper).
  void ComputeDuals(bool phase1, std::vector<double>& y) const;
  double ReducedCost(int var, bool phase1, const std::vector<double>& y) const;
  // Phase 1 (phase1) or 2 until optimal; false on failure.
  bool Iterate(bool phase1);
  double Infeasibility(int var) const;  // > 0 below lower, < 0 above upper, 0 within tolerance
  bool Verify();

  int rows_, cols_;
  std::vector<int> col_start_;
  std::vector<int> entry_row_;
  std::vector<double> entry_value_;
  std::vector<double> lower_, upper_, cost_, x_;
  std::vector<Status> status_;
  std::vector<int> head_;  // basis position -> variable
  std::vector<int> pos_;   // variable -> basis position, -1 if nonbasic
  std::vector<double> inverse_;  // B^-1, row-major, rows_ x rows_
  // Working storage, kept for its capacity (no allocation per call once grown); each use
  // overwrites what it reads. Pivot()'s: the pivot row's nonzero columns.
  std::vector<int> nonzeros_;
  std::vector<double> alpha_, y_, raw_, hit_;  // Iterate()'s, WarmFrom()'s and SetBasis()'s
  std::vector<double> rhs_;                    // ComputeBasicValues()'s
  std::vector<double> activity_, magnitude_;   // Verify()'s, with y_
  std::vector<int> row_to_, col_to_, candidates_;  // WarmFrom()'s, with diff_ and runs_
  std::vector<double> diff_;
  struct Run {  // WarmFrom()'s: consecutive kept rows from consecutive rows of the last LP
    int to, from, length;
  };
  std::vector<Run> runs_;
  int64_t iterations_ = 0;
  // x_ holds what ComputeBasicValues() would give for the current basis, inverse and nonbasic
  // values: set at the end of Solve(), cleared by anything that changes the basis, its inverse
  // or A.
  bool basic_values_current_ = false;
  bool slack_inverse_pending_ = false;  // inverse_ is to be -I (ResetToSlackBasis), unwritten
};

}  // namespace dlsched::hetero
