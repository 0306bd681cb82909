#pragma once

// The demand model of opportunistic GPU sharing (seed 000, issue 3 item 1): a training job's GPU
// memory and SM demand repeats with every iteration, so it is a periodic profile (peak, mean and
// a per-iteration shape). The simulator draws the ground truth from a DemandSampler (the profile
// plus seeded noise); a scheduler sees only a DemandHistory of observed samples and asks it for a
// percentile. FindOom is the over-commit check: co-located jobs whose actual memory exceeds the
// GPU's memory make one of them die with OOM. No file I/O here (readers live in src/io).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "dlsched/common/rng.h"
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"

namespace dlsched::sharing {

// A job's GPU demand at one instant.
struct DemandSample {
  int64_t memory_mib = 0;  // GPU memory in use
  double sm = 0.0;         // fraction of the GPU's streaming multiprocessors busy, 0..1
  friend bool operator==(const DemandSample&, const DemandSample&) = default;
};

// The within-iteration shape used when nothing better is known: the forward pass builds up
// activations to the peak, the backward pass frees them, the optimizer step runs at the floor.
// Levels of 8 equal slices of the iteration (0 = floor, 1 = peak); mean 0.4625.
inline constexpr std::array<double, 8> kTrainingIterationShape = {0.0, 0.35, 0.7,  1.0,
                                                                  0.8, 0.5,  0.25, 0.1};

// A job's periodic demand. During slice s (of shape.size() equal slices of `period`) the nominal
// demand of each resource is floor + (peak - floor) * shape[s], where the floor is chosen so that
// the mean over one period equals `mean_*`: floor = (mean - peak * m) / (1 - m), m = mean of
// shape. Memory and SM follow the same shape (one iteration drives both).
struct DemandProfile {
  int64_t peak_memory_mib = 0;
  int64_t mean_memory_mib = 0;
  double peak_sm = 0.0;  // 0..1
  double mean_sm = 0.0;  // 0..1
  Duration period{0};    // one training iteration (or the period of the pattern)
  // Levels in [0, 1]; the largest must be 1. A single level {1} is a flat profile (mean = peak).
  std::vector<double> shape = {kTrainingIterationShape.begin(), kTrainingIterationShape.end()};
  // Ground truth only: each slice of each iteration is multiplied by 1 + noise_cv * z, z a
  // standard normal clipped to [-kNoiseClip, kNoiseClip]. 0 = exactly the nominal profile.
  double noise_cv = 0.0;

  static constexpr double kNoiseClip = 3.0;

  // InvalidArgument naming the field: negative values, mean > peak, sm outside [0, 1], a shape
  // that is empty, outside [0, 1] or without a 1, a period shorter than one microsecond per slice,
  // noise_cv outside [0, 1 / kNoiseClip), or a mean too low for the shape (floor < 0: the mean
  // must be at least peak x mean(shape)).
  Status Validate() const;

  // Floors of the two resources (see above). Requires Validate().
  double floor_memory_mib() const;
  double floor_sm() const;
  // The duration of one slice: period / shape.size() (rounded down, >= 1 µs after Validate());
  // the sampled pattern repeats every slice() x shape.size().
  Duration slice() const { return period / static_cast<int64_t>(shape.size()); }
  // The noise-free demand during slice `s` of any iteration; s < shape.size().
  DemandSample Nominal(size_t s) const;
};

// A profile from a single-job measurement (Lucid's single_data.csv: mean SM utilisation and the
// memory in use). Measurements give one memory figure and a mean utilisation, so the rest is
// assumed and stated here: the measured memory is the peak, the mean memory is
// kMeanToPeakMemory of it; the SM mean is the measured utilisation and its peak is
// kPeakToMeanSm times that (capped at 1). With kTrainingIterationShape the memory floor is then
// 63% of the peak (weights, optimizer state and allocator cache stay resident).
inline constexpr double kMeanToPeakMemory = 0.8;
inline constexpr double kPeakToMeanSm = 1.5;
DemandProfile ProfileFromMeasurement(int64_t memory_mib, double mean_sm, Duration period,
                                     double noise_cv);

// A profile for a fractional-GPU request (Alibaba's gpu_milli: thousandths of one GPU): the job is
// assumed to use its share of the GPU's memory at its peak and its share of the SMs on average.
// `fraction` in (0, 1].
DemandProfile ProfileFromGpuFraction(double fraction, int64_t gpu_memory_mib, Duration period,
                                     double noise_cv);

// The ground truth of one job: its profile plus deterministic noise. At(t) is a pure function of
// (profile, seed, t), so any call order gives the same answers. Immutable; thread-safe.
class DemandSampler {
 public:
  // `profile` must pass Validate() (DS_CHECK).
  DemandSampler(DemandProfile profile, uint64_t seed);

  // The demand `elapsed` after the job started running (elapsed >= 0).
  DemandSample At(Duration elapsed) const;
  // The largest memory demand over [from, to) of elapsed time. Walks the slices: O((to - from) /
  // slice()).
  int64_t MaxMemoryMib(Duration from, Duration to) const;
  // No sample ever exceeds this: peak x (1 + kNoiseClip x noise_cv), rounded up.
  int64_t MemoryBoundMib() const { return memory_bound_mib_; }

  const DemandProfile& profile() const { return profile_; }
  Duration slice() const { return slice_; }

 private:
  DemandProfile profile_;
  uint64_t seed_;
  Duration slice_;
  double floor_memory_mib_;  // profile_.floor_memory_mib()
  double floor_sm_;          // profile_.floor_sm()
  int64_t memory_bound_mib_;
};

// What a scheduler observed of a job: the last `capacity` samples (older ones are dropped).
// Percentiles use the nearest-rank rule: the smallest sample with at least p% of the samples at
// or below it (p = 100 is the maximum, p = 0 the minimum). Not thread-safe.
class DemandHistory {
 public:
  explicit DemandHistory(size_t capacity = 1024);

  void Add(const DemandSample& sample);
  size_t size() const { return memory_mib_.size(); }
  bool empty() const { return memory_mib_.empty(); }

  // nullopt when no sample was observed. p in [0, 100]. O(size()).
  std::optional<int64_t> MemoryPercentileMib(double p) const;
  std::optional<double> SmPercentile(double p) const;
  std::optional<int64_t> PeakMemoryMib() const { return MemoryPercentileMib(100.0); }
  std::optional<double> MeanSm() const;

 private:
  size_t capacity_;
  size_t next_ = 0;  // where the next sample goes once the buffer is full
  std::vector<int64_t> memory_mib_;
  std::vector<double> sm_;
};

// One of the jobs sharing a GPU in FindOom: its ground truth and when it started running (the
// sampler's elapsed time is measured from `start`).
struct SharedJobDemand {
  const DemandSampler* sampler = nullptr;
  Timestamp start;
};

// A job killed because the GPU ran out of memory.
struct Oom {
  Timestamp at;
  size_t victim = 0;             // index into the jobs given to FindOom
  int64_t total_memory_mib = 0;  // the co-located jobs' demand at `at`
  friend bool operator==(const Oom&, const Oom&) = default;
};

// The first instant in [from, to) at which the jobs sharing one GPU of `capacity_mib` together
// demand more memory than it has, and the job that dies: among the jobs whose slice begins at that
// instant (the ones allocating; at `from` all of them), the one demanding the most memory, ties to
// the later index. nullopt when the memory always fits. Precondition: every job's start <= from
// (a job joining the GPU begins a new interval). Returns at once (O(n)) when the jobs'
// MemoryBoundMib() sum fits; otherwise walks every slice boundary of every job in the interval,
// O(n) each.
std::optional<Oom> FindOom(std::span<const SharedJobDemand> jobs, int64_t capacity_mib,
                           Timestamp from, Timestamp to);

// An empirical distribution (Alibaba's gpu_milli values, say) to draw job parameters from.
// Immutable; thread-safe except through the caller's Rng.
class EmpiricalDistribution {
 public:
  // InvalidArgument when `samples` is empty or holds a non-finite value.
  static Result<EmpiricalDistribution> FromSamples(std::vector<double> samples);

  // One of the samples, uniformly (the sample's own frequencies weight it).
  double Sample(Rng& rng) const { return sorted_[rng.Below(sorted_.size())]; }
  // The nearest-rank p-th percentile, p in [0, 100].
  double Percentile(double p) const;
  size_t size() const { return sorted_.size(); }

 private:
  explicit EmpiricalDistribution(std::vector<double> sorted) : sorted_(std::move(sorted)) {}
  std::vector<double> sorted_;
};

}  // namespace dlsched::sharing
