#pragma once

// The interference model of opportunistic GPU sharing (seed 000, issue 3 item 2): how fast each
// job runs while others share its GPU. Measured pairs (Gavel's co-location table per GPU type,
// Lucid's 1,388 pairs) answer where they exist; a model fitted to the jobs' solo utilisation and
// memory answers the rest (docs/sharing.md gives its form and its error on held-back pairs).
// No file I/O here: src/io/sharing_tables.h reads the measurements.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched::sharing {

// A job type as the measurements name it: a model at a batch size, with or without mixed
// precision. Names are the sources' own ("ResNet18" in Lucid, "ResNet-18" in Gavel).
struct JobTypeKey {
  std::string model;
  int batch_size = 0;  // 0 = the source gives none (Gavel's A3C, CycleGAN)
  bool amp = false;
  friend auto operator<=>(const JobTypeKey&, const JobTypeKey&) = default;
};

// A job type's solo behaviour: what the fitted model reads.
struct JobTypeProfile {
  JobTypeKey key;
  double sm_util = 0.0;      // mean SM utilisation running alone, 0..1
  double mem_bw_util = 0.0;  // mean memory-controller utilisation running alone, 0..1
  int64_t memory_mib = 0;    // GPU memory in use running alone
};

// What an interference model knows about one job: its type (for measured pairs) and its solo
// features (for the fitted model). Small and copyable; the packers copy it freely.
struct SharingJob {
  static constexpr int kUnknownType = -1;
  int type = kUnknownType;  // index into a JobTypeCatalog, or kUnknownType
  double sm_util = 0.0;
  double mem_bw_util = 0.0;
  int64_t memory_mib = 0;
};

// The job types measurements refer to, indexed densely in the order added.
class JobTypeCatalog {
 public:
  // The new type's index. AlreadyExists when the key is in the catalog; InvalidArgument for
  // utilisations outside [0, 1] or negative memory.
  Result<int> Add(JobTypeProfile profile);
  std::optional<int> Find(const JobTypeKey& key) const;
  const JobTypeProfile& at(int type) const { return types_[static_cast<size_t>(type)]; }
  int size() const { return static_cast<int>(types_.size()); }
  // A SharingJob of the given type with its profile's features.
  SharingJob Job(int type) const;

 private:
  std::vector<JobTypeProfile> types_;
  std::map<JobTypeKey, int> index_;
};

// One measured co-location of two jobs (types from a JobTypeCatalog) on one GPU: each one's
// throughput while sharing as a fraction of its throughput alone on the same GPU type. A speed of
// 0 for both means the pair may not share (Gavel records pairs that run out of memory that way).
struct MeasuredPair {
  std::string gpu_type;  // "V100", ...; empty = not stated by the source, applies to any type
  int a = 0;
  int b = 0;
  double speed_a = 1.0;
  double speed_b = 1.0;
};

// A pairwise interference model for one GPU type. Implementations are immutable and thread-safe.
class InterferenceModel {
 public:
  InterferenceModel();
  virtual ~InterferenceModel() = default;
  // Throughput of `self` while `other` shares its GPU, as a fraction of its throughput alone
  // (1 = unaffected; 0 = may not share). Finite and >= 0.
  virtual double PairSpeed(const SharingJob& self, const SharingJob& other) const = 0;
  // Nonzero, and unique to this object among the models made in this process, destroyed ones
  // included (a copy shares its original's, the answers being the same): what a cache of pair
  // speeds keys on, where an address could be reused.
  uint64_t serial() const { return serial_; }

 private:
  uint64_t serial_;
};

// The speed of each job of `group` when all of them share one GPU: the product of its pair speeds
// with every other member. Neither source measured more than two jobs per GPU; the product
// assumes each partner's effect compounds independently. out.size() == group.size(). O(n^2).
void GroupSpeeds(const InterferenceModel& model, std::span<const SharingJob> group,
                 std::span<double> out);
// Slowdown = 1 / speed (infinity for speed 0).
inline double SlowdownOf(double speed) {
  return speed > 0.0 ? 1.0 / speed : std::numeric_limits<double>::infinity();
}

// A training or test sample of the fitted model: `self`'s measured speed beside `other`.
// `group` ties samples that must stay on one side of a cross-validation split (both directions
// of one measured pair).
struct PairSample {
  SharingJob self;
  SharingJob other;
  double speed = 1.0;
  int group = 0;
};

// The fitted fallback: a linear model of the speed loss from the two jobs' solo features, fitted
// by least squares (a tiny ridge term keeps the normal equations regular):
//   1 - speed(self | other) = w . x,
//   x = [1, u_o, u_s u_o, max(0, u_s + u_o - 1), g_o, g_s g_o, m_o]
// with u = SM utilisation, g = memory-controller utilisation (0..1), m = memory / 16 GiB, s =
// self, o = other. The prediction is clamped to [kMinSpeed, kMaxSpeed]: measured speeds above 1
// are noise, and a fitted model never forbids a pair outright.
class FittedInterferenceModel final : public InterferenceModel {
 public:
  static constexpr size_t kNumFeatures = 7;
  static constexpr double kMinSpeed = 0.05;
  static constexpr double kMaxSpeed = 1.0;
  static constexpr double kReferenceMemoryMib = 16384.0;
  using Weights = std::array<double, kNumFeatures>;

  explicit FittedInterferenceModel(const Weights& weights) : weights_(weights) {}

  // InvalidArgument with fewer samples than features or a singular system.
  static Result<FittedInterferenceModel> Fit(std::span<const PairSample> samples,
                                             double ridge = 1e-6);
  static Weights Features(const SharingJob& self, const SharingJob& other);

  double PairSpeed(const SharingJob& self, const SharingJob& other) const override;
  const Weights& weights() const { return weights_; }

 private:
  Weights weights_;
};

// Measured pairs for one GPU type, a fallback for the rest. PairSpeed(a, b) is the measured speed
// of a beside b when a pair of their types was measured on this GPU type, else on an unstated type
// (MeasuredPair::gpu_type empty), else the fallback's answer; a job of kUnknownType always goes to
// the fallback. Several measurements of one ordered pair (Lucid lists a pair once per order in
// some cases) are averaged.
class TableInterferenceModel final : public InterferenceModel {
 public:
  // Keeps the pairs whose gpu_type equals `gpu_type` (case-insensitive) or is empty. `num_types`
  // = the catalog's size; pair types must lie below it (DS_CHECK). `fallback` is non-null.
  TableInterferenceModel(int num_types, std::span<const MeasuredPair> pairs,
                         std::string_view gpu_type,
                         std::shared_ptr<const InterferenceModel> fallback);

  double PairSpeed(const SharingJob& self, const SharingJob& other) const override;
  // The measured speed of type `self` beside type `other`, or nullopt.
  std::optional<double> Measured(int self, int other) const;
  // Ordered pairs with a measurement.
  size_t num_measured() const { return num_measured_; }

 private:
  int num_types_;
  std::vector<float> speed_;  // [self * num_types + other]; NaN = not measured
  size_t num_measured_ = 0;
  std::shared_ptr<const InterferenceModel> fallback_;
};

// How far a model's speeds are from measured ones.
struct FitError {
  size_t num_samples = 0;
  double mae = 0.0;           // mean absolute error of the speed
  double rmse = 0.0;          // root mean square error
  double max_abs = 0.0;       // largest absolute error
  double baseline_mae = 0.0;  // MAE of always predicting the training samples' mean speed
};

// The model's error on `test` (speeds as measured); `baseline_speed` is the constant that
// baseline_mae predicts.
FitError EvaluateFit(const InterferenceModel& model, std::span<const PairSample> test,
                     double baseline_speed);

// K-fold cross-validation of FittedInterferenceModel: samples go to fold group % folds; each fold
// is predicted by a model fitted to the others, and the errors are pooled. InvalidArgument for
// folds < 2 or a fold whose training part cannot be fitted.
Result<FitError> CrossValidateFit(std::span<const PairSample> samples, int folds);

}  // namespace dlsched::sharing
