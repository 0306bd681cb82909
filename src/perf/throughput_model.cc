#include "dlsched/perf/throughput_model.h"

#include <algorithm>
#include <cmath>

namespace dlsched {

Spread SpreadOf(const Cluster& cluster, const Placement& placement) {
  Spread spread;
  spread.nodes = placement.num_nodes();
  RackId first_rack;
  bool many_racks = false;
  for (const NodeGpus& part : placement.parts) {
    const RackId rack = cluster.node(part.node).rack;
    if (!first_rack.valid()) first_rack = rack;
    if (rack != first_rack) many_racks = true;
  }
  // Only "one rack or several" matters to the models; count exactly only when needed.
  if (!many_racks) {
    spread.racks = spread.nodes > 0 ? 1 : 0;
  } else {
    std::vector<RackId> racks;
    for (const NodeGpus& part : placement.parts) racks.push_back(cluster.node(part.node).rack);
    std::sort(racks.begin(), racks.end());
    spread.racks = static_cast<int>(std::unique(racks.begin(), racks.end()) - racks.begin());
  }
  return spread;
}

SimpleThroughputModel::Options SimpleThroughputModel::DefaultOptions() {
  Options options;
  options.type_speed = {{"K80", 0.2},  {"P100", 0.6}, {"T4", 0.45}, {"V100", 1.0},
                        {"A100", 1.9}, {"H100", 3.2}, {"H200", 3.6}};
  return options;
}

SimpleThroughputModel::SimpleThroughputModel(Options options) : options_(std::move(options)) {
  reference_speed_ = TypeSpeed(options_.reference_type);
}

double SimpleThroughputModel::TypeSpeed(std::string_view type) const {
  auto it = options_.type_speed.find(type);
  return it == options_.type_speed.end() ? 1.0 : it->second;
}

double SimpleThroughputModel::ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                             const Placement& placement) const {
  const int allocated = placement.num_gpus();
  // A CPU job on its node runs at its reference speed (the model knows no CPU types).
  if (spec.num_gpus == 0) return placement.empty() ? 0.0 : spec.ref_iters_per_s;
  if (allocated == 0) return 0.0;
  // A synchronous gang runs at the pace of its slowest GPU.
  double slowest = 1e300;
  GpuTypeId looked_up;  // gangs rarely mix types: look each up once
  for (const NodeGpus& part : placement.parts) {
    const GpuTypeId type = cluster.node_gpu_type(part.node);
    if (type == looked_up) continue;
    looked_up = type;
    slowest = std::min(slowest, TypeSpeed(cluster.gpu_type_name(type)));
  }
  double rate = spec.ref_iters_per_s * slowest / reference_speed_;
  if (allocated != spec.num_gpus) {
    rate *= std::pow(static_cast<double>(allocated) / spec.num_gpus, options_.scaling_exponent);
  }
  const Spread spread = SpreadOf(cluster, placement);
  if (spread.nodes > 1) rate *= 1.0 - options_.node_penalty;
  if (spread.racks > 1) rate *= 1.0 - options_.rack_penalty;
  return rate;
}

}  // namespace dlsched
