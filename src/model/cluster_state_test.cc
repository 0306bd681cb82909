#include "dlsched/model/cluster_state.h"

#include <gtest/gtest.h>

#include "dlsched/common/rng.h"
#include "support/builders.h"

namespace dlsched {
namespace {

Placement On(int node, GpuMask gpus) { return Placement{{NodeGpus{NodeId(node), gpus}}}; }

// Recounts the aggregate view from the per-GPU detail and compares.
void ExpectViewsAgree(const Cluster& cluster, const ClusterState& state) {
  std::vector<int> per_type(cluster.num_gpu_types(), 0);
  std::vector<int> per_class(cluster.num_label_classes(), 0);
  int total = 0;
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    const NodeId node(static_cast<uint32_t>(i));
    for (GpuMask m = state.free_mask(node); m != 0; m &= m - 1) {
      ++per_type[cluster.node(node).gpus[std::countr_zero(m)].type.index()];
      ++per_class[cluster.node_label_class(node).index()];
      ++total;
    }
  }
  ASSERT_EQ(state.free_total(), total);
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    ASSERT_EQ(state.free_of_type(GpuTypeId(t)), per_type[t]) << "type " << t;
  }
  for (int c = 0; c < cluster.num_label_classes(); ++c) {
    ASSERT_EQ(state.free_of_class(LabelClassId(c)), per_class[c]) << "class " << c;
  }
}

TEST(ClusterStateDualViewTest, AggregateCountsMatchThePerGpuDetailAfterEveryChange) {
  // Two types, two racks of each: four label classes.
  Cluster cluster = testing::MakeCluster("4x8xV100+4x4xK80", 2);
  ASSERT_EQ(cluster.num_label_classes(), 4);
  Rng rng(7);
  ClusterState state(cluster);
  std::vector<Placement> held;
  for (int step = 0; step < 5000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const NodeId node(static_cast<uint32_t>(rng.Below(cluster.num_nodes())));
    switch (rng.Below(4)) {
      case 0:
      case 1:
        if (GpuMask free = state.free_mask(node); free != 0) {
          for (uint64_t skip = rng.Below(CountGpus(free)); skip > 0; --skip) free &= free - 1;
          const Placement p = On(static_cast<int>(node.index()), free & -free);  // one free GPU
          state.Allocate(p);
          held.push_back(p);
        }
        break;
      case 2:
        if (!held.empty()) {
          const size_t i = rng.Below(held.size());
          state.Release(held[i]);
          held.erase(held.begin() + static_cast<ptrdiff_t>(i));
        }
        break;
      default:
        if (state.offline(node)) {
          state.SetOnline(node);
        } else {
          state.SetOffline(node);
        }
    }
    ExpectViewsAgree(cluster, state);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

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
