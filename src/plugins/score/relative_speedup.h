#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "dlsched/perf/throughput_model.h"
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
// Cost per call: `types` estimator calls (the scored job's affinities, from its view) and
// O(compare_jobs) lookups: each compared job's affinities are computed once and kept, as they
// depend only on its spec, the cluster and the estimator, none of which changes while a scheduler
// runs (a new cluster or estimator starts the cache afresh). Like the pipeline, not thread-safe.
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

  // One node of each GPU type of ctx's cluster; (re)starts the cache when the cluster or the
  // estimator is not the one it was computed against.
  const std::vector<NodeId>& NodesPerType(const SchedulingContext& ctx) const;
  // The affinities of job `id` of ctx.jobs (empty: it runs nowhere), computed once per job. The
  // reference is valid until the next call.
  const std::vector<double>& AffinitiesOf(JobId id, const SchedulingContext& ctx) const;

  // The cache's key: what the affinities were computed against.
  mutable const Cluster* cached_cluster_ = nullptr;
  mutable const ThroughputModel* cached_estimator_ = nullptr;
  mutable std::vector<NodeId> node_per_type_;
  // By job index; `known_` says which entries are computed.
  mutable std::vector<std::vector<double>> affinities_;
  mutable std::vector<bool> known_;
};

}  // namespace dlsched
