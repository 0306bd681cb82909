#include "lp/lp_allocators.h"

#include <glpk.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlsched::hetero {
namespace {

// GLPK keeps per-thread environments only when built with thread-local storage; one lock keeps
// the allocators safe on any build (policies run on parallel threads in `dlsched simulate`).
std::mutex& GlpkMutex() {
  static std::mutex mutex;
  return mutex;
}

struct ProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// The X part shared by both LPs: one column per (job, type) the job can run on, rows for
// "time <= 1" per job and "GPUs <= capacity" per type. Column and row numbers are 1-based
// (GLPK's convention); the constraint matrix is collected in ia/ja/ar with a dummy entry 0.
class LpBuilder {
 public:
  explicit LpBuilder(const AllocationProblem& problem) : problem_(problem), lp_(glp_create_prob()) {
    const int n = problem.num_jobs();
    const int types = problem.num_types;
    column_of_.assign(static_cast<size_t>(n) * types, 0);
    for (int j = 0; j < n; ++j) {
      for (int t = 0; t < types; ++t) {
        if (problem.thr(j, t) > 0) {
          column_of_[j * types + t] = static_cast<int>(pairs_.size()) + 1;
          pairs_.push_back({j, t});
        }
      }
    }
    glp_term_out(GLP_OFF);  // glp_scale_prob and glp_adv_basis print regardless of msg_lev
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    if (!pairs_.empty()) glp_add_cols(lp_.get(), static_cast<int>(pairs_.size()));
    for (int c = 1; c <= static_cast<int>(pairs_.size()); ++c) {
      glp_set_col_bnds(lp_.get(), c, GLP_DB, 0.0, 1.0);
    }
    ia_.push_back(0);
    ja_.push_back(0);
    ar_.push_back(0);
    for (int j = 0; j < n; ++j) {
      const int row = AddRow(GLP_UP, 0.0, 1.0);
      for (int t = 0; t < types; ++t) {
        if (const int c = column(j, t)) Add(row, c, 1.0);
      }
    }
    for (int t = 0; t < types; ++t) {
      const int row = AddRow(GLP_UP, 0.0, problem.gpus_per_type[t]);
      for (int j = 0; j < n; ++j) {
        if (const int c = column(j, t)) Add(row, c, problem.gang[j]);
      }
    }
  }

  glp_prob* lp() { return lp_.get(); }
  int column(int job, int type) const { return column_of_[job * problem_.num_types + type]; }
  int num_x_columns() const { return static_cast<int>(pairs_.size()); }
  int AddRow(int kind, double lower, double upper) {
    const int row = glp_add_rows(lp_.get(), 1);
    glp_set_row_bnds(lp_.get(), row, kind, lower, upper);
    return row;
  }
  int AddColumn(int kind, double lower, double upper) {
    const int c = glp_add_cols(lp_.get(), 1);
    glp_set_col_bnds(lp_.get(), c, kind, lower, upper);
    return c;
  }
  void Add(int row, int col, double value) {
    ia_.push_back(row);
    ja_.push_back(col);
    ar_.push_back(value);
  }
  void LoadMatrix() {
    glp_load_matrix(lp_.get(), static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(),
                    ar_.data());
  }
  // Runs the simplex (presolved on the first call, warm-started after); fails unless optimal.
  Status Solve() {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = solved_once_ ? GLP_OFF : GLP_ON;
    int ret = glp_simplex(lp_.get(), &parm);
    if (ret != 0) {
      // Numerical trouble (a singular or ill-conditioned basis): rescale and restart from an
      // advanced initial basis, without the presolver, once.
      glp_scale_prob(lp_.get(), GLP_SF_AUTO);
      glp_adv_basis(lp_.get(), 0);
      parm.presolve = GLP_OFF;
      ret = glp_simplex(lp_.get(), &parm);
    }
    solved_once_ = true;
    if (ret != 0)
      return Internal("GLPK simplex failed (glp_simplex returned " + std::to_string(ret) + ")");
    if (glp_get_status(lp_.get()) != GLP_OPT) {
      return Internal("GLPK found no optimum (status " + std::to_string(glp_get_status(lp_.get())) +
                      ")");
    }
    return Status::Ok();
  }
  // X from the solution, clamped into [0, 1] against round-off.
  Allocation Extract() const {
    Allocation x{
        problem_.num_types,
        std::vector<double>(static_cast<size_t>(problem_.num_jobs()) * problem_.num_types, 0.0)};
    for (int c = 1; c <= static_cast<int>(pairs_.size()); ++c) {
      const auto [j, t] = pairs_[c - 1];
      x.fraction[j * problem_.num_types + t] = std::clamp(glp_get_col_prim(lp_.get(), c), 0.0, 1.0);
    }
    return x;
  }

 private:
  const AllocationProblem& problem_;
  std::unique_ptr<glp_prob, ProbDeleter> lp_;
  std::vector<int> column_of_;  // (job, type) -> column, 0 = none
  std::vector<std::pair<int, int>> pairs_;
  std::vector<int> ia_, ja_;
  std::vector<double> ar_;
  bool solved_once_ = false;
};

Allocation Empty(const AllocationProblem& problem) {
  return {problem.num_types,
          std::vector<double>(static_cast<size_t>(problem.num_jobs()) * problem.num_types, 0.0)};
}

}  // namespace

Result<Allocation> AllocateMaxMin(const AllocationProblem& problem) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const Allocation equal = EqualShare(problem);
  std::lock_guard lock(GlpkMutex());
  LpBuilder lp(problem);
  if (lp.num_x_columns() == 0) return Empty(problem);
  const int n = problem.num_jobs();
  const int z = lp.AddColumn(GLP_LO, 0.0, 0.0);
  // r_j / eq_j - z >= 0, for jobs that can run somewhere (eq_j > 0).
  std::vector<double> weight(n, 0.0);  // 1 / eq_j
  bool any_fair_rate = false;
  for (int j = 0; j < n; ++j) {
    const double eq = equal.EffectiveThroughput(problem, j);
    if (eq <= 0) continue;
    any_fair_rate = true;
    weight[j] = 1.0 / eq;
    const int row = lp.AddRow(GLP_LO, 0.0, 0.0);
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t)) lp.Add(row, c, problem.thr(j, t) * weight[j]);
    }
    lp.Add(row, z, -1.0);
  }
  // No job can run on any GPU the cluster has (z would be unbounded): nothing to allocate.
  if (!any_fair_rate) return Empty(problem);
  lp.LoadMatrix();
  glp_set_obj_coef(lp.lp(), z, 1.0);
  DS_RETURN_IF_ERROR(lp.Solve());
  // Second stage: hold z at its optimum, maximise the sum of normalised rates.
  const double z_opt = glp_get_col_prim(lp.lp(), z);
  glp_set_col_bnds(lp.lp(), z, GLP_LO, z_opt * (1 - 1e-9), 0.0);
  glp_set_obj_coef(lp.lp(), z, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t))
        glp_set_obj_coef(lp.lp(), c, problem.thr(j, t) * weight[j]);
    }
  }
  DS_RETURN_IF_ERROR(lp.Solve());
  return lp.Extract();
}

Result<Allocation> AllocateMinJct(const AllocationProblem& problem) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  if (static_cast<int>(problem.remaining_iters.size()) != problem.num_jobs()) {
    return InvalidArgument("min-jct needs remaining_iters for every job");
  }
  std::lock_guard lock(GlpkMutex());
  LpBuilder lp(problem);
  if (lp.num_x_columns() == 0) return Empty(problem);
  lp.LoadMatrix();
  // Coefficients thr / remaining, scaled so the largest is 1 (they can be tiny: 1/s per job).
  double largest = 0;
  for (int j = 0; j < problem.num_jobs(); ++j) {
    for (int t = 0; t < problem.num_types; ++t) {
      largest = std::max(largest, problem.thr(j, t) / problem.remaining_iters[j]);
    }
  }
  for (int j = 0; j < problem.num_jobs(); ++j) {
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t)) {
        glp_set_obj_coef(lp.lp(), c, problem.thr(j, t) / problem.remaining_iters[j] / largest);
      }
    }
  }
  DS_RETURN_IF_ERROR(lp.Solve());
  return lp.Extract();
}

}  // namespace dlsched::hetero
