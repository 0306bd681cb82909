#pragma once

// The simulator's GPU-sharing world (seed 000, docs/sharing.md): which job type each workload
// job is, its ground-truth memory/SM demand over time and how co-located jobs slow each other in
// truth. What the policy may know (the interference model, the jobs' features and the history of
// their observed demand) is a SharingKnowledge the world owns and feeds: the core's, which the
// live daemon builds too. Built once per workload; the SimExecutor reports what it observes.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/sharing_knowledge.h"
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

// The simulator's truth, with the policy's knowledge beside it (knowledge(): what the scheduler
// gets as its SharingView). A run feeds the histories, so each run takes its own copy (copies
// share the immutable models). Not thread-safe.
class SharingWorld final {
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

  // What the policy knows: give this to Scheduler::set_sharing_view.
  const SharingKnowledge& knowledge() const { return knowledge_; }

  // Truth: the job's demand over its running time, and its speed (fraction of solo) while it
  // shares a GPU of `type` with `others` packed beside it.
  const sharing::DemandSampler& Demand(JobId job) const { return truth_[job.index()]; }
  double PackedSpeed(JobId self, std::span<const JobId> others, GpuTypeId type) const;
  // The knowledge observes the samples a segment of `elapsed` running time (from the segment's
  // start) shows of the truth.
  void Observe(JobId job, Duration elapsed);
  // The knowledge observes one sample (what the job demanded when it was killed out of memory).
  void ObserveSample(JobId job, const sharing::DemandSample& sample);

 private:
  SharingWorld(SharingOptions options, SharingKnowledge knowledge)
      : options_(std::move(options)), knowledge_(std::move(knowledge)) {}

  std::string source_;
  SharingOptions options_;
  std::vector<std::shared_ptr<const sharing::InterferenceModel>> models_;  // per GPU type
  std::vector<sharing::DemandSampler> truth_;                              // per job
  SharingKnowledge knowledge_;
};

}  // namespace dlsched::sim
