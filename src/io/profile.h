#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dlsched/policy/pipeline.h"
#include "io/hetero_profile.h"
#include "policy/sharing_policy.h"

namespace dlsched {

// A policy profile, read and parsed once (docs/profiles.md): the one typed value every driver
// takes. `dlsched simulate`, `dlsched serve`, the daemon's event log (its start record holds
// PolicyProfileToJson) and `simulate --replay` all build their policy from it with BuildPolicy.
// Three kinds, told apart by their keys when the JSON is read:
//   - a plugin pipeline (PipelineConfig; the default kind),
//   - a round-based heterogeneity-aware policy ("allocator"; RoundProfile, docs/hetero.md),
//   - GPU sharing over a base of either other kind ("share"; SharingProfile, docs/sharing.md).
struct SharingProfile {
  SharingPolicyConfig config;
  // The profile that orders and places jobs on whole GPUs.
  std::variant<PipelineConfig, RoundProfile> base;
};
struct PolicyProfile {
  std::variant<PipelineConfig, RoundProfile, SharingProfile> kind;

  const std::string& name() const;
  const std::string& description() const;
};

// Parses a profile of any kind. The pipeline format:
//   {"name": "tiresias", "description": "...",
//    "admit": ["feasibility"],
//    "queue_sort": {"name": "tiresias", "args": {"thresholds_gpu_s": [3600, 36000]}},
//    "filter": [], "score": [{"name": "consolidate", "weight": 1}],
//    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 60}}],
//    "backfill": true, "starvation_limit_s": 28800, "max_preemption_attempts": 8}
// A plugin is a name or {"name", "args", "weight"}. The round-based format is
// io/hetero_profile.h's, the sharing format io/sharing_profile.h's; a sharing profile's "base"
// is a built-in name or a path (read now) or a profile object of another kind (as
// PolicyProfileToJson writes it). Unknown keys are errors. `origin` names the text in messages
// (a path, or "builtin profile 'fifo'").
Result<PolicyProfile> ParsePolicyProfile(std::string_view json_text, std::string_view origin);

// `name_or_path`: a built-in profile name ("fifo"), or a path to a .json profile file. NotFound
// for an unknown name or an unreadable file; InvalidArgument for a bad profile.
Result<PolicyProfile> LoadPolicyProfile(std::string_view name_or_path);

// The JSON text of a profile, self-contained (a sharing profile's base embedded), which
// ParsePolicyProfile reads back to an equal profile (plugin arguments as the text PluginArgs
// keeps), so a replay of the daemon's event log runs the profile it ran even when that came
// from a file.
std::string PolicyProfileToJson(const PolicyProfile& profile);

// Sets the round length of a round-based profile, or of a sharing profile's round-based base
// (`serve --round`: a short round for a demo or a test, without a copy of the profile). The
// profile keeps its name; PolicyProfileToJson carries the new round_s, so the event log and the
// stored policy state name the profile that ran. InvalidArgument when the profile has no rounds
// or `round` is not positive.
Status SetRoundLength(PolicyProfile& profile, Duration round);

// A ready policy: BuildPipeline with the in-tree plugins, a hetero::RoundPolicy with its
// allocator, or the sharing decorator (MakeSharingPolicy) over its base built the same way.
// Fails naming the profile and what is wrong (a plugin the registry lacks, a bad argument).
Result<std::unique_ptr<SchedulingPolicy>> BuildPolicy(const PolicyProfile& profile);

// The profiles shipped in profiles/*.json, embedded at build time: (name, JSON text), the
// default (dlsched) first, then by name.
const std::vector<std::pair<std::string_view, std::string_view>>& BuiltinProfiles();

}  // namespace dlsched
