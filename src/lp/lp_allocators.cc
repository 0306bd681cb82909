#include "lp/lp_allocators.h"

#include <glpk.h>

#include <ClpSimplex.hpp>
#include <CoinError.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lp/dense_simplex.h"
#include "lp/glpk_lock.h"
#include "lp/min_jct_flow.h"

namespace dlsched::hetero {
namespace {

struct ProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// The jobs one LP allocates: indexes into the problem, ascending, each standing for `copies`
// like jobs (same gang and rates; empty: one each), on `capacity` GPUs per type.
struct Partition {
  std::vector<int> jobs;
  std::vector<int> copies;
  std::vector<double> capacity;

  int copies_of(int j) const { return copies.empty() ? 1 : copies[j]; }
};

// The X part shared by both LPs: one column per (job, type) the job can run on, rows for
// "time <= 1" per job and "GPUs <= capacity" per type. Column and row numbers are 1-based
// (GLPK's convention); the constraint matrix is collected in ia/ja/ar with a dummy entry 0.
class LpBuilder {
 public:
  // The LP of `part`; rows and columns refer to positions in part.jobs ("local" jobs
  // 0..jobs.size()-1). A job standing for k like jobs uses k times its gang per unit of X.
  LpBuilder(const AllocationProblem& problem, const Partition& part)
      : problem_(problem), jobs_(part.jobs), lp_(glp_create_prob()) {
    const std::vector<int>& jobs = part.jobs;
    const std::vector<double>& capacity = part.capacity;
    const int n = static_cast<int>(jobs.size());
    const int types = problem.num_types;
    column_of_.assign(static_cast<size_t>(n) * types, 0);
    for (int j = 0; j < n; ++j) {
      for (int t = 0; t < types; ++t) {
        if (problem.thr(jobs[j], t) > 0) {
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
      const int row = AddRow(GLP_UP, 0.0, capacity[t]);
      for (int j = 0; j < n; ++j) {
        if (const int c = column(j, t)) Add(row, c, problem.gang[jobs[j]] * part.copies_of(j));
      }
    }
  }

  glp_prob* lp() const { return lp_.get(); }
  int num_types() const { return problem_.num_types; }
  // The column of local job `job` on `type`, 0 = none.
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
  // Runs the simplex (presolved on the first call, warm-started after; `warm`: the first call
  // too, from the statuses set, presolved only where they are no basis); fails unless optimal.
  Status Solve(bool warm = false) {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    // Above kClassLpAbove jobs, Dantzig's rule (the largest reduced cost) instead of the
    // projected steepest edge: more pivots, each far cheaper on these LPs of n jobs x T types
    // (the max-min LP of 1,000 jobs 1.5x faster; BENCHMARKS.md, issue 19 next step). The same
    // LP and optimum; where the optimum is not unique the vertex can differ, so the small LPs,
    // cheap either way, keep GLPK's default and their vertices (the goldens).
    if (static_cast<int>(jobs_.size()) > kClassLpAbove) parm.pricing = GLP_PT_STD;
    parm.presolve = solved_once_ || warm ? GLP_OFF : GLP_ON;
    int ret = glp_simplex(lp_.get(), &parm);
    if (ret != 0 && warm && !solved_once_) {  // a singular or ill-conditioned basis
      glp_std_basis(lp_.get());
      parm.presolve = GLP_ON;
      ret = glp_simplex(lp_.get(), &parm);
    }
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
  // Writes the solution into the rows of its jobs in `x`, clamped into [0, 1] against round-off.
  void Extract(Allocation& x) const {
    for (int c = 1; c <= static_cast<int>(pairs_.size()); ++c) {
      const auto [j, t] = pairs_[c - 1];
      x.fraction[jobs_[j] * problem_.num_types + t] =
          std::clamp(glp_get_col_prim(lp_.get(), c), 0.0, 1.0);
    }
  }

 private:
  const AllocationProblem& problem_;
  std::span<const int> jobs_;
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

// A rate's binary exponent and 30-bit mantissa, key[0] and key[1]: frexp's exponent and
// llround(ldexp(frexp's mantissa, 30)), in [2^29, 2^30]. For positive normal numbers (every rate
// but 0) read from the bits, the same integers without the three libm calls (8% of hetero-las at
// 10,000 jobs went to them; BENCHMARKS.md, issue 19 step 8): the mantissa with its implicit bit,
// 2^52 + f, is ldexp(m, 30) * 2^23, and llround rounds half away from zero.
void RateKey(double rate, int64_t* key) {
  uint64_t bits = 0;
  std::memcpy(&bits, &rate, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (rate > 0 && biased != 0 && biased != 0x7ff) {
    key[0] = biased - 1022;
    key[1] = static_cast<int64_t>(
        ((bits & ((uint64_t{1} << 52) - 1)) + (uint64_t{1} << 52) + (uint64_t{1} << 22)) >> 23);
    return;
  }
  int exponent = 0;
  const double mantissa = std::frexp(rate, &exponent);
  key[0] = exponent;
  key[1] = std::llround(std::ldexp(mantissa, 30));
}

// The problem's jobs grouped by (gang, normalised rates thr(j, t) * weight[j] on every type),
// `weight` the jobs' 1 / eq_j (0: no fair rate; such jobs group by their raw rates): lists of job
// indexes, ascending, the lists in the order of their first job. Both stages of the max-min LP
// see a job only through its gang and its normalised rates (its constraint r_j / eq_j >= z and
// its objective term r_j / eq_j), so like jobs have the same constraints and objective terms, and
// averaging an optimum over their permutations gives an optimum in which they share one X: the
// LP over the classes (each class's capacity use weighted by its size) has the same optimal
// value, and the same solution where the optimum is unique. Jobs whose rates differ by a factor
// (same model family, another batch size; any job under an estimator that knows only per-type
// speed ratios) are alike. Rates are compared to 30 significant bits, so round-off in eq_j does
// not split a class. (Not so for min-jct: its objective weighs jobs by their remaining work.)
std::vector<std::vector<int>> LikeJobs(const AllocationProblem& problem,
                                       const std::vector<double>& weight) {
  const int n = problem.num_jobs();
  const int types = problem.num_types;
  // Per job: gang, whether it has a fair rate, then per type the rate's binary exponent and
  // 30-bit mantissa.
  const int width = 2 + 2 * types;
  std::vector<int64_t> keys(static_cast<size_t>(n) * width);
  for (int j = 0; j < n; ++j) {
    int64_t* key = &keys[static_cast<size_t>(j) * width];
    key[0] = problem.gang[j];
    key[1] = weight[j] > 0 ? 1 : 0;
    for (int t = 0; t < types; ++t) {
      const double rate = weight[j] > 0 ? problem.thr(j, t) * weight[j] : problem.thr(j, t);
      RateKey(rate, &key[2 + 2 * t]);
    }
  }
  const auto key_of = [&](int j) {
    return std::span<const int64_t>(keys).subspan(static_cast<size_t>(j) * width, width);
  };
  // Hashed, so grouping costs O(n T): the allocators run at every change of the active set.
  std::vector<std::vector<int>> classes;
  std::unordered_map<uint64_t, int> latest_with_hash;  // hash -> the last class made with it
  std::vector<int> earlier_with_hash;                  // per class: the one before it, or -1
  latest_with_hash.reserve(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    const auto key = key_of(j);
    uint64_t hash = 0x9e3779b97f4a7c15ULL;
    for (int64_t v : key) hash = (hash ^ static_cast<uint64_t>(v)) * 0x100000001b3ULL;
    auto [it, inserted] = latest_with_hash.try_emplace(hash, -1);
    int c = it->second;
    while (c >= 0 && !std::ranges::equal(key_of(classes[c].front()), key)) {
      c = earlier_with_hash[c];
    }
    if (c < 0) {
      c = static_cast<int>(classes.size());
      classes.emplace_back();
      earlier_with_hash.push_back(it->second);
      it->second = c;
    }
    classes[c].push_back(j);  // jobs in index order: classes by first job, members ascending
  }
  return classes;
}

// Splits the X of a class's first job (the class LP's solution per job) among `members`, keeping
// the class's GPU-time per type and giving each job at least the normalised rate `level` (the
// max-min optimum z: r_j / eq_j >= z), so the allocation stays optimal for the LP over the jobs.
// In normalised units w(t) = thr(first, t) * weight[first] (the class's rates), the class's
// budget per type is members x X[t] x w(t), and its excess over `level` members x (r - level),
// r = sum_t X[t] w(t). As a vertex of the LP over the jobs would, the split gives the excess to
// as few jobs as it can: the budgets are laid end to end, fastest type (largest w) first, and
// cut in job index order (the longest active first), each job taking `level` plus as much of the
// excess left as its time (<= 1) holds, so the first jobs run all the time on the fast types and
// the others get `level` each, on as few types as they can. Where the budget left cannot give a
// job `level` within its time, the jobs share the excess evenly instead (each rate r, laid out
// the same way), and failing that every job keeps the class's X.
void SplitClass(const AllocationProblem& problem, const std::vector<double>& weight,
                const std::vector<int>& members, double level, Allocation& x) {
  const int types = problem.num_types;
  const int first = members.front();
  const auto row_of = [&](int job) {
    return x.fraction.begin() + static_cast<std::ptrdiff_t>(job) * types;
  };
  const std::vector<double> share(row_of(first), row_of(first) + types);
  const double scale = weight[first] > 0 ? weight[first] : 1.0;
  std::vector<double> w(types);
  double rate = 0;
  for (int t = 0; t < types; ++t) {
    w[t] = problem.thr(first, t) * scale;
    rate += share[t] * w[t];
  }
  const double m = static_cast<double>(members.size());
  if (members.size() == 1 || rate <= 0) {
    for (size_t k = 1; k < members.size(); ++k)
      std::copy(share.begin(), share.end(), row_of(members[k]));
    return;
  }
  std::vector<int> order;  // the types the class uses, fastest first
  for (int t = 0; t < types; ++t) {
    if (share[t] > 0 && w[t] > 0) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w[a] > w[b]; });
  const double eps = 1e-12 * rate;
  // Lays the budgets out for jobs of at least `floor` each, the first ones up to their time;
  // false (x untouched) where a job cannot get `floor`.
  std::vector<double> rows(members.size() * static_cast<size_t>(types));
  const auto lay_out = [&](double floor) {
    std::fill(rows.begin(), rows.end(), 0.0);
    std::vector<double> budget(types, 0.0);
    for (int t : order) budget[t] = m * share[t] * w[t];
    double excess = m * (rate - floor);
    size_t i = 0;
    for (size_t k = 0; k < members.size(); ++k) {
      double* row = &rows[k * types];
      double time = 1;
      double got = 0;
      const double target = floor + std::max(0.0, excess);
      while (i < order.size() && got < target - eps && time > 1e-12) {
        const int t = order[i];
        const double take = std::min({target - got, budget[t], time * w[t]});
        row[t] += take / w[t];
        time -= take / w[t];
        budget[t] -= take;
        got += take;
        if (budget[t] <= eps) ++i;
      }
      if (got < floor * (1 - 1e-9) - eps) return false;
      excess -= got - floor;
    }
    for (size_t k = 0; k < members.size(); ++k) {
      for (int t = 0; t < types; ++t) {
        row_of(members[k])[t] = std::clamp(rows[k * types + t], 0.0, 1.0);
      }
    }
    return true;
  };
  if (lay_out(std::min(level, rate)) || lay_out(rate)) return;
  for (size_t k = 1; k < members.size(); ++k) {
    std::copy(share.begin(), share.end(), row_of(members[k]));
  }
}

// POP's partitions (Narayanan et al., SOSP'21): the jobs dealt into k = ceil(n / jobs_per_lp)
// groups, each with the share of every type's GPUs that its jobs' GPU demand (sum of gangs) is
// of the whole. Jobs are dealt in the order (gang, fastest type, index), so every group gets a
// like mix of gang sizes and type preferences. One group (k = 1) is the whole problem with its
// own capacities: the exact LP.
std::vector<Partition> MakePartitions(const AllocationProblem& problem, int jobs_per_lp) {
  const int n = problem.num_jobs();
  const int types = problem.num_types;
  const int k = jobs_per_lp > 0 ? std::max(1, (n + jobs_per_lp - 1) / jobs_per_lp) : 1;
  std::vector<Partition> parts(k);
  if (k == 1) {
    parts[0].jobs.resize(n);
    std::iota(parts[0].jobs.begin(), parts[0].jobs.end(), 0);
    parts[0].capacity.assign(problem.gpus_per_type.begin(), problem.gpus_per_type.end());
    return parts;
  }
  std::vector<int> fastest(n, 0);
  for (int j = 0; j < n; ++j) {
    for (int t = 1; t < types; ++t) {
      if (problem.thr(j, t) > problem.thr(j, fastest[j])) fastest[j] = t;
    }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (problem.gang[a] != problem.gang[b]) return problem.gang[a] < problem.gang[b];
    if (fastest[a] != fastest[b]) return fastest[a] < fastest[b];
    return a < b;
  });
  std::vector<double> demand(k, 0.0);
  double total_demand = 0;
  for (int i = 0; i < n; ++i) {
    parts[i % k].jobs.push_back(order[i]);
    demand[i % k] += problem.gang[order[i]];
    total_demand += problem.gang[order[i]];
  }
  for (int p = 0; p < k; ++p) {
    std::sort(parts[p].jobs.begin(), parts[p].jobs.end());
    for (int t = 0; t < types; ++t) {
      parts[p].capacity.push_back(problem.gpus_per_type[t] * demand[p] / total_demand);
    }
  }
  return parts;
}

// The first stage of SolveMaxMinDense's LP over one partition as DenseSimplex sees it. Rows:
// time per job (0..n-1), GPUs per type (n..n+T-1), then per job with a fair rate
// sum_t thr(j, t) / s_j X[j][t] - eq_j / s_j z >= 0, s_j = max_t thr(j, t): the same constraint
// as SolveMaxMin's r_j / eq_j >= z, written so that a change of the equal shares eq_j (every
// arrival and departure changes them all) changes z's column only. Columns: X per (job, type)
// the job can run on, then z. Built anew at every call into the same object
// (BuildDenseMaxMinLp), so that its storage is allocated once.
struct DenseMaxMinLp {
  DenseSimplex lp{0, 0};
  std::vector<uint64_t> keys;   // per job, GlpkJobKeys
  std::vector<int> column_of;   // (job, type) -> column, -1 = none
  std::vector<int> fair_row;    // per job, -1 = none
  std::vector<std::pair<int, int>> pairs;  // column -> (job, type)
  int types = 0;
  // Working storage of BuildDenseMaxMinLp (the jobs' s_j, z's column), GlpkJobKeys and
  // WarmFromLast (jobs by key; the rows' and columns' origins), kept for its capacity.
  std::vector<double> scale;
  std::vector<int> z_rows;
  std::vector<double> z_values;
  std::vector<std::pair<uint64_t, int>> by_key;
  std::vector<int> row_from, col_from;

  int z() const { return static_cast<int>(pairs.size()); }
  int aux() const { return z() + 1; }  // the first row's auxiliary variable
};

// A partition's dense LPs in MaxMinBasis: the last call's first-stage optimum, basis inverse and
// all, and the LP being solved, each kept for its storage.
struct DenseLps {
  DenseMaxMinLp first_stage;
  bool first_stage_kept = false;  // first_stage holds the last call's optimum
  DenseMaxMinLp work;
};

}  // namespace

// The optimal bases of the last solve's CLP LPs, per stage, per job (keyed by its gang and rates)
// and per partition (its capacity rows and z), as CLP's status codes; and its GLPK LPs' first
// stage, as GLPK's.
struct MaxMinBasis::State {
  // Per type the X column's status, then the time row's and the fairness row's (a job), or per
  // type the capacity row's, then z's (a partition).
  using Statuses = std::vector<unsigned char>;
  struct Job {
    Statuses stage[2];
    bool saved[2] = {false, false};
  };
  std::mutex mutex;
  std::unordered_map<uint64_t, Job> jobs;       // the last call's jobs, by JobKey
  std::unordered_map<uint64_t, Job> next_jobs;  // this call's, filled as its LPs are solved
  std::vector<std::array<Statuses, 2>> partitions;
  // GLPK's LPs: per job the first stage's optimal statuses in GLPK's codes (the same layout),
  // keyed by GlpkJobKey; per partition its capacity rows' and z's.
  std::unordered_map<uint64_t, Statuses> glpk_jobs;
  std::unordered_map<uint64_t, Statuses> glpk_next_jobs;
  // Nodes of glpk_next_jobs taken out at the end of a call, their statuses' storage with them,
  // for the next call's jobs (NextGlpkStatuses): a call allocates for new jobs only.
  std::vector<std::unordered_map<uint64_t, Statuses>::node_type> spare_glpk_nodes;
  std::vector<Statuses> glpk_partitions;
  // DenseSimplex's small LPs, per partition.
  std::vector<DenseLps> dense;
  int64_t solves = 0;
  int64_t iterations = 0;
  int64_t dense_failures = 0;
};

namespace {

// The key of job j in MaxMinBasis: its gang and rates' bits.
uint64_t JobKey(const AllocationProblem& problem, int job) {
  uint64_t hash = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(problem.gang[job]);
  for (int t = 0; t < problem.num_types; ++t) {
    uint64_t bits = 0;
    const double rate = problem.thr(job, t);
    std::memcpy(&bits, &rate, sizeof bits);
    hash = (hash ^ bits) * 0x100000001b3ULL;
  }
  return hash;
}

// Writes into `keys` the keys of a partition's jobs in MaxMinBasis's GLPK statuses: JobKey and
// the job's rank among the partition's jobs with that key, so that like jobs (one key) keep one
// status each. `by_key`: working storage.
void GlpkJobKeys(const AllocationProblem& problem, const Partition& part,
                 std::vector<uint64_t>& keys, std::vector<std::pair<uint64_t, int>>& by_key) {
  const int n = static_cast<int>(part.jobs.size());
  by_key.clear();
  for (int j = 0; j < n; ++j) by_key.push_back({JobKey(problem, part.jobs[j]), j});
  std::sort(by_key.begin(), by_key.end());  // a key's jobs in job order
  keys.resize(n);
  uint64_t rank = 0;
  for (int i = 0; i < n; ++i) {
    rank = i > 0 && by_key[i].first == by_key[i - 1].first ? rank + 1 : 0;
    keys[by_key[i].second] = (by_key[i].first ^ rank) * 0x9e3779b97f4a7c15ULL;
  }
}

// The statuses of the job under `key` in this call's glpk_next_jobs, a spare node's storage
// where the key is new (contents unspecified: the caller writes them all).
MaxMinBasis::State::Statuses& NextGlpkStatuses(MaxMinBasis::State& basis, uint64_t key) {
  if (const auto it = basis.glpk_next_jobs.find(key); it != basis.glpk_next_jobs.end()) {
    return it->second;
  }
  if (basis.spare_glpk_nodes.empty()) return basis.glpk_next_jobs[key];
  auto node = std::move(basis.spare_glpk_nodes.back());
  basis.spare_glpk_nodes.pop_back();
  node.key() = key;
  return basis.glpk_next_jobs.insert(std::move(node)).position->second;
}

// MaxMinBasis's GLPK statuses for SolveMaxMin's first stage. Rows of `lp`: time per job
// (1..n), GPUs per type (n+1..n+T), then the jobs' fairness rows `fair_row` (0 = none); columns
// lp.column(j, t) and z.
//
// Sets the saved statuses of the jobs found under `keys` and of the partition, then repairs the
// count of basic variables (one per row: rows made basic from the last, or X columns made
// nonbasic at zero from the first); false (the LP untouched) when no job was found.
bool RestoreGlpkBasis(LpBuilder& lp, const std::vector<uint64_t>& keys,
                      const std::vector<int>& fair_row, int z, const MaxMinBasis::State& basis,
                      int part_index) {
  const int n = static_cast<int>(keys.size());
  const int types = lp.num_types();
  bool any = false;
  for (int j = 0; j < n; ++j) {
    const auto it = basis.glpk_jobs.find(keys[j]);
    if (it == basis.glpk_jobs.end() || it->second.size() != static_cast<size_t>(types) + 2) {
      continue;
    }
    any = true;
    const MaxMinBasis::State::Statuses& saved = it->second;
    for (int t = 0; t < types; ++t) {
      if (const int c = lp.column(j, t)) glp_set_col_stat(lp.lp(), c, saved[t]);
    }
    glp_set_row_stat(lp.lp(), j + 1, saved[types]);
    if (fair_row[j] > 0) glp_set_row_stat(lp.lp(), fair_row[j], saved[types + 1]);
  }
  if (!any) return false;
  if (part_index < static_cast<int>(basis.glpk_partitions.size()) &&
      basis.glpk_partitions[part_index].size() == static_cast<size_t>(types) + 1) {
    const MaxMinBasis::State::Statuses& saved = basis.glpk_partitions[part_index];
    for (int t = 0; t < types; ++t) glp_set_row_stat(lp.lp(), n + 1 + t, saved[t]);
    glp_set_col_stat(lp.lp(), z, saved[types]);
  }
  const int rows = glp_get_num_rows(lp.lp());
  int basic = 0;
  for (int r = 1; r <= rows; ++r) basic += glp_get_row_stat(lp.lp(), r) == GLP_BS;
  for (int c = 1; c <= z; ++c) basic += glp_get_col_stat(lp.lp(), c) == GLP_BS;
  for (int r = rows; r >= 1 && basic < rows; --r) {
    if (glp_get_row_stat(lp.lp(), r) != GLP_BS) {
      glp_set_row_stat(lp.lp(), r, GLP_BS);
      ++basic;
    }
  }
  for (int c = 1; c < z && basic > rows; ++c) {
    if (glp_get_col_stat(lp.lp(), c) == GLP_BS) {
      glp_set_col_stat(lp.lp(), c, GLP_NL);
      --basic;
    }
  }
  return true;
}

// Saves the first stage's statuses of `lp`'s jobs under `keys` and of partition `part_index`
// into `basis` (its next_jobs: the jobs of this call).
void SaveGlpkBasis(const LpBuilder& lp, const std::vector<uint64_t>& keys,
                   const std::vector<int>& fair_row, int z, MaxMinBasis::State& basis,
                   int part_index) {
  const int n = static_cast<int>(keys.size());
  const int types = lp.num_types();
  for (int j = 0; j < n; ++j) {
    MaxMinBasis::State::Statuses& saved = NextGlpkStatuses(basis, keys[j]);
    saved.assign(types + 2, GLP_NL);
    for (int t = 0; t < types; ++t) {
      if (const int c = lp.column(j, t)) saved[t] = glp_get_col_stat(lp.lp(), c);
    }
    saved[types] = glp_get_row_stat(lp.lp(), j + 1);
    saved[types + 1] = fair_row[j] > 0 ? glp_get_row_stat(lp.lp(), fair_row[j]) : GLP_BS;
  }
  if (part_index >= static_cast<int>(basis.glpk_partitions.size())) {
    basis.glpk_partitions.resize(part_index + 1);
  }
  MaxMinBasis::State::Statuses& saved = basis.glpk_partitions[part_index];
  saved.assign(types + 1, GLP_NL);
  for (int t = 0; t < types; ++t) saved[t] = glp_get_row_stat(lp.lp(), n + 1 + t);
  saved[types] = glp_get_col_stat(lp.lp(), z);
}

// The two-stage max-min LP of one partition, `weight` the jobs' 1 / eq_j (0: no fair rate),
// written into x; `level`, when given, receives the optimum z (less the second stage's slack).
// With `basis`, the first stage starts from the statuses its jobs and partition `part_index`
// ended in at the last call (new jobs' rows basic, their columns at zero) where they make a
// basis, and saves its own; otherwise (or where they do not) it is presolved from scratch.
Status SolveMaxMin(const AllocationProblem& problem, const Partition& part,
                   const std::vector<double>& weight, Allocation& x, double* level = nullptr,
                   MaxMinBasis::State* basis = nullptr, int part_index = 0) {
  LpBuilder lp(problem, part);
  if (lp.num_x_columns() == 0) return Status::Ok();
  const int n = static_cast<int>(part.jobs.size());
  const int z = lp.AddColumn(GLP_LO, 0.0, 0.0);
  // r_j / eq_j - z >= 0, for jobs that can run somewhere (eq_j > 0).
  bool any_fair_rate = false;
  std::vector<int> fair_row(n, 0);  // per job, 0 = none
  for (int j = 0; j < n; ++j) {
    const int job = part.jobs[j];
    if (weight[job] <= 0) continue;
    any_fair_rate = true;
    const int row = lp.AddRow(GLP_LO, 0.0, 0.0);
    fair_row[j] = row;
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t)) lp.Add(row, c, problem.thr(job, t) * weight[job]);
    }
    lp.Add(row, z, -1.0);
  }
  // No job can run on any GPU the cluster has (z would be unbounded): nothing to allocate.
  if (!any_fair_rate) return Status::Ok();
  lp.LoadMatrix();
  glp_set_obj_coef(lp.lp(), z, 1.0);
  std::vector<uint64_t> keys;
  bool warm = false;
  if (basis != nullptr) {
    std::vector<std::pair<uint64_t, int>> by_key;
    GlpkJobKeys(problem, part, keys, by_key);
    warm = RestoreGlpkBasis(lp, keys, fair_row, z, *basis, part_index);
  }
  DS_RETURN_IF_ERROR(lp.Solve(warm));
  if (basis != nullptr) {
    ++basis->solves;
    basis->iterations += glp_get_it_cnt(lp.lp());
    SaveGlpkBasis(lp, keys, fair_row, z, *basis, part_index);
  }
  // Second stage: hold z at its optimum, maximise the sum of normalised rates.
  const double z_opt = glp_get_col_prim(lp.lp(), z);
  if (level != nullptr) *level = z_opt * (1 - 1e-9);
  glp_set_col_bnds(lp.lp(), z, GLP_LO, z_opt * (1 - 1e-9), 0.0);
  glp_set_obj_coef(lp.lp(), z, 0.0);
  for (int j = 0; j < n; ++j) {
    const int job = part.jobs[j];
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t))
        glp_set_obj_coef(lp.lp(), c, problem.thr(job, t) * weight[job] * part.copies_of(j));
    }
  }
  DS_RETURN_IF_ERROR(lp.Solve());
  lp.Extract(x);
  return Status::Ok();
}

// GLPK's status code for a DenseSimplex status and back: MaxMinBasis keeps the small LPs'
// statuses in GLPK's codes whichever of the two solved them, so either can start from them.
int GlpkStatus(DenseSimplex::Status status) {
  switch (status) {
    case DenseSimplex::Status::kBasic:
      return GLP_BS;
    case DenseSimplex::Status::kAtUpper:
      return GLP_NU;
    case DenseSimplex::Status::kAtLower:
      break;
  }
  return GLP_NL;
}
DenseSimplex::Status DenseStatus(int glpk_status) {
  if (glpk_status == GLP_BS) return DenseSimplex::Status::kBasic;
  return glpk_status == GLP_NU ? DenseSimplex::Status::kAtUpper : DenseSimplex::Status::kAtLower;
}

// Writes into `fair_row` the fair row of each of `part`'s jobs with a fair rate (weight > 0),
// numbered from `rows` on in job order, -1 for the others; `rows` ends past the last.
void NumberFairRows(const Partition& part, const std::vector<double>& weight, int& rows,
                    std::vector<int>& fair_row) {
  fair_row.assign(part.jobs.size(), -1);
  for (size_t j = 0; j < part.jobs.size(); ++j) {
    if (weight[part.jobs[j]] > 0) fair_row[j] = rows++;
  }
}

// Builds into `d` SolveMaxMinDense's first-stage LP of `part` (no basis; d.keys untouched);
// false where it has nothing to allocate (no job can run on any GPU the cluster has: z would be
// unbounded), and `d.lp` is then not this LP.
bool BuildDenseMaxMinLp(const AllocationProblem& problem, const Partition& part,
                        const std::vector<double>& weight, DenseMaxMinLp& d) {
  const int n = static_cast<int>(part.jobs.size());
  const int types = problem.num_types;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  int rows = n + types;
  NumberFairRows(part, weight, rows, d.fair_row);
  d.types = types;
  d.pairs.clear();
  d.column_of.assign(static_cast<size_t>(n) * types, -1);
  for (int j = 0; j < n; ++j) {
    for (int t = 0; t < types; ++t) {
      if (problem.thr(part.jobs[j], t) <= 0) continue;
      d.column_of[j * types + t] = static_cast<int>(d.pairs.size());
      d.pairs.push_back({j, t});
    }
  }
  if (d.pairs.empty() || rows == n + types) return false;
  const int z = d.z();
  d.lp.Reset(rows, z + 1);
  d.scale.assign(n, 0.0);  // s_j
  for (int j = 0; j < n; ++j) {
    for (int t = 0; t < types; ++t) {
      d.scale[j] = std::max(d.scale[j], problem.thr(part.jobs[j], t));
    }
  }
  for (int c = 0; c < z; ++c) {
    const auto [j, t] = d.pairs[c];
    const int job = part.jobs[j];
    const std::array<int, 3> at = {j, n + t, d.fair_row[j]};
    const std::array<double, 3> value = {
        1.0, static_cast<double>(problem.gang[job]) * part.copies_of(j),
        problem.thr(job, t) / d.scale[j]};
    const size_t entries = d.fair_row[j] >= 0 ? 3 : 2;
    d.lp.AddColumn(std::span(at).first(entries), std::span(value).first(entries));
    d.lp.SetBounds(c, 0.0, 1.0);
  }
  d.z_rows.clear();
  d.z_values.clear();
  for (int j = 0; j < n; ++j) {
    if (d.fair_row[j] < 0) continue;
    d.z_rows.push_back(d.fair_row[j]);
    d.z_values.push_back(-1.0 / weight[part.jobs[j]] / d.scale[j]);
  }
  d.lp.AddColumn(d.z_rows, d.z_values);
  d.lp.SetBounds(z, 0.0, kInf);
  d.lp.SetObjective(z, 1.0);
  const int aux = d.aux();
  for (int j = 0; j < n; ++j) d.lp.SetBounds(aux + j, -kInf, 1.0);
  for (int t = 0; t < types; ++t) d.lp.SetBounds(aux + n + t, -kInf, part.capacity[t]);
  for (int r = n + types; r < rows; ++r) d.lp.SetBounds(aux + r, 0.0, kInf);
  return true;
}

// Starts `next` from `last`'s optimal basis (DenseSimplex::WarmFrom), the jobs matched by their
// keys; false where no job is kept or the exchange fails (`next` is then spent).
bool WarmFromLast(DenseMaxMinLp& next, DenseMaxMinLp& last) {
  if (last.types != next.types) return false;
  const int types = next.types;
  const int n = static_cast<int>(next.keys.size());
  const int last_n = static_cast<int>(last.keys.size());
  // The last LP's jobs sorted by key: a key's first job where two share it.
  std::vector<std::pair<uint64_t, int>>& last_job = next.by_key;
  last_job.clear();
  for (int j = 0; j < last_n; ++j) last_job.push_back({last.keys[j], j});
  std::sort(last_job.begin(), last_job.end());
  std::vector<int>& row_from = next.row_from;
  std::vector<int>& col_from = next.col_from;
  row_from.assign(next.lp.rows(), -1);
  col_from.assign(next.lp.cols(), -1);
  bool any = false;
  for (int j = 0; j < n; ++j) {
    const auto it = std::lower_bound(last_job.begin(), last_job.end(),
                                     std::pair<uint64_t, int>{next.keys[j], 0});
    if (it == last_job.end() || it->first != next.keys[j]) continue;
    const int lj = it->second;
    any = true;
    row_from[j] = lj;
    if (next.fair_row[j] >= 0 && last.fair_row[lj] >= 0) {
      row_from[next.fair_row[j]] = last.fair_row[lj];
    }
    for (int t = 0; t < types; ++t) {
      const int c = next.column_of[j * types + t];
      const int lc = last.column_of[lj * types + t];
      if (c >= 0 && lc >= 0) col_from[c] = lc;
    }
  }
  if (!any) return false;
  for (int t = 0; t < types; ++t) row_from[n + t] = last_n + t;
  col_from[next.z()] = last.z();
  return next.lp.WarmFrom(last.lp, row_from, col_from);
}

// Starts `d` from MaxMinBasis's saved statuses (DenseSimplex::SetBasis) of its jobs and of
// partition `part_index`; untouched where no job has any.
void StartFromStatuses(DenseMaxMinLp& d, const MaxMinBasis::State& basis, int part_index) {
  const int n = static_cast<int>(d.keys.size());
  const int types = d.types;
  const int aux = d.aux();
  std::vector<DenseSimplex::Status> status(static_cast<size_t>(aux + d.lp.rows()),
                                           DenseSimplex::Status::kAtLower);
  std::fill(status.begin() + aux, status.end(), DenseSimplex::Status::kBasic);
  bool any = false;
  for (int j = 0; j < n; ++j) {
    const auto it = basis.glpk_jobs.find(d.keys[j]);
    if (it == basis.glpk_jobs.end() || it->second.size() != static_cast<size_t>(types) + 2) {
      continue;
    }
    any = true;
    const MaxMinBasis::State::Statuses& saved = it->second;
    for (int t = 0; t < types; ++t) {
      if (const int c = d.column_of[j * types + t]; c >= 0) status[c] = DenseStatus(saved[t]);
    }
    status[aux + j] = DenseStatus(saved[types]);
    if (d.fair_row[j] >= 0) status[aux + d.fair_row[j]] = DenseStatus(saved[types + 1]);
  }
  if (!any) return;
  if (part_index < static_cast<int>(basis.glpk_partitions.size()) &&
      basis.glpk_partitions[part_index].size() == static_cast<size_t>(types) + 1) {
    const MaxMinBasis::State::Statuses& saved = basis.glpk_partitions[part_index];
    for (int t = 0; t < types; ++t) status[aux + n + t] = DenseStatus(saved[t]);
    status[d.z()] = DenseStatus(saved[types]);
  }
  d.lp.SetBasis(status);
}

// Saves the first stage's statuses of `d` into `basis` (its next jobs' and partition
// `part_index`'s), in GLPK's codes, for GLPK or a rebuilt LP to start from.
void SaveDenseStatuses(const DenseMaxMinLp& d, MaxMinBasis::State& basis, int part_index) {
  const int n = static_cast<int>(d.keys.size());
  const int types = d.types;
  const int aux = d.aux();
  for (int j = 0; j < n; ++j) {
    MaxMinBasis::State::Statuses& saved = NextGlpkStatuses(basis, d.keys[j]);
    saved.assign(types + 2, GLP_NL);
    for (int t = 0; t < types; ++t) {
      if (const int c = d.column_of[j * types + t]; c >= 0) saved[t] = GlpkStatus(d.lp.status(c));
    }
    saved[types] = GlpkStatus(d.lp.status(aux + j));
    saved[types + 1] = d.fair_row[j] >= 0 ? GlpkStatus(d.lp.status(aux + d.fair_row[j])) : GLP_BS;
  }
  if (part_index >= static_cast<int>(basis.glpk_partitions.size())) {
    basis.glpk_partitions.resize(part_index + 1);
  }
  MaxMinBasis::State::Statuses& saved = basis.glpk_partitions[part_index];
  saved.assign(types + 1, GLP_NL);
  for (int t = 0; t < types; ++t) saved[t] = GlpkStatus(d.lp.status(aux + n + t));
  saved[types] = GlpkStatus(d.lp.status(d.z()));
}

// The two-stage max-min LP of SolveMaxMin (the same constraints, stages and warm-start
// statuses) solved by DenseSimplex; an error where it fails, and then nothing is written. With
// `basis`, the first stage starts from the last call's first-stage optimum of partition
// `part_index`, its basis inverse carried over (WarmFromLast), or where that fails from the
// saved statuses; and leaves its own optimum there.
Status SolveMaxMinDense(const AllocationProblem& problem, const Partition& part,
                        const std::vector<double>& weight, Allocation& x, double* level,
                        MaxMinBasis::State* basis, int part_index) {
  DenseMaxMinLp cold;  // without `basis`
  if (basis != nullptr && part_index >= static_cast<int>(basis->dense.size())) {
    basis->dense.resize(part_index + 1);
  }
  DenseLps* lps = basis != nullptr ? &basis->dense[part_index] : nullptr;
  DenseMaxMinLp& d = lps != nullptr ? lps->work : cold;
  if (!BuildDenseMaxMinLp(problem, part, weight, d)) return Status::Ok();
  if (lps != nullptr) {
    GlpkJobKeys(problem, part, d.keys, d.by_key);
    bool warm = false;
    if (lps->first_stage_kept) {
      warm = WarmFromLast(d, lps->first_stage);
      lps->first_stage_kept = false;
      if (!warm) BuildDenseMaxMinLp(problem, part, weight, d);
    }
    if (!warm) StartFromStatuses(d, *basis, part_index);
  }
  if (!d.lp.Solve()) return Internal("the dense simplex failed at the first stage");
  const int64_t first_stage_iterations = d.lp.iterations();
  if (lps != nullptr) lps->first_stage = d;  // into its storage: no allocation once grown
  // Second stage: hold z at its optimum, maximise the sum of normalised rates.
  DenseSimplex& lp = d.lp;
  const int z = d.z();
  const double z_opt = lp.value(z);
  lp.SetBounds(z, z_opt * (1 - 1e-9), std::numeric_limits<double>::infinity());
  lp.SetObjective(z, 0.0);
  for (int c = 0; c < z; ++c) {
    const auto [j, t] = d.pairs[c];
    const int job = part.jobs[j];
    lp.SetObjective(c, problem.thr(job, t) * weight[job] * part.copies_of(j));
  }
  if (!lp.Solve()) return Internal("the dense simplex failed at the second stage");
  if (level != nullptr) *level = z_opt * (1 - 1e-9);
  for (int c = 0; c < z; ++c) {
    const auto [j, t] = d.pairs[c];
    x.fraction[part.jobs[j] * problem.num_types + t] = std::clamp(lp.value(c), 0.0, 1.0);
  }
  if (lps != nullptr) {
    ++basis->solves;
    basis->iterations += first_stage_iterations;
    SaveDenseStatuses(lps->first_stage, *basis, part_index);
    lps->first_stage_kept = true;
  }
  return Status::Ok();
}

// The same two-stage max-min LP as SolveMaxMin, solved by COIN-OR CLP: both stages by the
// primal simplex from the all-slack basis (X = 0, z = 0 is feasible), the second warm-started
// from the first's optimal basis. `level` as in SolveMaxMin. CLP's exceptions (CoinError) end
// here as errors.
Status SolveMaxMinClp(const AllocationProblem& problem, const Partition& part, int part_index,
                      int num_parts, const std::vector<double>& weight, MaxMinSolver solver,
                      MaxMinBasis::State* basis, Allocation& x, double* level = nullptr) {
  const int n = static_cast<int>(part.jobs.size());
  const int types = problem.num_types;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Rows: time per job (0..n-1), GPUs per type (n..n+types-1), then r_j / eq_j - z >= 0 for
  // the jobs with a fair rate, in job order. Columns: X per (job, type) the job can run on, in
  // job then type order, then z; column-major, row indexes ascending within a column.
  int rows = n + types;
  std::vector<int> fair_row;
  NumberFairRows(part, weight, rows, fair_row);
  if (rows == n + types) return Status::Ok();  // no job can run anywhere: z would be unbounded
  std::vector<CoinBigIndex> start{0};
  std::vector<int> index;
  std::vector<double> value, objective;
  std::vector<std::pair<int, int>> pairs;
  for (int j = 0; j < n; ++j) {
    const int job = part.jobs[j];
    for (int t = 0; t < types; ++t) {
      const double thr = problem.thr(job, t);
      if (thr <= 0) continue;
      pairs.push_back({j, t});
      index.push_back(j);
      value.push_back(1.0);
      index.push_back(n + t);
      value.push_back(static_cast<double>(problem.gang[job]) * part.copies_of(j));
      if (fair_row[j] >= 0) {
        index.push_back(fair_row[j]);
        value.push_back(thr * weight[job]);
      }
      start.push_back(static_cast<CoinBigIndex>(index.size()));
      objective.push_back(thr * weight[job] * part.copies_of(j));
    }
  }
  if (pairs.empty()) return Status::Ok();
  for (int j = 0; j < n; ++j) {
    if (fair_row[j] < 0) continue;
    index.push_back(fair_row[j]);
    value.push_back(-1.0);
  }
  start.push_back(static_cast<CoinBigIndex>(index.size()));
  const int columns = static_cast<int>(pairs.size()) + 1;
  const int z = columns - 1;
  std::vector<double> col_lower(columns, 0.0), col_upper(columns, 1.0);
  col_upper[z] = kInf;
  std::vector<double> stage1(columns, 0.0);
  stage1[z] = 1.0;
  std::vector<double> row_lower(rows, -kInf), row_upper(rows, kInf);
  for (int j = 0; j < n; ++j) row_upper[j] = 1.0;
  for (int t = 0; t < types; ++t) row_upper[n + t] = part.capacity[t];
  for (int r = n + types; r < rows; ++r) row_lower[r] = 0.0;
  try {
    ClpSimplex model;
    model.setLogLevel(0);
    model.loadProblem(columns, rows, start.data(), index.data(), value.data(), col_lower.data(),
                      col_upper.data(), stage1.data(), row_lower.data(), row_upper.data());
    model.setOptimizationDirection(-1);  // maximise
    // Warm starts (basis not null): each stage starts from the basis that stage ended in at the
    // last call, job by job, new jobs from the slack basis (stage 1) or where stage 1 left them.
    std::vector<uint64_t> keys;
    if (basis != nullptr) {
      keys.resize(n);
      for (int j = 0; j < n; ++j) keys[j] = JobKey(problem, part.jobs[j]);
      model.createStatus();
    }
    const auto restore = [&](int stage) {
      int c = 0;
      for (int j = 0; j < n; ++j) {
        const auto it = basis->jobs.find(keys[j]);
        const int first = c;
        while (c < z && pairs[c].first == j) ++c;
        if (it == basis->jobs.end() || !it->second.saved[stage] ||
            it->second.stage[stage].size() != static_cast<size_t>(types) + 2) {
          continue;  // a new job, or one saved with another number of types
        }
        const MaxMinBasis::State::Statuses& saved = it->second.stage[stage];
        for (int k = first; k < c; ++k) {
          model.setColumnStatus(k, static_cast<ClpSimplex::Status>(saved[pairs[k].second]));
        }
        model.setRowStatus(j, static_cast<ClpSimplex::Status>(saved[types]));
        if (fair_row[j] >= 0) {
          model.setRowStatus(fair_row[j], static_cast<ClpSimplex::Status>(saved[types + 1]));
        }
      }
      if (part_index < static_cast<int>(basis->partitions.size())) {
        const MaxMinBasis::State::Statuses& saved = basis->partitions[part_index][stage];
        if (saved.size() == static_cast<size_t>(types) + 1) {
          for (int t = 0; t < types; ++t) {
            model.setRowStatus(n + t, static_cast<ClpSimplex::Status>(saved[t]));
          }
          model.setColumnStatus(z, static_cast<ClpSimplex::Status>(saved[types]));
        }
      }
    };
    const auto save = [&](int stage) {
      int c = 0;
      for (int j = 0; j < n; ++j) {
        MaxMinBasis::State::Job& job = basis->next_jobs[keys[j]];
        MaxMinBasis::State::Statuses& saved = job.stage[stage];
        job.saved[stage] = true;
        saved.assign(types + 2, ClpSimplex::atLowerBound);
        for (; c < z && pairs[c].first == j; ++c) {
          saved[pairs[c].second] = model.getColumnStatus(c);
        }
        saved[types] = model.getRowStatus(j);
        saved[types + 1] = fair_row[j] >= 0 ? model.getRowStatus(fair_row[j]) : ClpSimplex::basic;
      }
      if (part_index >= static_cast<int>(basis->partitions.size())) {
        basis->partitions.resize(part_index + 1);
      }
      MaxMinBasis::State::Statuses& saved = basis->partitions[part_index][stage];
      saved.assign(types + 1, 0);
      for (int t = 0; t < types; ++t) saved[t] = model.getRowStatus(n + t);
      saved[types] = model.getColumnStatus(z);
    };
    const auto solve = [&](int stage) {
      // With several partitions the second stage starts from the first's optimum: POP's dealing
      // moves jobs between partitions as others come and go, and the last call's second-stage
      // statuses then cost more pivots than they save (measured: 1,000 jobs 12.5 ms a call
      // against 10.1 ms).
      if (basis != nullptr && (stage == 0 || num_parts == 1)) restore(stage);
      if (solver == MaxMinSolver::kClpDual && stage == 0) {
        model.dual();
      } else {
        model.primal();
      }
      if (!model.isProvenOptimal()) return false;
      if (basis != nullptr) {
        ++basis->solves;
        basis->iterations += model.numberIterations();
        save(stage);
      }
      return true;
    };
    if (!solve(0)) {
      return Internal("CLP found no optimum (status " + std::to_string(model.status()) + ")");
    }
    // Second stage: hold z at its optimum, maximise the sum of normalised rates.
    const double z_opt = model.primalColumnSolution()[z];
    if (level != nullptr) *level = z_opt * (1 - 1e-9);
    model.setColumnLower(z, z_opt * (1 - 1e-9));
    for (int c = 0; c < columns; ++c) model.setObjectiveCoefficient(c, c == z ? 0.0 : objective[c]);
    if (!solve(1)) {
      return Internal("CLP found no optimum (status " + std::to_string(model.status()) + ")");
    }
    const double* solution = model.primalColumnSolution();
    for (int c = 0; c < z; ++c) {
      const auto [j, t] = pairs[c];
      x.fraction[part.jobs[j] * types + t] = std::clamp(solution[c], 0.0, 1.0);
    }
  } catch (const CoinError& e) {
    return Internal("CLP failed: " + e.message());
  } catch (const std::exception& e) {
    return Internal(std::string("CLP failed: ") + e.what());
  }
  return Status::Ok();
}

// The two-stage max-min LP of `part` by `solver` (kAuto: the dense simplex up to
// kDenseLpJobsAtMost jobs but for class LPs, GLPK up to kClassLpAbove, CLP's primal simplex
// above; kAutoGlpk: the same without the dense simplex).
Status SolveMaxMinBy(MaxMinSolver solver, MaxMinBasis::State* basis,
                     const AllocationProblem& problem, const Partition& part, int part_index,
                     int num_parts, const std::vector<double>& weight, Allocation& x,
                     double* level = nullptr) {
  const int n = static_cast<int>(part.jobs.size());
  if (solver == MaxMinSolver::kAutoGlpk) {
    solver = n > kClassLpAbove ? MaxMinSolver::kClpPrimal : MaxMinSolver::kGlpk;
  }
  if (solver == MaxMinSolver::kAuto) {
    solver = n > kClassLpAbove                            ? MaxMinSolver::kClpPrimal
             : n > kDenseLpJobsAtMost || !part.copies.empty() ? MaxMinSolver::kGlpk
                                                              : MaxMinSolver::kDense;
  }
  if (solver == MaxMinSolver::kDense) {
    if (SolveMaxMinDense(problem, part, weight, x, level, basis, part_index).ok()) {
      return Status::Ok();
    }
    if (basis != nullptr) ++basis->dense_failures;
    solver = MaxMinSolver::kGlpk;
  }
  // Another solver's LP: the dense simplex's last one is older than the statuses saved now.
  if (basis != nullptr && part_index < static_cast<int>(basis->dense.size())) {
    basis->dense[part_index].first_stage_kept = false;
  }
  if (solver == MaxMinSolver::kGlpk) {
    return SolveMaxMin(problem, part, weight, x, level, basis, part_index);
  }
  return SolveMaxMinClp(problem, part, part_index, num_parts, weight, solver, basis, x, level);
}

// The min-jct LP over `part`, objective coefficients thr / remaining / `largest`.
Status SolveMinJct(const AllocationProblem& problem, const Partition& part, double largest,
                   Allocation& x) {
  LpBuilder lp(problem, part);
  if (lp.num_x_columns() == 0) return Status::Ok();
  lp.LoadMatrix();
  for (int j = 0; j < static_cast<int>(part.jobs.size()); ++j) {
    const int job = part.jobs[j];
    for (int t = 0; t < problem.num_types; ++t) {
      if (const int c = lp.column(j, t)) {
        glp_set_obj_coef(lp.lp(), c, problem.thr(job, t) / problem.remaining_iters[job] / largest);
      }
    }
  }
  DS_RETURN_IF_ERROR(lp.Solve());
  lp.Extract(x);
  return Status::Ok();
}

// AllocateMaxMinWithLimits, warm-starting CLP's LPs from `basis` (and saving theirs in it)
// where not null.
Result<Allocation> AllocateMaxMinFrom(const AllocationProblem& problem, int jobs_per_lp,
                                      int jobs_per_partition, MaxMinSolver solver,
                                      MaxMinBasis::State* basis) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const Allocation equal = EqualShare(problem);
  std::vector<double> weight(problem.num_jobs(), 0.0);
  for (int j = 0; j < problem.num_jobs(); ++j) {
    const double eq = equal.EffectiveThroughput(problem, j);
    if (eq > 0) weight[j] = 1.0 / eq;
  }
  Allocation x = Empty(problem);
  const std::vector<std::vector<int>> classes =
      jobs_per_lp > 0 && problem.num_jobs() > kClassLpAbove ? LikeJobs(problem, weight)
                                                            : std::vector<std::vector<int>>();
  std::lock_guard lock(GlpkMutex());
  // Not below kClassLpAbove jobs: there the LP over the jobs is cheap, and the round mechanism
  // realises the solver's vertex with fewer preemptions than the classes' split X
  // (BENCHMARKS.md, issue 19).
  if (!classes.empty() && classes.size() < static_cast<size_t>(problem.num_jobs()) &&
      classes.size() <= static_cast<size_t>(jobs_per_lp)) {
    // One LP over the classes of like jobs, the class's X then split among its jobs.
    Partition part;
    for (const std::vector<int>& members : classes) {
      part.jobs.push_back(members.front());
      part.copies.push_back(static_cast<int>(members.size()));
    }
    part.capacity.assign(problem.gpus_per_type.begin(), problem.gpus_per_type.end());
    double level = 0;
    DS_RETURN_IF_ERROR(SolveMaxMinBy(solver, basis, problem, part, 0, 1, weight, x, &level));
    for (const std::vector<int>& members : classes) {
      SplitClass(problem, weight, members, level, x);
    }
    return x;
  }
  const int per_part =
      jobs_per_lp > 0 && problem.num_jobs() > jobs_per_lp ? jobs_per_partition : jobs_per_lp;
  const std::vector<Partition> parts = MakePartitions(problem, per_part);
  for (size_t p = 0; p < parts.size(); ++p) {
    DS_RETURN_IF_ERROR(SolveMaxMinBy(solver, basis, problem, parts[p], static_cast<int>(p),
                                     static_cast<int>(parts.size()), weight, x));
  }
  return x;
}

}  // namespace

Result<Allocation> AllocateMaxMin(const AllocationProblem& problem) {
  return AllocateMaxMinWithLimits(problem, kJobsPerLp, kJobsPerPartition);
}

namespace {

// The per-job rows of `jobs` (ascending) as a problem of their own on `capacity` GPUs per type.
AllocationProblem SubProblem(const AllocationProblem& problem, const std::vector<int>& jobs,
                             std::vector<int> capacity) {
  AllocationProblem sub;
  sub.num_types = problem.num_types;
  sub.gpus_per_type = std::move(capacity);
  sub.tentative = problem.tentative;
  const auto copy_rows = [&](const std::vector<double>& from, std::vector<double>& to) {
    if (from.empty()) return;
    for (int j : jobs) to.push_back(from[j]);
  };
  for (int j : jobs) {
    sub.gang.push_back(problem.gang[j]);
    for (int t = 0; t < problem.num_types; ++t) sub.iters_per_s.push_back(problem.thr(j, t));
  }
  copy_rows(problem.remaining_iters, sub.remaining_iters);
  copy_rows(problem.elapsed_s, sub.elapsed_s);
  copy_rows(problem.done_iters, sub.done_iters);
  return sub;
}

// Each type's GPUs split in proportion to the partitions' fractional capacities, in whole GPUs:
// the floors, then one more to the largest remainders (ties to the lower partition) until the
// type's GPUs are all given out.
std::vector<std::vector<int>> WholeGpuCapacities(const AllocationProblem& problem,
                                                 const std::vector<Partition>& parts) {
  std::vector<std::vector<int>> whole(parts.size(), std::vector<int>(problem.num_types, 0));
  std::vector<int> by_remainder(parts.size());
  for (int t = 0; t < problem.num_types; ++t) {
    int left = problem.gpus_per_type[t];
    for (size_t p = 0; p < parts.size(); ++p) {
      whole[p][t] = static_cast<int>(std::floor(parts[p].capacity[t]));
      left -= whole[p][t];
    }
    std::iota(by_remainder.begin(), by_remainder.end(), 0);
    std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](int a, int b) {
      return parts[a].capacity[t] - whole[a][t] > parts[b].capacity[t] - whole[b][t];
    });
    for (size_t i = 0; left > 0 && i < by_remainder.size(); ++i, --left) {
      ++whole[by_remainder[i]][t];
    }
  }
  return whole;
}

}  // namespace

Result<Allocation> AllocateOnPartitions(const AllocationProblem& problem, int jobs_at_most,
                                        int jobs_per_partition, const Allocator& inner) {
  if (problem.num_jobs() <= jobs_at_most || jobs_per_partition <= 0) return inner(problem);
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  const std::vector<Partition> parts = MakePartitions(problem, jobs_per_partition);
  const std::vector<std::vector<int>> capacity = WholeGpuCapacities(problem, parts);
  Allocation x = Empty(problem);
  for (size_t p = 0; p < parts.size(); ++p) {
    const AllocationProblem sub = SubProblem(problem, parts[p].jobs, capacity[p]);
    DS_ASSIGN_OR_RETURN(const Allocation part_x, inner(sub));
    if (part_x.num_types != problem.num_types || part_x.fraction.size() != sub.iters_per_s.size()) {
      return Internal("an allocator answered a partition of " + std::to_string(sub.num_jobs()) +
                      " jobs with " + std::to_string(part_x.fraction.size()) + " entries");
    }
    for (size_t k = 0; k < parts[p].jobs.size(); ++k) {
      std::copy_n(part_x.fraction.begin() + static_cast<std::ptrdiff_t>(k * problem.num_types),
                  problem.num_types,
                  x.fraction.begin() + static_cast<std::ptrdiff_t>(parts[p].jobs[k]) *
                                           problem.num_types);
    }
  }
  return x;
}

Result<Allocation> AllocateMinJct(const AllocationProblem& problem) {
  return AllocateMinJctFlow(problem);
}

Result<Allocation> AllocateMaxMinPartitioned(const AllocationProblem& problem, int jobs_per_lp,
                                             MaxMinSolver solver) {
  return AllocateMaxMinWithLimits(problem, jobs_per_lp, jobs_per_lp, solver);
}

Result<Allocation> AllocateMaxMinWithLimits(const AllocationProblem& problem, int jobs_per_lp,
                                            int jobs_per_partition, MaxMinSolver solver) {
  return AllocateMaxMinFrom(problem, jobs_per_lp, jobs_per_partition, solver, nullptr);
}

Result<Allocation> AllocateMaxMinWarm(const AllocationProblem& problem, MaxMinBasis& basis,
                                      MaxMinSolver solver) {
  MaxMinBasis::State& state = *basis.state_;
  std::lock_guard basis_lock(state.mutex);
  if (problem.tentative) {  // from the same bases, into a copy that is dropped
    MaxMinBasis::State trial;
    trial.jobs = state.jobs;
    trial.partitions = state.partitions;
    trial.glpk_jobs = state.glpk_jobs;
    trial.glpk_partitions = state.glpk_partitions;
    trial.dense = state.dense;
    return AllocateMaxMinFrom(problem, kJobsPerLp, kJobsPerPartition, solver, &trial);
  }
  Result<Allocation> x = AllocateMaxMinFrom(problem, kJobsPerLp, kJobsPerPartition, solver, &state);
  // The jobs that left are dropped; the ones not solved by CLP (GLPK's small LPs) start cold.
  state.jobs.swap(state.next_jobs);
  state.next_jobs.clear();
  state.glpk_jobs.swap(state.glpk_next_jobs);
  while (!state.glpk_next_jobs.empty()) {
    state.spare_glpk_nodes.push_back(state.glpk_next_jobs.extract(state.glpk_next_jobs.begin()));
  }
  return x;
}

Allocator MaxMinAllocator(MaxMinSolver solver) {
  return [basis = MaxMinBasis(), solver](const AllocationProblem& problem) mutable {
    return AllocateMaxMinWarm(problem, basis, solver);
  };
}

MaxMinBasis::MaxMinBasis() : state_(std::make_shared<State>()) {}

int64_t MaxMinBasis::solves() const { return state_->solves; }
int64_t MaxMinBasis::iterations() const { return state_->iterations; }
int64_t MaxMinBasis::dense_failures() const { return state_->dense_failures; }

Result<Allocation> AllocateMinJctLp(const AllocationProblem& problem) {
  DS_RETURN_IF_ERROR(ValidateProblem(problem));
  if (static_cast<int>(problem.remaining_iters.size()) != problem.num_jobs()) {
    return InvalidArgument("min-jct needs remaining_iters for every job");
  }
  // Coefficients thr / remaining, scaled so the largest is 1 (they can be tiny: 1/s per job).
  double largest = 0;
  for (int j = 0; j < problem.num_jobs(); ++j) {
    for (int t = 0; t < problem.num_types; ++t) {
      largest = std::max(largest, problem.thr(j, t) / problem.remaining_iters[j]);
    }
  }
  Allocation x = Empty(problem);
  std::lock_guard lock(GlpkMutex());
  DS_RETURN_IF_ERROR(SolveMinJct(problem, MakePartitions(problem, 0).front(), largest, x));
  return x;
}

}  // namespace dlsched::hetero
