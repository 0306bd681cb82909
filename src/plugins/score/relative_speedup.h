#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Heterogeneity-aware GPU-type choice inside the plugin pipeline (Gavel's insight, without its
// global LP): a job should take the GPU type on which its speed-up is large compared with the
// speed-ups of the jobs it competes with, leaving a fast type to the jobs that gain most on it.
//
// With s_j(t) the estimator's single-GPU speed of job j on type t (never the truth: it is the
// policy's ThroughputModel) and a_j(t) = s_j(t) / mean over the cluster's types of s_j, job j's
// affinity for the node's type t is
//   x = a_j(t) / mean over the first `compare_jobs` other waiting jobs k (queue order) of a_k(t)
// (x = a_j(t) when nothing else waits: then the fastest type wins), scored x / (1 + x) in (0, 1).
// With `deadline_fallback` (the default) a job with a deadline is scored as DeadlineFitScore
// scores it instead: in (1, 2), slower types higher, on the types where it still meets its
// deadline (a cheaper type when the deadline allows), and in (0, 1), faster higher, where it
// misses. On a cluster of one GPU type every node scores 0 (no choice to make). Give it a weight
// that dominates packing scores, as deadline_fit's: it decides the type, consolidation the node.
// Cost per call: O(nodes + compare_jobs x types) estimator calls and comparisons.
class RelativeSpeedupScore final : public ScorePlugin {
 public:
  static constexpr std::string_view kName = "relative_speedup";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  RelativeSpeedupScore(int compare_jobs, bool deadline_fallback)
      : compare_jobs_(compare_jobs), deadline_fallback_(deadline_fallback) {}
  std::string_view Name() const override { return kName; }
  double ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                   const SchedulingContext& ctx) const override;

 private:
  int compare_jobs_;
  bool deadline_fallback_;
};

}  // namespace dlsched
