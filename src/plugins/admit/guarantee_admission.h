#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// ElasticFlow-style admission (Gu et al., ASPLOS'23), without elastic scaling: a `strict` job
// is admitted only if the cluster could still finish it and every admitted deadline job that
// can still make its deadline, each by its deadline. The test treats the cluster's GPUs as one
// fluid pool run in deadline order (the demand-bound test of EDF): for every deadline d from
// the new job's on, the GPU-time due by d (GPUs x estimated remaining time, a running job's
// current segment counted as done) must fit in GPUs x (d - now). It ignores gangs, node
// boundaries and GPU types, so it is optimistic: an admitted job can still miss. Jobs already
// late (JobQueue::by_latest_start) are left out of the demand: they cannot be saved. Soft and
// best-effort jobs are always admitted. O(d log d) per strict job, d = deadline jobs in flight.
class GuaranteeAdmission final : public AdmitPlugin {
 public:
  static constexpr std::string_view kName = "guarantee_admission";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override;
};

}  // namespace dlsched
