#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Best fit: prefer the node left with the fewest free GPUs, keeping whole nodes free for
// large gangs (less fragmentation).
class ConsolidateScore final : public ScorePlugin {
 public:
  static constexpr std::string_view kName = "consolidate";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  double ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                   const SchedulingContext& ctx) const override;
};

// Worst fit: prefer the node left with the most free GPUs (spreads load; less contention on
// a node's shared resources).
class SpreadScore final : public ScorePlugin {
 public:
  static constexpr std::string_view kName = "spread";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  double ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                   const SchedulingContext& ctx) const override;
};

}  // namespace dlsched
