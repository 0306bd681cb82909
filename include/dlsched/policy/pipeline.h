#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dlsched/policy/policy.h"
#include "dlsched/policy/registry.h"

namespace dlsched {

struct PluginConfig {
  std::string name;
  PluginArgs args;
  double weight = 1.0;  // Score plugins only
};

// A policy profile: which plugin runs at each point, and the pipeline's own knobs. Loaded from
// JSON (profiles/*.json, see docs/profiles.md) and shared verbatim by simulator and daemon.
struct PipelineConfig {
  std::string name;
  std::string description;
  std::vector<PluginConfig> admit;
  PluginConfig queue_sort{"fifo", {}, 1.0};
  std::vector<PluginConfig> filter;
  std::vector<PluginConfig> score;
  std::vector<PluginConfig> preempt;  // empty: never preempts
  // false: strict head-of-line (stop at the first waiting job that does not fit);
  // true: later jobs may start on GPUs the blocked head cannot use.
  bool backfill = true;
  // A job waiting longer than this is considered before the policy order (starvation guard).
  Duration starvation_limit = Duration::max();
  // Blocked jobs per cycle for which victims are searched (bounds a cycle's cost).
  int max_preemption_attempts = 8;
};

// Builds the plugin pipeline policy. Fails naming the unknown plugin or bad argument.
Result<std::unique_ptr<SchedulingPolicy>> BuildPipeline(const PipelineConfig& config,
                                                        const PluginRegistry& registry);

}  // namespace dlsched
