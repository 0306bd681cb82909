#include "perf/predictor_accuracy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace dlsched {
namespace {

// A table shaped like the measured ones: 3 models x 4 batch sizes x 3 GPU types x counts
// 1, 2, 4, 8 consolidated and 2, 4, 8 spread. Throughput follows a per-model scaling curve and
// type speeds, times a deterministic +-3% wobble standing for measurement noise.
std::vector<PerfProfile> SyntheticTable(std::string source = "synthetic") {
  const std::vector<std::pair<std::string, double>> types = {
      {"K80", 0.3}, {"P100", 0.8}, {"V100", 1.0}};
  const std::vector<std::pair<std::string, double>> models = {
      {"ResNet", 0.9}, {"LM", 0.6}, {"Transformer", 0.75}};
  std::vector<PerfProfile> rows;
  int i = 0;
  for (const auto& [model, exponent] : models) {
    for (int batch : {16, 32, 64, 128}) {
      for (const auto& [type, speed] : types) {
        for (bool consolidated : {true, false}) {
          for (int n : {1, 2, 4, 8}) {
            if (!consolidated && n == 1) continue;
            const double wobble = 1.0 + 0.03 * std::sin(1.7 * ++i);
            const double rate = 100.0 * speed * std::pow(n, exponent) *
                                std::pow(16.0 / batch, 0.7) * (consolidated ? 1.0 : 0.8) * wobble;
            rows.push_back({source, model, batch, type, n, consolidated, rate, {}});
          }
        }
      }
    }
  }
  return rows;
}

using Cell = std::tuple<std::string, std::string, int, std::string, int, bool>;
Cell CellOf(const PerfProfile& p) {
  return {p.source, p.model, p.batch_size, p.gpu_type, p.num_gpus, p.consolidated};
}

TEST(PredictorHoldoutTest, SplitIsDeterministicAndByCell) {
  std::vector<PerfProfile> rows = SyntheticTable();
  // A second record of the first cell, and a co-location record (never split).
  rows.push_back(rows.front());
  PerfProfile pair = rows.front();
  pair.colocated_with = PerfJobType{"LM", 16};
  rows.push_back(pair);
  const size_t cells = rows.size() - 2;

  const HoldoutSplit a = SplitHoldout(rows, 0.2, 7);
  const HoldoutSplit b = SplitHoldout(rows, 0.2, 7);
  const HoldoutSplit c = SplitHoldout(rows, 0.2, 8);
  std::set<Cell> test_a, test_b, test_c, train_a;
  for (const PerfProfile& p : a.test) test_a.insert(CellOf(p));
  for (const PerfProfile& p : b.test) test_b.insert(CellOf(p));
  for (const PerfProfile& p : c.test) test_c.insert(CellOf(p));
  for (const PerfProfile& p : a.train) train_a.insert(CellOf(p));
  EXPECT_EQ(test_a, test_b);
  EXPECT_NE(test_a, test_c);
  EXPECT_EQ(test_a.size(), static_cast<size_t>(std::llround(0.2 * cells)));
  EXPECT_EQ(a.test.size() + a.train.size(), rows.size() - 1);  // the pair is dropped
  for (const Cell& cell : test_a) EXPECT_FALSE(train_a.contains(cell));
  for (const PerfProfile& p : a.train) EXPECT_FALSE(p.colocated_with.has_value());

  EXPECT_TRUE(SplitHoldout(rows, 0.0, 1).test.empty());
  EXPECT_TRUE(SplitHoldout(rows, 1.0, 1).train.empty());
}

TEST(PredictorHoldoutTest, MapeOnFixtureIsUnderTarget) {
  std::vector<PerfProfile> rows = SyntheticTable("one");
  for (PerfProfile& p : SyntheticTable("two")) rows.push_back(std::move(p));
  Result<AccuracyReport> report = EvaluateHoldout(rows, {.holdout = 0.2, .seed = 3, .repeats = 3});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // Per source: K80, P100, V100, then all.
  ASSERT_EQ(report->by_type.size(), 8u);
  for (const AccuracyRow& row : report->by_type) {
    SCOPED_TRACE(row.source + " " + row.group);
    EXPECT_GT(row.held_out, 0);
    EXPECT_EQ(row.predicted, row.held_out);
    EXPECT_LT(row.mape_pct, 10.0);
    EXPECT_LE(row.p50_ape_pct, row.p90_ape_pct);
    EXPECT_LE(row.p90_ape_pct, row.max_ape_pct);
  }
  EXPECT_EQ(report->by_type[3].group, "all");
  EXPECT_EQ(report->by_type[3].held_out, 3 * static_cast<int>(std::llround(0.2 * 252)));
  // The rule breakdown covers the same cells.
  int by_rule = 0;
  for (const AccuracyRow& row : report->by_method) {
    if (row.source == "one" && row.group != "all") by_rule += row.predicted;
  }
  EXPECT_EQ(by_rule, report->by_type[3].predicted);
  EXPECT_EQ(report->cannot_run_held_out, 0);
}

TEST(PredictorHoldoutTest, RejectsBadOptions) {
  const std::vector<PerfProfile> rows = SyntheticTable();
  EXPECT_FALSE(EvaluateHoldout(rows, {.holdout = 0.0}).ok());
  EXPECT_FALSE(EvaluateHoldout(rows, {.holdout = 1.0}).ok());
  EXPECT_FALSE(EvaluateHoldout(rows, {.holdout = 0.2, .seed = 1, .repeats = 0}).ok());
  EXPECT_FALSE(EvaluateHoldout({}, {}).ok());
  const std::vector<PerfProfile> tiny(rows.begin(), rows.begin() + 2);
  Result<AccuracyReport> report = EvaluateHoldout(tiny, {.holdout = 0.1});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("too few cells"), std::string::npos);
}

}  // namespace
}  // namespace dlsched
