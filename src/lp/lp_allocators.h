#pragma once

#include <cstdint>
#include <memory>

#include "dlsched/common/status.h"
#include "policy/hetero/allocation.h"

namespace dlsched::hetero {

// The LP allocators of the heterogeneity-aware round-based policies (docs/hetero.md): max-min
// solved with GLPK's simplex (small LPs) and COIN-OR CLP's (large ones, warm-started by the
// policies: MaxMinBasis), min-jct as a transportation problem (min_jct_flow.h). Pure functions
// of the problem (but for MaxMinBasis's warm starts); safe to call from several threads (calls
// into GLPK are serialised). An error means the solver failed, never that jobs do not fit.

// `max-min`: Gavel's heterogeneity-aware LAS (max-min fairness). With eq_j the rate of job j
// under EqualShare (its 1/n share of every type) and r_j(X) = sum_t X[j][t] * thr(j, t):
//   maximise   z
//   subject to r_j(X) / eq_j >= z                      every job that can run somewhere
//              sum_t X[j][t] <= 1                      every job
//              sum_j gang_j * X[j][t] <= gpus_t        every type
//              0 <= X[j][t] <= 1, X[j][t] = 0 where thr(j, t) = 0.
// The max-min optimum leaves all but the worst-off jobs under-determined, so a second LP keeps
// z at its optimum (to a relative 1e-9) and maximises sum_j r_j(X) / eq_j: a lexicographic
// max-min, so no capacity idles that some job could use.
Result<Allocation> AllocateMaxMin(const AllocationProblem& problem);

// `min-jct`: average job completion time. Minimising average JCT is not linear in X; this is the
// fluid relaxation of shortest-remaining-processing-time, which minimises average completion
// time on one machine: maximise the total rate at which jobs complete,
//   maximise   sum_j r_j(X) / remaining_iters_j       (each term: the fraction of job j done
//                                                       per second)
// under the same constraints as max-min. Fast GPUs go to the jobs closest to finishing and to
// the jobs that gain most from them; jobs with a long way to go get what is left. Needs
// remaining_iters. Solved exactly as a transportation problem, without GLPK, by
// AllocateMinJctFlow (min_jct_flow.h), at any number of jobs; AllocateMinJctLp is the same LP
// solved by GLPK (the reference the tests and the bench compare it with).
Result<Allocation> AllocateMinJct(const AllocationProblem& problem);

// Above kClassLpAbove jobs max-min groups *like jobs*: same gang and the same normalised rates
// thr(j, t) / eq_j on every type (rates a constant factor apart, as under an estimator that knows
// only per-type speed ratios), and when there are fewer classes than jobs and at most
// kJobsPerLp of them it solves one LP over the classes (exact: the same optimal value; like jobs
// can share one rate at the optimum), splitting each class's X so that its jobs keep the optimum
// but most run on one type. Otherwise, above kJobsPerLp jobs, max-min solves POP-style
// partitions (below) of at most kJobsPerPartition jobs each; up to it, one LP over the jobs.
// (250 jobs per partition: one allocation of 10,000 distinct jobs in under 1 s, about 0.7%
// below 400 per partition and 1% below the exact LP at 1,000 jobs; BENCHMARKS.md.)
inline constexpr int kJobsPerLp = 400;
inline constexpr int kJobsPerPartition = 250;
inline constexpr int kClassLpAbove = 150;

// The max-min LP on POP-style partitions (Narayanan et al., "Solving Large-Scale Granular
// Resource Allocation Problems Efficiently with POP", SOSP'21): the jobs are dealt into
// k = ceil(n / jobs_per_lp) groups, stratified by gang size and fastest type, each given the
// share of every type's GPUs that its jobs' GPU demand (sum of gangs) is of the whole, and each
// group's LP is solved on its own, with the fair rates eq_j of the whole problem. The
// union is feasible for the whole problem; it is optimal when k = 1 (n <= jobs_per_lp, or
// jobs_per_lp <= 0), and otherwise close to it when each group holds many jobs (the bench and
// tests measure how close). Solve time grows with k x (n / k)^2 instead of n^2. When
// jobs_per_lp > 0 and n > kClassLpAbove, max-min first tries one LP over the classes of like jobs
// (above).
// AllocateMaxMinPartitioned(p, k) is AllocateMaxMinWithLimits(p, k, k), and AllocateMaxMin(p)
// AllocateMaxMinWithLimits(p, kJobsPerLp, kJobsPerPartition): one LP (or the class LP) up to
// jobs_per_lp jobs (and classes), above it partitions of at most jobs_per_partition jobs.
// `solver` solves each LP: kAuto is AllocateMaxMin's choice. All reach the same optimal values at
// both stages (to 1e-6; MaxMinSolversTest); where the optimum is not unique their vertices can
// differ, so the LPs up to kClassLpAbove jobs stay off CLP (CLP there changes
// scenario.gavel_fidelity beyond its 5%). Cold, CLP is 1.1-1.9x faster than GLPK's Dantzig
// pricing above kClassLpAbove jobs; its gain is the warm start (MaxMinBasis; BENCHMARKS.md,
// issue 19). Up to kDenseLpJobsAtMost jobs the dense simplex of our own, warm-started from the
// last call's basis inverse, is faster than GLPK (2.1x at 20-34 jobs along a sequence of calls,
// 1.4x at 50, even at 70, 2-3x slower at 100-150: each pivot costs O(rows^2); BENCHMARKS.md,
// issue 19 step 9). The class LPs stay with GLPK: SplitClass lays out their vertex, and the
// dense simplex's moved one 1,000-job workload's avg JCT by +11%.
inline constexpr int kDenseLpJobsAtMost = 60;
enum class MaxMinSolver {
  kAuto,       // kDense up to kDenseLpJobsAtMost jobs (not for the class LP), kGlpk up to
               // kClassLpAbove, CLP's primal above
  kGlpk,       // GLPK's primal simplex, presolved
  kClpPrimal,  // COIN-OR CLP's primal simplex, both stages
  kClpDual,    // CLP's dual simplex for the first stage, its primal for the second
  kDense,      // DenseSimplex (dense_simplex.h), both stages; GLPK where it fails
  kAutoGlpk,   // kAuto without kDense: GLPK up to kClassLpAbove, CLP's primal above (the
               // vertices before the dense simplex, for profiles tuned on them)
};
Result<Allocation> AllocateMaxMinPartitioned(const AllocationProblem& problem, int jobs_per_lp,
                                             MaxMinSolver solver = MaxMinSolver::kAuto);
Result<Allocation> AllocateMaxMinWithLimits(const AllocationProblem& problem, int jobs_per_lp,
                                            int jobs_per_partition,
                                            MaxMinSolver solver = MaxMinSolver::kAuto);

// The optimal bases of the last call's CLP max-min LPs, each stage's, and of its GLPK LPs' first
// stage, to warm-start the next call: consecutive allocations of a round-based policy differ by
// about one job, so the last basis, with the rows and columns of jobs that left dropped and
// slack ones for jobs that came (CLP completes or trims the basis; for GLPK, rows are made
// basic or X columns nonbasic until there is one basic variable per row, and a basis GLPK
// cannot factorise is dropped for the presolved cold solve), is a few pivots from the optimum
// (CLP: 4-9 per stage on MIX2-like jobs, against hundreds cold; GLPK: about 2 against 66 at
// 10-110 jobs). Jobs are recognised by their gang and rates (a job whose rates changed starts
// from the slack basis; like jobs, by their rank among the jobs with their gang and rates).
// GLPK's second stage starts from the first's optimum, as cold. The dense simplex's LPs keep
// their whole first-stage optimum, basis inverse and all, and the next LP starts from it
// (DenseSimplex::WarmFrom; from the saved statuses, in GLPK's codes, where that fails). With
// several POP partitions CLP's second stage starts from the first's optimum, as jobs move
// between partitions. Copies share one state; calls through it are serialised.
class MaxMinBasis {
 public:
  MaxMinBasis();
  // LP stages solved with the state (CLP's both, GLPK's first), and the simplex iterations
  // over them.
  int64_t solves() const;
  int64_t iterations() const;
  // The small LPs DenseSimplex failed (numerically, or at its iteration limit) and GLPK solved.
  int64_t dense_failures() const;

  struct State;

 private:
  friend Result<Allocation> AllocateMaxMinWarm(const AllocationProblem&, MaxMinBasis&,
                                               MaxMinSolver);
  std::shared_ptr<State> state_;
};

// AllocateMaxMin with its LPs warm-started from `basis`, which then holds their bases (a
// tentative problem leaves `basis` as it was). The same optimal values as AllocateMaxMin; where
// the optimum is not unique the vertex may differ (for GLPK's small LPs it does in most calls:
// 78% of the 20,000 at 10,000 Gavel-mix jobs at 1.5 per hour; BENCHMARKS.md, issue 19 step 8).
Result<Allocation> AllocateMaxMinWarm(const AllocationProblem& problem, MaxMinBasis& basis,
                                      MaxMinSolver solver = MaxMinSolver::kAuto);

// The `max-min` allocator of the policies: AllocateMaxMinWarm by `solver` from a MaxMinBasis of
// its own (each call builds a new one; copies share it). `max-min-glpk`: solver kAutoGlpk.
Allocator MaxMinAllocator(MaxMinSolver solver = MaxMinSolver::kAuto);

// The min-jct LP over all the jobs, solved by GLPK's simplex (before issue 19's flow, the
// allocator itself, partitioned above kJobsPerLp jobs): optimal to GLPK's tolerances, about
// 5.7 s at 10,000 jobs where the flow takes milliseconds (BENCHMARKS.md).
Result<Allocation> AllocateMinJctLp(const AllocationProblem& problem);

// POP (as above) for any allocator: up to jobs_at_most jobs inner(problem); above it the jobs
// dealt as the max-min partitions deal them, into k = ceil(n / jobs_per_partition) groups, each a
// problem of its own with its jobs and its share of every type's GPUs (the share of the whole GPU
// demand its gangs are, rounded to whole GPUs by largest remainder, so that the shares add up to
// the capacity), solved by `inner` alone; X is the union of the groups' answers, feasible for the
// whole problem when each group's is for its own. A group's jobs keep their order, and every
// per-job input (rates, work, times) goes with them; an error from any group is returned.
// Meant for allocators with one program over every job (finish_time_fairness.h), whose cost
// grows faster than the jobs.
Result<Allocation> AllocateOnPartitions(const AllocationProblem& problem, int jobs_at_most,
                                        int jobs_per_partition, const Allocator& inner);

}  // namespace dlsched::hetero
