#include "perf/predictor_accuracy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "dlsched/common/rng.h"

namespace dlsched {
namespace {

// (source, model, batch, upper-case GPU type, count, consolidated).
using CellKey = std::tuple<std::string, std::string, int, std::string, int, bool>;

CellKey KeyOf(const PerfProfile& p) {
  std::string type = p.gpu_type;
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {p.source,        p.model,    p.batch_size,
          std::move(type), p.num_gpus, p.consolidated || p.num_gpus == 1};
}

double Quantile(std::vector<double> sorted_values, double q) {
  if (sorted_values.empty()) return 0;
  const size_t i = static_cast<size_t>(std::ceil(q * sorted_values.size()));
  return sorted_values[std::clamp<size_t>(i, 1, sorted_values.size()) - 1];
}

AccuracyRow Summarise(std::string source, std::string group, int held_out,
                      std::vector<double> apes) {
  AccuracyRow row{std::move(source), std::move(group), held_out, static_cast<int>(apes.size())};
  if (apes.empty()) return row;
  std::sort(apes.begin(), apes.end());
  double sum = 0;
  for (double a : apes) sum += a;
  row.mape_pct = sum / apes.size();
  row.p50_ape_pct = Quantile(apes, 0.5);
  row.p90_ape_pct = Quantile(apes, 0.9);
  row.max_ape_pct = apes.back();
  return row;
}

// Errors of one source, accumulated over repeats.
struct SourceErrors {
  std::map<std::string, std::pair<int, std::vector<double>>> by_type;  // upper type
  std::map<PredictionMethod, std::vector<double>> by_method;
  int held_out = 0;
  std::vector<double> all;
};

}  // namespace

HoldoutSplit SplitHoldout(std::span<const PerfProfile> profiles, double holdout, uint64_t seed) {
  DS_CHECK(holdout >= 0 && holdout <= 1) << "holdout share out of [0, 1]: " << holdout;
  std::map<CellKey, bool> held;  // cell -> held back
  for (const PerfProfile& p : profiles) {
    if (!p.colocated_with.has_value()) held.emplace(KeyOf(p), false);
  }
  std::vector<std::map<CellKey, bool>::iterator> cells;
  for (auto it = held.begin(); it != held.end(); ++it) cells.push_back(it);
  Rng rng(seed);
  for (size_t i = cells.size(); i > 1; --i) std::swap(cells[i - 1], cells[rng.Below(i)]);
  const size_t count = static_cast<size_t>(std::llround(holdout * cells.size()));
  for (size_t i = 0; i < count; ++i) cells[i]->second = true;

  HoldoutSplit split;
  for (const PerfProfile& p : profiles) {
    if (p.colocated_with.has_value()) continue;
    (held.at(KeyOf(p)) ? split.test : split.train).push_back(p);
  }
  return split;
}

Result<AccuracyReport> EvaluateHoldout(std::span<const PerfProfile> profiles,
                                       const HoldoutOptions& options) {
  if (!(options.holdout > 0 && options.holdout < 1)) {
    return InvalidArgument("holdout share must be in (0, 1)");
  }
  if (options.repeats < 1) return InvalidArgument("repeats must be >= 1");
  std::map<std::string, std::vector<PerfProfile>> by_source;
  for (const PerfProfile& p : profiles) {
    DS_RETURN_IF_ERROR(ValidatePerfProfile(p).WithPrefix("profile of " + p.model));
    if (!p.colocated_with.has_value()) by_source[p.source].push_back(p);
  }
  if (by_source.empty()) return InvalidArgument("no isolated profiles to evaluate");

  AccuracyReport report;
  report.options = options;
  auto fallback = std::make_shared<const SimpleThroughputModel>();
  for (const auto& [source, records] : by_source) {
    SourceErrors errors;
    for (int r = 0; r < options.repeats; ++r) {
      const HoldoutSplit split = SplitHoldout(records, options.holdout, options.seed + r);
      if (split.test.empty() || split.train.empty()) {
        return InvalidArgument("source '" + source + "' has too few cells for a holdout of " +
                               std::to_string(options.holdout));
      }
      DS_ASSIGN_OR_RETURN(PerfPredictor predictor, PerfPredictor::Fit(split.train, fallback));
      std::map<CellKey, std::vector<double>> cells;
      std::map<CellKey, const PerfProfile*> first;
      for (const PerfProfile& p : split.test) {
        cells[KeyOf(p)].push_back(p.iters_per_s);
        first.emplace(KeyOf(p), &p);
      }
      for (const auto& [key, values] : cells) {
        const PerfProfile& p = *first.at(key);
        const double truth = PoolMeasurements(values);
        const std::optional<PerfPredictor::Prediction> got = predictor.Explain(
            p.model, p.batch_size, GpuShape{p.gpu_type, p.num_gpus, p.consolidated});
        if (truth <= 0) {
          ++report.cannot_run_held_out;
          if (got.has_value() && got->iters_per_s == 0) ++report.cannot_run_predicted;
          continue;
        }
        const std::string& type = p.gpu_type;
        ++errors.held_out;
        ++errors.by_type[type].first;
        if (!got.has_value()) continue;
        const double ape = 100.0 * std::abs(got->iters_per_s - truth) / truth;
        errors.by_type[type].second.push_back(ape);
        errors.by_method[got->method].push_back(ape);
        errors.all.push_back(ape);
      }
    }
    for (auto& [type, held_apes] : errors.by_type) {
      report.by_type.push_back(Summarise(source, type, held_apes.first, held_apes.second));
    }
    report.by_type.push_back(Summarise(source, "all", errors.held_out, errors.all));
    for (auto& [method, apes] : errors.by_method) {
      const int n = static_cast<int>(apes.size());
      report.by_method.push_back(
          Summarise(source, std::string(PredictionMethodName(method)), n, apes));
    }
    report.by_method.push_back(Summarise(source, "all", errors.held_out, errors.all));
  }
  return report;
}

}  // namespace dlsched
