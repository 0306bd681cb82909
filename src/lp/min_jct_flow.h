#pragma once

#include "dlsched/common/status.h"
#include "policy/hetero/allocation.h"

namespace dlsched::hetero {

// The min-jct LP (lp_allocators.h, AllocateMinJct) solved exactly without a general LP solver.
// With y[j][t] = gang_j X[j][t] (GPUs of type t job j holds on average) the LP
//   maximise   sum_j sum_t y[j][t] * p[j][t],   p[j][t] = thr(j, t) / remaining_j / gang_j
//   subject to sum_t y[j][t] <= gang_j          every job   (sum_t X[j][t] <= 1)
//              sum_j y[j][t] <= gpus_t          every type
//              y >= 0, y[j][t] = 0 where thr(j, t) = 0
// is a transportation problem: jobs supply GPU demand, types take it up to their capacity, at a
// profit p per GPU. It is solved as a max-profit flow by successive shortest paths: each step
// sends flow from a job with demand left, along the path of highest profit per GPU, into a type
// with room, where a path may move jobs already placed from one type to another (job j leaving
// t1 for t2 gains p[j][t2] - p[j][t1] per GPU); it stops when no path gains. The flow after each
// step is the most profitable one of its size, so the last is optimal. With T types a path has
// at most T exchanges and is found by Bellman-Ford over the T types, the best job of every edge
// kept in a heap (profits are constants), so a step costs O(T^3 + T log n) and the solve about
// O(n T log n) in practice (each step exhausts a job, fills a type or empties a job's share of a
// type). Ties (equal profits, compared exactly: profits that differ by round-off are not tied)
// go to the lower job index, first served and on the more profitable type. Needs remaining_iters.
// An error means a malformed problem, or a step limit far above that bound ran out (a guard; never
// seen), never that jobs do not fit. Pure; thread-safe.
Result<Allocation> AllocateMinJctFlow(const AllocationProblem& problem);

}  // namespace dlsched::hetero
