#include "plugins/admit/deadline_admission.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "dlsched/policy/context.h"
#include "dlsched/policy/placement.h"

namespace dlsched {
namespace {

// Run times beyond this are "never" (and would overflow Duration's microseconds).
constexpr double kMaxRunSeconds = 1e12;

// The GPUs of `type` on `node`, as a mask.
GpuMask GpusOfType(const NodeSpec& node, GpuTypeId type) {
  GpuMask mask = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].type == type) mask |= GpuMask{1} << i;
  }
  return mask;
}

// The placement of `num_gpus` GPUs of `type` on as few nodes as possible of an idle cluster, or
// an empty one if the type has too few GPUs.
Placement ConsolidatedPlacement(const Cluster& cluster, GpuTypeId type, int num_gpus) {
  Placement placement;
  if (cluster.gpus_of_type(type) < num_gpus) return placement;
  if (num_gpus <= cluster.max_gpus_of_type_per_node(type)) {
    // Common case: the first node that holds the whole gang.
    for (int n = 0; n < cluster.num_nodes(); ++n) {
      const NodeSpec& node = cluster.node(NodeId(n));
      const GpuMask mask = GpusOfType(node, type);
      if (CountGpus(mask) >= num_gpus) {
        placement.parts.push_back({NodeId(n), PickGpus(node, mask, num_gpus)});
        return placement;
      }
    }
  }
  struct Candidate {
    int node;
    GpuMask mask;
  };
  std::vector<Candidate> candidates;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const GpuMask mask = GpusOfType(cluster.node(NodeId(n)), type);
    if (mask != 0) candidates.push_back({n, mask});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    const int a_count = CountGpus(a.mask);
    const int b_count = CountGpus(b.mask);
    return a_count != b_count ? a_count > b_count : a.node < b.node;
  });
  int left = num_gpus;
  for (const Candidate& c : candidates) {
    if (left == 0) break;
    const int take = std::min(left, CountGpus(c.mask));
    placement.parts.push_back(
        {NodeId(c.node), PickGpus(cluster.node(NodeId(c.node)), c.mask, take)});
    left -= take;
  }
  std::sort(placement.parts.begin(), placement.parts.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return placement;
}

}  // namespace

Result<std::unique_ptr<Plugin>> DeadlineAdmission::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<DeadlineAdmission>());
}

std::optional<DeadlineAdmission::BestCase> DeadlineAdmission::FindBestCase(
    const JobSpec& spec, Duration estimate, const Cluster& cluster,
    const ThroughputModel& estimator) {
  // The estimate is for the reference placement (reference GPU type, consolidated), where the
  // job runs at ref_iters_per_s; elsewhere it scales with the estimator's speed.
  const double estimate_s = ToSeconds(estimate);
  std::optional<BestCase> best;
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(t);
    if (!spec.gpu_type.empty() && cluster.gpu_type_name(type) != spec.gpu_type) continue;
    Placement placement = ConsolidatedPlacement(cluster, type, spec.num_gpus);
    if (placement.empty()) continue;
    const double iters_per_s = estimator.ItersPerSecond(spec, cluster, placement);
    if (!(iters_per_s > 0)) continue;
    const double run_s = estimate_s * spec.ref_iters_per_s / iters_per_s;
    if (!(run_s <= kMaxRunSeconds)) continue;
    const Duration run_time = Seconds(run_s);
    if (!best || run_time < best->run_time) best = BestCase{type, std::move(placement), run_time};
  }
  return best;
}

Fit DeadlineAdmission::Admit(const JobView& job, const SchedulingContext& ctx) const {
  const JobSpec& spec = job.spec();
  if (spec.qos != QosClass::kStrict || !spec.deadline) return Fit::Yes();
  const std::optional<BestCase> best =
      FindBestCase(spec, job.estimated_total(), ctx.cluster, ctx.estimator);
  if (!best) return Fit::Yes();  // cannot run at all: feasibility's call
  const Timestamp earliest_finish = ctx.now + best->run_time;
  if (earliest_finish <= *spec.deadline) return Fit::Yes();
  const int nodes = best->placement.num_nodes();
  return Fit::Unfit("strict deadline cannot be met: even alone on " +
                    std::to_string(spec.num_gpus) + " " + ctx.cluster.gpu_type_name(best->type) +
                    " GPUs (" + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
                    ") it needs an estimated " + HumanDuration(best->run_time) +
                    " and would finish " + HumanDuration(earliest_finish - *spec.deadline) +
                    " after its deadline");
}

}  // namespace dlsched
