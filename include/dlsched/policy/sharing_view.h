#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/sharing/interference.h"

namespace dlsched {

// A job's figures as a packer reads them (SharingView::FiguresOf).
struct SharingFigures {
  sharing::SharingJob features;   // Features
  int64_t memory_demand_mib = 0;  // MemoryDemandMib at the caller's percentile
  uint64_t group = 0;             // ShareGroup
};

// FiguresOf by the one-by-one calls of `view`: a view whose static type is final (as
// SharingKnowledge) makes them without a virtual call each.
template <typename View>
void FiguresByCalls(const View& view, std::span<const JobId> jobs, double p,
                    std::span<SharingFigures> out) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    out[i] = {view.Features(jobs[i]), view.MemoryDemandMib(jobs[i], p), view.ShareGroup(jobs[i])};
  }
}

// What a policy may know about GPU sharing (seed 000): how jobs interfere on each GPU type and
// what has been observed of each job's memory demand. The driver provides it (the simulator
// does; see sim/sharing_world.h); sharing policies read it through SchedulingContext::sharing.
// Calls are from the scheduler's thread.
class SharingView {
 public:
  virtual ~SharingView() = default;
  // The interference model of GPUs of `type`; nullptr when that type is not shared.
  virtual const sharing::InterferenceModel* Interference(GpuTypeId type) const = 0;
  // The job's solo features, for the interference model.
  virtual sharing::SharingJob Features(JobId job) const = 0;
  // The job's GPU memory demand at percentile `p` (0..100) of what was observed of it while it
  // ran; before anything was observed, its declared peak (the user's request or its model's
  // profiled memory). > 0.
  virtual int64_t MemoryDemandMib(JobId job, double p) const = 0;
  // Jobs share a GPU only with jobs of the same group. One group for all unless the driver says
  // otherwise (the live daemon under MPS: one per user, since MPS serialises users).
  virtual uint64_t ShareGroup(JobId /*job*/) const { return 0; }
  // The three figures above of each of `jobs` (into out[i]; out.size() >= jobs.size()), the
  // answers of the one-by-one calls in one call: a sharing policy reads them for every
  // candidate at every cycle.
  virtual void FiguresOf(std::span<const JobId> jobs, double p,
                         std::span<SharingFigures> out) const {
    FiguresByCalls(*this, jobs, p, out);
  }
  // A stamp that differs from every earlier one whenever MemoryDemandMib may answer differently
  // for any job (equal stamps: the same answers for every job); nullopt when the view keeps none,
  // and then a caller must take every demand as possibly changed.
  virtual std::optional<uint64_t> DemandRevision() const { return std::nullopt; }
  // For a caller that looks only at what changed: whether the view can say which jobs' figures
  // (Features, MemoryDemandMib, ShareGroup) may answer differently since DemandRevision() was
  // `since`; if so `jobs` (cleared first) gets them, in no particular order, maybe repeated.
  // False when it cannot (a view that keeps no such log, a revision it forgot or never had);
  // then `jobs` is empty and the caller must take every job as changed. A view that can moves
  // DemandRevision when features or a group change too.
  virtual bool DemandChangedSince(uint64_t /*since*/, std::vector<JobId>& jobs) const {
    jobs.clear();
    return false;
  }
};

}  // namespace dlsched
