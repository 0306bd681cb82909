#pragma once

// What a driver knows of GPU sharing, apart from any ground truth (DESIGN.md, "Knowledge apart
// from truth"): the interference model per GPU type (from the measured tables or the built-in
// model), each job's solo features and declared memory peak, and the history of its observed
// demand. The simulator's SharingWorld owns one and feeds it its samples; the live daemon builds
// one from its jobs and the GPU monitor's histories (daemon/core/live_sharing.h). Both hand it to
// the Scheduler (set_sharing_view) for the sharing policies.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/policy/change_log.h"
#include "dlsched/policy/sharing_view.h"
#include "dlsched/sharing/demand.h"
#include "dlsched/sharing/interference.h"

namespace dlsched {

// Generic job types for when no measurements can be read: round figures spanning light
// (recommendation, RL) to heavy (large CNN, transformer) training jobs, not measured data.
sharing::JobTypeCatalog BuiltInSharingJobTypes();
// FittedInterferenceModel with the weights fitted to all of Lucid's samples (docs/sharing.md):
// the model when the measurements cannot be read.
std::shared_ptr<const sharing::InterferenceModel> BuiltInInterferenceModel();
// The catalog type of a job of `model` at `batch_size`: the type of that model (without mixed
// precision) at the nearest batch size in log2 (any, when either batch size is 0); nullopt when
// `model` is empty or the catalog lacks it.
std::optional<int> FindSharingJobType(const sharing::JobTypeCatalog& catalog,
                                      std::string_view model, int batch_size);

// Implements SharingView over explicit knowledge. Jobs are indexed by JobId (dense); every job
// the policy may ask about must have been Set. Copyable (copies share the immutable models).
// Not thread-safe: the scheduler's thread.
class SharingKnowledge final : public SharingView {
 public:
  // How many samples a job's history keeps unless Set says otherwise.
  static constexpr size_t kDefaultHistory = 256;

  // `models[t]` is the interference model of GPU type t; a null entry (or a type past the end)
  // is a type that is not shared.
  explicit SharingKnowledge(std::vector<std::shared_ptr<const sharing::InterferenceModel>> models);

  // Declares (or re-declares, clearing its history) a job: its solo features and the memory it
  // declared (the user's request or its model's profiled memory; at least 1 MiB is used).
  void Set(JobId job, const sharing::SharingJob& features, int64_t declared_peak_mib,
           size_t history = kDefaultHistory);
  bool Has(JobId job) const { return job.index() < jobs_.size() && jobs_[job.index()].set; }
  // Adds one observed sample of a job's demand. Precondition: Has(job).
  void Observe(JobId job, const sharing::DemandSample& sample);
  // Replaces a job's history with `history` (what a driver kept elsewhere: the daemon's GPU
  // monitor). Precondition: Has(job).
  void SetHistory(JobId job, const sharing::DemandHistory& history);
  const sharing::DemandHistory& History(JobId job) const { return jobs_[job.index()].history; }
  // Puts a job in a sharing group (SharingView::ShareGroup; 0 until set, also after Set).
  // Precondition: Has(job).
  void SetShareGroup(JobId job, uint64_t group);

  // SharingView. Features and MemoryDemandMib require Has(job).
  const sharing::InterferenceModel* Interference(GpuTypeId type) const override;
  sharing::SharingJob Features(JobId job) const override { return jobs_[job.index()].features; }
  int64_t MemoryDemandMib(JobId job, double p) const override;
  uint64_t ShareGroup(JobId job) const override { return jobs_[job.index()].group; }
  void FiguresOf(std::span<const JobId> jobs, double p,
                 std::span<SharingFigures> out) const override;
  // Changes with each Set, Observe, SetHistory and SetShareGroup; taken from a process-wide
  // counter, so two knowledges share a stamp only where one is a copy of the other, unchanged
  // since. DemandChangedSince knows the current revision and those of at least the last
  // ChangeLog::kKeep of these calls.
  std::optional<uint64_t> DemandRevision() const override { return changes_.revision(); }
  bool DemandChangedSince(uint64_t since, std::vector<JobId>& jobs) const override {
    return changes_.Since(since, jobs);
  }

 private:
  struct JobInfo {
    bool set = false;
    sharing::SharingJob features;
    int64_t declared_peak_mib = 1;
    uint64_t group = 0;
    sharing::DemandHistory history{kDefaultHistory};
    // MemoryDemandMib's last answer, until the history changes (percentiles cost O(history)).
    mutable double cached_percentile = -1.0;
    mutable int64_t cached_demand_mib = 0;
  };

  std::vector<std::shared_ptr<const sharing::InterferenceModel>> models_;  // per GPU type
  std::vector<JobInfo> jobs_;
  ChangeLog<JobId> changes_;  // the job of each Set, Observe, SetHistory and SetShareGroup
};

}  // namespace dlsched
