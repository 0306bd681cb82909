#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/policy/pipeline.h"

namespace dlsched {

// Parses a policy profile (JSON). Format (docs/profiles.md):
//   {"name": "tiresias", "description": "...",
//    "admit": ["feasibility"],
//    "queue_sort": {"name": "tiresias", "args": {"thresholds_gpu_s": [3600, 36000]}},
//    "filter": [], "score": [{"name": "consolidate", "weight": 1}],
//    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 60}}],
//    "backfill": true, "starvation_limit_s": 28800, "max_preemption_attempts": 8}
// A plugin is a name or {"name", "args", "weight"}. Unknown keys are errors. `origin` names the
// text in messages (a path, or "builtin profile 'fifo'").
Result<PipelineConfig> ParseProfile(std::string_view json_text, std::string_view origin);

// The JSON text of a profile, which ParseProfile reads back to an equal profile (plugin
// arguments as the text PluginArgs keeps). The daemon logs it, so a replay of its event log
// runs the profile it ran even when that came from a file.
std::string ProfileToJson(const PipelineConfig& profile);

// The profiles shipped in profiles/*.json, embedded at build time: (name, JSON text), by name.
const std::vector<std::pair<std::string_view, std::string_view>>& BuiltinProfiles();

// `name_or_path`: a built-in profile name ("fifo"), or a path to a .json profile file.
Result<PipelineConfig> LoadProfile(std::string_view name_or_path);

// A ready policy from a profile of any kind: a plugin pipeline (LoadProfile, then BuildPipeline
// with the in-tree plugins), a round-based heterogeneity-aware profile (io/hetero_profile.h,
// docs/hetero.md), or a GPU-sharing profile over a base of another kind (io/sharing_profile.h,
// docs/sharing.md); LoadProfile refuses the last two.
Result<std::unique_ptr<SchedulingPolicy>> LoadPolicy(std::string_view name_or_path);

// Whether a profile's JSON text is a round-based heterogeneity-aware profile rather than a
// plugin pipeline (false for text that is not valid JSON).
bool IsRoundProfileText(std::string_view json_text);
// Whether it is a plugin pipeline profile: a JSON object of neither other kind (round-based,
// io/hetero_profile.h; GPU sharing, io/sharing_profile.h).
bool IsPipelineProfileText(std::string_view json_text);

// The "description" of a profile of either kind (for `dlsched policies -v`).
Result<std::string> ProfileDescription(std::string_view json_text, std::string_view origin);

}  // namespace dlsched
