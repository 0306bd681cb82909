#pragma once

#include <cstdint>
#include <memory>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"

namespace dlsched {

// A performance predictor that is wrong the way a fitted one is: `base`'s prediction times a
// lognormal error exp(sigma x z), z ~ N(0, 1) drawn once per (job, GPU type) from `seed`, the
// job's name, user, submit time and GPU count, and the type's name (a gang mixing types takes its
// slowest GPU's error). So the same job on the same type always gets the same error, whatever
// the placement's size or spread, and neither the policy nor the call order changes it. The
// simulator gives it to the policies when no measured table separates them from the ground
// truth (docs/estimates.md). Immutable; safe to share across threads.
class NoisyThroughputModel final : public ThroughputModel {
 public:
  // `sigma` >= 0 (0: exactly `base`).
  NoisyThroughputModel(std::shared_ptr<const ThroughputModel> base, double sigma, uint64_t seed);

  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override;
  // The error factor of `spec` on the GPU type named `type` (> 0; 1 when sigma is 0).
  double Factor(const JobSpec& spec, std::string_view type) const;
  double sigma() const { return sigma_; }

 private:
  std::shared_ptr<const ThroughputModel> base_;
  double sigma_;
  uint64_t seed_;
};

}  // namespace dlsched
