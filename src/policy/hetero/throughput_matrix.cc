#include "policy/hetero/throughput_matrix.h"

#include <algorithm>

namespace dlsched::hetero {

ConsolidatedPlacements::ConsolidatedPlacements(const Cluster& cluster)
    : cluster_(&cluster), nodes_by_type_(cluster.num_gpu_types()) {
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    const NodeId node(static_cast<uint32_t>(i));
    if (cluster.node(node).gpus.empty()) continue;  // a CPU-only node
    nodes_by_type_[cluster.node_gpu_type(node).index()].push_back(node);
  }
  for (std::vector<NodeId>& nodes : nodes_by_type_) {
    std::stable_sort(nodes.begin(), nodes.end(), [&cluster](NodeId a, NodeId b) {
      return cluster.node(a).gpus.size() > cluster.node(b).gpus.size();
    });
  }
}

std::optional<Placement> ConsolidatedPlacements::Of(GpuTypeId type, int gpus) const {
  if (cluster_->gpus_of_type(type) < gpus) return std::nullopt;
  Placement placement;
  int needed = gpus;
  for (NodeId node : nodes_by_type_[type.index()]) {
    if (needed == 0) break;
    const int take = std::min(needed, static_cast<int>(cluster_->node(node).gpus.size()));
    if (take == 0) continue;
    placement.parts.push_back({node, LowestGpus(take)});
    needed -= take;
  }
  return placement;
}

void FillThroughputRow(const Job& job, const Cluster& cluster,
                       const ConsolidatedPlacements& placements, const ThroughputModel& estimator,
                       std::span<double> row) {
  const GpuTypeId required =
      job.spec.gpu_type.empty() ? GpuTypeId() : cluster.FindGpuType(job.spec.gpu_type);
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(static_cast<uint32_t>(t));
    row[t] = 0;
    if (!job.spec.gpu_type.empty() && type != required) continue;
    if (std::ranges::find(job.failed_gpu_types, type) != job.failed_gpu_types.end()) continue;
    const std::optional<Placement> placement = placements.Of(type, job.spec.num_gpus);
    if (!placement) continue;
    row[t] = std::max(0.0, estimator.ItersPerSecond(job.spec, cluster, *placement));
  }
}

void MakeTypeBlind(std::span<double> row) {
  const double fastest = row.empty() ? 0 : *std::ranges::max_element(row);
  for (double& rate : row) {
    if (rate > 0) rate = fastest;
  }
}

}  // namespace dlsched::hetero
