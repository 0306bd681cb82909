#pragma once

#include "policy/hetero/allocation.h"

namespace dlsched::hetero {

// Spreads X over GPU types no job can tell apart. Types t and u are tied when every job's rate is
// the same on both (all types are, under a type-blind matrix: the heterogeneity-agnostic
// baseline); such an LP has an optimal face on which a job's time on tied types can be moved
// between them freely, and a simplex solver returns a vertex of it, most jobs on one type. Gavel's
// solver (ECOS, an interior-point method) returns a point inside that face instead. This gives
// each job, per group of tied types, its time on the group split in proportion to the types'
// GPUs: every job's rate, every objective and feasibility (each type's share of the group's
// GPU-time is its share of the group's GPUs) are kept. Groups without GPUs are left as they are.
void SpreadOverTiedTypes(const AllocationProblem& problem, Allocation& x);

}  // namespace dlsched::hetero
