#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/policy.h"
#include "policy/sharing_policy.h"

namespace dlsched {

// GPU-sharing profiles (docs/sharing.md), a kind of profile told apart by the "share" key
// (io/profile.h holds the typed value, SharingProfile, and reads the base):
//   {"name": "greedy-share", "description": "...", "base": "las",
//    "share": {"packer": "greedy", "mode": "packed", "interference_aware": true,
//              "max_jobs_per_gpu": 2, "memory_percentile": 95, "max_slowdown": 1.5,
//              "max_candidates": 64,
//              "migration": {"enabled": true, "max_per_job": 2, "min_residence_s": 600,
//                            "min_slowdown": 1.2}}}
// base: the profile that orders and places jobs on whole GPUs, a name or path, or a profile
// object; it may not itself be a sharing profile. packer: "greedy" or "heuristic"; mode:
// "packed" or "time-sliced". Keys left out keep SharingPolicyConfig's defaults; unknown keys
// are errors.
bool IsSharingProfile(const nlohmann::json& doc);

// The configuration such a profile gives, and its "base" as written (a string or an object).
struct SharingProfileDoc {
  SharingPolicyConfig config;
  nlohmann::json base;
};
Result<SharingProfileDoc> ParseSharingProfile(const nlohmann::json& doc);

// The document of a sharing profile with every field of `config` and `base` (the base profile's
// document), which ParseSharingProfile reads back to the same configuration.
nlohmann::json SharingProfileJson(const SharingPolicyConfig& config, nlohmann::json base);

}  // namespace dlsched
