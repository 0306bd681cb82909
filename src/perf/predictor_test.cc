#include "dlsched/perf/predictor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/builders.h"

namespace dlsched {
namespace {

using Method = PredictionMethod;

PerfProfile Row(std::string model, int batch, std::string type, int n, double rate,
                bool consolidated = true) {
  return PerfProfile{"test", std::move(model), batch, std::move(type), n, consolidated, rate, {}};
}

// A fallback that makes its use visible.
class ConstantModel final : public ThroughputModel {
 public:
  double ItersPerSecond(const JobSpec&, const Cluster&, const Placement&) const override {
    return 123.0;
  }
};

PerfPredictor FitOrDie(const std::vector<PerfProfile>& rows) {
  Result<PerfPredictor> p = PerfPredictor::Fit(rows, std::make_shared<ConstantModel>());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

// Each rule of PerfPredictor on a hand-made table (values chosen so each query reaches exactly
// one rule):
//   M  bs32: A {1:10, 2:18, 4:30}, A spread {2:15, 4:24}, B {1:20, 2:36, 4:60}, C {2:9}
//   M  bs64: A {1:6, 2:11},                                B {1:12}
//   Solo bs16: A {1:4, 2:7, 4:12}
//   Big (no batch size): A {1:5, 2:0 = cannot run}
std::vector<PerfProfile> RuleFixture() {
  return {
      Row("M", 32, "A", 1, 10),        Row("M", 32, "A", 2, 18),        Row("M", 32, "A", 4, 30),
      Row("M", 32, "A", 2, 15, false), Row("M", 32, "A", 4, 24, false), Row("M", 32, "B", 1, 20),
      Row("M", 32, "B", 2, 36),        Row("M", 32, "B", 4, 60),        Row("M", 32, "C", 2, 9),
      Row("M", 64, "A", 1, 6),         Row("M", 64, "A", 2, 11),        Row("M", 64, "B", 1, 12),
      Row("Solo", 16, "A", 1, 4),      Row("Solo", 16, "A", 2, 7),      Row("Solo", 16, "A", 4, 12),
      Row("Big", 0, "A", 1, 5),        Row("Big", 0, "A", 2, 0),
  };
}

double LogLerp(double a, double b, double w) {
  return std::exp(std::log(a) + w * (std::log(b) - std::log(a)));
}

TEST(PerfPredictorTest, MeasuredPointsAreExact) {
  const std::vector<PerfProfile> rows = RuleFixture();
  const PerfPredictor p = FitOrDie(rows);
  for (const PerfProfile& r : rows) {
    SCOPED_TRACE(r.model + " " + r.gpu_type + " x" + std::to_string(r.num_gpus));
    const auto got = p.Explain(r.model, r.batch_size, {r.gpu_type, r.num_gpus, r.consolidated});
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->iters_per_s, r.iters_per_s);
    EXPECT_EQ(got->method, Method::kMeasured);
  }
  EXPECT_EQ(p.num_cells(), rows.size());
  EXPECT_EQ(p.gpu_types(), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(p.models(), (std::vector<std::string>{"Big", "M", "Solo"}));
}

TEST(PerfPredictorTest, RepeatedMeasurementsPoolGeometrically) {
  const PerfPredictor p = FitOrDie({Row("M", 8, "A", 1, 4), Row("M", 8, "A", 1, 9)});
  EXPECT_DOUBLE_EQ(*p.Predict("M", 8, {"A", 1, true}), 6.0);
  EXPECT_EQ(p.num_cells(), 1u);
}

TEST(PerfPredictorTest, EachRule) {
  const PerfPredictor p = FitOrDie(RuleFixture());
  // The fitted parameters the rules below use.
  const double solo_exponent = (std::log(7.0 / 4) + std::log(12.0 / 7)) / 2 / std::log(2.0);
  EXPECT_NEAR(p.ScalingExponent("Solo"), solo_exponent, 1e-12);
  const double spread_a = std::sqrt(15.0 / 18 * 24.0 / 30);  // pooled over M's spread cells
  EXPECT_NEAR(p.SpreadFactor("Solo", "A"), spread_a, 1e-12);
  EXPECT_NEAR(*p.TypeRatio("Solo", "B", "A"), 2.0, 1e-12);  // M's B/A cells are all 2x
  const double m_beta =
      -(std::log(6.0 / 10) + std::log(11.0 / 18) + std::log(12.0 / 20)) / 3 / std::log(2.0);
  EXPECT_NEAR(p.BatchExponent("M"), m_beta, 1e-12);

  struct Case {
    std::string name;
    std::string model;
    int batch;
    GpuShape shape;
    std::optional<double> want;
    Method method;
  };
  const std::vector<Case> cases = {
      {"batch scaling: 11 x 30/18", "M", 64, {"A", 4, true}, 11.0 * 30 / 18, Method::kBatchScaling},
      {"batch scaling of a spread gang from the consolidated anchor: 11 x 15/18",
       "M",
       64,
       {"A", 2, false},
       11.0 * 15 / 18,
       Method::kBatchScaling},
      {"batch x type ratio: 11 x 9/18",
       "M",
       64,
       {"C", 2, true},
       11.0 * 9 / 18,
       Method::kBatchTypeRatio},
      {"type x count ratio: 9 x 30/18 (and 9 x 60/36)",
       "M",
       32,
       {"C", 4, true},
       15.0,
       Method::kTypeCountRatio},
      {"count interpolation",
       "Solo",
       16,
       {"A", 3, true},
       LogLerp(7, 12, std::log(1.5) / std::log(2.0)),
       Method::kCountScaling},
      {"count extrapolation with the fitted exponent",
       "Solo",
       16,
       {"A", 8, true},
       12 * std::pow(2.0, solo_exponent),
       Method::kCountScaling},
      {"spread factor", "Solo", 16, {"A", 4, false}, 12 * spread_a, Method::kSpreadFactor},
      {"type ratio", "Solo", 16, {"B", 2, true}, 14.0, Method::kTypeRatio},
      {"batch interpolation",
       "M",
       45,
       {"A", 1, true},
       LogLerp(10, 6, std::log(45.0 / 32) / std::log(2.0)),
       Method::kBatchInterpolation},
      {"batch extrapolation with the fitted exponent",
       "M",
       128,
       {"A", 1, true},
       6 * std::pow(0.5, m_beta),
       Method::kBatchInterpolation},
      {"next to a cannot-run count", "Big", 0, {"A", 4, true}, 0.0, Method::kCannotRun},
      {"measured cannot run", "Big", 0, {"A", 2, true}, 0.0, Method::kMeasured},
      {"a model without batch size answers any",
       "Big",
       128,
       {"A", 1, true},
       5.0,
       Method::kMeasured},
      {"batch 0 asks the lower median batch size", "M", 0, {"A", 1, true}, 10.0, Method::kMeasured},
      {"type names are case-insensitive", "M", 32, {"a", 2, true}, 18.0, Method::kMeasured},
      {"a spread single GPU is consolidated", "M", 32, {"A", 1, false}, 10.0, Method::kMeasured},
      {"unknown model", "X", 32, {"A", 1, true}, std::nullopt, Method::kMeasured},
      {"unknown GPU type", "M", 32, {"Z", 1, true}, std::nullopt, Method::kMeasured},
      {"zero GPUs", "M", 32, {"A", 0, true}, std::nullopt, Method::kMeasured},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto got = p.Explain(c.model, c.batch, c.shape);
    ASSERT_EQ(got.has_value(), c.want.has_value());
    if (!c.want.has_value()) continue;
    EXPECT_NEAR(got->iters_per_s, *c.want, 1e-9 * (1 + *c.want));
    EXPECT_EQ(PredictionMethodName(got->method), PredictionMethodName(c.method));
  }
}

// An exactly separable table in log space, big enough for the cross-validation of rule
// "combined": r = base(model, batch) x speed(type) x n^0.8 x (0.7 when spread). Every rectangle,
// the count interpolation (a power law) and wide batch scaling are exact on it, so any weighted
// mean of them is too.
std::vector<PerfProfile> SeparableTable() {
  const std::vector<std::pair<std::string, double>> types = {{"X", 1.0}, {"Y", 2.5}, {"Z", 4.0}};
  std::vector<PerfProfile> rows;
  for (const auto& [model, base] :
       std::vector<std::pair<std::string, double>>{{"A", 50}, {"B", 30}}) {
    for (int batch : {8, 16, 32, 64}) {
      for (const auto& [type, speed] : types) {
        for (bool consolidated : {true, false}) {
          for (int n : {1, 2, 4, 8}) {
            if (!consolidated && n == 1) continue;
            const double rate =
                base * 8.0 / batch * speed * std::pow(n, 0.8) * (consolidated ? 1.0 : 0.7);
            rows.push_back(Row(model, batch, type, n, rate, consolidated));
          }
        }
      }
    }
  }
  return rows;
}

TEST(PerfPredictorTest, CombinedRuleRecoversASeparableTable) {
  std::vector<PerfProfile> all = SeparableTable();
  // Held back: a cell with all its neighbours (rules 3-6 and wide batch scaling all apply), a
  // spread one, and three cells of one column (A at 16, 32 and 64 on Y x 4): at 32 both nearest
  // batch sizes are missing, so rule 3 has no rectangle and the other estimators answer.
  const auto held = [](const PerfProfile& r) {
    return (r.model == "A" && r.batch_size == 16 && r.gpu_type == "Z" && r.num_gpus == 4 &&
            r.consolidated) ||
           (r.model == "B" && r.batch_size == 32 && r.gpu_type == "X" && r.num_gpus == 2 &&
            !r.consolidated) ||
           (r.model == "A" && r.batch_size >= 16 && r.gpu_type == "Y" && r.num_gpus == 4 &&
            r.consolidated);
  };
  std::vector<PerfProfile> train, test;
  for (PerfProfile& r : all) (held(r) ? test : train).push_back(std::move(r));
  ASSERT_EQ(test.size(), 5u);
  const PerfPredictor p = FitOrDie(train);
  for (const PerfProfile& r : test) {
    SCOPED_TRACE(r.model + " bs" + std::to_string(r.batch_size) + " " + r.gpu_type + " x" +
                 std::to_string(r.num_gpus) + (r.consolidated ? "" : " spread"));
    const auto got = p.Explain(r.model, r.batch_size, {r.gpu_type, r.num_gpus, r.consolidated});
    ASSERT_TRUE(got.has_value());
    EXPECT_NEAR(got->iters_per_s, r.iters_per_s, 1e-9 * r.iters_per_s);
    EXPECT_EQ(PredictionMethodName(got->method), "combined");
  }
  // Deterministic: a second fit answers the same bits.
  const PerfPredictor again = FitOrDie(train);
  for (const PerfProfile& r : test) {
    EXPECT_EQ(*again.Predict(r.model, r.batch_size, {r.gpu_type, r.num_gpus, r.consolidated}),
              *p.Predict(r.model, r.batch_size, {r.gpu_type, r.num_gpus, r.consolidated}));
  }
}

TEST(PerfPredictorTest, CombinedRuleFavoursTheEstimatorsThatCrossValidateBest) {
  // Throughput = f(batch, count) x speed(type) with an irregular f: rectangles across GPU types
  // (rules 4 and 5) are exact, those across batch sizes and counts (rules 3, 6, wide batch
  // scaling) are not. The cross-validation finds that, so the combined answer is exact where the
  // first rule in order (batch scaling) is off.
  const std::vector<std::pair<std::string, double>> types = {{"X", 1.0}, {"Y", 2.5}, {"Z", 4.0}};
  const auto rate = [](int batch, double speed, int n, bool consolidated) {
    return 400.0 / batch * speed * std::pow(n, 0.8) * (1 + 0.25 * std::sin(batch * n)) *
           (consolidated ? 1.0 : 0.7);
  };
  std::vector<PerfProfile> train;
  for (int batch : {8, 16, 32, 64}) {
    for (const auto& [type, speed] : types) {
      for (bool consolidated : {true, false}) {
        for (int n : {1, 2, 4, 8}) {
          if ((!consolidated && n == 1) || (batch == 16 && type == "Z" && n == 4 && consolidated)) {
            continue;
          }
          train.push_back(
              Row("A", batch, type, n, rate(batch, speed, n, consolidated), consolidated));
        }
      }
    }
  }
  const PerfPredictor p = FitOrDie(train);
  const double truth = rate(16, 4.0, 4, true);
  const auto got = p.Explain("A", 16, {"Z", 4, true});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(PredictionMethodName(got->method), "combined");
  EXPECT_NEAR(got->iters_per_s, truth, 1e-6 * truth);
  // What rule 3 alone answers: rectangles over batch sizes 8, 32 x counts 2, 8.
  double log_sum = 0;
  for (int b2 : {8, 32}) {
    for (int a : {2, 8}) {
      log_sum += std::log(rate(16, 4.0, a, true) * rate(b2, 4.0, 4, true) / rate(b2, 4.0, a, true));
    }
  }
  EXPECT_GT(std::abs(std::exp(log_sum / 4) / truth - 1), 0.05);
}

TEST(PerfPredictorTest, InterpolationIsMonotoneBetweenMeasuredCounts) {
  const PerfPredictor p = FitOrDie({Row("R", 64, "V100", 1, 4), Row("R", 64, "V100", 2, 7),
                                    Row("R", 64, "V100", 4, 12), Row("R", 64, "V100", 8, 20)});
  double previous = 0;
  for (int n = 1; n <= 16; ++n) {
    SCOPED_TRACE(n);
    const double r = *p.Predict("R", 64, {"V100", n, true});
    EXPECT_GT(r, previous);
    EXPECT_LE(r, 4.0 * n);  // never better than linear from one GPU
    previous = r;
  }
}

TEST(PerfPredictorTest, FitRejectsBadProfiles) {
  struct Case {
    std::string name;
    PerfProfile bad;
    std::string want_in_message;
  };
  const std::vector<Case> cases = {
      {"no model", Row("", 1, "A", 1, 1), "model is empty"},
      {"no type", Row("M", 1, "", 1, 1), "gpu_type is empty"},
      {"zero gpus", Row("M", 1, "A", 0, 1), "num_gpus"},
      {"negative batch", Row("M", -1, "A", 1, 1), "batch_size"},
      {"negative rate", Row("M", 1, "A", 1, -1), "iters_per_s"},
      {"nan rate", Row("M", 1, "A", 1, std::nan("")), "iters_per_s"},
      {"spread single GPU", Row("M", 1, "A", 1, 1, false), "1-GPU"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<PerfProfile> rows = {Row("M", 1, "A", 1, 1), c.bad};
    Result<PerfPredictor> p = PerfPredictor::Fit(rows, std::make_shared<ConstantModel>());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("profile 1"), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find(c.want_in_message), std::string::npos)
        << p.status().message();
  }
  PerfProfile pair = Row("M", 1, "A", 1, 1);
  pair.colocated_with = PerfJobType{"N", 1};
  const std::vector<PerfProfile> only_pairs = {pair};
  EXPECT_FALSE(PerfPredictor::Fit(only_pairs, std::make_shared<ConstantModel>()).ok());
}

class PerfPredictorModelTest : public ::testing::Test {
 protected:
  // V100: 2 nodes x 4; T4: 1 node x 4; A100 (unprofiled): 1 node x 4.
  PerfPredictorModelTest() : cluster_(testing::MakeCluster("2x4xV100+1x4xT4+1x4xA100")) {}

  static JobSpec Spec(std::string model, int num_gpus, double ref_iters_per_s) {
    JobSpec spec;
    spec.model = std::move(model);
    spec.batch_size = 32;
    spec.num_gpus = num_gpus;
    spec.ref_iters_per_s = ref_iters_per_s;
    spec.iterations = 1000;
    return spec;
  }
  static std::shared_ptr<const PerfPredictor> Predictor() {
    return std::make_shared<const PerfPredictor>(FitOrDie({
        Row("M", 32, "V100", 1, 10),
        Row("M", 32, "V100", 2, 18),
        Row("M", 32, "V100", 4, 30),
        Row("M", 32, "V100", 2, 12, false),
        Row("M", 32, "T4", 1, 4),
        Row("M", 32, "T4", 2, 7),
    }));
  }

  Cluster cluster_;
  const NodeId v100_a_{0}, v100_b_{1}, t4_{2}, a100_{3};
};

TEST_F(PerfPredictorModelTest, ItersPerSecondIsRelativeToTheReferenceSpeed) {
  const auto p = Predictor();
  struct Case {
    std::string name;
    JobSpec spec;
    Placement placement;
    double want;
  };
  const std::vector<Case> cases = {
      {"reference placement = ref speed", Spec("M", 1, 2), {{{v100_a_, 0b1}}}, 2.0},
      {"2 V100 on one node: x 18/10", Spec("M", 1, 2), {{{v100_a_, 0b11}}}, 3.6},
      {"job of 2 on its reference", Spec("M", 2, 5), {{{v100_a_, 0b11}}}, 5.0},
      {"spread over two nodes: x 12/18",
       Spec("M", 2, 5),
       {{{v100_a_, 1}, {v100_b_, 1}}},
       5.0 * 12 / 18},
      {"T4: x 4/10", Spec("M", 1, 2), {{{t4_, 0b1}}}, 0.8},
      {"mixed types run at the slower",
       Spec("M", 2, 5),
       {{{v100_a_, 1}, {t4_, 1}}},
       5.0 * (7 * std::exp(std::log(12.0 / 18))) / 18},
      {"unknown model -> fallback", Spec("X", 1, 2), {{{v100_a_, 0b1}}}, 123.0},
      {"unprofiled type -> fallback", Spec("M", 1, 2), {{{a100_, 0b1}}}, 123.0},
      {"empty placement", Spec("M", 1, 2), {}, 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(p->ItersPerSecond(c.spec, cluster_, c.placement), c.want, 1e-9);
  }
  // The same through a hypothetical shape.
  EXPECT_NEAR(*p->ItersPerSecondOn(Spec("M", 1, 2), {"V100", 4, true}), 6.0, 1e-12);
  EXPECT_EQ(p->ItersPerSecondOn(Spec("M", 1, 2), {"A100", 1, true}), std::nullopt);
  const auto shape = ShapeOf(cluster_, Placement{{{v100_a_, 1}, {v100_b_, 0b11}}});
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->gpu_type, "V100");
  EXPECT_EQ(shape->num_gpus, 3);
  EXPECT_FALSE(shape->consolidated);
  EXPECT_EQ(ShapeOf(cluster_, Placement{{{v100_a_, 1}, {t4_, 1}}}), std::nullopt);
  EXPECT_EQ(ShapeOf(cluster_, Placement{}), std::nullopt);
}

TEST_F(PerfPredictorModelTest, OnlineCorrectionConverges) {
  OnlineCorrector corrector(Predictor());
  const JobSpec spec = Spec("M", 1, 2);
  const GpuShape shape{"V100", 2, true};
  const double predicted = *corrector.ItersPerSecondOn(JobId(1), spec, shape);
  EXPECT_DOUBLE_EQ(predicted, 3.6);
  EXPECT_DOUBLE_EQ(corrector.Factor(JobId(1), spec), 1.0);
  // The job really runs at half the predicted speed.
  double previous_error = 1.0;
  for (int k = 1; k <= 10; ++k) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(corrector.Observe(JobId(1), spec, shape, 0.5 * predicted));
    const double error =
        std::abs(std::log(*corrector.ItersPerSecondOn(JobId(1), spec, shape) / (0.5 * predicted)));
    EXPECT_NEAR(error, std::pow(0.5, k) * std::log(2.0), 1e-9);  // (1 - alpha)^k of log 2
    EXPECT_LT(error, previous_error);
    previous_error = error;
  }
  EXPECT_NEAR(corrector.Factor(JobId(1), spec), 0.5, 0.001);
  // The correction carries to other shapes of the same job...
  EXPECT_NEAR(*corrector.ItersPerSecondOn(JobId(1), spec, {"T4", 1, true}), 0.4, 0.001);
  // ... and a new job of the same type starts from its type's correction.
  EXPECT_NEAR(corrector.Factor(JobId(2), spec), 0.5, 0.001);
  EXPECT_DOUBLE_EQ(corrector.Factor(JobId(3), Spec("X", 1, 2)), 1.0);
  // Remaining time at the corrected rate: 1000 - 400 iterations at ~1.8 iters/s.
  const std::optional<Duration> left = corrector.Remaining(JobId(1), spec, 400, shape);
  ASSERT_TRUE(left.has_value());
  EXPECT_NEAR(ToSeconds(*left), 600 / 1.8, 1.0);
  corrector.Forget(JobId(1));
  EXPECT_NEAR(corrector.Factor(JobId(1), spec), 0.5, 0.001);  // back to the type's
}

TEST_F(PerfPredictorModelTest, OnlineCorrectionIgnoresUnusableObservations) {
  OnlineCorrector corrector(Predictor(), {.alpha = 1.0, .min_factor = 0.5, .max_factor = 2.0});
  const JobSpec spec = Spec("M", 1, 2);
  EXPECT_FALSE(corrector.Observe(JobId(1), spec, {"V100", 1, true}, 0.0));
  EXPECT_FALSE(corrector.Observe(JobId(1), spec, {"V100", 1, true}, std::nan("")));
  EXPECT_FALSE(corrector.Observe(JobId(1), spec, {"A100", 1, true}, 1.0));
  EXPECT_FALSE(corrector.Observe(JobId(1), Spec("X", 1, 2), {"V100", 1, true}, 1.0));
  EXPECT_DOUBLE_EQ(corrector.Factor(JobId(1), spec), 1.0);
  EXPECT_EQ(corrector.Remaining(JobId(1), spec, 0, {"A100", 1, true}), std::nullopt);
  // alpha 1 follows the last sample; samples clamp to [min_factor, max_factor].
  ASSERT_TRUE(corrector.Observe(JobId(1), spec, {"V100", 1, true}, 200.0));
  EXPECT_DOUBLE_EQ(corrector.Factor(JobId(1), spec), 2.0);
  ASSERT_TRUE(corrector.Observe(JobId(1), spec, {"V100", 1, true}, 1.5));
  EXPECT_NEAR(corrector.Factor(JobId(1), spec), 0.75, 1e-12);
}

TEST(PerfPredictorTest, ColocationFactor) {
  std::vector<PerfProfile> rows = {Row("M", 32, "V100", 1, 10), Row("N", 16, "V100", 1, 8),
                                   Row("K", 0, "V100", 1, 4)};
  const auto pair = [](std::string self, int self_batch, std::string other, int other_batch,
                       double rate) {
    PerfProfile p = Row(std::move(self), self_batch, "V100", 1, rate);
    p.colocated_with = PerfJobType{std::move(other), other_batch};
    return p;
  };
  rows.push_back(pair("M", 32, "N", 16, 5));  // M at half speed beside N
  rows.push_back(pair("N", 16, "M", 32, 6));
  rows.push_back(pair("M", 32, "M", 32, 0));  // may not share
  rows.push_back(pair("K", 0, "N", 16, 3));
  const PerfPredictor p = FitOrDie(rows);
  EXPECT_EQ(p.num_pairs(), 4u);
  struct Case {
    std::string name;
    PerfJobType self;
    PerfJobType other;
    std::string type;
    std::optional<double> want;
  };
  const std::vector<Case> cases = {
      {"measured", {"M", 32}, {"N", 16}, "V100", 0.5},
      {"measured, other direction", {"N", 16}, {"M", 32}, "v100", 0.75},
      {"may not share", {"M", 32}, {"M", 32}, "V100", 0.0},
      {"job type without batch size", {"K", 64}, {"N", 16}, "V100", 0.75},
      {"unmeasured pair: the model's mean", {"M", 32}, {"K", 0}, "V100", 0.5},
      {"unmeasured model: the type's mean",
       {"Q", 8},
       {"N", 16},
       "V100",
       std::exp((std::log(0.5) + std::log(0.75) + std::log(0.75)) / 3)},
      {"unknown type", {"M", 32}, {"N", 16}, "T4", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<double> got = p.ColocationFactor(c.self, c.other, c.type);
    ASSERT_EQ(got.has_value(), c.want.has_value());
    if (c.want.has_value()) {
      EXPECT_NEAR(*got, *c.want, 1e-12);
    }
  }
}

}  // namespace
}  // namespace dlsched
