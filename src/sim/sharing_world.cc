#include "sim/sharing_world.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dlsched/common/rng.h"
#include "io/sharing_models.h"

namespace dlsched::sim {
namespace {

// The reference GPU a fractional request (JobSpec::memory_mib with no model) is a fraction of:
// Alibaba's requests are in thousandths of a 16 GiB GPU (sim/workload_readers.h).
constexpr int64_t kFractionReferenceMib = 16384;
// A fractional job's memory-bandwidth utilisation per unit of SM utilisation: about Lucid's
// average ratio of the two (docs/sharing.md).
constexpr double kMemBwPerSm = 0.6;

// The truth's floor for one partner's effect: a pair measured as unable to share (Gavel's
// out-of-memory pairs, speed 0) crawls instead of stopping (docs/sharing.md).
constexpr double kMinPairSpeed = sharing::FittedInterferenceModel::kMinSpeed;

uint64_t Mix(uint64_t a, uint64_t b) {
  Rng rng(a ^ (0x9E3779B97F4A7C15ull * (b + 1)));
  return rng.Next();
}

// A standard normal fixed by (seed, a, b), clipped to +-3.
double PairNoise(uint64_t seed, uint64_t a, uint64_t b) {
  Rng rng(Mix(Mix(seed, a), b));
  return std::clamp(rng.Normal(), -3.0, 3.0);
}

}  // namespace

Result<std::unique_ptr<SharingWorld>> SharingWorld::Build(std::span<const JobSpec> jobs,
                                                          const Cluster& cluster,
                                                          const SharingOptions& options) {
  DS_ASSIGN_OR_RETURN(SharingModels models, LoadSharingModels(options.traces_dir, cluster));
  std::unique_ptr<SharingWorld> world(new SharingWorld(options, SharingKnowledge(models.models)));
  world->models_ = std::move(models.models);
  world->source_ = std::move(models.source);
  const sharing::JobTypeCatalog& catalog = models.catalog;

  world->truth_.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& spec = jobs[i];
    const uint64_t job_seed = Mix(options.seed, i);
    Rng rng(job_seed);
    const Duration period = Seconds(rng.Uniform(0.25, 1.0));  // one iteration
    sharing::SharingJob features;
    sharing::DemandProfile profile;
    std::optional<int> type = FindSharingJobType(catalog, spec.model, spec.batch_size);
    if (!type && spec.model.empty() && spec.memory_mib > 0 &&
        spec.memory_mib < kFractionReferenceMib) {
      const double fraction = static_cast<double>(spec.memory_mib) / kFractionReferenceMib;
      profile = sharing::ProfileFromGpuFraction(fraction, kFractionReferenceMib, period,
                                                options.demand_noise_cv);
      features = {sharing::SharingJob::kUnknownType, fraction, fraction * kMemBwPerSm,
                  profile.peak_memory_mib};
    } else {
      if (!type) type = static_cast<int>(rng.Below(static_cast<uint64_t>(catalog.size())));
      features = catalog.Job(*type);
      profile = sharing::ProfileFromMeasurement(features.memory_mib, features.sm_util, period,
                                                options.demand_noise_cv);
    }
    const int64_t declared = spec.memory_mib > 0 ? spec.memory_mib : profile.peak_memory_mib;
    world->knowledge_.Set(JobId(static_cast<uint32_t>(i)), features, declared);
    world->truth_.emplace_back(std::move(profile), job_seed);
  }
  return world;
}

double SharingWorld::PackedSpeed(JobId self, std::span<const JobId> others, GpuTypeId type) const {
  const sharing::InterferenceModel& model = *models_[type.index()];
  const sharing::SharingJob features = knowledge_.Features(self);
  double speed = 1.0;
  for (JobId other : others) {
    if (other == self) continue;
    const double predicted = model.PairSpeed(features, knowledge_.Features(other));
    const double noise = 1.0 + options_.interference_noise_cv *
                                   PairNoise(options_.seed, self.value(), other.value());
    speed *= std::clamp(predicted * noise, kMinPairSpeed, 1.0);
  }
  return speed;
}

void SharingWorld::Observe(JobId job, Duration elapsed) {
  const int n = options_.samples_per_segment;
  if (n <= 0 || elapsed <= Duration::zero()) return;
  const sharing::DemandSampler& truth = truth_[job.index()];
  for (int s = 0; s < n; ++s) knowledge_.Observe(job, truth.At(elapsed * (2 * s + 1) / (2 * n)));
}

void SharingWorld::ObserveSample(JobId job, const sharing::DemandSample& sample) {
  knowledge_.Observe(job, sample);
}

}  // namespace dlsched::sim
