#include "sim/cpu_sensitivity.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "io/cluster_spec.h"

namespace dlsched::sim {
namespace {

// A base model that runs every job at 10 iterations per second.
class FixedRate final : public ThroughputModel {
 public:
  double ItersPerSecond(const JobSpec&, const Cluster&, const Placement&) const override {
    return 10;
  }
};

TEST(CpuSensitivityTest, TableIsAMixWithDistinctModels) {
  double weights = 0;
  std::set<std::string_view> names;
  for (const DataLoadingModel& m : DataLoadingModels()) {
    EXPECT_GT(m.saturating_cpus_per_gpu, 0) << m.model;
    EXPECT_GE(m.mix_weight, 0) << m.model;
    weights += m.mix_weight;
    EXPECT_TRUE(names.insert(m.model).second) << m.model;
  }
  EXPECT_NEAR(weights, 1.0, 1e-9);
  EXPECT_EQ(SaturatingCpusPerGpu("alexnet"), 12);
  EXPECT_EQ(SaturatingCpusPerGpu("gnmt"), 1);
  EXPECT_EQ(SaturatingCpusPerGpu("ResNet-18"), std::nullopt);  // a Gavel name: not modelled
}

TEST(CpuSensitivityTest, SpeedRisesWithCoresUntilItSaturates) {
  EXPECT_DOUBLE_EQ(CpuSpeedFactor(8, 2), 0.25);
  EXPECT_DOUBLE_EQ(CpuSpeedFactor(8, 6), 0.75);
  EXPECT_DOUBLE_EQ(CpuSpeedFactor(8, 8), 1);
  EXPECT_DOUBLE_EQ(CpuSpeedFactor(8, 24), 1);
  EXPECT_DOUBLE_EQ(CpuSpeedFactor(1, 1), 1);
}

TEST(CpuSensitivityTest, TheSlowestPartHoldsTheGangBack) {
  const Result<Cluster> cluster = ParseClusterSpec("2x8xV100:48c", "");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const CpuSensitiveThroughputModel model(std::make_unique<FixedRate>());
  JobSpec spec;
  spec.model = "resnet18";  // saturates at 8 cores per GPU
  spec.num_gpus = 4;
  struct Case {
    const char* name;
    Placement placement;
    double want;
  };
  const Case cases[] = {
      {"3 cores per GPU", {{{NodeId(0), LowestGpus(4), 12, 0}}}, 10 * 3.0 / 8},
      {"8 cores per GPU", {{{NodeId(0), LowestGpus(4), 32, 0}}}, 10},
      {"2 + 2 GPUs, 16 and 4 cores",
       {{{NodeId(0), LowestGpus(2), 16, 0}, {NodeId(1), LowestGpus(2), 4, 0}}},
       10 * 2.0 / 8},
      {"no cores held: not modelled", {{{NodeId(0), LowestGpus(4), 0, 0}}}, 10},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(model.ItersPerSecond(spec, *cluster, c.placement), c.want);
  }
  JobSpec unknown = spec;
  unknown.model = "ResNet-18";
  EXPECT_DOUBLE_EQ(model.ItersPerSecond(unknown, *cluster, cases[0].placement), 10);
  JobSpec language = spec;
  language.model = "gnmt";
  EXPECT_DOUBLE_EQ(model.ItersPerSecond(language, *cluster, cases[0].placement), 10);
}

}  // namespace
}  // namespace dlsched::sim
