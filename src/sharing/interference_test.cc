#include "dlsched/sharing/interference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"

namespace dlsched::sharing {
namespace {

// A fallback that answers one constant, so tests can tell it from a measurement.
class ConstantModel final : public InterferenceModel {
 public:
  explicit ConstantModel(double speed) : speed_(speed) {}
  double PairSpeed(const SharingJob&, const SharingJob&) const override { return speed_; }

 private:
  double speed_;
};

JobTypeCatalog ThreeTypes() {
  JobTypeCatalog catalog;
  EXPECT_TRUE(catalog.Add({{"ResNet18", 64, false}, 0.8, 0.47, 2660}).ok());
  EXPECT_TRUE(catalog.Add({{"NeuMF", 64, false}, 0.1, 0.02, 2050}).ok());
  EXPECT_TRUE(catalog.Add({{"ResNet50", 64, false}, 1.0, 0.81, 8570}).ok());
  return catalog;
}

TEST(JobTypeCatalogTest, AddFindAndReject) {
  JobTypeCatalog catalog = ThreeTypes();
  EXPECT_EQ(catalog.size(), 3);
  EXPECT_EQ(catalog.Find({"NeuMF", 64, false}), 1);
  EXPECT_FALSE(catalog.Find({"NeuMF", 64, true}).has_value());
  EXPECT_EQ(catalog.Add({{"NeuMF", 64, false}, 0.1, 0.0, 1}).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog.Add({{"X", 1, false}, 1.5, 0.0, 1}).status().code(),
            StatusCode::kInvalidArgument);
  const SharingJob job = catalog.Job(2);
  EXPECT_EQ(job.type, 2);
  EXPECT_EQ(job.memory_mib, 8570);
  EXPECT_DOUBLE_EQ(job.sm_util, 1.0);
}

TEST(TableInterferenceModelTest, LookupsPreferTypedThenUntypedThenFallback) {
  const JobTypeCatalog catalog = ThreeTypes();
  const std::vector<MeasuredPair> pairs = {
      {"", 0, 1, 0.9, 0.95},      // untyped
      {"v100", 0, 1, 0.7, 0.75},  // typed: wins on V100
      {"", 0, 2, 0.6, 0.5},
      {"", 2, 0, 0.8, 0.7},    // the same pair again, other order: averaged
      {"K80", 1, 2, 0.1, 0.1}  // another type: ignored on V100
  };
  const auto fallback = std::make_shared<ConstantModel>(0.42);
  const TableInterferenceModel model(catalog.size(), pairs, "V100", fallback);
  struct Case {
    std::string name;
    SharingJob self;
    SharingJob other;
    double want;
  };
  const SharingJob unknown{SharingJob::kUnknownType, 0.5, 0.5, 1000};
  const std::vector<Case> cases = {
      {"typed beats untyped", catalog.Job(0), catalog.Job(1), 0.7},
      {"typed, other direction", catalog.Job(1), catalog.Job(0), 0.75},
      {"averaged both orders", catalog.Job(0), catalog.Job(2), (0.6 + 0.7) / 2},
      {"averaged, other direction", catalog.Job(2), catalog.Job(0), (0.5 + 0.8) / 2},
      {"other GPU type ignored", catalog.Job(1), catalog.Job(2), 0.42},
      {"never measured", catalog.Job(2), catalog.Job(2), 0.42},
      {"unknown type", unknown, catalog.Job(0), 0.42},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(model.PairSpeed(c.self, c.other), c.want, 1e-6);
  }
  EXPECT_EQ(model.num_measured(), 4u);
  EXPECT_FALSE(model.Measured(-1, 0).has_value());
}

TEST(GroupSpeedsTest, ProductOfPairSpeeds) {
  const JobTypeCatalog catalog = ThreeTypes();
  const std::vector<MeasuredPair> pairs = {
      {"", 0, 1, 0.9, 0.8}, {"", 0, 2, 0.5, 0.6}, {"", 1, 2, 0.7, 1.0}};
  const TableInterferenceModel model(catalog.size(), pairs, "A100",
                                     std::make_shared<ConstantModel>(1.0));
  const std::vector<SharingJob> group = {catalog.Job(0), catalog.Job(1), catalog.Job(2)};
  std::vector<double> speeds(3);
  GroupSpeeds(model, group, speeds);
  EXPECT_NEAR(speeds[0], 0.9 * 0.5, 1e-6);
  EXPECT_NEAR(speeds[1], 0.8 * 0.7, 1e-6);
  EXPECT_NEAR(speeds[2], 0.6 * 1.0, 1e-6);
  EXPECT_EQ(SlowdownOf(0.5), 2.0);
  EXPECT_TRUE(std::isinf(SlowdownOf(0.0)));
}

// Samples from a known linear model, inside the clamp range.
std::vector<PairSample> Synthetic(const FittedInterferenceModel::Weights& w, double noise) {
  Rng rng(11);
  std::vector<PairSample> out;
  for (int i = 0; i < 400; ++i) {
    const SharingJob a{0, rng.Uniform(), rng.Uniform(), static_cast<int64_t>(rng.Below(16384))};
    const SharingJob b{1, rng.Uniform(), rng.Uniform(), static_cast<int64_t>(rng.Below(16384))};
    const FittedInterferenceModel::Weights x = FittedInterferenceModel::Features(a, b);
    double loss = 0.0;
    for (size_t f = 0; f < x.size(); ++f) loss += w[f] * x[f];
    out.push_back({a, b, 1.0 - loss + noise * rng.Normal(), i / 2});
  }
  return out;
}

TEST(FittedInterferenceModelTest, RecoversKnownWeights) {
  const FittedInterferenceModel::Weights truth = {0.02, 0.1, 0.15, 0.2, 0.05, 0.1, 0.03};
  const std::vector<PairSample> samples = Synthetic(truth, 0.0);
  Result<FittedInterferenceModel> fit = FittedInterferenceModel::Fit(samples);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  for (size_t f = 0; f < truth.size(); ++f) {
    SCOPED_TRACE(f);
    EXPECT_NEAR(fit->weights()[f], truth[f], 1e-3);
  }
  // Clamped: a huge loss still leaves a positive speed; a gain never exceeds 1.
  const FittedInterferenceModel harsh({5, 0, 0, 0, 0, 0, 0});
  const FittedInterferenceModel kind({-5, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(harsh.PairSpeed({}, {}), FittedInterferenceModel::kMinSpeed);
  EXPECT_EQ(kind.PairSpeed({}, {}), FittedInterferenceModel::kMaxSpeed);
  EXPECT_FALSE(FittedInterferenceModel::Fit(std::span(samples).first(3)).ok());
}

TEST(FittedInterferenceModelTest, CrossValidationBeatsTheMeanOnAModelledSignal) {
  const FittedInterferenceModel::Weights truth = {0.02, 0.1, 0.15, 0.2, 0.05, 0.1, 0.03};
  const std::vector<PairSample> samples = Synthetic(truth, 0.02);
  Result<FitError> cv = CrossValidateFit(samples, 5);
  ASSERT_TRUE(cv.ok()) << cv.status().ToString();
  EXPECT_EQ(cv->num_samples, samples.size());
  EXPECT_NEAR(cv->mae, 0.02 * std::sqrt(2 / M_PI), 0.005);  // the noise's mean absolute value
  EXPECT_LT(cv->mae, cv->baseline_mae / 2);
  EXPECT_GE(cv->rmse, cv->mae);
  EXPECT_FALSE(CrossValidateFit(samples, 1).ok());
}

}  // namespace
}  // namespace dlsched::sharing
