#pragma once

#include "dlsched/common/status.h"
#include "policy/hetero/allocation.h"

namespace dlsched::hetero {

// Every allocator below solves one program over all the jobs up to kOneProgramJobsAtMost of
// them, for the hundreds of active jobs of a fidelity run (docs/fidelity.md), and above it the
// same program on POP partitions of kJobsPerProgramPartition jobs (AllocateOnPartitions,
// lp_allocators.h): each group its own program on its share of the GPUs, with its own equal
// shares. One program over 11,579 jobs took 45 s in GLPK (BENCHMARKS.md, issue 19).
inline constexpr int kOneProgramJobsAtMost = 1000;
inline constexpr int kJobsPerProgramPartition = 500;

// `finish-time-fairness`: Gavel's finish-time fairness (OSDI'20, section 4.2; its policy
// finish_time_fairness_perf), solved with GLPK's simplex. Each job's finish-time ratio compares
// its expected completion under X with its completion in isolation on 1/n of the cluster:
//   rho_j(X) = (elapsed_j + remaining_j / r_j(X)) / (isolated_j + remaining_j / eq_j)
// with r_j(X) = sum_t X[j][t] * thr(j, t), eq_j the rate of job j under EqualShare (its 1/n share
// of every type) and isolated_j = done_j / eq_j the time its work so far would have taken there.
// The allocator minimises max_j rho_j over the feasible X (allocation.h) of the jobs that can run
// somewhere (the others get no X). rho_j <= rho is r_j(X) >= c_j(rho) = remaining_j /
// (rho * D_j - elapsed_j), D_j the denominator: linear in X for a fixed rho, so the optimum is
// found by bisection on rho, each step an LP (maximise z subject to r_j(X) / c_j(rho) >= z; rho is
// achievable when z >= 1), the upper end tightened to the max rho_j the step's X achieves, until
// the bracket is within a relative 1e-6. The min-max optimum leaves the jobs off the bottleneck
// under-determined; as AllocateMaxMin does, a last LP keeps every r_j(X) >= c_j(rho) at the
// bracket's upper end and maximises sum_j r_j(X) / c_j(rho), so no capacity idles that some job
// could use. Needs remaining_iters, elapsed_s and done_iters (Gavel's simulator accumulates the
// isolated time round by round, at the share of each round; here the work done so far is timed
// at the current share). Pure function of the problem; safe to call from several threads. An
// error means the solver failed.
Result<Allocation> AllocateFinishTimeFairness(const AllocationProblem& problem);

// `finish-time-fairness-minmax`: the same min-max optimum without the last fill: X as the
// bisection's last achieving LP leaves it (max z only), so the jobs off the bottleneck get what
// that vertex gives them and capacity may idle (the round mechanism's work-conserving pass
// hands it out). Gavel's program has this one objective (solved by ECOS, an interior-point
// method, whose optimum leaves slack likewise); docs/fidelity.md measures both.
Result<Allocation> AllocateFinishTimeFairnessMinMax(const AllocationProblem& problem);

// `max-min-one-stage`: AllocateMaxMin's first LP alone (maximise z subject to r_j(X) / eq_j >= z,
// lp_allocators.h), one LP over all the jobs, without the second stage that fills the capacity
// the worst-off jobs leave: the jobs off the bottleneck get what the simplex vertex gives them.
// Gavel's max_min_fairness programs have this one objective. For fidelity runs (docs/fidelity.md);
// one LP over the jobs up to kOneProgramJobsAtMost, POP partitions above (as every allocator here).
Result<Allocation> AllocateMaxMinOneStage(const AllocationProblem& problem);

// `finish-time-fairness-centre` and `max-min-one-stage-centre`: the min-max (max-min) optimum
// above moved from the simplex's vertex to the analytic centre of its optimal face
// (CentreOfOptimalFace, face_centre.h), where an interior-point solver such as Gavel's ECOS
// leaves it: every job keeps its target to a relative 1e-4, and the time the bottleneck does not
// need is spread over every job and type rather than wherever the vertex put it.
Result<Allocation> AllocateFinishTimeFairnessCentre(const AllocationProblem& problem);
Result<Allocation> AllocateMaxMinOneStageCentre(const AllocationProblem& problem);

// `max-min-gavel`: Gavel's max_min_fairness programs as its simulator states and ECOS solves
// them: max-min-one-stage-centre with Gavel's normalisation, each job's rate over its
// proportional share's rate divided by its gang, sum_t thr(j, t) * gpus_t / total_gpus / gang_j
// (maximise min_j gang_j r_j(X) / proportional_j), instead of the equal share (which caps the
// share at 1 / n of the cluster: the two agree while every gang times the active jobs exceeds
// the cluster, and otherwise Gavel gives multi-GPU jobs less time).
Result<Allocation> AllocateMaxMinGavel(const AllocationProblem& problem);
// AllocateMaxMinGavel with the limits of AllocateOnPartitions chosen: one program up to
// jobs_at_most jobs, partitions of jobs_per_partition above (for the tests and the bench, which
// compare partitions with the one program).
Result<Allocation> AllocateMaxMinGavelWithLimits(const AllocationProblem& problem,
                                                 int jobs_at_most, int jobs_per_partition);

// max_j rho_j(X) over the jobs with an equal-share rate (the objective above; 0 when none has
// one, +infinity when such a job gets no rate under X). Needs the same per-job inputs.
double MaxFinishTimeRatio(const AllocationProblem& problem, const Allocation& x);

}  // namespace dlsched::hetero
