#pragma once

#include <optional>
#include <span>
#include <vector>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"

namespace dlsched::hetero {

// For each GPU type of a cluster, where a consolidated gang of that type would sit: on the
// fewest nodes of the type (largest nodes first, ties to the lower id), lowest-numbered GPUs.
// The placement the throughput matrix asks the estimator about. Immutable; keeps a pointer to
// the cluster, which must outlive it.
class ConsolidatedPlacements {
 public:
  explicit ConsolidatedPlacements(const Cluster& cluster);
  // nullopt when the cluster has fewer than `gpus` GPUs of `type`. Precondition: gpus > 0.
  std::optional<Placement> Of(GpuTypeId type, int gpus) const;

 private:
  const Cluster* cluster_;
  std::vector<std::vector<NodeId>> nodes_by_type_;  // per type, largest nodes first
};

// One row of the per-job x per-GPU-type throughput matrix: for each type t of the cluster,
// `row[t]` = the estimator's iterations per second of the job's spec on a consolidated gang of
// its size on type t, or 0 when it cannot run there: the type has too few GPUs, the job
// requires another type (JobSpec::gpu_type), or it failed to start there before
// (Job::failed_gpu_types). Precondition: row.size() == cluster.num_gpu_types().
void FillThroughputRow(const Job& job, const Cluster& cluster,
                       const ConsolidatedPlacements& placements, const ThroughputModel& estimator,
                       std::span<double> row);

// The heterogeneity-agnostic view of a row: every type the job can run on looks as fast as its
// fastest one (a scheduler that knows only where a job fits, not how fast it runs there).
void MakeTypeBlind(std::span<double> row);

}  // namespace dlsched::hetero
