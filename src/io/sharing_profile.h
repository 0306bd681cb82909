#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/policy.h"
#include "policy/sharing_policy.h"

namespace dlsched {

// GPU-sharing profiles (docs/sharing.md), a third kind of profile, told apart by the "share" key:
//   {"name": "greedy-share", "description": "...", "base": "las",
//    "share": {"packer": "greedy", "mode": "packed", "interference_aware": true,
//              "max_jobs_per_gpu": 2, "memory_percentile": 95, "max_slowdown": 1.5,
//              "max_candidates": 64,
//              "migration": {"enabled": true, "max_per_job": 2, "min_residence_s": 600,
//                            "min_slowdown": 1.2}}}
// base: the profile (name or path) that orders and places jobs on whole GPUs; it may not itself
// be a sharing profile. packer: "greedy" or "heuristic"; mode: "packed" or "time-sliced". Keys
// left out keep SharingPolicyConfig's defaults; unknown keys are errors.
bool IsSharingProfile(const nlohmann::json& doc);

// The configuration such a profile gives, and the name of its base profile.
struct SharingProfile {
  SharingPolicyConfig config;
  std::string base;
};
Result<SharingProfile> ParseSharingProfile(const nlohmann::json& doc);

// Builds the policy: ParseSharingProfile, then the base through `load_base`.
Result<std::unique_ptr<SchedulingPolicy>> BuildSharingPolicy(
    const nlohmann::json& doc,
    const std::function<Result<std::unique_ptr<SchedulingPolicy>>(std::string_view)>& load_base);

}  // namespace dlsched
