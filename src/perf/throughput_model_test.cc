#include "dlsched/perf/throughput_model.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched {
namespace {

using testing::MakeCluster;
using testing::MakeJob;

TEST(SimpleThroughputModelTest, FlatIgnoresTypeAndSpread) {
  // Two racks of two nodes: node 0 and 1 hold K80s, nodes 2 and 3 V100s.
  const Cluster cluster = MakeCluster("2x4xK80+2x4xV100", /*nodes_per_rack=*/2);
  JobSpec spec = MakeJob(1).Gpus(4).Spec();
  spec.ref_iters_per_s = 2.5;
  const Placement one_node{{NodeGpus{NodeId(0), 0b1111}}};
  const Placement two_racks{{NodeGpus{NodeId(1), 0b11}, NodeGpus{NodeId(2), 0b11}}};
  const SimpleThroughputModel flat(SimpleThroughputModel::FlatOptions());
  EXPECT_EQ(flat.ItersPerSecond(spec, cluster, one_node), 2.5);
  EXPECT_EQ(flat.ItersPerSecond(spec, cluster, two_racks), 2.5);
  // The built-in model slows both: K80s, and a gang over nodes and racks.
  const SimpleThroughputModel builtin;
  EXPECT_LT(builtin.ItersPerSecond(spec, cluster, one_node), 2.5);
  EXPECT_LT(builtin.ItersPerSecond(spec, cluster, two_racks),
            builtin.ItersPerSecond(spec, cluster, one_node));
}

}  // namespace
}  // namespace dlsched
