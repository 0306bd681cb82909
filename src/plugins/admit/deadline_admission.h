#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {

// QoS admission control (issue 4): rejects a `strict` job at submit time when its deadline
// cannot be met even in the best case — alone on the cluster, on the GPU type the estimator
// finds fastest for it, consolidated on as few nodes as possible (one, whenever a node of that
// type holds the gang). The reason says by how much the deadline would be missed. Soft and
// best-effort jobs, and jobs without a deadline, are always admitted. A job that no GPU type of
// the cluster can hold is admitted too: that is `feasibility`'s call, so list it first.
// Pure: reads the estimator and ctx.now only.
class DeadlineAdmission final : public AdmitPlugin {
 public:
  static constexpr std::string_view kName = "deadline_admission";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override;

  // The job's best case on this cluster.
  struct BestCase {
    GpuTypeId type;
    Placement placement;  // on idle GPUs of `type`, as few nodes as possible
    Duration run_time;    // estimated run time of the whole job there
  };
  // Over the GPU types the job may use (JobSpec::gpu_type, or any), the one-type placement with
  // the shortest estimated run time: `estimate` (the whole job on the reference placement; Admit
  // passes JobView::estimated_total, the run-time estimator's) x ref_iters_per_s /
  // estimator.ItersPerSecond(placement). Per type the placement takes the nodes with the most
  // GPUs of that type first (ties: lower node id), PickGpus on each. Ties between types go to
  // the lower type id. nullopt when no type has enough GPUs or the estimator says none makes
  // progress.
  static std::optional<BestCase> FindBestCase(const JobSpec& spec, Duration estimate,
                                              const Cluster& cluster,
                                              const ThroughputModel& estimator);
};

}  // namespace dlsched
