#pragma once

// Accuracy of PerfPredictor on measurements it has not seen: hold back a seeded share of the
// measured cells, fit on the rest, and compare predictions with the held-back values.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/perf/predictor.h"

namespace dlsched {

struct HoldoutSplit {
  std::vector<PerfProfile> train;
  std::vector<PerfProfile> test;
};

// Splits the isolated records of `profiles` (co-location records are dropped) by cell: every
// record of one (source, model, batch size, GPU type, count, consolidated) lands on the same side,
// so a held-back configuration is truly unseen. The cells are sorted, shuffled with Rng(seed)
// (Fisher-Yates) and the first round(holdout x #cells) are held back. Records keep their input
// order on each side. Deterministic: the same input and seed give the same split.
// Precondition: 0 <= holdout <= 1.
HoldoutSplit SplitHoldout(std::span<const PerfProfile> profiles, double holdout, uint64_t seed);

struct HoldoutOptions {
  double holdout = 0.2;  // share of cells held back, in (0, 1)
  uint64_t seed = 1;     // the first split's seed
  int repeats = 1;       // splits with seeds seed, seed + 1, ...; their held-back cells pool
};

// Errors over a group of held-back cells. APE = |predicted - measured| / measured, in percent;
// a cell's measured value is the geometric mean of its records.
struct AccuracyRow {
  std::string source;  // the records' source ("gavel", "sia", ...)
  std::string group;   // a GPU type, a PredictionMethodName, or "all"
  int held_out = 0;    // held-back cells measured > 0 (summed over repeats)
  int predicted = 0;   // ... that the predictor answered (the errors cover these)
  double mape_pct = 0;
  double p50_ape_pct = 0;
  double p90_ape_pct = 0;
  double max_ape_pct = 0;
};

struct AccuracyReport {
  HoldoutOptions options;
  // Per source: one row per GPU type (sorted), then "all". Sources sorted.
  std::vector<AccuracyRow> by_type;
  // Per source: one row per prediction rule that answered (in rule order), then "all".
  std::vector<AccuracyRow> by_method;
  // Held-back cells measured as "cannot run" (0): not in the errors; how many were predicted 0.
  int cannot_run_held_out = 0;
  int cannot_run_predicted = 0;
};

// Evaluates each source on its own: splits its records (SplitHoldout, per repeat), fits a
// PerfPredictor to the training side alone and predicts every held-back cell. Sources are never
// mixed, so a table that duplicates another (Sia's aws rows are Pollux's) cannot leak.
// InvalidArgument for options out of range or when a source has too few cells to hold any back.
Result<AccuracyReport> EvaluateHoldout(std::span<const PerfProfile> profiles,
                                       const HoldoutOptions& options);

}  // namespace dlsched
