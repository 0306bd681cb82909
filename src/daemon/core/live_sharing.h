#pragma once

// The live daemon's knowledge of GPU sharing (DESIGN.md, "Knowledge apart from truth"): the same
// SharingKnowledge the simulator feeds, built from the daemon's jobs and what the GPU monitor
// observed of them (gpu_usage.h). A daemon running a sharing profile builds it before a cycle
// and gives it to Scheduler::set_sharing_view; docs/sharing.md, "Running it live", says what it
// holds.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/core/gpu_usage.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/sharing_knowledge.h"
#include "io/sharing_models.h"

namespace dlsched::daemon {

// What the knowledge assumes of a live job before and while it is observed.
struct LiveJobFeatures {
  sharing::SharingJob features;
  int64_t declared_peak_mib = 0;
  // Nothing in the spec describes the job (no known model, no memory request): its features are
  // taken from its observations once there are some.
  bool from_observation = false;
};

// A job's features from its spec: the catalog type of its model and batch size (the measured or
// built-in types of `models`); else, for a memory request (JobSpec::memory_mib) below
// `gpu_memory_mib`, a job using that fraction of the GPU's memory and SMs; else the cautious
// assumption that it uses the whole GPU (SM and memory bandwidth busy, `gpu_memory_mib` of
// memory), so nothing shares with it until it has been observed. The declared peak is the
// memory request when there is one, else the type's (or the assumption's) memory.
LiveJobFeatures LiveFeatures(const JobSpec& spec, const SharingModels& models,
                             int64_t gpu_memory_mib);

// The live knowledge, kept up to date across cycles by a driver that refreshes it before each one
// (the daemon, the replay). It knows every job that has not ended, with LiveFeatures
// (`gpu_memory_mib`: the largest GPU memory of the cluster, 16 GiB when the cluster does not say)
// and its history from the usage book; a job whose features come from observation and that has
// been observed gets them from its history: SM utilisation its mean, memory bandwidth 0.6 of that
// (Lucid's average ratio), memory its peak. The models are one per GPU type of the cluster.
// Refresh declares the jobs added since the last call and re-reads the jobs marked Observed, so a
// cycle costs what changed, not every job; its answers for the jobs that have not ended are a
// fresh instance's over the same inputs (jobs that ended keep what they had: no policy asks
// about them). Not thread-safe.
class LiveSharingKnowledge {
 public:
  // With `group_by_user`, each user's jobs are a sharing group of their own (SharingView::
  // ShareGroup): jobs of different users never share a GPU (the MPS enforcer, share_env.h).
  LiveSharingKnowledge(const Cluster& cluster, SharingModels models, bool group_by_user);
  // `job`'s history in the usage book changed (a new sample).
  void Observed(JobId job) { observed_.push_back(job); }
  // Brings the knowledge up to date with `jobs` and `usage`; the reference stays valid (and the
  // same object) for the life of this one.
  const SharingKnowledge& Refresh(const JobTable& jobs, const GpuUsageBook& usage);
  // As of the last Refresh.
  const SharingKnowledge& knowledge() const { return knowledge_; }
  const SharingModels& models() const { return models_; }

 private:
  void Declare(JobId id, const Job& job, const GpuUsageBook& usage);

  SharingModels models_;
  int64_t gpu_memory_mib_;
  bool group_by_user_;
  std::map<std::string, uint64_t, std::less<>> user_groups_;  // in order of first sight
  SharingKnowledge knowledge_;
  size_t declared_ = 0;  // jobs [0, declared_) were seen by Refresh
  std::vector<JobId> observed_;
};

}  // namespace dlsched::daemon
