#include "dlsched/model/cluster_state.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched {
namespace {

Placement On(int node, GpuMask gpus) { return Placement{{NodeGpus{NodeId(node), gpus}}}; }

TEST(ClusterStateOfflineTest, WithholdsFreeGpusAndThoseReleasedLater) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  ClusterState state(cluster);
  state.Allocate(On(1, 0b0011));
  state.SetOffline(NodeId(1));
  EXPECT_TRUE(state.offline(NodeId(1)));
  EXPECT_EQ(state.free_mask(NodeId(1)), 0u);
  EXPECT_EQ(state.free_total(), 4);
  EXPECT_EQ(state.offline_total(), 2);
  EXPECT_EQ(state.allocated_total(), 2);
  EXPECT_FALSE(state.IsFree(On(1, 0b0100)));

  // The running job ends: its GPUs stay out of the pool.
  state.Release(On(1, 0b0011));
  EXPECT_EQ(state.free_mask(NodeId(1)), 0u);
  EXPECT_EQ(state.offline_total(), 4);
  EXPECT_EQ(state.allocated_total(), 0);
  EXPECT_EQ(state.free_of_type(cluster.FindGpuType("V100")), 4);

  state.SetOffline(NodeId(1));  // idempotent
  EXPECT_EQ(state.offline_total(), 4);
  state.SetOnline(NodeId(1));
  EXPECT_FALSE(state.offline(NodeId(1)));
  EXPECT_EQ(state.free_mask(NodeId(1)), 0b1111u);
  EXPECT_EQ(state.free_total(), 8);
  EXPECT_EQ(state.offline_total(), 0);
  EXPECT_EQ(state.free_of_type(cluster.FindGpuType("V100")), 8);
  state.SetOnline(NodeId(1));  // idempotent
  EXPECT_EQ(state.free_total(), 8);
}

TEST(ClusterStateOfflineTest, AJobStillRunningOnANodeBackOnlineKeepsItsGpus) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  ClusterState state(cluster);
  state.Allocate(On(0, 0b0001));
  state.SetOffline(NodeId(0));
  state.SetOnline(NodeId(0));
  EXPECT_EQ(state.free_mask(NodeId(0)), 0b1110u);
  EXPECT_EQ(state.allocated_total(), 1);
  state.Release(On(0, 0b0001));
  EXPECT_EQ(state.free_total(), 4);
}

}  // namespace
}  // namespace dlsched
