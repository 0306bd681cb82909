#include "sim/sharing_world.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dlsched/common/rng.h"
#include "io/sharing_tables.h"

namespace dlsched::sim {
namespace {

// The reference GPU a fractional request (JobSpec::memory_mib with no model) is a fraction of:
// Alibaba's requests are in thousandths of a 16 GiB GPU (sim/workload_readers.h).
constexpr int64_t kFractionReferenceMib = 16384;
// A fractional job's memory-bandwidth utilisation per unit of SM utilisation: about Lucid's
// average ratio of the two (docs/sharing.md).
constexpr double kMemBwPerSm = 0.6;

// Generic job types for when no measurements can be read: our own round figures spanning light
// (recommendation, RL) to heavy (large CNN, transformer) training jobs, not measured data.
struct BuiltInType {
  const char* model;
  int batch_size;
  double sm_util;
  double mem_bw_util;
  int64_t memory_mib;
};
constexpr BuiltInType kBuiltInTypes[] = {
    {"recommendation", 256, 0.12, 0.03, 2048}, {"rl-agent", 64, 0.15, 0.02, 2048},
    {"small-cnn", 64, 0.45, 0.25, 3072},       {"mobile-cnn", 128, 0.60, 0.35, 4096},
    {"lstm", 128, 0.75, 0.60, 5632},           {"large-cnn", 64, 0.95, 0.75, 8192},
    {"large-cnn", 128, 1.00, 0.85, 13312},     {"transformer", 64, 0.80, 0.35, 12288},
};
// FittedInterferenceModel's weights fitted to all of Lucid's samples (docs/sharing.md): the
// built-in model when the measurements cannot be read.
constexpr sharing::FittedInterferenceModel::Weights kBuiltInWeights = {
    -0.0020, -0.0034, 0.2316, 0.1467, 0.0736, -0.0558, -0.0816};

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

// The catalog type of `spec` by model and nearest batch size (in log2), if the model is known.
std::optional<int> FindType(const sharing::JobTypeCatalog& catalog, const JobSpec& spec) {
  if (spec.model.empty()) return std::nullopt;
  std::optional<int> best;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int t = 0; t < catalog.size(); ++t) {
    const sharing::JobTypeKey& key = catalog.at(t).key;
    if (key.model != spec.model || key.amp) continue;
    const double distance =
        spec.batch_size > 0 && key.batch_size > 0
            ? std::abs(std::log2(static_cast<double>(spec.batch_size) / key.batch_size))
            : 0.0;
    if (distance < best_distance) {
      best_distance = distance;
      best = t;
    }
  }
  return best;
}

}  // namespace

Result<std::unique_ptr<SharingWorld>> SharingWorld::Build(std::span<const JobSpec> jobs,
                                                          const Cluster& cluster,
                                                          const SharingOptions& options) {
  std::unique_ptr<SharingWorld> world(new SharingWorld());
  world->options_ = options;
  sharing::JobTypeCatalog catalog;
  Result<SharingMeasurements> measured = options.traces_dir.empty()
                                             ? NotFound("no traces folder")
                                             : LoadSharingMeasurements(options.traces_dir, true);
  if (measured.ok()) {
    for (int t = 0; t < cluster.num_gpu_types(); ++t) {
      DS_ASSIGN_OR_RETURN(
          std::unique_ptr<sharing::TableInterferenceModel> model,
          MakeInterferenceModel(*measured,
                                cluster.gpu_type_name(GpuTypeId(static_cast<uint32_t>(t)))));
      world->models_.push_back(std::move(model));
    }
    catalog = std::move(measured->catalog);
    world->source_ = "lucid+gavel measurements (" + std::to_string(catalog.size()) + " job types)";
  } else if (measured.status().code() == StatusCode::kNotFound) {
    for (const BuiltInType& type : kBuiltInTypes) {
      DS_RETURN_IF_ERROR(catalog
                             .Add({{type.model, type.batch_size, false},
                                   type.sm_util,
                                   type.mem_bw_util,
                                   type.memory_mib})
                             .status());
    }
    for (int t = 0; t < cluster.num_gpu_types(); ++t) {
      world->models_.push_back(
          std::make_shared<const sharing::FittedInterferenceModel>(kBuiltInWeights));
    }
    world->source_ = "built-in job types (" + measured.status().message() + ")";
  } else {
    return measured.status();
  }

  world->jobs_.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& spec = jobs[i];
    const uint64_t job_seed = Mix(options.seed, i);
    Rng rng(job_seed);
    const Duration period = Seconds(rng.Uniform(0.25, 1.0));  // one iteration
    sharing::SharingJob features;
    sharing::DemandProfile profile;
    std::optional<int> type = FindType(catalog, spec);
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
    world->jobs_.push_back({features, sharing::DemandSampler(std::move(profile), job_seed),
                            std::max<int64_t>(1, declared), sharing::DemandHistory(256)});
  }
  return world;
}

const sharing::InterferenceModel* SharingWorld::Interference(GpuTypeId type) const {
  return type.index() < models_.size() ? models_[type.index()].get() : nullptr;
}

int64_t SharingWorld::MemoryDemandMib(JobId job, double p) const {
  const JobInfo& info = jobs_[job.index()];
  if (info.history.empty()) return info.declared_peak_mib;
  if (info.cached_percentile != p) {
    info.cached_percentile = p;
    info.cached_demand_mib = std::max<int64_t>(1, *info.history.MemoryPercentileMib(p));
  }
  return info.cached_demand_mib;
}

double SharingWorld::PackedSpeed(JobId self, std::span<const JobId> others, GpuTypeId type) const {
  const sharing::InterferenceModel& model = *models_[type.index()];
  const sharing::SharingJob& features = jobs_[self.index()].features;
  double speed = 1.0;
  for (JobId other : others) {
    if (other == self) continue;
    const double predicted = model.PairSpeed(features, jobs_[other.index()].features);
    const double noise = 1.0 + options_.interference_noise_cv *
                                   PairNoise(options_.seed, self.value(), other.value());
    speed *= std::clamp(predicted * noise, kMinPairSpeed, 1.0);
  }
  return speed;
}

void SharingWorld::Observe(JobId job, Duration elapsed) {
  JobInfo& info = jobs_[job.index()];
  const int n = options_.samples_per_segment;
  if (n <= 0 || elapsed <= Duration::zero()) return;
  for (int s = 0; s < n; ++s) {
    info.history.Add(info.truth.At(elapsed * (2 * s + 1) / (2 * n)));
  }
  info.cached_percentile = -1.0;
}

void SharingWorld::ObserveSample(JobId job, const sharing::DemandSample& sample) {
  JobInfo& info = jobs_[job.index()];
  info.history.Add(sample);
  info.cached_percentile = -1.0;
}

}  // namespace dlsched::sim
