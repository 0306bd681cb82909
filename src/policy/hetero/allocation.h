#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched::hetero {

// One heterogeneity-aware allocation problem (Gavel, OSDI'20): jobs x GPU types. Plain numbers
// and indexes, no ids, so allocators are pure functions that tests can feed by hand.
struct AllocationProblem {
  int num_types = 0;
  std::vector<int> gpus_per_type;  // capacity of each type, GPUs
  std::vector<int> gang;           // per job: GPUs it occupies while it runs (> 0)
  // Row-major jobs x types: the job's iterations per second on a consolidated gang of that type;
  // 0 = it cannot run there (does not fit, failed there, or needs another type).
  std::vector<double> iters_per_s;
  // Per job: iterations left (> 0). Read only by the min-jct allocator; may be empty otherwise.
  std::vector<double> remaining_iters;
  // Per job: seconds since it arrived, and iterations done so far (>= 0). Read only by the
  // finish-time-fairness allocator (with remaining_iters); may be empty otherwise.
  std::vector<double> elapsed_s;
  std::vector<double> done_iters;
  // A solve whose X nothing acts on (a policy explaining a decision it does not take): an
  // allocator that learns from its calls (MaxMinBasis) answers as it would, and learns nothing.
  bool tentative = false;

  int num_jobs() const { return static_cast<int>(gang.size()); }
  double thr(int job, int type) const { return iters_per_s[job * num_types + type]; }
  int total_gpus() const;
};

// X[j][t], row-major jobs x types: the fraction of wall time job j should run on type t.
// Feasible when X >= 0, X[j][t] = 0 where thr(j, t) = 0, sum_t X[j][t] <= 1 for every job and
// sum_j X[j][t] * gang[j] <= gpus_per_type[t] for every type.
struct Allocation {
  int num_types = 0;
  std::vector<double> fraction;

  double at(int job, int type) const { return fraction[job * num_types + type]; }
  // Iterations per second job j makes on average under X: sum_t X[j][t] * thr(j, t).
  double EffectiveThroughput(const AllocationProblem& problem, int job) const;
};

// Fails naming the first violated constraint of the feasibility rules above, with `tolerance`
// slack (LP solutions are exact only to the solver's tolerance).
Status CheckAllocation(const AllocationProblem& problem, const Allocation& allocation,
                       double tolerance = 1e-6);

// Checks the problem's shape and values: sizes agree, gangs > 0, capacities and rates >= 0,
// remaining work > 0 where given. Allocators call it first.
Status ValidateProblem(const AllocationProblem& problem);

// The equal-share allocation Gavel normalises against: every job gets 1/n of every type's
// GPU-time, X[j][t] = s_j * gpus_t / total_gpus with s_j = min(1, total_gpus / (n * gang_j)),
// restricted to the types the job can use (the share of a type it cannot use is lost).
// Its throughput is job j's "fair" rate: max-min maximises min_j rate_j / equal-share rate_j.
Allocation EqualShare(const AllocationProblem& problem);

// The two objectives the LP allocators optimise, for checking and comparing allocations:
// max-min's min_j rate_j / equal-share rate_j over the jobs the equal share gives a rate
// (+infinity when none has one), and min-JCT's sum_j rate_j / remaining_iters_j.
double MinNormalisedRate(const AllocationProblem& problem, const Allocation& x);
double CompletionRate(const AllocationProblem& problem, const Allocation& x);

// The cheap, non-LP allocator (`greedy`), O(n T log n): approximates the max-min allocation.
// Every job gets the time share an equal split of the cluster's GPUs gives it,
// s_j = min(1, total_gpus / (n * gang_j)) -- what max-min fairness gives when jobs have equal
// speedups -- and the greedy decides only *where*: types are visited fastest first (by the
// jobs' mean rate on them relative to their best type), and each type's GPUs go to the jobs
// whose relative speedup on it (rate there / mean rate over the types they can use) is
// highest, water-filling each job up to its share (a job that cannot use a fast type gets its
// share on the slower ones). A last pass fills capacity still idle (fewer jobs than GPUs, or
// shares that found no usable type) up to X = 1 per job, jobs with the least time first. This is
// the trade Gavel's LP makes (fast GPUs to the jobs that gain most from them) without the LP's
// exact balancing of normalised throughputs.
Result<Allocation> AllocateGreedy(const AllocationProblem& problem);

// An allocator: a function of the problem, but for `max-min`'s, which also starts from the bases
// of its earlier (non-tentative) calls (lp/lp_allocators.h, MaxMinBasis). Result errors are
// solver failures.
using Allocator = std::function<Result<Allocation>(const AllocationProblem&)>;

}  // namespace dlsched::hetero
