#include "dlsched/sharing/demand.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace dlsched::sharing {
namespace {

DemandProfile Profile(int64_t peak, int64_t mean, double noise_cv = 0.0) {
  DemandProfile p;
  p.peak_memory_mib = peak;
  p.mean_memory_mib = mean;
  p.peak_sm = 0.9;
  p.mean_sm = 0.6;
  p.period = Seconds(0.8);  // 8 slices of 100 ms
  p.noise_cv = noise_cv;
  return p;
}

TEST(DemandProfileTest, ValidateNamesTheProblem) {
  struct Case {
    std::string name;
    DemandProfile profile;
    std::string want;  // empty = valid
  };
  std::vector<Case> cases = {{"valid", Profile(1000, 800), ""},
                             {"mean above peak", Profile(1000, 1200), "mean_memory_mib exceeds"},
                             {"mean too low for shape", Profile(1000, 100), "mean below peak"},
                             {"negative", Profile(-1, -1), "memory must be >= 0"}};
  cases.push_back({"sm above 1", Profile(1000, 800), "[0, 1]"});
  cases.back().profile.peak_sm = 1.5;
  cases.push_back({"shape without a 1", Profile(1000, 800), "largest shape level"});
  cases.back().profile.shape = {0.2, 0.5};
  cases.push_back({"period too short", Profile(1000, 800), "period"});
  cases.back().profile.period = Duration(3);
  cases.push_back({"noise too large", Profile(1000, 800, 0.5), "noise_cv"});
  cases.push_back({"flat shape, mean = peak", Profile(1000, 1000), ""});
  cases.back().profile.shape = {1.0};
  cases.back().profile.mean_sm = 0.9;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Status s = c.profile.Validate();
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
    }
  }
}

TEST(DemandProfileTest, NominalReachesPeakAndAveragesToMean) {
  const DemandProfile p = Profile(1000, 800);
  ASSERT_TRUE(p.Validate().ok());
  int64_t max_mib = 0;
  double sum_mib = 0.0;
  double sum_sm = 0.0;
  for (size_t s = 0; s < p.shape.size(); ++s) {
    max_mib = std::max(max_mib, p.Nominal(s).memory_mib);
    sum_mib += static_cast<double>(p.Nominal(s).memory_mib);
    sum_sm += p.Nominal(s).sm;
  }
  EXPECT_EQ(max_mib, 1000);
  EXPECT_NEAR(sum_mib / 8, 800.0, 1.0);  // rounding of each slice
  EXPECT_NEAR(sum_sm / 8, 0.6, 1e-9);
  EXPECT_NEAR(p.Nominal(0).memory_mib, p.floor_memory_mib(), 0.5);
  EXPECT_NEAR(p.floor_memory_mib(), (800 - 1000 * 0.4625) / (1 - 0.4625), 1e-6);
}

TEST(DemandProfileTest, MeasuredAndFractionalProfilesAreValid) {
  for (double util : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    SCOPED_TRACE(util);
    EXPECT_TRUE(ProfileFromMeasurement(4096, util, Seconds(1), 0.05).Validate().ok());
    EXPECT_TRUE(ProfileFromGpuFraction(util, 16384, Seconds(1), 0.05).Validate().ok());
  }
  const DemandProfile half = ProfileFromGpuFraction(0.5, 16384, Seconds(1), 0.0);
  EXPECT_EQ(half.peak_memory_mib, 8192);
  EXPECT_DOUBLE_EQ(half.mean_sm, 0.5);
}

TEST(DemandSamplerTest, NoiseFreeSamplerRepeatsTheProfile) {
  const DemandSampler sampler(Profile(1000, 800), 7);
  EXPECT_EQ(sampler.slice(), Seconds(0.1));
  for (int s = 0; s < 8; ++s) {
    SCOPED_TRACE(s);
    const DemandSample want = sampler.profile().Nominal(static_cast<size_t>(s));
    EXPECT_EQ(sampler.At(Seconds(0.1) * s + Seconds(0.05)), want);
    EXPECT_EQ(sampler.At(Seconds(0.8) * 1000 + Seconds(0.1) * s), want);
  }
  EXPECT_EQ(sampler.MaxMemoryMib(Duration(0), Seconds(0.8)), 1000);
  EXPECT_EQ(sampler.MaxMemoryMib(Duration(0), Seconds(0.3)), sampler.At(Seconds(0.2)).memory_mib);
  EXPECT_EQ(sampler.MemoryBoundMib(), 1000);
}

TEST(DemandSamplerTest, SeededNoiseIsDeterministicAndBounded) {
  const DemandProfile p = Profile(1000, 800, 0.1);
  const DemandSampler a(p, 42);
  const DemandSampler b(p, 42);
  const DemandSampler c(p, 43);
  // Same seed: same samples, whatever the order of the calls.
  std::vector<DemandSample> forward;
  for (int i = 0; i < 200; ++i) forward.push_back(a.At(Seconds(0.1) * i));
  int differ = 0;
  for (int i = 199; i >= 0; --i) {
    EXPECT_EQ(b.At(Seconds(0.1) * i), forward[static_cast<size_t>(i)]);
    if (!(c.At(Seconds(0.1) * i) == forward[static_cast<size_t>(i)])) ++differ;
  }
  EXPECT_GT(differ, 150);
  EXPECT_EQ(a.MemoryBoundMib(), 1300);
  for (const DemandSample& s : forward) {
    EXPECT_LE(s.memory_mib, a.MemoryBoundMib());
    EXPECT_GE(s.sm, 0.0);
    EXPECT_LE(s.sm, 1.0);
  }
}

TEST(DemandHistoryTest, NearestRankPercentiles) {
  DemandHistory history(1000);
  EXPECT_FALSE(history.MemoryPercentileMib(50).has_value());
  EXPECT_FALSE(history.MeanSm().has_value());
  // 1..100 in a scrambled order.
  for (int i = 0; i < 100; ++i) {
    const int v = (i * 37) % 100 + 1;
    history.Add({v, v / 100.0});
  }
  struct Case {
    double p;
    int64_t want;
  };
  for (const Case c :
       {Case{0, 1}, Case{1, 1}, Case{50, 50}, Case{95, 95}, Case{99.5, 100}, Case{100, 100}}) {
    SCOPED_TRACE(c.p);
    EXPECT_EQ(history.MemoryPercentileMib(c.p), c.want);
    EXPECT_NEAR(*history.SmPercentile(c.p), c.want / 100.0, 1e-12);
  }
  EXPECT_EQ(history.PeakMemoryMib(), 100);
  EXPECT_NEAR(*history.MeanSm(), 0.505, 1e-12);
}

TEST(DemandHistoryTest, KeepsOnlyTheLastSamples) {
  DemandHistory history(3);
  for (int v : {100, 1, 2, 3}) history.Add({v, 0.0});
  EXPECT_EQ(history.size(), 3u);
  EXPECT_EQ(history.PeakMemoryMib(), 3);  // 100 dropped
  history.Add({4, 0.0});
  EXPECT_EQ(history.MemoryPercentileMib(0), 2);
}

TEST(FindOomTest, PeaksInPhaseOverflowPeaksOutOfPhaseFit) {
  // Two jobs of peak 1000 MiB and floor ~628 MiB on a 1800 MiB GPU: their sum of peaks does not
  // fit, but with the peaks half a period apart the demands fit at every instant.
  const DemandSampler a(Profile(1000, 800), 1);
  const DemandSampler b(Profile(1000, 800), 2);
  const Timestamp t0 = AtSeconds(10);
  {
    const std::vector<SharedJobDemand> jobs = {{&a, t0}, {&b, t0}};
    const std::optional<Oom> oom = FindOom(jobs, 1800, t0, t0 + Seconds(5));
    ASSERT_TRUE(oom.has_value());
    // Slice 2 (level 0.7): 2 x 889 = 1778 fits; slice 3 (the peak) does not.
    EXPECT_EQ(oom->at, t0 + Seconds(0.3));
    EXPECT_EQ(oom->victim, 1u);  // same demand: the later job
    EXPECT_EQ(oom->total_memory_mib, 2000);
  }
  {
    const std::vector<SharedJobDemand> jobs = {{&a, t0}, {&b, t0 - Seconds(0.4)}};
    EXPECT_FALSE(FindOom(jobs, 1800, t0, t0 + Seconds(100)).has_value());
  }
  {
    // Bounds fit: no walk at all.
    const std::vector<SharedJobDemand> jobs = {{&a, t0}, {&b, t0}};
    EXPECT_FALSE(FindOom(jobs, 2000, t0, t0 + Hours(100)).has_value());
  }
}

TEST(FindOomTest, OverflowAtTheStartKillsTheLargest) {
  DemandProfile big = Profile(1500, 1500);
  big.shape = {1.0};
  big.mean_sm = 0.9;
  const DemandSampler a(big, 1);
  const DemandSampler b(Profile(1000, 800), 2);
  const std::vector<SharedJobDemand> jobs = {{&a, AtSeconds(0)}, {&b, AtSeconds(0)}};
  const std::optional<Oom> oom = FindOom(jobs, 2000, AtSeconds(1), AtSeconds(2));
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->at, AtSeconds(1));
  EXPECT_EQ(oom->victim, 0u);
}

TEST(EmpiricalDistributionTest, PercentilesAndSeededDraws) {
  EXPECT_FALSE(EmpiricalDistribution::FromSamples({}).ok());
  EXPECT_FALSE(EmpiricalDistribution::FromSamples({1.0, NAN}).ok());
  Result<EmpiricalDistribution> d = EmpiricalDistribution::FromSamples({500, 100, 250, 1000});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->Percentile(0), 100);
  EXPECT_EQ(d->Percentile(50), 250);
  EXPECT_EQ(d->Percentile(100), 1000);
  Rng r1(5);
  Rng r2(5);
  for (int i = 0; i < 20; ++i) {
    const double v = d->Sample(r1);
    EXPECT_EQ(v, d->Sample(r2));
    EXPECT_TRUE(v == 100 || v == 250 || v == 500 || v == 1000);
  }
}

}  // namespace
}  // namespace dlsched::sharing
