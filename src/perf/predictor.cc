#include "dlsched/perf/predictor.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

namespace dlsched {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Used when nothing was measured at two counts / two batch sizes / both spreads (see the header).
constexpr double kDefaultScalingExponent = 0.9;
constexpr double kDefaultBatchExponent = 1.0;
constexpr double kDefaultSpreadFactor = 0.85;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// A running mean of log values.
struct LogMean {
  double sum = 0;
  int count = 0;
  void Add(double log_value) {
    sum += log_value;
    ++count;
  }
  double Get() const { return count > 0 ? sum / count : kNaN; }
};

double Lerp(double a, double b, double w) { return a + w * (b - a); }

// The estimators rule "combined" weighs: rules 3-6, then wide batch scaling.
enum Estimate { kBatch, kBatchType, kTypeCount, kCount, kWideBatch, kNumEstimates };
using Estimates = std::array<double, kNumEstimates>;  // log r; NaN = does not apply
constexpr std::array<PredictionMethod, kNumEstimates> kEstimateMethods = {
    PredictionMethod::kBatchScaling, PredictionMethod::kBatchTypeRatio,
    PredictionMethod::kTypeCountRatio, PredictionMethod::kCountScaling,
    PredictionMethod::kBatchScaling};
// Cross-validation of the estimators: folds, and the scored cells an estimator (of one GPU type,
// else of all) needs before it gets a weight.
constexpr int kFolds = 5;
constexpr int kMinScoredCells = 10;

}  // namespace

std::string_view PredictionMethodName(PredictionMethod method) {
  switch (method) {
    case PredictionMethod::kMeasured:
      return "measured";
    case PredictionMethod::kCannotRun:
      return "cannot_run";
    case PredictionMethod::kBatchScaling:
      return "batch_scaling";
    case PredictionMethod::kBatchTypeRatio:
      return "batch_type_ratio";
    case PredictionMethod::kTypeCountRatio:
      return "type_count_ratio";
    case PredictionMethod::kCountScaling:
      return "count_scaling";
    case PredictionMethod::kSpreadFactor:
      return "spread_factor";
    case PredictionMethod::kTypeRatio:
      return "type_ratio";
    case PredictionMethod::kBatchInterpolation:
      return "batch_interpolation";
    case PredictionMethod::kCombined:
      return "combined";
  }
  return "unknown";
}

double PoolMeasurements(std::span<const double> iters_per_s) {
  LogMean mean;
  double first = 0;
  bool all_equal = true;
  for (double v : iters_per_s) {
    if (v <= 0) continue;
    if (mean.count == 0) first = v;
    all_equal = all_equal && v == first;
    mean.Add(std::log(v));
  }
  if (mean.count == 0) return 0.0;
  return all_equal ? first : std::exp(mean.Get());
}

Status ValidatePerfProfile(const PerfProfile& p) {
  if (p.model.empty()) return InvalidArgument("model is empty");
  if (p.gpu_type.empty()) return InvalidArgument("gpu_type is empty");
  if (p.batch_size < 0) return InvalidArgument("batch_size must be >= 0");
  if (p.num_gpus < 1) return InvalidArgument("num_gpus must be >= 1");
  if (!p.consolidated && p.num_gpus == 1) {
    return InvalidArgument("a 1-GPU profile cannot be spread over nodes");
  }
  if (!std::isfinite(p.iters_per_s) || p.iters_per_s < 0) {
    return InvalidArgument("iters_per_s must be finite and >= 0");
  }
  if (p.colocated_with.has_value() &&
      (p.colocated_with->model.empty() || p.colocated_with->batch_size < 0)) {
    return InvalidArgument("colocated_with needs a model and a batch_size >= 0");
  }
  return Status::Ok();
}

std::optional<GpuShape> ShapeOf(const Cluster& cluster, const Placement& placement) {
  if (placement.num_gpus() == 0) return std::nullopt;  // empty, or a CPU job's
  const GpuTypeId type = cluster.node_gpu_type(placement.parts.front().node);
  for (const NodeGpus& part : placement.parts) {
    if (cluster.node_gpu_type(part.node) != type) return std::nullopt;
  }
  return GpuShape{cluster.gpu_type_name(type), placement.num_gpus(), placement.num_nodes() == 1};
}

class PerfPredictor::Estimator {
 public:
  // Every estimate of an unmeasured cell at a measured batch index that is not next to a
  // cannot-run count.
  static Estimates All(const PerfPredictor& p, const ModelData& m, int batch, int type, int n,
                       bool cons) {
    Estimates out;
    out.fill(kNaN);
    const auto log_of = [](std::optional<double> r) {
      return r.has_value() && *r > 0 ? std::log(*r) : kNaN;
    };
    out[kBatch] = log_of(p.Rectangles(m, batch, type, n, cons, PredictionMethod::kBatchScaling));
    out[kBatchType] =
        log_of(p.Rectangles(m, batch, type, n, cons, PredictionMethod::kBatchTypeRatio));
    out[kTypeCount] =
        log_of(p.Rectangles(m, batch, type, n, cons, PredictionMethod::kTypeCountRatio));
    if (!p.Series(m, batch, type, cons).empty()) {
      out[kCount] = log_of(p.FromSeries(m, batch, type, n, cons));
    }
    out[kWideBatch] = WideBatch(p, m, batch, type, n, cons);
    return out;
  }

 private:
  // Wide batch scaling: the rectangles of rule 3 over every other measured batch size b2 of the
  // model x every positive count n2 of the job's own series, in log space weighted by
  // 1 / (|batch index distance| x (1 + |log2(n2 / n)|)): far batch sizes and counts still
  // count, which fills in when the nearest neighbours are missing and averages out single
  // irregular cells.
  static double WideBatch(const PerfPredictor& p, const ModelData& m, int batch, int type, int n,
                          bool cons) {
    double sum = 0, weight_sum = 0;
    for (int b2 = 0; b2 < static_cast<int>(m.batch_sizes.size()); ++b2) {
      if (b2 == batch) continue;
      const std::optional<double> x = p.Cell(m, b2, type, n, cons);
      if (!x.has_value() || *x <= 0) continue;
      for (const Point& a : p.Series(m, batch, type, cons)) {
        if (a.iters_per_s <= 0) continue;
        const std::optional<double> y = p.Cell(m, b2, type, a.num_gpus, cons);
        if (!y.has_value() || *y <= 0) continue;
        const double w = 1.0 / (std::abs(b2 - batch) *
                                (1.0 + std::abs(std::log2(static_cast<double>(a.num_gpus) / n))));
        sum += w * (std::log(a.iters_per_s) + std::log(*x) - std::log(*y));
        weight_sum += w;
      }
    }
    return weight_sum > 0 ? sum / weight_sum : kNaN;
  }
};

// Pools the profiles into cells and fits the per-model and pooled parameters.
class PerfPredictor::Fitter {
 public:
  using CellKey = std::tuple<std::string, int, int, int, bool>;  // model, batch, type, n, cons
  using CellMap = std::map<CellKey, std::vector<double>>;        // -> measured values

  explicit Fitter(PerfPredictor& p) : p_(p) {}

  // `cross_validate`: also fit the weights of rule "combined" (off inside the cross-validation).
  Status Run(std::span<const PerfProfile> profiles, bool cross_validate) {
    for (size_t i = 0; i < profiles.size(); ++i) {
      const Status valid = ValidatePerfProfile(profiles[i]);
      if (!valid.ok()) return valid.WithPrefix("profile " + std::to_string(i));
    }
    // GPU types: one per case-insensitive name, spelled as first seen, sorted.
    std::map<std::string, std::string> spelling;  // upper -> first spelling
    for (const PerfProfile& prof : profiles)
      spelling.emplace(ToUpper(prof.gpu_type), prof.gpu_type);
    for (const auto& [upper, name] : spelling) p_.gpu_types_.push_back(name);
    const size_t num_types = p_.gpu_types_.size();

    // Cells: (model, batch, type, n, consolidated) -> values.
    CellMap cells;
    std::map<PairKey, std::vector<double>> pairs;
    for (const PerfProfile& prof : profiles) {
      const int type = p_.FindType(prof.gpu_type);
      const bool cons = prof.consolidated || prof.num_gpus == 1;
      if (prof.colocated_with.has_value()) {
        pairs[PairKey{{prof.model, prof.batch_size}, *prof.colocated_with, type, prof.num_gpus}]
            .push_back(prof.iters_per_s);
      } else {
        cells[{prof.model, prof.batch_size, type, prof.num_gpus, cons}].push_back(prof.iters_per_s);
      }
    }
    if (cells.empty()) return InvalidArgument("no isolated profile (only co-location ones)");
    p_.num_cells_ = cells.size();

    // Models and their batch sizes.
    std::map<std::string, std::vector<int>> batches;
    for (const auto& [key, values] : cells) batches[std::get<0>(key)].push_back(std::get<1>(key));
    for (auto& [name, sizes] : batches) {
      sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());  // keys are sorted
      ModelData m;
      m.name = name;
      m.batch_sizes = sizes;
      m.series.resize(sizes.size() * num_types * 2);
      m.log_type_ratio.assign(num_types * num_types, kNaN);
      m.log_spread.assign(num_types, kNaN);
      p_.models_.push_back(std::move(m));
    }
    for (const auto& [key, values] : cells) {
      const auto& [model, batch, type, n, cons] = key;
      ModelData& m = *std::lower_bound(
          p_.models_.begin(), p_.models_.end(), model,
          [](const ModelData& d, const std::string& name) { return d.name < name; });
      const int b = BatchIndex(m, batch);
      m.series[(static_cast<size_t>(b) * num_types + type) * 2 + (cons ? 0 : 1)].push_back(
          {n, PoolMeasurements(values)});  // keys iterate in n order within a series
    }

    FitTypeRatios();
    FitSpread();
    FitExponents();
    if (cross_validate) CrossValidate(profiles, cells);
    FitPairs(pairs);
    return Status::Ok();
  }

 private:
  static int BatchIndex(const ModelData& m, int batch) {
    return static_cast<int>(std::lower_bound(m.batch_sizes.begin(), m.batch_sizes.end(), batch) -
                            m.batch_sizes.begin());
  }

  // Calls f(log a, log b) for every count measured positive in both series.
  template <typename F>
  static void ForCommon(const std::vector<Point>& a, const std::vector<Point>& b, F f) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (a[i].num_gpus < b[j].num_gpus) {
        ++i;
      } else if (b[j].num_gpus < a[i].num_gpus) {
        ++j;
      } else {
        if (a[i].iters_per_s > 0 && b[j].iters_per_s > 0) {
          f(std::log(a[i].iters_per_s), std::log(b[j].iters_per_s));
        }
        ++i;
        ++j;
      }
    }
  }

  void FitTypeRatios() {
    const int t = static_cast<int>(p_.gpu_types_.size());
    std::vector<LogMean> pooled(static_cast<size_t>(t) * t);
    for (ModelData& m : p_.models_) {
      std::vector<LogMean> own(static_cast<size_t>(t) * t);
      for (int b = 0; b < static_cast<int>(m.batch_sizes.size()); ++b) {
        for (bool cons : {true, false}) {
          for (int x = 0; x < t; ++x) {
            for (int y = 0; y < t; ++y) {
              if (x == y) continue;
              ForCommon(p_.Series(m, b, x, cons), p_.Series(m, b, y, cons),
                        [&](double lx, double ly) {
                          own[x * t + y].Add(lx - ly);
                          pooled[x * t + y].Add(lx - ly);
                        });
            }
          }
        }
      }
      for (size_t i = 0; i < own.size(); ++i) m.log_type_ratio[i] = own[i].Get();
    }
    p_.log_type_ratio_.resize(pooled.size());
    for (size_t i = 0; i < pooled.size(); ++i) p_.log_type_ratio_[i] = pooled[i].Get();
  }

  void FitSpread() {
    const int t = static_cast<int>(p_.gpu_types_.size());
    std::vector<LogMean> per_type(t);
    LogMean all;
    for (ModelData& m : p_.models_) {
      std::vector<LogMean> own(t);
      for (int b = 0; b < static_cast<int>(m.batch_sizes.size()); ++b) {
        for (int x = 0; x < t; ++x) {
          ForCommon(p_.Series(m, b, x, false), p_.Series(m, b, x, true),
                    [&](double spread, double together) {
                      own[x].Add(spread - together);
                      per_type[x].Add(spread - together);
                      all.Add(spread - together);
                    });
        }
      }
      for (int x = 0; x < t; ++x) m.log_spread[x] = own[x].Get();
    }
    p_.log_spread_.resize(t);
    for (int x = 0; x < t; ++x) p_.log_spread_[x] = per_type[x].Get();
    p_.log_spread_all_ = all.count > 0 ? all.Get() : std::log(kDefaultSpreadFactor);
  }

  void FitExponents() {
    const int t = static_cast<int>(p_.gpu_types_.size());
    LogMean pooled_scaling, pooled_batch;
    std::vector<std::pair<LogMean, LogMean>> own(p_.models_.size());
    for (size_t i = 0; i < p_.models_.size(); ++i) {
      const ModelData& m = p_.models_[i];
      const int num_batches = static_cast<int>(m.batch_sizes.size());
      for (int b = 0; b < num_batches; ++b) {
        for (int x = 0; x < t; ++x) {
          for (bool cons : {true, false}) {
            // Scaling: consecutive measured counts of one series.
            const std::vector<Point>& s = p_.Series(m, b, x, cons);
            for (size_t k = 0; k + 1 < s.size(); ++k) {
              if (s[k].iters_per_s <= 0 || s[k + 1].iters_per_s <= 0) continue;
              const double slope = (std::log(s[k + 1].iters_per_s) - std::log(s[k].iters_per_s)) /
                                   (std::log(s[k + 1].num_gpus) - std::log(s[k].num_gpus));
              own[i].first.Add(slope);
              pooled_scaling.Add(slope);
            }
            // Batch: the same configuration at consecutive measured batch sizes.
            if (b + 1 >= num_batches || m.batch_sizes[b] <= 0) continue;
            const double dlog_batch = std::log(m.batch_sizes[b + 1]) - std::log(m.batch_sizes[b]);
            ForCommon(s, p_.Series(m, b + 1, x, cons), [&](double lo, double hi) {
              own[i].second.Add((hi - lo) / dlog_batch);
              pooled_batch.Add((hi - lo) / dlog_batch);
            });
          }
        }
      }
    }
    const auto clamp01 = [](double v) { return std::clamp(v, 0.0, 1.0); };
    const double scaling_all =
        pooled_scaling.count > 0 ? clamp01(pooled_scaling.Get()) : kDefaultScalingExponent;
    const double batch_all =
        pooled_batch.count > 0 ? clamp01(-pooled_batch.Get()) : kDefaultBatchExponent;
    for (size_t i = 0; i < p_.models_.size(); ++i) {
      ModelData& m = p_.models_[i];
      m.scaling_exponent = own[i].first.count > 0 ? clamp01(own[i].first.Get()) : scaling_all;
      m.batch_exponent = own[i].second.count > 0 ? clamp01(-own[i].second.Get()) : batch_all;
    }
  }

  // The weights of rule "combined". Cell i (in key order) is in fold i % kFolds; for each fold,
  // a predictor fitted (without this step) to the other folds' records estimates the fold's
  // positive cells that it would send to rules 3-6, and every estimate's squared log error is
  // scored under the cell's GPU type and under all types. An estimator's weight on a type is
  // 1 / (its mean squared log error)^2 on that type, or on all types when the type has fewer
  // than kMinScoredCells; none below that. The square favours the most accurate estimator more
  // than inverse-variance weighting would: the estimators' errors are correlated (they share
  // cells), so the mean of several gains less than independent errors would.
  void CrossValidate(std::span<const PerfProfile> profiles, const CellMap& cells) {
    std::map<CellKey, int> fold;
    int next = 0;
    for (const auto& [key, values] : cells) fold.emplace(key, next++ % kFolds);
    const int num_types = static_cast<int>(p_.gpu_types_.size());
    // [type * kNumEstimates + estimate]; type num_types = all types.
    std::vector<double> sum_sq(static_cast<size_t>(num_types + 1) * kNumEstimates, 0.0);
    std::vector<int> scored(sum_sq.size(), 0);
    for (int f = 0; f < kFolds; ++f) {
      std::vector<PerfProfile> train;
      for (const PerfProfile& prof : profiles) {
        if (prof.colocated_with.has_value()) continue;
        const CellKey key{prof.model, prof.batch_size, p_.FindType(prof.gpu_type), prof.num_gpus,
                          prof.consolidated || prof.num_gpus == 1};
        if (fold.at(key) != f) train.push_back(prof);
      }
      PerfPredictor sub;
      sub.options_ = p_.options_;
      sub.fallback_ = p_.fallback_;
      if (train.empty() || !Fitter(sub).Run(train, /*cross_validate=*/false).ok()) continue;
      for (const auto& [key, values] : cells) {
        const double truth = PoolMeasurements(values);
        if (fold.at(key) != f || truth <= 0) continue;
        const auto& [model, batch, type, n, cons] = key;
        const ModelData* m = sub.FindModel(model);
        const int sub_type = sub.FindType(p_.gpu_types_[type]);
        if (m == nullptr || sub_type < 0) continue;
        const int b = BatchIndex(*m, batch);
        if (b == static_cast<int>(m->batch_sizes.size()) || m->batch_sizes[b] != batch) continue;
        // Rule 2 answers next to a cannot-run count, before any estimator.
        const std::vector<Point>& s = sub.Series(*m, b, sub_type, cons);
        const auto above = std::lower_bound(
            s.begin(), s.end(), n, [](const Point& pt, int count) { return pt.num_gpus < count; });
        if ((above != s.begin() && (above - 1)->iters_per_s <= 0) ||
            (above != s.end() && above->iters_per_s <= 0)) {
          continue;
        }
        const Estimates est = Estimator::All(sub, *m, b, sub_type, n, cons);
        for (int e = 0; e < kNumEstimates; ++e) {
          if (std::isnan(est[e])) continue;
          const double error = est[e] - std::log(truth);
          for (int t : {type, num_types}) {
            sum_sq[t * kNumEstimates + e] += error * error;
            ++scored[t * kNumEstimates + e];
          }
        }
      }
    }
    p_.weights_.assign(static_cast<size_t>(num_types) * kNumEstimates, 0.0);
    for (int t = 0; t < num_types; ++t) {
      for (int e = 0; e < kNumEstimates; ++e) {
        int i = t * kNumEstimates + e;
        if (scored[i] < kMinScoredCells) i = num_types * kNumEstimates + e;
        if (scored[i] < kMinScoredCells) continue;
        const double mse = std::max(sum_sq[i] / scored[i], 1e-12);
        p_.weights_[t * kNumEstimates + e] = 1.0 / (mse * mse);
      }
    }
  }

  void FitPairs(const std::map<PairKey, std::vector<double>>& pairs) {
    const int t = static_cast<int>(p_.gpu_types_.size());
    std::map<std::pair<std::string, int>, LogMean> per_model;
    std::vector<LogMean> per_type(t);
    for (const auto& [key, values] : pairs) {
      const double shared = PoolMeasurements(values);
      p_.pairs_.emplace(key, shared);
      if (shared <= 0) continue;
      const std::optional<double> alone =
          p_.Predict(key.self.model, key.self.batch_size,
                     GpuShape{p_.gpu_types_[key.type], key.num_gpus, /*consolidated=*/true});
      if (!alone.has_value() || *alone <= 0) continue;
      const double log_factor = std::min(0.0, std::log(shared / *alone));
      per_model[{key.self.model, key.type}].Add(log_factor);
      per_type[key.type].Add(log_factor);
    }
    for (const auto& [key, mean] : per_model) p_.log_coloc_model_[key] = mean.Get();
    p_.log_coloc_type_.resize(t);
    for (int x = 0; x < t; ++x) p_.log_coloc_type_[x] = per_type[x].Get();
  }

  PerfPredictor& p_;
};

Result<PerfPredictor> PerfPredictor::Fit(std::span<const PerfProfile> profiles,
                                         std::shared_ptr<const ThroughputModel> fallback,
                                         Options options) {
  DS_CHECK(fallback != nullptr) << "PerfPredictor needs a fallback model";
  PerfPredictor p;
  p.options_ = std::move(options);
  p.fallback_ = std::move(fallback);
  DS_RETURN_IF_ERROR(Fitter(p).Run(profiles, /*cross_validate=*/true));
  return p;
}

const PerfPredictor::ModelData* PerfPredictor::FindModel(std::string_view name) const {
  const auto it =
      std::lower_bound(models_.begin(), models_.end(), name,
                       [](const ModelData& m, std::string_view n) { return m.name < n; });
  return it != models_.end() && it->name == name ? &*it : nullptr;
}

int PerfPredictor::FindType(std::string_view name) const {
  for (size_t i = 0; i < gpu_types_.size(); ++i) {
    if (EqualsIgnoreCase(gpu_types_[i], name)) return static_cast<int>(i);
  }
  return -1;
}

std::optional<double> PerfPredictor::Cell(const ModelData& m, int batch, int type, int n,
                                          bool cons) const {
  const std::vector<Point>& s = Series(m, batch, type, cons);
  const auto it = std::lower_bound(s.begin(), s.end(), n,
                                   [](const Point& p, int count) { return p.num_gpus < count; });
  if (it == s.end() || it->num_gpus != n) return std::nullopt;
  return it->iters_per_s;
}

double PerfPredictor::LogSpread(const ModelData& m, int type) const {
  if (!std::isnan(m.log_spread[type])) return m.log_spread[type];
  if (!std::isnan(log_spread_[type])) return log_spread_[type];
  return log_spread_all_;
}

double PerfPredictor::LogTypeRatio(const ModelData& m, int type, int other) const {
  const size_t i = static_cast<size_t>(type) * gpu_types_.size() + other;
  return std::isnan(m.log_type_ratio[i]) ? log_type_ratio_[i] : m.log_type_ratio[i];
}

std::optional<PerfPredictor::Prediction> PerfPredictor::Explain(std::string_view model,
                                                                int batch_size,
                                                                const GpuShape& shape) const {
  if (shape.num_gpus < 1) return std::nullopt;
  const ModelData* m = FindModel(model);
  const int type = FindType(shape.gpu_type);
  if (m == nullptr || type < 0) return std::nullopt;
  const int n = shape.num_gpus;
  const bool cons = shape.consolidated || n == 1;
  const std::vector<int>& sizes = m->batch_sizes;
  const int idx =
      static_cast<int>(std::lower_bound(sizes.begin(), sizes.end(), batch_size) - sizes.begin());
  const int num_sizes = static_cast<int>(sizes.size());
  int lo_index = idx - 1;
  int hi_index = idx;
  if (idx < num_sizes && sizes[idx] == batch_size) {
    if (std::optional<Prediction> at = AtBatch(*m, idx, type, n, cons)) return at;
    hi_index = idx + 1;  // nothing at this batch size: ask its neighbours
  } else if (sizes.front() == 0) {
    // A model measured without a batch size answers for all of them.
    return AtBatch(*m, 0, type, n, cons);
  } else if (batch_size <= 0) {
    return AtBatch(*m, (num_sizes - 1) / 2, type, n, cons);
  }
  std::optional<Prediction> lo, hi;
  if (lo_index >= 0 && sizes[lo_index] > 0) lo = AtBatch(*m, lo_index, type, n, cons);
  if (hi_index < num_sizes) hi = AtBatch(*m, hi_index, type, n, cons);
  Prediction out{0, PredictionMethod::kBatchInterpolation};
  if (lo.has_value() && hi.has_value()) {
    if (lo->iters_per_s <= 0 || hi->iters_per_s <= 0) return out;
    const double w = (std::log(batch_size) - std::log(sizes[lo_index])) /
                     (std::log(sizes[hi_index]) - std::log(sizes[lo_index]));
    out.iters_per_s = std::exp(Lerp(std::log(lo->iters_per_s), std::log(hi->iters_per_s), w));
    return out;
  }
  const std::optional<Prediction>& one = lo.has_value() ? lo : hi;
  if (!one.has_value()) return std::nullopt;
  const int b0 = sizes[lo.has_value() ? lo_index : hi_index];
  out.iters_per_s =
      one->iters_per_s * std::pow(static_cast<double>(b0) / batch_size, m->batch_exponent);
  return out;
}

std::optional<double> PerfPredictor::FromSeries(const ModelData& m, int batch, int type, int n,
                                                bool cons) const {
  const std::vector<Point>& s = Series(m, batch, type, cons);
  const auto above = std::lower_bound(s.begin(), s.end(), n,
                                      [](const Point& p, int count) { return p.num_gpus < count; });
  if (above != s.end() && above->num_gpus == n) return above->iters_per_s;
  const Point* lo = above == s.begin() ? nullptr : &*(above - 1);
  const Point* hi = above == s.end() ? nullptr : &*above;
  if ((lo != nullptr && lo->iters_per_s <= 0) || (hi != nullptr && hi->iters_per_s <= 0)) {
    return 0.0;
  }
  if (lo != nullptr && hi != nullptr) {
    const double w =
        (std::log(n) - std::log(lo->num_gpus)) / (std::log(hi->num_gpus) - std::log(lo->num_gpus));
    return std::exp(Lerp(std::log(lo->iters_per_s), std::log(hi->iters_per_s), w));
  }
  if (lo != nullptr || hi != nullptr) {
    const Point& p = lo != nullptr ? *lo : *hi;
    return p.iters_per_s * std::pow(static_cast<double>(n) / p.num_gpus, m.scaling_exponent);
  }
  if (!cons) {
    const std::optional<double> together = FromSeries(m, batch, type, n, true);
    if (together.has_value()) return *together * std::exp(LogSpread(m, type));
  }
  return std::nullopt;
}

std::optional<double> PerfPredictor::Rectangles(const ModelData& m, int batch, int type, int n,
                                                bool cons, PredictionMethod kind) const {
  const int num_types = static_cast<int>(gpu_types_.size());
  // Anchors: configurations of this type near (n, cons), measured positive at this batch size.
  struct Anchor {
    int n;
    bool cons;
    double log_r;
  };
  std::vector<Anchor> anchors;
  const std::vector<Point>& s = Series(m, batch, type, cons);
  const auto above = std::lower_bound(s.begin(), s.end(), n,
                                      [](const Point& p, int count) { return p.num_gpus < count; });
  if (above != s.begin() && (above - 1)->iters_per_s > 0) {
    anchors.push_back({(above - 1)->num_gpus, cons, std::log((above - 1)->iters_per_s)});
  }
  if (above != s.end() && above->iters_per_s > 0) {
    anchors.push_back({above->num_gpus, cons, std::log(above->iters_per_s)});
  }
  if (!cons) {
    const std::optional<double> together = Cell(m, batch, type, n, true);
    if (together.has_value() && *together > 0) anchors.push_back({n, true, std::log(*together)});
  }
  std::vector<int> partners;  // nearest measured batch sizes
  if (batch > 0) partners.push_back(batch - 1);
  if (batch + 1 < static_cast<int>(m.batch_sizes.size())) partners.push_back(batch + 1);

  LogMean mean;
  // log a + log x - log y, when all three cells are measured positive.
  const auto add = [&](double log_a, std::optional<double> x, std::optional<double> y) {
    if (x.has_value() && y.has_value() && *x > 0 && *y > 0) {
      mean.Add(log_a + std::log(*x) - std::log(*y));
    }
  };
  switch (kind) {
    case PredictionMethod::kBatchScaling:
      for (int b2 : partners) {
        for (const Anchor& a : anchors) {
          add(a.log_r, Cell(m, b2, type, n, cons), Cell(m, b2, type, a.n, a.cons));
        }
      }
      break;
    case PredictionMethod::kBatchTypeRatio:
      for (int b2 : partners) {
        for (int t2 = 0; t2 < num_types; ++t2) {
          const std::optional<double> a = Cell(m, batch, t2, n, cons);
          if (t2 == type || !a.has_value() || *a <= 0) continue;
          add(std::log(*a), Cell(m, b2, type, n, cons), Cell(m, b2, t2, n, cons));
        }
      }
      break;
    case PredictionMethod::kTypeCountRatio:
      for (int t2 = 0; t2 < num_types; ++t2) {
        if (t2 == type) continue;
        for (const Anchor& a : anchors) {
          add(a.log_r, Cell(m, batch, t2, n, cons), Cell(m, batch, t2, a.n, a.cons));
        }
      }
      break;
    default:
      DS_CHECK(false) << "not a rectangle rule: " << PredictionMethodName(kind);
  }
  if (mean.count == 0) return std::nullopt;
  return std::exp(mean.Get());
}

std::optional<PerfPredictor::Prediction> PerfPredictor::AtBatch(const ModelData& m, int batch,
                                                                int type, int n, bool cons) const {
  // Rules 1 and 2.
  const std::vector<Point>& s = Series(m, batch, type, cons);
  const auto above = std::lower_bound(s.begin(), s.end(), n,
                                      [](const Point& p, int count) { return p.num_gpus < count; });
  if (above != s.end() && above->num_gpus == n) {
    return Prediction{above->iters_per_s, PredictionMethod::kMeasured};
  }
  if ((above != s.begin() && (above - 1)->iters_per_s <= 0) ||
      (above != s.end() && above->iters_per_s <= 0)) {
    return Prediction{0.0, PredictionMethod::kCannotRun};
  }
  // Rules 3-6: combined when every estimate that applies has a weight (one the cross-validation
  // could not score must neither be outvoted nor decide alone for lack of evidence), else in order.
  const Estimates est = Estimator::All(*this, m, batch, type, n, cons);
  double weight_sum = 0, weighted_sum = 0;
  int used = 0, last = 0;
  bool all_weighted = !weights_.empty();
  for (int e = 0; e < kNumEstimates && all_weighted; ++e) {
    if (std::isnan(est[e])) continue;
    const double w = weights_[static_cast<size_t>(type) * kNumEstimates + e];
    all_weighted = w > 0;
    weight_sum += w;
    weighted_sum += w * est[e];
    ++used;
    last = e;
  }
  if (all_weighted && used > 0) {
    return Prediction{std::exp(weighted_sum / weight_sum),
                      used == 1 ? kEstimateMethods[last] : PredictionMethod::kCombined};
  }
  for (int e = kBatch; e <= kCount; ++e) {
    if (!std::isnan(est[e])) return Prediction{std::exp(est[e]), kEstimateMethods[e]};
  }
  // Rule 7.
  if (!cons) {
    const std::optional<Prediction> together = AtBatch(m, batch, type, n, true);
    if (together.has_value()) {
      return Prediction{together->iters_per_s * std::exp(LogSpread(m, type)),
                        PredictionMethod::kSpreadFactor};
    }
  }
  // Rule 8.
  LogMean mean;
  for (int t2 = 0; t2 < static_cast<int>(gpu_types_.size()); ++t2) {
    if (t2 == type) continue;
    const double log_ratio = LogTypeRatio(m, type, t2);
    if (std::isnan(log_ratio)) continue;
    const std::optional<double> r = FromSeries(m, batch, t2, n, cons);
    if (r.has_value() && *r > 0) mean.Add(std::log(*r) + log_ratio);
  }
  if (mean.count > 0) return Prediction{std::exp(mean.Get()), PredictionMethod::kTypeRatio};
  return std::nullopt;
}

std::optional<double> PerfPredictor::ItersPerSecondOn(const JobSpec& spec,
                                                      const GpuShape& shape) const {
  const std::optional<double> rate = Predict(spec.model, spec.batch_size, shape);
  if (!rate.has_value()) return std::nullopt;
  const std::optional<double> reference =
      Predict(spec.model, spec.batch_size,
              GpuShape{options_.reference_type, std::max(1, spec.num_gpus), /*consolidated=*/true});
  if (!reference.has_value() || *reference <= 0) return std::nullopt;
  return spec.ref_iters_per_s * *rate / *reference;
}

double PerfPredictor::ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                     const Placement& placement) const {
  // A CPU job: the profiles measure GPUs only.
  if (spec.num_gpus == 0) return fallback_->ItersPerSecond(spec, cluster, placement);
  if (placement.num_gpus() == 0) return 0.0;
  const std::optional<double> rate =
      SlowestTypeRate(cluster, placement, [&](std::string_view type, int gpus, bool consolidated) {
        return ItersPerSecondOn(spec, GpuShape{type, gpus, consolidated});
      });
  return rate.has_value() ? *rate : fallback_->ItersPerSecond(spec, cluster, placement);
}

std::optional<double> PerfPredictor::ColocationFactor(const PerfJobType& self,
                                                      const PerfJobType& other,
                                                      std::string_view gpu_type,
                                                      int num_gpus) const {
  const int type = FindType(gpu_type);
  if (type < 0 || num_gpus < 1) return std::nullopt;
  // A type measured without a batch size stands for all its batch sizes.
  for (const PerfJobType& a : {self, PerfJobType{self.model, 0}}) {
    for (const PerfJobType& b : {other, PerfJobType{other.model, 0}}) {
      const auto it = pairs_.find(PairKey{a, b, type, num_gpus});
      if (it == pairs_.end()) continue;
      if (it->second <= 0) return 0.0;
      const std::optional<double> alone =
          Predict(self.model, self.batch_size, GpuShape{gpu_types_[type], num_gpus, true});
      if (alone.has_value() && *alone > 0) return std::min(1.0, it->second / *alone);
    }
  }
  const auto own = log_coloc_model_.find({self.model, type});
  if (own != log_coloc_model_.end()) return std::exp(own->second);
  if (!std::isnan(log_coloc_type_[type])) return std::exp(log_coloc_type_[type]);
  return std::nullopt;
}

std::optional<double> PerfPredictor::TypeRatio(std::string_view model, std::string_view gpu_type,
                                               std::string_view other_type) const {
  const ModelData* m = FindModel(model);
  const int a = FindType(gpu_type);
  const int b = FindType(other_type);
  if (a < 0 || b < 0) return std::nullopt;
  if (a == b) return 1.0;
  const double log_ratio = m != nullptr
                               ? LogTypeRatio(*m, a, b)
                               : log_type_ratio_[static_cast<size_t>(a) * gpu_types_.size() + b];
  if (std::isnan(log_ratio)) return std::nullopt;
  return std::exp(log_ratio);
}

double PerfPredictor::ScalingExponent(std::string_view model) const {
  const ModelData* m = FindModel(model);
  return m != nullptr ? m->scaling_exponent : kDefaultScalingExponent;
}

double PerfPredictor::BatchExponent(std::string_view model) const {
  const ModelData* m = FindModel(model);
  return m != nullptr ? m->batch_exponent : kDefaultBatchExponent;
}

double PerfPredictor::SpreadFactor(std::string_view model, std::string_view gpu_type) const {
  const ModelData* m = FindModel(model);
  const int type = FindType(gpu_type);
  if (type < 0) return std::exp(log_spread_all_);
  if (m == nullptr) {
    return std::exp(std::isnan(log_spread_[type]) ? log_spread_all_ : log_spread_[type]);
  }
  return std::exp(LogSpread(*m, type));
}

std::vector<std::string> PerfPredictor::models() const {
  std::vector<std::string> names;
  for (const ModelData& m : models_) names.push_back(m.name);
  return names;
}

OnlineCorrector::OnlineCorrector(std::shared_ptr<const PerfPredictor> predictor, Options options)
    : predictor_(std::move(predictor)), options_(options) {
  DS_CHECK(predictor_ != nullptr) << "OnlineCorrector needs a predictor";
  DS_CHECK(options_.alpha > 0 && options_.alpha <= 1) << "alpha must be in (0, 1]";
  DS_CHECK(options_.min_factor > 0 && options_.min_factor <= 1 && options_.max_factor >= 1)
      << "need 0 < min_factor <= 1 <= max_factor";
}

double OnlineCorrector::LogFactor(JobId id, const JobSpec& spec) const {
  if (const auto job = jobs_.find(id); job != jobs_.end()) return job->second;
  const auto type = types_.find(PerfJobType{spec.model, spec.batch_size});
  return type != types_.end() ? type->second : 0.0;
}

bool OnlineCorrector::Observe(JobId id, const JobSpec& spec, const GpuShape& shape,
                              double observed_iters_per_s) {
  if (!std::isfinite(observed_iters_per_s) || observed_iters_per_s <= 0) return false;
  const std::optional<double> predicted = predictor_->ItersPerSecondOn(spec, shape);
  if (!predicted.has_value() || *predicted <= 0) return false;
  const double sample = std::clamp(std::log(observed_iters_per_s / *predicted),
                                   std::log(options_.min_factor), std::log(options_.max_factor));
  const double a = options_.alpha;
  const double job_before = LogFactor(id, spec);
  jobs_[id] = (1 - a) * job_before + a * sample;
  const PerfJobType key{spec.model, spec.batch_size};
  const auto type = types_.find(key);
  types_[key] = type == types_.end() ? a * sample : (1 - a) * type->second + a * sample;
  return true;
}

std::optional<double> OnlineCorrector::ItersPerSecondOn(JobId id, const JobSpec& spec,
                                                        const GpuShape& shape) const {
  const std::optional<double> predicted = predictor_->ItersPerSecondOn(spec, shape);
  if (!predicted.has_value()) return std::nullopt;
  return *predicted * std::exp(LogFactor(id, spec));
}

std::optional<Duration> OnlineCorrector::Remaining(JobId id, const JobSpec& spec,
                                                   double iterations_done,
                                                   const GpuShape& shape) const {
  const std::optional<double> rate = ItersPerSecondOn(id, spec, shape);
  if (!rate.has_value() || *rate <= 0) return std::nullopt;
  return Seconds(std::max(0.0, spec.iterations - iterations_done) / *rate);
}

double OnlineCorrector::Factor(JobId id, const JobSpec& spec) const {
  return std::exp(LogFactor(id, spec));
}

}  // namespace dlsched
