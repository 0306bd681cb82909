#include "lp/finish_time_fairness.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lp/face_centre.h"
#include "lp/glpk_lock.h"
#include "lp/lp_allocators.h"

namespace dlsched::hetero {
namespace {

struct ProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// Per job: the equal-share rate eq_j and the finish-time ratio's denominator D_j (both 0 for a
// job with no equal-share rate: it takes no part).
struct Fairness {
  std::vector<double> fair_rate;
  std::vector<double> isolated_finish;
};

Fairness FairnessOf(const AllocationProblem& problem) {
  const Allocation equal = EqualShare(problem);
  Fairness f;
  f.fair_rate.assign(problem.num_jobs(), 0.0);
  f.isolated_finish.assign(problem.num_jobs(), 0.0);
  for (int j = 0; j < problem.num_jobs(); ++j) {
    const double rate = equal.EffectiveThroughput(problem, j);
    if (rate <= 0) continue;
    f.fair_rate[j] = rate;
    f.isolated_finish[j] = (problem.done_iters[j] + problem.remaining_iters[j]) / rate;
  }
  return f;
}

// The jobs' LP for a given rho: columns X[j][t] (where thr > 0) and z; rows "time <= 1" per job,
// "GPUs <= capacity" per type and r_j(X) / c_j(rho) - z >= 0 per job taking part. Reused across
// the bisection (only the rate rows' coefficients change), so each solve starts from the last
// basis.
class FtfLp {
 public:
  FtfLp(const AllocationProblem& problem, const std::vector<int>& jobs)
      : problem_(problem), jobs_(jobs), lp_(glp_create_prob()) {
    const int types = problem.num_types;
    glp_term_out(GLP_OFF);
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0};
    const auto add = [&](int row, int col, double value) {
      ia.push_back(row);
      ja.push_back(col);
      ar.push_back(value);
    };
    for (int j : jobs) {
      for (int t = 0; t < types; ++t) {
        if (problem.thr(j, t) > 0) pairs_.push_back({j, t});
      }
    }
    const int x_columns = static_cast<int>(pairs_.size());
    glp_add_cols(lp_.get(), x_columns + 1);
    for (int c = 1; c <= x_columns; ++c) glp_set_col_bnds(lp_.get(), c, GLP_DB, 0.0, 1.0);
    z_ = x_columns + 1;
    glp_set_col_bnds(lp_.get(), z_, GLP_LO, 0.0, 0.0);
    const int n = static_cast<int>(jobs.size());
    // Rows 1..n: time; n+1..n+types: capacity; then the rate rows, n of them.
    glp_add_rows(lp_.get(), 2 * n + types);
    for (int k = 0; k < n; ++k) glp_set_row_bnds(lp_.get(), k + 1, GLP_UP, 0.0, 1.0);
    for (int t = 0; t < types; ++t) {
      glp_set_row_bnds(lp_.get(), n + 1 + t, GLP_UP, 0.0, problem.gpus_per_type[t]);
    }
    rate_row_ = n + types + 1;
    for (int k = 0; k < n; ++k) glp_set_row_bnds(lp_.get(), rate_row_ + k, GLP_LO, 0.0, 0.0);
    std::vector<int> local(problem.num_jobs(), -1);
    for (int k = 0; k < n; ++k) local[jobs[k]] = k;
    for (int c = 1; c <= x_columns; ++c) {
      const auto [j, t] = pairs_[c - 1];
      add(local[j] + 1, c, 1.0);
      add(n + 1 + t, c, problem.gang[j]);
      add(rate_row_ + local[j], c, problem.thr(j, t));  // SetTargets divides by c_j
    }
    for (int k = 0; k < n; ++k) add(rate_row_ + k, z_, -1.0);
    glp_load_matrix(lp_.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
    row_columns_.resize(n);
    for (int c = 1; c <= x_columns; ++c) row_columns_[local[pairs_[c - 1].first]].push_back(c);
    glp_set_obj_coef(lp_.get(), z_, 1.0);
  }

  // Rate rows for the targets c_j = need[k] (per job of `jobs`, > 0).
  void SetTargets(std::vector<double> need) {
    need_ = std::move(need);
    std::vector<int> ind;
    std::vector<double> val;
    for (size_t k = 0; k < jobs_.size(); ++k) {
      ind.assign(1, 0);
      val.assign(1, 0.0);
      for (int c : row_columns_[k]) {
        ind.push_back(c);
        val.push_back(thr_of(c) / need_[k]);
      }
      ind.push_back(z_);
      val.push_back(-1.0);
      glp_set_mat_row(lp_.get(), rate_row_ + static_cast<int>(k), static_cast<int>(ind.size()) - 1,
                      ind.data(), val.data());
    }
  }

  // From now on: z held at `level`, maximise the sum of r_j / c_j (the last fill) instead of z.
  void MaximiseSum(double level) {
    glp_set_col_bnds(lp_.get(), z_, GLP_FX, level, level);
    glp_set_obj_coef(lp_.get(), z_, 0.0);
    for (size_t k = 0; k < jobs_.size(); ++k) {
      for (int c : row_columns_[k]) glp_set_obj_coef(lp_.get(), c, thr_of(c) / need_[k]);
    }
  }

  // The simplex from the last basis (a fresh standard basis if that fails); fails unless optimal.
  Status Solve() {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    int ret = glp_simplex(lp_.get(), &parm);
    if (ret != 0 || glp_get_status(lp_.get()) != GLP_OPT) {
      glp_scale_prob(lp_.get(), GLP_SF_AUTO);
      glp_std_basis(lp_.get());
      ret = glp_simplex(lp_.get(), &parm);
    }
    if (ret != 0) {
      return Internal("GLPK simplex failed (glp_simplex returned " + std::to_string(ret) + ")");
    }
    if (glp_get_status(lp_.get()) != GLP_OPT) {
      return Internal("GLPK found no optimum (status " + std::to_string(glp_get_status(lp_.get())) +
                      ")");
    }
    return Status::Ok();
  }
  double level() const { return glp_get_col_prim(lp_.get(), z_); }
  void Extract(Allocation& x) const {
    for (int c = 1; c < z_; ++c) {
      const auto [j, t] = pairs_[c - 1];
      x.fraction[j * problem_.num_types + t] = std::clamp(glp_get_col_prim(lp_.get(), c), 0.0, 1.0);
    }
  }

 private:
  double thr_of(int column) const {
    return problem_.thr(pairs_[column - 1].first, pairs_[column - 1].second);
  }

  const AllocationProblem& problem_;
  const std::vector<int>& jobs_;
  std::unique_ptr<glp_prob, ProbDeleter> lp_;
  std::vector<std::pair<int, int>> pairs_;     // column c - 1 -> (job, type)
  std::vector<std::vector<int>> row_columns_;  // per local job: its X columns
  std::vector<double> need_;                   // the targets c_j of SetTargets
  int z_ = 0;
  int rate_row_ = 0;
};

}  // namespace

double MaxFinishTimeRatio(const AllocationProblem& problem, const Allocation& x) {
  const Fairness f = FairnessOf(problem);
  double worst = 0;
  for (int j = 0; j < problem.num_jobs(); ++j) {
    if (f.fair_rate[j] <= 0) continue;
    const double rate = x.EffectiveThroughput(problem, j);
    if (rate <= 0) return std::numeric_limits<double>::infinity();
    worst = std::max(
        worst, (problem.elapsed_s[j] + problem.remaining_iters[j] / rate) / f.isolated_finish[j]);
  }
  return worst;
}

namespace {

// fill: the last LP (AllocateFinishTimeFairness); centre: the min-max optimum moved to its
// face's analytic centre (AllocateFinishTimeFairnessCentre); neither: the min-max vertex.
Result<Allocation> FinishTimeFairness(const AllocationProblem& problem, bool fill, bool centre) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const int n = problem.num_jobs();
  Allocation x{problem.num_types,
               std::vector<double>(static_cast<size_t>(n) * problem.num_types, 0.0)};
  if (n == 0) return x;
  if (problem.remaining_iters.empty() || problem.elapsed_s.empty() || problem.done_iters.empty()) {
    return InvalidArgument(
        "finish-time fairness needs remaining_iters, elapsed_s and done_iters per job");
  }
  const Fairness f = FairnessOf(problem);
  std::vector<int> jobs;
  for (int j = 0; j < n; ++j) {
    if (f.fair_rate[j] > 0) jobs.push_back(j);
  }
  if (jobs.empty()) return x;
  // rho is achievable only above max_j elapsed_j / D_j; the equal share achieves its own max.
  double lo = 0;
  for (int j : jobs) lo = std::max(lo, problem.elapsed_s[j] / f.isolated_finish[j]);
  const Allocation equal = EqualShare(problem);
  for (int j : jobs) {
    for (int t = 0; t < problem.num_types; ++t) x.fraction[j * x.num_types + t] = equal.at(j, t);
  }
  double hi = MaxFinishTimeRatio(problem, x);
  const auto targets = [&](double rho) {
    std::vector<double> need;
    need.reserve(jobs.size());
    for (int j : jobs) {
      need.push_back(problem.remaining_iters[j] /
                     (rho * f.isolated_finish[j] - problem.elapsed_s[j]));
    }
    return need;
  };

  std::lock_guard lock(GlpkMutex());
  FtfLp lp(problem, jobs);
  Allocation trial = x;
  for (int step = 0; step < 200 && hi - lo > 1e-6 * hi; ++step) {
    const double mid = lo + (hi - lo) / 2;
    lp.SetTargets(targets(mid));
    DS_RETURN_IF_ERROR(lp.Solve());
    if (lp.level() >= 1) {
      lp.Extract(trial);
      const double achieved = MaxFinishTimeRatio(problem, trial);
      if (achieved < hi) {
        x = trial;
        hi = achieved;
      }
      hi = std::min(hi, mid);
    } else {
      lo = mid;
    }
  }
  // Fill: every job keeps its target at `hi` (to the solver's tolerance), the rest by the sum
  // of r_j / c_j. A failed fill keeps the bisection's X.
  const double fill_rho = MaxFinishTimeRatio(problem, x);
  if (centre && std::isfinite(fill_rho)) {
    return CentreOfOptimalFace(problem, jobs, targets(fill_rho), x);
  }
  if (!fill || !std::isfinite(fill_rho)) return x;
  lp.SetTargets(targets(fill_rho));
  lp.MaximiseSum(1 - 1e-9);
  if (lp.Solve().ok()) {
    lp.Extract(trial);
    if (MaxFinishTimeRatio(problem, trial) <= fill_rho * (1 + 1e-6)) x = std::move(trial);
  }
  return x;
}

// The one program over `problem`'s jobs up to kOneProgramJobsAtMost of them, POP partitions above.
Result<Allocation> OneProgramOrPartitions(const AllocationProblem& problem,
                                          const Allocator& program) {
  return AllocateOnPartitions(problem, kOneProgramJobsAtMost, kJobsPerProgramPartition, program);
}

}  // namespace

Result<Allocation> AllocateFinishTimeFairness(const AllocationProblem& problem) {
  return OneProgramOrPartitions(problem, [](const AllocationProblem& part) {
    return FinishTimeFairness(part, /*fill=*/true, /*centre=*/false);
  });
}

Result<Allocation> AllocateFinishTimeFairnessMinMax(const AllocationProblem& problem) {
  return OneProgramOrPartitions(problem, [](const AllocationProblem& part) {
    return FinishTimeFairness(part, /*fill=*/false, /*centre=*/false);
  });
}

Result<Allocation> AllocateFinishTimeFairnessCentre(const AllocationProblem& problem) {
  return OneProgramOrPartitions(problem, [](const AllocationProblem& part) {
    return FinishTimeFairness(part, /*fill=*/false, /*centre=*/true);
  });
}

namespace {

// proportional: Gavel's normalisation, each job's rate over gang_j times the rate of its
// proportional share, sum_t thr(j, t) * gpus_t / total_gpus, divided by its gang (the equal
// share's without the cap at 1 / n of the cluster). centre: CentreOfOptimalFace.
Result<Allocation> MaxMinOneStage(const AllocationProblem& problem, bool centre,
                                  bool proportional) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const int n = problem.num_jobs();
  Allocation x{problem.num_types,
               std::vector<double>(static_cast<size_t>(n) * problem.num_types, 0.0)};
  const Allocation equal = EqualShare(problem);
  std::vector<int> jobs;
  std::vector<double> fair;
  for (int j = 0; j < n; ++j) {
    const double rate = equal.EffectiveThroughput(problem, j);
    if (rate <= 0) continue;
    jobs.push_back(j);
    if (proportional) {
      double share = 0;
      for (int t = 0; t < problem.num_types; ++t) {
        share += problem.thr(j, t) * problem.gpus_per_type[t];
      }
      fair.push_back(share / problem.total_gpus() / problem.gang[j]);
    } else {
      fair.push_back(rate);
    }
  }
  if (jobs.empty()) return x;
  std::lock_guard lock(GlpkMutex());
  FtfLp lp(problem, jobs);
  lp.SetTargets(fair);
  DS_RETURN_IF_ERROR(lp.Solve());
  lp.Extract(x);
  if (centre) return CentreOfOptimalFace(problem, jobs, fair, x);
  return x;
}

}  // namespace

Result<Allocation> AllocateMaxMinOneStage(const AllocationProblem& problem) {
  return OneProgramOrPartitions(problem, [](const AllocationProblem& part) {
    return MaxMinOneStage(part, /*centre=*/false, /*proportional=*/false);
  });
}

Result<Allocation> AllocateMaxMinOneStageCentre(const AllocationProblem& problem) {
  return OneProgramOrPartitions(problem, [](const AllocationProblem& part) {
    return MaxMinOneStage(part, /*centre=*/true, /*proportional=*/false);
  });
}

Result<Allocation> AllocateMaxMinGavel(const AllocationProblem& problem) {
  return AllocateMaxMinGavelWithLimits(problem, kOneProgramJobsAtMost, kJobsPerProgramPartition);
}

Result<Allocation> AllocateMaxMinGavelWithLimits(const AllocationProblem& problem,
                                                 int jobs_at_most, int jobs_per_partition) {
  return AllocateOnPartitions(problem, jobs_at_most, jobs_per_partition,
                              [](const AllocationProblem& part) {
                                return MaxMinOneStage(part, /*centre=*/true, /*proportional=*/true);
                              });
}

}  // namespace dlsched::hetero
