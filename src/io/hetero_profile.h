#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/policy.h"
#include "policy/hetero/allocation.h"
#include "policy/hetero/round_policy.h"

namespace dlsched {

// Round-based heterogeneity-aware profiles (docs/hetero.md), a kind of profile beside the plugin
// pipeline (io/profile.h), told apart by the "allocator" key:
//   {"name": "hetero-las", "description": "...", "allocator": "max-min",
//    "round_s": 360, "agnostic": false}
// allocator: "max-min" (AllocateMaxMin), "max-min-glpk" (the same with its small LPs by GLPK,
// as before the dense simplex: MaxMinSolver::kAutoGlpk), "min-jct" (AllocateMinJct), "greedy"
// (AllocateGreedy), "finish-time-fairness" (AllocateFinishTimeFairness),
// "finish-time-fairness-minmax" (AllocateFinishTimeFairnessMinMax), "max-min-one-stage"
// (AllocateMaxMinOneStage), "finish-time-fairness-centre" (AllocateFinishTimeFairnessCentre),
// "max-min-one-stage-centre" (AllocateMaxMinOneStageCentre) or "max-min-gavel"
// (AllocateMaxMinGavel); round_s: the round
// length, seconds (> 0, default 360); agnostic: plan with a type-blind throughput matrix (default
// false); realloc_interval_s: the least time between two computations of the allocation (>= 0,
// default 0 = at every change of the active set; RoundPolicyOptions::realloc_interval);
// coalesce_above_jobs: above this many active jobs, recompute the allocation only once the jobs
// changed since the last reach coalesce_fraction of the active jobs, or at a round boundary
// (an integer >= 0, default 0 = off; coalesce_fraction in (0, 1], default 0.05;
// RoundPolicyOptions::coalesce_above_jobs);
// backfill_between_rounds: give GPUs idle between round boundaries to waiting jobs (default true;
// RoundPolicyOptions::backfill_between_rounds); reset_counts_at_allocation (default false;
// RoundPolicyOptions::reset_counts_at_allocation); type_walk: "ranked" (the default), "type-order"
// or "shuffled" (RoundPolicyOptions::type_walk); spread_tied_types (default false;
// RoundPolicyOptions::spread_tied_types); initial_rounds_received (>= 0, default 0;
// RoundPolicyOptions::initial_rounds_received); deficit_ties and zero_entries (default false;
// RoundPolicyOptions::deficit_ties, ::zero_entries). Unknown keys are errors.
struct RoundProfile {
  hetero::RoundPolicyOptions options;
  std::string allocator;  // one AllocatorByName knows
};

// Whether a profile document is of this kind (it has an "allocator").
bool IsRoundProfile(const nlohmann::json& doc);

// The allocator of that name; fails listing the known ones.
Result<hetero::Allocator> AllocatorByName(std::string_view name);

// Reads such a profile. Fails naming the bad key or value.
Result<RoundProfile> ParseRoundProfile(const nlohmann::json& doc);
// The document ParseRoundProfile reads back to an equal profile.
nlohmann::json RoundProfileJson(const RoundProfile& profile);

// A hetero::RoundPolicy with the profile's options and allocator.
Result<std::unique_ptr<SchedulingPolicy>> BuildRoundPolicy(const RoundProfile& profile);

}  // namespace dlsched
