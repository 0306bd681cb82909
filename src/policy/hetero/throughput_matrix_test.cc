#include "policy/hetero/throughput_matrix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/builders.h"

namespace dlsched::hetero {
namespace {

using ::testing::ElementsAre;
using testing::MakeCluster;
using testing::MakeJob;

TEST(ConsolidatedPlacementsTest, UsesTheFewestNodesOfTheType) {
  const Cluster cluster = MakeCluster("2x4xK80+1x2xV100+2x8xV100");
  const ConsolidatedPlacements placements(cluster);
  const GpuTypeId k80 = cluster.FindGpuType("K80");
  const GpuTypeId v100 = cluster.FindGpuType("V100");
  std::optional<Placement> p = placements.Of(k80, 6);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->num_nodes(), 2);
  EXPECT_EQ(p->num_gpus(), 6);
  p = placements.Of(v100, 8);  // one 8-GPU node, not the 2-GPU one
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->num_nodes(), 1);
  EXPECT_EQ(cluster.node(p->parts[0].node).gpus.size(), 8u);
  EXPECT_FALSE(placements.Of(k80, 9).has_value());
}

TEST(FillThroughputRowTest, AsksTheEstimatorAndZeroesTypesTheJobCannotUse) {
  const Cluster cluster = MakeCluster("1x4xK80+1x2xV100");
  const ConsolidatedPlacements placements(cluster);
  const SimpleThroughputModel model;  // K80 0.2, V100 1.0 of the reference (V100) rate
  struct Case {
    std::string name;
    Job job;
    std::vector<double> want;  // K80, V100
  };
  Job failed = MakeJob(3).Build();
  failed.failed_gpu_types.push_back(cluster.FindGpuType("K80"));
  const std::vector<Case> cases = {
      {"fits both", MakeJob(0).Build(), {0.2, 1.0}},
      {"too big for V100", MakeJob(1).Gpus(4).Build(), {0.2, 0}},
      {"requires V100", MakeJob(2).GpuType("V100").Build(), {0, 1.0}},
      {"failed on K80", failed, {0, 1.0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<double> row(2, -1);
    FillThroughputRow(c.job, cluster, placements, model, row);
    ASSERT_EQ(row.size(), c.want.size());
    for (size_t t = 0; t < row.size(); ++t) EXPECT_NEAR(row[t], c.want[t], 1e-9) << t;
  }
}

TEST(MakeTypeBlindTest, EveryUsableTypeLooksLikeTheFastest) {
  std::vector<double> row = {0.2, 0, 1.5};
  MakeTypeBlind(row);
  EXPECT_THAT(row, ElementsAre(1.5, 0, 1.5));
}

}  // namespace
}  // namespace dlsched::hetero
