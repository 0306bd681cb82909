#pragma once

#include <vector>

#include "dlsched/common/status.h"
#include "policy/hetero/allocation.h"

namespace dlsched::hetero {

// Where an interior-point solver leaves the optimum of "maximise z subject to r_j(X) / c_j >= z"
// (the programs of max-min-one-stage and finish-time-fairness-minmax, finish_time_fairness.h):
// a simplex returns a vertex of the optimal face, so the jobs off the bottleneck get what that
// vertex gives them, while a path-following interior-point method (Gavel's ECOS) converges to
// the face's analytic centre, each job's time spread over the types it can use and capacity
// left where the bottleneck does not need it.
//
// Returns the analytic centre of {X feasible (allocation.h) : r_j(X) / need[k] >= z* (1 - 1e-4)
// for every job j = jobs[k]}, z* = min_k r_j(start) / need[k] the level `start` (the vertex)
// achieves: the X maximising the sum of the logarithms of every slack, X[j][t] for the types j
// can run on (thr > 0, a type with GPUs), 1 - sum_t X[j][t] per job, gpus_t - sum_j gang_j X[j][t]
// per type and r_j(X) / need[k] - z* (1 - 1e-4) per job. Jobs outside `jobs` get no X. Found by
// damped Newton steps from start mixed with a small interior point, each step O(jobs x T^3)
// (the Hessian is block-diagonal per job plus T rank-one capacity terms, solved by Woodbury).
// Returns `start` unchanged when the mix is not strictly inside (start infeasible beyond the
// solver's tolerance) or z* <= 0. Pure function; `need` parallel to `jobs`, each > 0.
Allocation CentreOfOptimalFace(const AllocationProblem& problem, const std::vector<int>& jobs,
                               const std::vector<double>& need, const Allocation& start);

}  // namespace dlsched::hetero
