#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched {

// How fast a job trains on a placement. The simulator's ground truth and the policies' estimator
// are both ThroughputModels (usually different ones: a policy never sees the truth).
// Implementations are immutable after construction and safe to share across threads.
class ThroughputModel {
 public:
  virtual ~ThroughputModel() = default;
  // Iterations per second of `spec` running on `placement` (non-empty, GPUs of `cluster`; a CPU
  // job's is one part without GPUs).
  // Returns 0 when the job cannot make progress there.
  virtual double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                const Placement& placement) const = 0;
};

// For table-driven models: the rate of a gang is that of the slowest GPU type it uses.
// `rate_on(type_name, gpus, consolidated)` gives one type's rate for the whole gang (gpus: the
// placement's GPU count; consolidated: on one node), nullopt when it has none; so does this, as
// soon as one type has none. Precondition: a non-empty placement.
template <typename RateOn>
std::optional<double> SlowestTypeRate(const Cluster& cluster, const Placement& placement,
                                      const RateOn& rate_on) {
  const int allocated = placement.num_gpus();
  const bool consolidated = placement.num_nodes() == 1;
  double slowest = std::numeric_limits<double>::infinity();
  GpuTypeId previous;
  for (const NodeGpus& part : placement.parts) {
    const GpuTypeId type = cluster.node_gpu_type(part.node);
    if (type == previous) continue;  // neighbouring nodes usually share a type
    previous = type;
    const std::optional<double> rate =
        rate_on(cluster.gpu_type_name(type), allocated, consolidated);
    if (!rate.has_value()) return std::nullopt;
    slowest = std::min(slowest, *rate);
  }
  return slowest;
}

// Spread of a placement over the topology, the input of consolidation penalties.
struct Spread {
  int nodes = 0;
  int racks = 0;
};
Spread SpreadOf(const Cluster& cluster, const Placement& placement);

// The built-in model: a job's reference speed scaled by
//   speed(GPU type) / speed(reference type)       per-type factors, slowest GPU of the gang
// x scaling(allocated) / scaling(requested)       scaling(n) = n ^ scaling_exponent
// x (1 - node_penalty) if the gang spans nodes, x (1 - rack_penalty) more if it spans racks.
class SimpleThroughputModel final : public ThroughputModel {
 public:
  struct Options {
    // Relative speed per GPU type name; unknown types run at 1.0. Defaults: rough public
    // ResNet-50 training ratios (K80 0.2, P100 0.6, T4 0.45, V100 1.0, A100 1.9, H100 3.2).
    std::map<std::string, double, std::less<>> type_speed;
    std::string reference_type = "V100";
    double scaling_exponent = 0.9;
    double node_penalty = 0.15;
    double rack_penalty = 0.10;
  };
  static Options DefaultOptions();

  SimpleThroughputModel() : SimpleThroughputModel(DefaultOptions()) {}
  explicit SimpleThroughputModel(Options options);

  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override;
  // Relative speed of a GPU type (1.0 for the reference and for unknown types).
  double TypeSpeed(std::string_view type) const;

 private:
  Options options_;
  double reference_speed_;
};

}  // namespace dlsched
