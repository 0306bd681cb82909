#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Least-cost placement for deadlines (issue 4): among the nodes a job fits on, prefer the
// slowest (cheapest) GPU type on which it still meets its deadline, and the fastest when it
// misses everywhere. The run time on a node is the job's estimated remaining time scaled by
// the estimator's speed there (ref_iters_per_s / ItersPerSecond on `gpus` GPUs of the node).
// With r the estimator's speed there relative to the job's reference speed:
//   meets its deadline:  1 + 1 / (1 + r)   in (1, 2): slower scores higher
//   misses it:           r / (1 + r)       in (0, 1): faster scores higher
//   no deadline:         0 (leaves the choice to the other scores)
// Give it a weight that dominates packing scores (the qos profile: 100 against consolidate's
// at most 7): it decides the GPU type, consolidation the node within it. Scores single-node
// placements only, as every score plugin (across nodes the placer takes the type spanning the
// fewest nodes).
class DeadlineFitScore final : public ScorePlugin {
 public:
  static constexpr std::string_view kName = "deadline_fit";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  double ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                   const SchedulingContext& ctx) const override;
};

}  // namespace dlsched
