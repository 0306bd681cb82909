#pragma once

// The simulator's GPU-sharing world (seed 000, docs/sharing.md): which job type each workload
// job is, its ground-truth memory/SM demand over time, how co-located jobs slow each other in
// truth, and what the policy may know (a SharingView: the interference model and the history of
// observed demand). Built once per workload; the SimExecutor feeds the histories.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/sharing_view.h"
#include "dlsched/sharing/demand.h"
#include "dlsched/sharing/interference.h"

namespace dlsched::sim {

struct SharingOptions {
  // Where Lucid's (and Gavel's) measurements are; when they cannot be read, the built-in job
  // types and fitted model are used (SharingWorld::source() says which).
  std::string traces_dir;
  // Ground truth: per-slice noise of each job's demand (DemandProfile::noise_cv).
  double demand_noise_cv = 0.05;
  // Ground truth: each ordered pair of jobs runs at the model's pair speed times
  // (1 + interference_noise_cv x z), z a standard normal fixed per pair (clipped to +-3):
  // the model is the policy's prediction, not the truth.
  double interference_noise_cv = 0.05;
  // How many demand samples one run segment of a job adds to its observed history (evenly
  // spread over the segment).
  int samples_per_segment = 32;
  uint64_t seed = 1;
};

// Implements the policy's SharingView; the rest is the simulator's truth. A run feeds the
// histories, so each run takes its own copy (copies share the immutable models). Not
// thread-safe.
class SharingWorld final : public SharingView {
 public:
  // Per job of `jobs` (index = JobId, as the simulator submits them in order): its type, from
  // the catalog by model and batch size (nearest batch size of the same model); a job asking for
  // a fraction of a GPU (memory_mib > 0 below the GPU's memory, Alibaba's gpu_milli) gets a
  // profile of that fraction; any other job (traces without model names, e.g. Philly) gets a
  // catalog type drawn by a hash of (seed, index). Fails only when measurements exist but are
  // malformed.
  static Result<std::unique_ptr<SharingWorld>> Build(std::span<const JobSpec> jobs,
                                                     const Cluster& cluster,
                                                     const SharingOptions& options);

  // "lucid+gavel measurements (N job types)" or "built-in job types (no measurements found)".
  const std::string& source() const { return source_; }

  // SharingView.
  const sharing::InterferenceModel* Interference(GpuTypeId type) const override;
  sharing::SharingJob Features(JobId job) const override { return jobs_[job.index()].features; }
  int64_t MemoryDemandMib(JobId job, double p) const override;

  // Truth: the job's demand over its running time, and its speed (fraction of solo) while it
  // shares a GPU of `type` with `others` packed beside it.
  const sharing::DemandSampler& Demand(JobId job) const { return jobs_[job.index()].truth; }
  double PackedSpeed(JobId self, std::span<const JobId> others, GpuTypeId type) const;
  // Adds the samples a segment of `elapsed` running time (from the segment's start) shows.
  void Observe(JobId job, Duration elapsed);
  // Adds one sample (what the job demanded when it was killed out of memory).
  void ObserveSample(JobId job, const sharing::DemandSample& sample);

 private:
  struct JobInfo {
    sharing::SharingJob features;
    sharing::DemandSampler truth;
    int64_t declared_peak_mib = 0;
    sharing::DemandHistory history;
    // MemoryDemandMib's last answer, until the history changes (percentiles cost O(history)).
    mutable double cached_percentile = -1.0;
    mutable int64_t cached_demand_mib = 0;
  };
  SharingWorld() = default;

  std::string source_;
  SharingOptions options_;
  std::vector<std::shared_ptr<const sharing::InterferenceModel>> models_;  // per GPU type
  std::vector<JobInfo> jobs_;
};

}  // namespace dlsched::sim
