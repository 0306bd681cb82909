#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"

namespace dlsched {

// A model at a batch size, e.g. {"ResNet-50", 64}. batch_size 0 = the source names no batch size
// (Gavel's "A3C"); such a type stands for every batch size of its model.
struct PerfJobType {
  std::string model;
  int batch_size = 0;
  friend auto operator<=>(const PerfJobType&, const PerfJobType&) = default;
};

// One throughput measurement: a job type alone (or sharing its GPUs) on a GPU configuration.
// Every source converts to this record: Gavel's table, Sia's and Pollux's step-time CSVs
// (src/io/profile_tables.h) and the profile store `dlsched profile` writes
// (src/io/profile_store.h). Iteration time = 1 / iters_per_s.
struct PerfProfile {
  std::string source;  // where it comes from: "gavel", "sia", "pollux", ... (reports group by it)
  std::string model;   // as the source names it: "ResNet-50", "cifar10"
  // Batch size as the source names it (Gavel: the job type's; Sia/Pollux: local_bsz, per GPU).
  // 0 = none given.
  int batch_size = 0;
  std::string gpu_type;      // "V100", "T4", ...; matched case-insensitively
  int num_gpus = 1;          // gang size
  bool consolidated = true;  // all GPUs on one node (always true for one GPU)
  double iters_per_s = 0;    // training iterations per second of the whole gang; 0 = cannot run
  // Set for a co-location measurement: iters_per_s is this job's throughput while it shares
  // its GPUs with a job of this type (of the same gang size).
  std::optional<PerfJobType> colocated_with;
};

// How repeated measurements of one configuration combine: the geometric mean of the positive
// values (exactly that value when they are all equal); 0 when none is positive (cannot run).
double PoolMeasurements(std::span<const double> iters_per_s);

// Checks one record: non-empty model and GPU type, batch_size >= 0, num_gpus >= 1, iters_per_s
// finite and >= 0, a 1-GPU record consolidated. InvalidArgument naming the field.
Status ValidatePerfProfile(const PerfProfile& profile);

// A hypothetical configuration: `num_gpus` GPUs of `gpu_type`, on one node or spread over several.
// gpu_type is a view; it must outlive the call it is passed to.
struct GpuShape {
  std::string_view gpu_type;
  int num_gpus = 1;
  bool consolidated = true;
};

// The shape of a concrete placement: its GPU type (nullopt when the placement is empty or mixes
// types), GPU count, and consolidated = one node. gpu_type views a name owned by `cluster`.
std::optional<GpuShape> ShapeOf(const Cluster& cluster, const Placement& placement);

// How a prediction was made, from the most to the least direct evidence (see PerfPredictor).
enum class PredictionMethod {
  kMeasured,            // the configuration was measured
  kCannotRun,           // next to a count measured as "cannot run" (0) on the same type
  kBatchScaling,        // scaled across counts like the same model at the nearest batch sizes
  kBatchTypeRatio,      // the type speed ratio of the same model at the nearest batch sizes
  kTypeCountRatio,      // scaled across counts like the same job type on another GPU type
  kCountScaling,        // interpolated / extrapolated along its own count series
  kSpreadFactor,        // the consolidated prediction x a fitted spread factor
  kTypeRatio,           // another GPU type's value x a fitted type speed ratio
  kBatchInterpolation,  // between (or beyond) the predictions at measured batch sizes
  kCombined,            // a cross-validated weighted mean of several of rules 3-6 (see below)
};
std::string_view PredictionMethodName(PredictionMethod method);  // "measured", "batch_scaling"...

// A performance predictor fitted to profiles. It predicts the throughput of a (model, batch size)
// on any (GPU type, GPU count, consolidated or spread) from what was measured, and it is a
// ThroughputModel, so a policy can use it as its estimator.
//
// Profiles with the same (model, batch, type, count, consolidated) pool into one cell: the
// geometric mean of their positive values (0 when all are 0 = cannot run). A query is answered by
// the first rule that applies, all in log space ("r" = iterations/s of the whole gang; a
// "rectangle" fills the missing corner of a 2x2 block whose three other corners are measured:
// r(x, y) = r(x, y') * r(x', y) / r(x', y')):
//   1. measured: the cell's value.
//   2. cannot run: the nearest measured count below or above on the same (batch, type, spread)
//      series is 0 -> 0 (as GavelThroughputTable::Isolated: next to a count that cannot run,
//      assume this one cannot either).
//   3. batch scaling: rectangles over (nearest measured batch sizes below/above) x (anchor
//      configurations: the nearest measured counts below/above on the same series, and for a
//      spread gang the consolidated gang of the same count). Geometric mean of all complete ones.
//   4. batch x type ratio: rectangles over (nearest batch sizes) x (other GPU types).
//   5. type x count ratio: rectangles over (other GPU types) x (anchor configurations).
//   6. count scaling: along the job type's own series: log-log interpolation between the nearest
//      measured counts; beyond them r(n) = r(n0) * (n / n0)^e, with e the model's fitted scaling
//      exponent (mean log-log slope between consecutive measured counts, clamped to [0, 1]; all
//      models pooled when the model has none; 0.9 when nothing was measured at 2+ counts).
//   7. spread factor (spread gangs only): the consolidated prediction (rules 1-8) x the fitted
//      spread/consolidated ratio of (model, type), else of the type, else of all, else 0.85.
//   8. type ratio: for each other GPU type with a value from rules 1, 2, 6, 7, that value x the
//      model's fitted speed ratio of the two types (geometric mean over its common cells; all
//      models pooled when the model has none); geometric mean over the other types.
// Combined (replaces "the first of rules 3-6 that applies" where Fit has the evidence): Fit
// scores rules 3-6 and *wide batch scaling* (rule 3's rectangles over every other measured batch
// size of the model x every positive count of the job's own series, nearer ones weighted more)
// by 5-fold cross-validation on its own cells (fit to four fifths, predict the fifth), per GPU
// type; an estimator's weight is 1 / (its mean squared log error)^2, from its type's scores, or
// all types' when the type has fewer than 10 (none below that). A query takes the weighted mean in
// log space of the estimators that apply ("combined"; the rule's own name when only one applies,
// batch_scaling for wide batch scaling).
// When an estimator that applies has no weight (small tables), rules 3-6 apply in order instead.
// Deterministic: the folds follow the cells' sorted order.
// A batch size the model was not measured at (or where rules 1-8 find nothing): between the two
// nearest measured batch sizes (other than itself), log-log interpolation of the predictions at
// both; beyond them r(b) = r(b0) * (b0 / b)^beta with beta the model's fitted batch exponent
// (minus the mean log-log slope of r over batch size, clamped to [0, 1]; 1 = constant samples/s
// when nothing to fit); 0 if a neighbour cannot run. A model measured without a batch size answers
// every batch size; batch 0 on a model measured with batch sizes asks for the lower median measured
// batch size. Unknown model or GPU type (no rule applies): nullopt.
//
// Measured accuracy on held-back cells of the Gavel, Sia and Pollux tables: BENCHMARKS.md
// ("Predictor accuracy") and docs/qos.md. Immutable after Fit; safe to share across threads.
class PerfPredictor final : public ThroughputModel {
 public:
  struct Options {
    // JobSpec::ref_iters_per_s is the job's speed on spec.num_gpus GPUs of this type,
    // consolidated (the convention SimpleThroughputModel and the trace readers share).
    std::string reference_type = "V100";
  };
  struct Prediction {
    double iters_per_s = 0;
    PredictionMethod method = PredictionMethod::kMeasured;
  };

  // Fits to `profiles` (isolated and co-location records, any order). `fallback` (non-null)
  // answers ItersPerSecond for jobs the profiles cannot. InvalidArgument when a record is invalid
  // (names its index) or there is no isolated record.
  static Result<PerfPredictor> Fit(std::span<const PerfProfile> profiles,
                                   std::shared_ptr<const ThroughputModel> fallback,
                                   Options options);
  static Result<PerfPredictor> Fit(std::span<const PerfProfile> profiles,
                                   std::shared_ptr<const ThroughputModel> fallback) {
    return Fit(profiles, std::move(fallback), Options());
  }

  // Iterations/s of `model` at `batch_size` alone on `shape`, in the profiles' units, with the
  // rule that produced it. nullopt when no rule applies or shape.num_gpus < 1. The model name is
  // exact; the GPU type is case-insensitive; a spread single GPU is a consolidated one.
  std::optional<Prediction> Explain(std::string_view model, int batch_size,
                                    const GpuShape& shape) const;
  std::optional<double> Predict(std::string_view model, int batch_size,
                                const GpuShape& shape) const {
    const std::optional<Prediction> p = Explain(model, batch_size, shape);
    return p.has_value() ? std::optional<double>(p->iters_per_s) : std::nullopt;
  }

  // Iterations/s of `spec` on a hypothetical shape, in the job's own units: spec.ref_iters_per_s
  // x Predict(shape) / Predict(reference type, spec.num_gpus, consolidated). Relative, so a job
  // whose work is counted in trace iterations or in seconds at reference speed is scaled right.
  // nullopt when either prediction is unavailable or the reference one is 0.
  std::optional<double> ItersPerSecondOn(const JobSpec& spec, const GpuShape& shape) const;

  // ThroughputModel: ItersPerSecondOn for the placement's shape; a gang mixing GPU types runs at
  // its slowest type. When any type of the placement has no prediction, the whole answer comes
  // from the fallback (never a mix of both scales).
  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override;

  // This job's throughput when sharing its GPUs with `other` on `gpu_type` (both with num_gpus
  // GPUs), as a fraction of its isolated throughput there: the measured pair / the (measured or
  // predicted) isolated value. Without a measurement of the pair: the mean factor (geometric, over
  // pairs that may share) of `self`'s model with any partner on that type, else of all pairs on
  // that type. 0 = the pair may not share. nullopt when nothing was measured on that type.
  std::optional<double> ColocationFactor(const PerfJobType& self, const PerfJobType& other,
                                         std::string_view gpu_type, int num_gpus = 1) const;

  // Fitted parameters, for reports and tests. nullopt where nothing could be fitted.
  std::optional<double> TypeRatio(std::string_view model, std::string_view gpu_type,
                                  std::string_view other_type) const;
  double ScalingExponent(std::string_view model) const;
  double BatchExponent(std::string_view model) const;
  double SpreadFactor(std::string_view model, std::string_view gpu_type) const;

  // Models and GPU types the profiles name, sorted.
  std::vector<std::string> models() const;
  const std::vector<std::string>& gpu_types() const { return gpu_types_; }
  // Cells (pooled isolated measurements) and co-location pairs fitted.
  size_t num_cells() const { return num_cells_; }
  size_t num_pairs() const { return pairs_.size(); }
  const Options& options() const { return options_; }

 private:
  struct Point {
    int num_gpus;
    double iters_per_s;
  };
  struct ModelData {
    std::string name;
    std::vector<int> batch_sizes;  // sorted, unique
    // [(batch index * #types + type) * 2 + (consolidated ? 0 : 1)], sorted by num_gpus.
    std::vector<std::vector<Point>> series;
    // log(r(type a) / r(type b)) at [a * #types + b]; NaN = no common cell.
    std::vector<double> log_type_ratio;
    std::vector<double> log_spread;  // per type; NaN = none measured
    double scaling_exponent = 0;     // fitted or pooled (see rule 6)
    double batch_exponent = 0;       // fitted or pooled
  };
  struct PairKey {
    PerfJobType self;
    PerfJobType other;
    int type;
    int num_gpus;
    friend auto operator<=>(const PairKey&, const PairKey&) = default;
  };
  class Fitter;

  PerfPredictor() = default;
  const ModelData* FindModel(std::string_view name) const;
  int FindType(std::string_view name) const;
  const std::vector<Point>& Series(const ModelData& m, int batch, int type, bool cons) const {
    return m.series[(static_cast<size_t>(batch) * gpu_types_.size() + type) * 2 + (cons ? 0 : 1)];
  }
  std::optional<double> Cell(const ModelData& m, int batch, int type, int n, bool cons) const;
  // Rules 1-8 at a measured batch index.
  std::optional<Prediction> AtBatch(const ModelData& m, int batch, int type, int n,
                                    bool cons) const;
  // Rules 1, 2, 6, 7 only (the inputs of rule 8).
  std::optional<double> FromSeries(const ModelData& m, int batch, int type, int n, bool cons) const;
  std::optional<double> Rectangles(const ModelData& m, int batch, int type, int n, bool cons,
                                   PredictionMethod kind) const;
  // The estimators that rule "combined" weighs (predictor.cc).
  class Estimator;
  double LogSpread(const ModelData& m, int type) const;
  double LogTypeRatio(const ModelData& m, int type, int other) const;

  Options options_;
  std::shared_ptr<const ThroughputModel> fallback_;
  std::vector<std::string> gpu_types_;  // as first spelled in the profiles, sorted
  std::vector<ModelData> models_;       // sorted by name
  std::vector<double> log_type_ratio_;  // pooled over models; NaN = unknown
  std::vector<double> log_spread_;      // per type, pooled over models; NaN = unknown
  double log_spread_all_ = 0;
  std::map<PairKey, double> pairs_;  // measured shared throughput of `self`
  // Mean log co-location factor per (self model, type) and per type; NaN = unknown.
  std::map<std::pair<std::string, int>, double> log_coloc_model_;
  std::vector<double> log_coloc_type_;
  // Weight of each estimator in rule "combined" per GPU type, [type * #estimators + estimator]
  // (predictor.cc); empty, or 0 for any estimator that applies = rules 3-6 in order.
  std::vector<double> weights_;
  size_t num_cells_ = 0;
};

// Online correction of a predictor from observed progress, for one policy instance (it is
// mutable: not thread-safe; give each user its own).
//
// Rule: a job's prediction is multiplied by exp(c), with c an exponentially weighted moving
// average (weight `alpha` on the newest) of log(observed / predicted) over the job's
// observations; each sample is clamped to [log min_factor, log max_factor]. A job with no
// observation yet starts from its job type's c (the same average over every observation of any
// job of that (model, batch size)), else 0. After k observations of a constant ratio the log
// error left is (1 - alpha)^k of the starting one.
class OnlineCorrector {
 public:
  struct Options {
    double alpha = 0.5;
    double min_factor = 0.1;
    double max_factor = 10.0;
  };
  // `predictor` must be non-null; options must have 0 < alpha <= 1 and
  // 0 < min_factor <= 1 <= max_factor (checked).
  OnlineCorrector(std::shared_ptr<const PerfPredictor> predictor, Options options);
  explicit OnlineCorrector(std::shared_ptr<const PerfPredictor> predictor)
      : OnlineCorrector(std::move(predictor), Options()) {}

  // Records that job `id` (of `spec`) progressed at `observed_iters_per_s` (the job's own units,
  // like JobSpec::ref_iters_per_s) on `shape`. Returns false, changing nothing, when the predictor
  // has no prediction there or the observation is not a positive finite rate.
  bool Observe(JobId id, const JobSpec& spec, const GpuShape& shape, double observed_iters_per_s);
  // The corrected PerfPredictor::ItersPerSecondOn.
  std::optional<double> ItersPerSecondOn(JobId id, const JobSpec& spec,
                                         const GpuShape& shape) const;
  // Predicted time to finish the job's remaining iterations (spec.iterations -
  // iterations_done, at least 0) on `shape` at the corrected rate. nullopt without a prediction
  // or at a predicted rate of 0.
  std::optional<Duration> Remaining(JobId id, const JobSpec& spec, double iterations_done,
                                    const GpuShape& shape) const;
  // The multiplicative correction now applied to `id` (1 = none).
  double Factor(JobId id, const JobSpec& spec) const;
  // Drops a finished job's state (its type's state stays).
  void Forget(JobId id) { jobs_.erase(id); }

  const PerfPredictor& predictor() const { return *predictor_; }

 private:
  double LogFactor(JobId id, const JobSpec& spec) const;

  std::shared_ptr<const PerfPredictor> predictor_;
  Options options_;
  std::map<JobId, double> jobs_;         // c per job
  std::map<PerfJobType, double> types_;  // c per job type
};

}  // namespace dlsched
