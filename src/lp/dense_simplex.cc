#include "lp/dense_simplex.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace dlsched::hetero {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bound violations a basic variable may take in the Harris ratio test, and phase 1's threshold,
// relative to max(1, |bound|).
constexpr double kFeasibilityTol = 1e-9;
// A reduced cost must pass this, times max(1, the largest |cost|), for its variable to enter.
constexpr double kOptimalityTol = 1e-9;
// What Verify() accepts: GLPK's own bound and reduced-cost tolerances (tol_bnd, tol_dj).
constexpr double kVerifyTol = 1e-7;
// Entries of B^-1 a_q below this are no pivots.
constexpr double kPivotTol = 1e-9;
// Degenerate pivots in a row after which the entering and leaving choices follow Bland's rule.
constexpr int kDegenerateBeforeBland = 50;
// x_B recomputed from the nonbasic values this often, against the drift of its updates.
constexpr int kRefreshEvery = 50;

double Tol(double bound) { return kFeasibilityTol * std::max(1.0, std::abs(bound)); }

// The dense kernels below run with AVX2 where the CPU has it (four doubles an instruction, SSE2's
// two elsewhere), chosen once at load time, and give the same bits either way: the compiler may
// vectorise a loop only where the arithmetic stays the same (no reassociation), and the avx2
// target does not enable fused multiply-adds, so no product is contracted into a sum. (An
// avx512f clone would enable FMA, and measured no faster.)
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define DLSCHED_DENSE_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define DLSCHED_DENSE_KERNEL
#endif

// to[i] += f from[i], i < n (to[i] - g from[i] is the same sum with f = -g).
DLSCHED_DENSE_KERNEL
void AddMultiple(double* __restrict to, const double* __restrict from, double f, int n) {
  for (int i = 0; i < n; ++i) to[i] += f * from[i];
}

// Row i of the n x n row-major `inverse` less alpha[i] times row `pos`, every i != pos with
// alpha[i] != 0: Pivot()'s update where the pivot row is dense.
DLSCHED_DENSE_KERNEL
void EliminateDense(double* inverse, int n, int pos, const double* alpha) {
  const double* pivot_row = inverse + static_cast<size_t>(pos) * n;
  for (int i = 0; i < n; ++i) {
    if (i == pos || alpha[i] == 0.0) continue;
    double* row = inverse + static_cast<size_t>(i) * n;
    const double f = alpha[i];
    for (int c = 0; c < n; ++c) row[c] -= f * pivot_row[c];
  }
}

// sum_i a[i] b[i], in four independent sums (the compiler keeps a reduction in order).
DLSCHED_DENSE_KERNEL
double Dot(const double* a, const double* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

DenseSimplex::DenseSimplex(int rows, int cols) { Reset(rows, cols); }

void DenseSimplex::Reset(int rows, int cols) {
  rows_ = rows;
  cols_ = cols;
  iterations_ = 0;
  col_start_.assign(1, 0);
  entry_row_.clear();
  entry_value_.clear();
  const size_t vars = static_cast<size_t>(rows + cols);
  lower_.assign(vars, 0.0);
  upper_.assign(vars, kInf);
  cost_.assign(vars, 0.0);
  x_.assign(vars, 0.0);
  status_.assign(vars, Status::kAtLower);
  head_.resize(static_cast<size_t>(rows));
  pos_.resize(vars);
  inverse_.resize(static_cast<size_t>(rows) * rows);  // written by WriteSlackInverse
  ResetToSlackBasis();
}

void DenseSimplex::ResetToSlackBasis() {
  basic_values_current_ = false;
  slack_inverse_pending_ = true;
  for (int r = 0; r < rows_; ++r) {
    head_[r] = cols_ + r;
    pos_[cols_ + r] = r;
    status_[cols_ + r] = Status::kBasic;
  }
  for (int c = 0; c < cols_; ++c) pos_[c] = -1;
}

void DenseSimplex::WriteSlackInverse() {
  if (!slack_inverse_pending_) return;
  slack_inverse_pending_ = false;
  std::fill(inverse_.begin(), inverse_.end(), 0.0);
  for (int r = 0; r < rows_; ++r) inverse_[static_cast<size_t>(r) * rows_ + r] = -1.0;  // B = -I
}

void DenseSimplex::AddColumn(std::span<const int> rows, std::span<const double> values) {
  basic_values_current_ = false;
  entry_row_.insert(entry_row_.end(), rows.begin(), rows.end());
  entry_value_.insert(entry_value_.end(), values.begin(), values.end());
  col_start_.push_back(static_cast<int>(entry_row_.size()));
}

void DenseSimplex::SetBounds(int var, double lower, double upper) {
  lower_[var] = lower;
  upper_[var] = upper;
}

void DenseSimplex::SetObjective(int var, double cost) { cost_[var] = cost; }

void DenseSimplex::Ftran(int var, std::vector<double>& alpha) const {
  alpha.assign(rows_, 0.0);
  if (var >= cols_) {
    const int r = var - cols_;
    for (int i = 0; i < rows_; ++i) alpha[i] = -inverse_[static_cast<size_t>(i) * rows_ + r];
    return;
  }
  for (int k = col_start_[var]; k < col_start_[var + 1]; ++k) {
    const int r = entry_row_[k];
    const double v = entry_value_[k];
    for (int i = 0; i < rows_; ++i) alpha[i] += v * inverse_[static_cast<size_t>(i) * rows_ + r];
  }
}

void DenseSimplex::Pivot(int var, int pos, const std::vector<double>& alpha) {
  // B^-1 <- E B^-1: the pivot row divided by the pivot, alpha_i times it taken from row i. Built
  // from the slack basis the inverse is sparse (about 8 nonzeros in the pivot row, 12 in alpha
  // at 70 rows), and only the pivot row's nonzeros are visited; carried across calls
  // (WarmFrom) it fills (about 80% nonzero), and a contiguous loop is faster.
  double* pivot_row = inverse_row(pos);
  const double scale = 1.0 / alpha[pos];
  nonzeros_.clear();
  for (int c = 0; c < rows_; ++c) {
    if (pivot_row[c] == 0.0) continue;
    pivot_row[c] *= scale;
    nonzeros_.push_back(c);
  }
  if (3 * nonzeros_.size() > static_cast<size_t>(rows_)) {
    EliminateDense(inverse_.data(), rows_, pos, alpha.data());
  } else {
    for (int i = 0; i < rows_; ++i) {
      if (i == pos || alpha[i] == 0.0) continue;
      double* row = inverse_row(i);
      const double f = alpha[i];
      for (int c : nonzeros_) row[c] -= f * pivot_row[c];
    }
  }
  basic_values_current_ = false;
  const int leaving = head_[pos];
  pos_[leaving] = -1;
  head_[pos] = var;
  pos_[var] = pos;
  status_[var] = Status::kBasic;
}

void DenseSimplex::PlaceNonbasic(int var, Status status) {
  // A variable sits at a finite bound: the one asked for where it is finite.
  const bool lower = status == Status::kAtLower ? std::isfinite(lower_[var])
                                                : !std::isfinite(upper_[var]);
  status_[var] = lower ? Status::kAtLower : Status::kAtUpper;
  x_[var] = lower ? lower_[var] : upper_[var];
}

void DenseSimplex::SetBasis(std::span<const Status> status) {
  ResetToSlackBasis();
  WriteSlackInverse();
  for (int c = 0; c < cols_; ++c) {
    PlaceNonbasic(c, status[c] == Status::kAtUpper ? Status::kAtUpper : Status::kAtLower);
  }
  // In index order: the max-min LPs' dense z column last, where its pivot fills the inverse
  // least (first, it makes every later pivot dense: 4x the work).
  std::vector<double>& alpha = alpha_;
  for (int c = 0; c < cols_; ++c) {
    if (status[c] != Status::kBasic) continue;
    Ftran(c, alpha);
    int best = -1;
    for (int i = 0; i < rows_; ++i) {
      const int v = head_[i];
      if (v < cols_ || status[v] == Status::kBasic) continue;  // not an auxiliary to replace
      if (best < 0 || std::abs(alpha[i]) > std::abs(alpha[best])) best = i;
    }
    if (best < 0 || std::abs(alpha[best]) < 1e-7) continue;
    const int leaving = head_[best];
    Pivot(c, best, alpha);
    PlaceNonbasic(leaving, status[leaving]);
  }
}

int DenseSimplex::LargestIn(std::span<const double> values, std::span<const int> among) {
  int best = -1;
  for (int i : among) {
    if (best < 0 || std::abs(values[i]) > std::abs(values[best])) best = i;
  }
  return best;
}

bool DenseSimplex::WarmFrom(DenseSimplex& last, std::span<const int> row_from,
                            std::span<const int> col_from) {
  basic_values_current_ = false;
  last.WriteSlackInverse();
  std::vector<int>& row_to = row_to_;
  std::vector<int>& col_to = col_to_;
  row_to.assign(last.rows_, -1);
  col_to.assign(last.cols_, -1);
  for (int r = 0; r < rows_; ++r) {
    if (row_from[r] >= 0) row_to[row_from[r]] = r;
  }
  for (int c = 0; c < cols_; ++c) {
    if (col_from[c] >= 0) col_to[col_from[c]] = c;
  }
  const auto dropped_aux = [&](int v) { return v >= last.cols_ && row_to[v - last.cols_] < 0; };
  std::vector<double>& alpha = alpha_;
  std::vector<int>& candidates = candidates_;
  // Dropped columns leave the basis, each for the auxiliary variable (nonbasic: column r of
  // B^-1 is -e_pos for a basic one) with the largest entry in its row of B^-1, a dropped row's
  // where one is near the largest.
  for (int c = 0; c < last.cols_; ++c) {
    const int p = last.pos_[c];
    if (col_to[c] >= 0 || p < 0) continue;
    const double* row = last.inverse_row(p);
    int best = -1, best_dropped = -1;
    for (int r = 0; r < last.rows_; ++r) {
      if (row[r] == 0.0) continue;
      if (best < 0 || std::abs(row[r]) > std::abs(row[best])) best = r;
      if (row_to[r] < 0 && (best_dropped < 0 || std::abs(row[r]) > std::abs(row[best_dropped]))) {
        best_dropped = r;
      }
    }
    if (best < 0 || std::abs(row[best]) < kPivotTol) return false;
    if (best_dropped >= 0 && std::abs(row[best_dropped]) >= 0.01 * std::abs(row[best])) {
      best = best_dropped;
    }
    last.Ftran(last.cols_ + best, alpha);
    last.Pivot(last.cols_ + best, p, alpha);
    last.status_[c] = Status::kAtLower;
  }
  // Dropped rows' auxiliary variables enter, each for the kept variable with the largest pivot.
  for (int r = 0; r < last.rows_; ++r) {
    const int aux = last.cols_ + r;
    if (row_to[r] >= 0 || last.pos_[aux] >= 0) continue;
    last.Ftran(aux, alpha);
    candidates.clear();
    for (int i = 0; i < last.rows_; ++i) {
      if (!dropped_aux(last.head_[i])) candidates.push_back(i);
    }
    const int p = LargestIn(alpha, candidates);
    if (p < 0 || std::abs(alpha[p]) < kPivotTol) return false;
    const int leaving = last.head_[p];
    last.Pivot(aux, p, alpha);
    const double x = last.x_[leaving];
    last.status_[leaving] = std::abs(x - last.lower_[leaving]) <= std::abs(last.upper_[leaving] - x)
                                ? Status::kAtLower
                                : Status::kAtUpper;
  }
  // B = [[B_kept, 0], [U, -I]] over the kept positions and the new rows' auxiliary variables:
  // B^-1 = [[B_kept^-1, 0], [U B_kept^-1, -I]], B_kept^-1 the last inverse less the dropped
  // rows' positions and columns.
  const auto var_to = [&](int v) {
    return v < last.cols_ ? col_to[v] : (row_to[v - last.cols_] < 0 ? -1 : cols_ + row_to[v - last.cols_]);
  };
  std::fill(pos_.begin(), pos_.end(), -1);
  // The kept rows as runs of consecutive rows from consecutive rows (jobs keep their order: a
  // few runs), each row of the inverse copied run by run.
  std::vector<Run>& runs = runs_;
  runs.clear();
  for (int r = 0; r < rows_; ++r) {
    if (row_from[r] < 0) continue;
    if (!runs.empty() && runs.back().to + runs.back().length == r &&
        runs.back().from + runs.back().length == row_from[r]) {
      ++runs.back().length;
    } else {
      runs.push_back({r, row_from[r], 1});
    }
  }
  int q = 0;
  for (int p = 0; p < last.rows_; ++p) {
    const int v = var_to(last.head_[p]);
    if (v < 0) continue;
    const double* from = last.inverse_row(p);
    double* to = inverse_row(q);
    int written = 0;  // runs ascend in `to`; the new rows' columns between them are zero
    for (const Run& run : runs) {
      std::fill(to + written, to + run.to, 0.0);
      std::copy_n(from + run.from, run.length, to + run.to);
      written = run.to + run.length;
    }
    std::fill(to + written, to + rows_, 0.0);
    head_[q] = v;
    pos_[v] = q++;
  }
  for (int r = 0; r < rows_; ++r) {
    if (row_from[r] >= 0) continue;
    if (q == rows_) return false;  // row_from does not map rows one to one
    head_[q] = cols_ + r;
    pos_[cols_ + r] = q;
    std::fill_n(inverse_row(q), rows_, 0.0);
    inverse_row(q)[r] = -1.0;
    ++q;
  }
  if (q != rows_) return false;  // row_from does not map rows one to one
  slack_inverse_pending_ = false;  // every entry written
  for (int c = 0; c < cols_; ++c) {
    const int p = pos_[c];
    if (p < 0) continue;
    for (int k = col_start_[c]; k < col_start_[c + 1]; ++k) {
      const int r = entry_row_[k];
      if (row_from[r] >= 0) continue;
      double* to = inverse_row(pos_[cols_ + r]);
      const double* from = inverse_row(p);
      AddMultiple(to, from, entry_value_[k], rows_);
    }
  }
  for (int v = 0; v < num_vars(); ++v) {
    const int from = v < cols_ ? col_from[v] : row_from[v - cols_];
    const int last_v = v < cols_ ? from : (from < 0 ? -1 : last.cols_ + from);
    if (pos_[v] >= 0) {
      status_[v] = Status::kBasic;
    } else {
      status_[v] = last_v >= 0 ? last.status_[last_v] : Status::kAtLower;
      if (status_[v] == Status::kBasic) status_[v] = Status::kAtLower;
    }
  }
  // Kept basic columns whose entries in kept rows changed are exchanged in place.
  std::vector<double>& diff = diff_;
  diff.assign(rows_, 0.0);
  for (int c = 0; c < cols_; ++c) {
    if (pos_[c] < 0) continue;
    const int lc = col_from[c];
    for (int k = col_start_[c]; k < col_start_[c + 1]; ++k) {
      if (row_from[entry_row_[k]] >= 0) diff[entry_row_[k]] += entry_value_[k];
    }
    for (int k = last.col_start_[lc]; k < last.col_start_[lc + 1]; ++k) {
      const int r = row_to[last.entry_row_[k]];
      if (r >= 0) diff[r] -= last.entry_value_[k];
    }
    bool changed = false;
    for (int k = col_start_[c]; k < col_start_[c + 1]; ++k) {
      changed = changed || diff[entry_row_[k]] != 0.0;
      diff[entry_row_[k]] = 0.0;
    }
    for (int k = last.col_start_[lc]; k < last.col_start_[lc + 1]; ++k) {
      const int r = row_to[last.entry_row_[k]];
      if (r < 0) continue;
      changed = changed || diff[r] != 0.0;
      diff[r] = 0.0;
    }
    if (!changed) continue;
    Ftran(c, alpha);
    const int p = pos_[c];
    if (std::abs(alpha[p]) < 1e-7) return false;
    Pivot(c, p, alpha);
  }
  return true;
}

void DenseSimplex::ComputeBasicValues() {
  // rhs = N x_N, then x_B = -B^-1 rhs.
  std::vector<double>& rhs = rhs_;
  rhs.assign(rows_, 0.0);
  for (int c = 0; c < cols_; ++c) {
    if (pos_[c] >= 0 || x_[c] == 0.0) continue;
    for (int k = col_start_[c]; k < col_start_[c + 1]; ++k) {
      rhs[entry_row_[k]] += entry_value_[k] * x_[c];
    }
  }
  for (int r = 0; r < rows_; ++r) {
    if (pos_[cols_ + r] < 0) rhs[r] -= x_[cols_ + r];
  }
  for (int i = 0; i < rows_; ++i) {
    x_[head_[i]] = -Dot(&inverse_[static_cast<size_t>(i) * rows_], rhs.data(), rows_);
  }
}

double DenseSimplex::Infeasibility(int var) const {
  if (x_[var] < lower_[var] - Tol(lower_[var])) return 1.0;
  if (x_[var] > upper_[var] + Tol(upper_[var])) return -1.0;
  return 0.0;
}

void DenseSimplex::ComputeDuals(bool phase1, std::vector<double>& y) const {
  std::fill(y.begin(), y.end(), 0.0);
  for (int i = 0; i < rows_; ++i) {
    const double c = phase1 ? Infeasibility(head_[i]) : cost_[head_[i]];
    if (c == 0.0) continue;
    const double* row = &inverse_[static_cast<size_t>(i) * rows_];
    AddMultiple(y.data(), row, c, rows_);
  }
}

inline double DenseSimplex::ReducedCost(int var, bool phase1, const std::vector<double>& y) const {
  double d = phase1 ? 0.0 : cost_[var];
  if (var >= cols_) return d + y[var - cols_];
  for (int k = col_start_[var]; k < col_start_[var + 1]; ++k) {
    d -= y[entry_row_[k]] * entry_value_[k];
  }
  return d;
}

bool DenseSimplex::Iterate(bool phase1) {
  const int limit = 20 * (rows_ + cols_) + 100;
  double largest_cost = 1.0;
  if (!phase1) {
    for (double c : cost_) largest_cost = std::max(largest_cost, std::abs(c));
  }
  const double dual_tol = kOptimalityTol * largest_cost;
  std::vector<double>& y = y_;
  std::vector<double>& alpha = alpha_;
  std::vector<double>& raw = raw_;
  std::vector<double>& hit = hit_;
  for (std::vector<double>* v : {&y, &alpha, &raw, &hit}) v->assign(rows_, 0.0);
  int degenerate = 0;
  // Phase 2's duals are updated at each pivot (y += d_q times the new pivot row of B^-1) and
  // recomputed with x_B; phase 1's costs change with the set of violated bounds, so its duals
  // are recomputed at every iteration.
  if (!phase1) ComputeDuals(false, y);
  for (int it = 0; it < limit; ++it) {
    if (it > 0 && it % kRefreshEvery == 0) {
      ComputeBasicValues();
      if (!phase1) ComputeDuals(false, y);
    }
    if (phase1) {
      bool feasible = true;
      for (int i = 0; i < rows_ && feasible; ++i) feasible = Infeasibility(head_[i]) == 0.0;
      if (feasible) return true;
      ComputeDuals(true, y);
    }
    // Pricing: the largest improving reduced cost (Dantzig), or the first (Bland). (Devex
    // weights, tried: more pivots on these LPs, not fewer.)
    const bool bland = degenerate >= kDegenerateBeforeBland;
    int entering = -1;
    double entering_d = 0;
    for (int v = 0; v < num_vars(); ++v) {
      if (pos_[v] >= 0 || lower_[v] == upper_[v]) continue;
      const double d = ReducedCost(v, phase1, y);
      const bool improves = status_[v] == Status::kAtLower ? d > dual_tol : d < -dual_tol;
      if (!improves) continue;
      if (entering < 0 || (!bland && std::abs(d) > std::abs(entering_d))) {
        entering = v;
        entering_d = d;
        if (bland) break;
      }
    }
    if (entering < 0) return !phase1;  // optimal, or (phase 1) infeasible
    const double dir = status_[entering] == Status::kAtLower ? 1.0 : -1.0;
    Ftran(entering, alpha);
    // Ratio test (Harris's two passes; Bland: the smallest ratio, ties to the lowest variable).
    // Basic variable i moves at delta_i = -dir * alpha_i per unit step; in phase 1 one outside
    // its bounds may move freely away from them and stops where it gets back inside. raw[i]:
    // the step at which it meets the bound hit[i]; theta_max: the smallest step with the
    // bounds relaxed by their tolerance.
    double theta_max = kInf;
    for (int i = 0; i < rows_; ++i) {
      raw[i] = kInf;
      if (std::abs(alpha[i]) < kPivotTol) continue;
      const int v = head_[i];
      double lo = lower_[v], up = upper_[v];
      if (phase1) {
        const double violation = Infeasibility(v);
        if (violation > 0) lo = -kInf, up = lower_[v];
        if (violation < 0) lo = upper_[v], up = kInf;
      }
      const double delta = -dir * alpha[i];
      const double bound = delta < 0 ? lo : up;
      if (!std::isfinite(bound)) continue;
      const double gap = delta < 0 ? x_[v] - bound : bound - x_[v];
      raw[i] = gap / std::abs(delta);
      hit[i] = bound;
      theta_max = std::min(theta_max, bland ? raw[i] : (gap + Tol(bound)) / std::abs(delta));
    }
    int leaving = -1;
    for (int i = 0; i < rows_; ++i) {
      if (raw[i] > theta_max) continue;
      if (leaving < 0) {
        leaving = i;
      } else if (bland) {
        if (raw[i] < raw[leaving] - 1e-12 ||
            (raw[i] <= raw[leaving] + 1e-12 && head_[i] < head_[leaving])) {
          leaving = i;
        }
      } else if (std::abs(alpha[i]) > std::abs(alpha[leaving])) {
        leaving = i;
      }
    }
    const double range = upper_[entering] - lower_[entering];
    const bool flip = range <= theta_max;
    if (leaving < 0 && !flip) return false;  // unbounded
    const double theta = flip ? range : std::max(0.0, raw[leaving]);
    degenerate = theta <= 1e-12 ? degenerate + 1 : 0;
    ++iterations_;
    basic_values_current_ = false;  // x moves by updates from here
    for (int i = 0; i < rows_; ++i) x_[head_[i]] -= dir * alpha[i] * theta;
    if (flip) {
      PlaceNonbasic(entering, dir > 0 ? Status::kAtUpper : Status::kAtLower);
      continue;
    }
    x_[entering] += dir * theta;
    const int out = head_[leaving];
    Pivot(entering, leaving, alpha);
    PlaceNonbasic(out, hit[leaving] == lower_[out] ? Status::kAtLower : Status::kAtUpper);
    if (!phase1) {
      const double* row = inverse_row(leaving);
      for (int c : nonzeros_) y[c] += entering_d * row[c];
    }
  }
  return false;
}

bool DenseSimplex::Verify() {
  // Primal: bounds, and every row's auxiliary variable equal to A_r x.
  for (int v = 0; v < num_vars(); ++v) {
    if (x_[v] < lower_[v] - kVerifyTol * std::max(1.0, std::abs(lower_[v]))) return false;
    if (x_[v] > upper_[v] + kVerifyTol * std::max(1.0, std::abs(upper_[v]))) return false;
  }
  std::vector<double>& activity = activity_;
  std::vector<double>& magnitude = magnitude_;
  activity.assign(rows_, 0.0);
  magnitude.assign(rows_, 0.0);
  for (int c = 0; c < cols_; ++c) {
    for (int k = col_start_[c]; k < col_start_[c + 1]; ++k) {
      activity[entry_row_[k]] += entry_value_[k] * x_[c];
      magnitude[entry_row_[k]] += std::abs(entry_value_[k] * x_[c]);
    }
  }
  for (int r = 0; r < rows_; ++r) {
    if (std::abs(activity[r] - x_[cols_ + r]) > 1e-9 * (1.0 + magnitude[r])) return false;
  }
  // Dual: y = c_B^T B^-1 prices the basic variables at their costs and no nonbasic one improves.
  double largest_cost = 1.0;
  for (double c : cost_) largest_cost = std::max(largest_cost, std::abs(c));
  const double tol = kVerifyTol * largest_cost;
  std::vector<double>& y = y_;
  y.assign(rows_, 0.0);
  ComputeDuals(false, y);
  for (int v = 0; v < num_vars(); ++v) {
    const double d = ReducedCost(v, false, y);
    if (pos_[v] >= 0) {
      if (std::abs(d) > tol) return false;
    } else if (lower_[v] != upper_[v]) {
      if (status_[v] == Status::kAtLower ? d > tol : d < -tol) return false;
    }
  }
  return true;
}

bool DenseSimplex::Solve() {
  WriteSlackInverse();
  bool nonbasic_moved = false;
  for (int v = 0; v < num_vars(); ++v) {
    if (pos_[v] >= 0) continue;
    const double was = x_[v];
    PlaceNonbasic(v, status_[v]);
    nonbasic_moved =
        nonbasic_moved || std::bit_cast<uint64_t>(x_[v]) != std::bit_cast<uint64_t>(was);
  }
  // After a Solve() with the same basis and nonbasic values (max-min's second stage: only z's
  // bound and the costs change) x_B would come out the same, bit for bit.
  if (nonbasic_moved || !basic_values_current_) ComputeBasicValues();
  bool infeasible = false;
  for (int i = 0; i < rows_ && !infeasible; ++i) infeasible = Infeasibility(head_[i]) != 0.0;
  if (infeasible && !Iterate(/*phase1=*/true)) return false;
  if (!Iterate(/*phase1=*/false)) return false;
  ComputeBasicValues();
  basic_values_current_ = true;
  return Verify();
}

}  // namespace dlsched::hetero
