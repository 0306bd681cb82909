#include "dlsched/perf/noisy_throughput_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "support/builders.h"

namespace dlsched {
namespace {

using testing::MakeCluster;
using testing::MakeJob;

Placement On(NodeId node, GpuMask gpus) { return Placement{{NodeGpus{node, gpus}}}; }

TEST(NoisyThroughputModelTest, ErrsPerJobAndTypeDeterministically) {
  const Cluster cluster = MakeCluster("2x4xV100+1x4xA100");
  const auto base = std::make_shared<const SimpleThroughputModel>();
  const NoisyThroughputModel noisy(base, 0.12, 7);
  JobSpec a = MakeJob(1).Gpus(2).Spec();
  a.name = "a";
  JobSpec b = a;
  b.name = "b";
  const Placement v100 = On(NodeId(0), 0b11);
  const Placement a100 = On(NodeId(2), 0b11);
  const double ra = noisy.ItersPerSecond(a, cluster, v100);
  // Not the base model, but the same answer every time and for another V100 node.
  EXPECT_NE(ra, base->ItersPerSecond(a, cluster, v100));
  EXPECT_EQ(ra, noisy.ItersPerSecond(a, cluster, v100));
  EXPECT_EQ(ra, noisy.ItersPerSecond(a, cluster, On(NodeId(1), 0b1100)));
  EXPECT_EQ(ra, base->ItersPerSecond(a, cluster, v100) * noisy.Factor(a, "V100"));
  // Another job, another type, another seed: other errors.
  EXPECT_NE(noisy.Factor(a, "V100"), noisy.Factor(b, "V100"));
  EXPECT_NE(noisy.Factor(a, "V100"), noisy.Factor(a, "A100"));
  EXPECT_NE(noisy.Factor(a, "V100"), NoisyThroughputModel(base, 0.12, 8).Factor(a, "V100"));
  EXPECT_EQ(noisy.ItersPerSecond(a, cluster, a100),
            base->ItersPerSecond(a, cluster, a100) * noisy.Factor(a, "A100"));
  // A gang over both types takes the smaller error.
  const Placement mixed{{NodeGpus{NodeId(0), 0b1}, NodeGpus{NodeId(2), 0b1}}};
  EXPECT_DOUBLE_EQ(noisy.ItersPerSecond(a, cluster, mixed),
                   base->ItersPerSecond(a, cluster, mixed) *
                       std::min(noisy.Factor(a, "V100"), noisy.Factor(a, "A100")));
}

TEST(NoisyThroughputModelTest, ErrorsHaveTheirSigma) {
  const auto base = std::make_shared<const SimpleThroughputModel>();
  const NoisyThroughputModel noisy(base, 0.12, 1);
  double sum = 0, sum_sq = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    JobSpec spec = MakeJob(1).Spec();
    spec.name = "job" + std::to_string(i);
    const double log_f = std::log(noisy.Factor(spec, "V100"));
    sum += log_f;
    sum_sq += log_f * log_f;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 0.12, 0.01);
}

TEST(NoisyThroughputModelTest, ZeroSigmaIsTheBase) {
  const Cluster cluster = MakeCluster("1x4xV100");
  const auto base = std::make_shared<const SimpleThroughputModel>();
  const NoisyThroughputModel exact(base, 0, 1);
  const JobSpec spec = MakeJob(1).Spec();
  EXPECT_EQ(exact.ItersPerSecond(spec, cluster, On(NodeId(0), 0b1)),
            base->ItersPerSecond(spec, cluster, On(NodeId(0), 0b1)));
}

}  // namespace
}  // namespace dlsched
