#include "dlsched/sharing/demand.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

namespace dlsched::sharing {
namespace {

double ShapeMean(const std::vector<double>& shape) {
  return std::accumulate(shape.begin(), shape.end(), 0.0) / static_cast<double>(shape.size());
}

// floor + (peak - floor) x mean(shape) = mean; a flat shape (mean 1) has floor = peak.
double Floor(double peak, double mean, double shape_mean) {
  if (shape_mean >= 1.0) return peak;
  return (mean - peak * shape_mean) / (1.0 - shape_mean);
}

// Nearest-rank index of percentile p among n > 0 sorted values.
size_t RankIndex(double p, size_t n) {
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(n));
  return static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(n))) - 1;
}

template <typename T>
T NearestRank(std::vector<T> values, double p) {
  const size_t k = RankIndex(p, values.size());
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

// The floors of a profile's two resources, as Floor gives them (below 0 where a mean is too low
// for the shape: Validate refuses those); DemandProfile's floor_* are these, at least 0.
struct Floors {
  double memory_mib;
  double sm;
};

Floors FloorsOf(const DemandProfile& profile) {
  const double m = ShapeMean(profile.shape);
  return {Floor(static_cast<double>(profile.peak_memory_mib),
                static_cast<double>(profile.mean_memory_mib), m),
          Floor(profile.peak_sm, profile.mean_sm, m)};
}

// The demand at shape `level` between the resources' floors and the profile's peaks.
DemandSample Between(const DemandProfile& profile, double floor_memory_mib, double floor_sm,
                     double level) {
  return {std::llround(floor_memory_mib +
                       (static_cast<double>(profile.peak_memory_mib) - floor_memory_mib) * level),
          floor_sm + (profile.peak_sm - floor_sm) * level};
}

// DemandProfile::Validate, also giving the floors it checks (set where it gets that far).
Status Check(const DemandProfile& profile, Floors& floors) {
  const auto bad = [](std::string what) { return InvalidArgument("demand profile: " + what); };
  if (profile.peak_memory_mib < 0 || profile.mean_memory_mib < 0) return bad("memory must be >= 0");
  if (profile.mean_memory_mib > profile.peak_memory_mib) {
    return bad("mean_memory_mib exceeds peak_memory_mib");
  }
  if (!(profile.peak_sm >= 0.0 && profile.peak_sm <= 1.0) ||
      !(profile.mean_sm >= 0.0 && profile.mean_sm <= 1.0)) {
    return bad("peak_sm and mean_sm must lie in [0, 1]");
  }
  if (profile.mean_sm > profile.peak_sm) return bad("mean_sm exceeds peak_sm");
  if (profile.shape.empty()) return bad("empty shape");
  bool has_one = false;
  for (double level : profile.shape) {
    if (!(level >= 0.0 && level <= 1.0)) return bad("shape levels must lie in [0, 1]");
    has_one = has_one || level == 1.0;
  }
  if (!has_one) return bad("the largest shape level must be 1");
  if (profile.period.count() < static_cast<int64_t>(profile.shape.size())) {
    return bad("period must be at least one microsecond per shape slice");
  }
  if (!(profile.noise_cv >= 0.0 && profile.noise_cv * DemandProfile::kNoiseClip < 1.0)) {
    return bad("noise_cv must lie in [0, 1/3)");
  }
  floors = FloorsOf(profile);
  // A tolerance of a part in 1e9: means computed from a floor round-trip.
  if (floors.memory_mib < -1e-9 * static_cast<double>(profile.peak_memory_mib) ||
      floors.sm < -1e-9) {
    return bad("mean below peak x mean(shape): the shape cannot reach that mean");
  }
  return Status::Ok();
}

}  // namespace

Status DemandProfile::Validate() const {
  Floors floors;
  return Check(*this, floors);
}

double DemandProfile::floor_memory_mib() const { return std::max(0.0, FloorsOf(*this).memory_mib); }

double DemandProfile::floor_sm() const { return std::max(0.0, FloorsOf(*this).sm); }

DemandSample DemandProfile::Nominal(size_t s) const {
  return Between(*this, floor_memory_mib(), floor_sm(), shape[s]);
}

DemandProfile ProfileFromMeasurement(int64_t memory_mib, double mean_sm, Duration period,
                                     double noise_cv) {
  DemandProfile profile;
  profile.peak_memory_mib = memory_mib;
  profile.mean_memory_mib = std::llround(static_cast<double>(memory_mib) * kMeanToPeakMemory);
  profile.mean_sm = std::clamp(mean_sm, 0.0, 1.0);
  profile.peak_sm = std::min(1.0, profile.mean_sm * kPeakToMeanSm);
  profile.period = period;
  profile.noise_cv = noise_cv;
  return profile;
}

DemandProfile ProfileFromGpuFraction(double fraction, int64_t gpu_memory_mib, Duration period,
                                     double noise_cv) {
  return ProfileFromMeasurement(
      std::llround(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(gpu_memory_mib)), fraction,
      period, noise_cv);
}

DemandSampler::DemandSampler(DemandProfile profile, uint64_t seed)
    : profile_(std::move(profile)), seed_(seed) {
  // A sampler is built for every job of a trace, most of which never share: the floors come
  // from the validation's own pass over the shape.
  Floors floors;
  const Status valid = Check(profile_, floors);
  DS_CHECK(valid.ok()) << valid.ToString();
  slice_ = profile_.slice();
  floor_memory_mib_ = std::max(0.0, floors.memory_mib);
  floor_sm_ = std::max(0.0, floors.sm);
  memory_bound_mib_ =
      static_cast<int64_t>(std::ceil(static_cast<double>(profile_.peak_memory_mib) *
                                     (1.0 + DemandProfile::kNoiseClip * profile_.noise_cv)));
}

DemandSample DemandSampler::At(Duration elapsed) const {
  const uint64_t slice_index = static_cast<uint64_t>(elapsed / slice_);
  // As profile_.Nominal, with the floors computed once (each is a pass over the shape).
  DemandSample sample = Between(profile_, floor_memory_mib_, floor_sm_,
                                profile_.shape[slice_index % profile_.shape.size()]);
  if (profile_.noise_cv == 0.0) return sample;
  // One generator per slice, keyed by (seed, slice index), so At() needs no state and answers
  // the same for any order of calls.
  Rng rng(seed_ ^ ((slice_index + 1) * 0x9E3779B97F4A7C15ull));
  const double z = std::clamp(rng.Normal(), -DemandProfile::kNoiseClip, DemandProfile::kNoiseClip);
  const double factor = 1.0 + profile_.noise_cv * z;
  sample.memory_mib = std::llround(static_cast<double>(sample.memory_mib) * factor);
  sample.sm = std::clamp(sample.sm * factor, 0.0, 1.0);
  return sample;
}

int64_t DemandSampler::MaxMemoryMib(Duration from, Duration to) const {
  int64_t max_mib = 0;
  for (Duration t = from - from % slice_; t < to; t += slice_) {
    max_mib = std::max(max_mib, At(std::max(t, from)).memory_mib);
  }
  return max_mib;
}

DemandHistory::DemandHistory(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void DemandHistory::Add(const DemandSample& sample) {
  if (memory_mib_.size() < capacity_) {
    memory_mib_.push_back(sample.memory_mib);
    sm_.push_back(sample.sm);
    return;
  }
  memory_mib_[next_] = sample.memory_mib;
  sm_[next_] = sample.sm;
  next_ = (next_ + 1) % capacity_;
}

std::optional<int64_t> DemandHistory::MemoryPercentileMib(double p) const {
  if (memory_mib_.empty()) return std::nullopt;
  return NearestRank(memory_mib_, p);
}

std::optional<double> DemandHistory::SmPercentile(double p) const {
  if (sm_.empty()) return std::nullopt;
  return NearestRank(sm_, p);
}

std::optional<double> DemandHistory::MeanSm() const {
  if (sm_.empty()) return std::nullopt;
  return std::accumulate(sm_.begin(), sm_.end(), 0.0) / static_cast<double>(sm_.size());
}

std::optional<Oom> FindOom(std::span<const SharedJobDemand> jobs, int64_t capacity_mib,
                           Timestamp from, Timestamp to) {
  int64_t bound = 0;
  for (const SharedJobDemand& job : jobs) bound += job.sampler->MemoryBoundMib();
  if (bound <= capacity_mib || from >= to) return std::nullopt;

  const size_t n = jobs.size();
  std::vector<int64_t> demand(n);
  std::vector<Timestamp> next(n);  // the start of each job's next slice
  std::vector<bool> allocating(n, true);
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    DS_CHECK(jobs[i].start <= from) << "job " << i << " starts after the interval";
    const Duration elapsed = from - jobs[i].start;
    const Duration slice = jobs[i].sampler->slice();
    demand[i] = jobs[i].sampler->At(elapsed).memory_mib;
    next[i] = jobs[i].start + (elapsed / slice + 1) * slice;
    total += demand[i];
  }
  Timestamp now = from;
  while (true) {
    if (total > capacity_mib) {
      size_t victim = n;
      for (size_t i = 0; i < n; ++i) {
        if (allocating[i] && (victim == n || demand[i] >= demand[victim])) victim = i;
      }
      return Oom{now, victim, total};
    }
    now = *std::min_element(next.begin(), next.end());
    if (now >= to) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      allocating[i] = next[i] == now;
      if (!allocating[i]) continue;
      total -= demand[i];
      demand[i] = jobs[i].sampler->At(now - jobs[i].start).memory_mib;
      total += demand[i];
      next[i] = now + jobs[i].sampler->slice();
    }
  }
}

Result<EmpiricalDistribution> EmpiricalDistribution::FromSamples(std::vector<double> samples) {
  if (samples.empty()) return InvalidArgument("empirical distribution: no samples");
  for (double v : samples) {
    if (!std::isfinite(v)) return InvalidArgument("empirical distribution: non-finite sample");
  }
  std::sort(samples.begin(), samples.end());
  return EmpiricalDistribution(std::move(samples));
}

double EmpiricalDistribution::Percentile(double p) const {
  return sorted_[RankIndex(p, sorted_.size())];
}

}  // namespace dlsched::sharing
