#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/policy.h"
#include "policy/hetero/allocation.h"

namespace dlsched {

// Round-based heterogeneity-aware profiles (docs/hetero.md), a second kind of profile beside
// the plugin pipeline, told apart by the "allocator" key:
//   {"name": "hetero-las", "description": "...", "allocator": "max-min",
//    "round_s": 360, "agnostic": false}
// allocator: "max-min" (AllocateMaxMin), "min-jct" (AllocateMinJct) or "greedy"
// (AllocateGreedy); round_s: the round length, seconds (> 0, default 360); agnostic: plan with
// a type-blind throughput matrix (default false). Unknown keys are errors.
bool IsRoundProfile(const nlohmann::json& doc);

// The allocator of that name; fails listing the known ones.
Result<hetero::Allocator> AllocatorByName(std::string_view name);

// Builds a hetero::RoundPolicy from such a profile. Fails naming the bad key or value.
Result<std::unique_ptr<SchedulingPolicy>> BuildRoundPolicy(const nlohmann::json& doc);

}  // namespace dlsched
