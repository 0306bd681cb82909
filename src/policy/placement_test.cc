#include "dlsched/policy/placement.h"

#include <gtest/gtest.h>

#include "plugins/score/pack.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using testing::MakeCluster;
using testing::MakeJob;

// A context over a state, with nothing queued or running.
struct World {
  explicit World(const std::string& spec, int nodes_per_rack = 8)
      : cluster(MakeCluster(spec, nodes_per_rack)),
        state(cluster),
        queue(jobs, nullptr),
        running(jobs, nullptr) {}
  SchedulingContext Context() {
    return SchedulingContext{kTimeZero, cluster, state, jobs, queue, {}, running, model, rng};
  }
  Cluster cluster;
  ClusterState state;
  JobTable jobs;
  JobQueue queue;
  RunningIndex running;
  SimpleThroughputModel model;
  Rng rng;
};

Placement OnNode(uint32_t node, GpuMask gpus) { return Placement{{{NodeId(node), gpus}}}; }

TEST(PickGpusTest, PrefersOneInterconnectGroup) {
  const Cluster cluster = MakeCluster("1x8xV100");  // groups {0-3}, {4-7}
  const NodeSpec& node = cluster.node(NodeId(0));
  // GPUs 1,2 (group 0) and 4,5,6 (group 1) free: 3 GPUs fit in group 1 only.
  EXPECT_EQ(PickGpus(node, 0b0111'0110, 3), 0b0111'0000u);
  // 2 GPUs: group 0 has exactly 2 free, the tighter fit.
  EXPECT_EQ(PickGpus(node, 0b0111'0110, 2), 0b0000'0110u);
  // 5 GPUs span both groups.
  EXPECT_EQ(CountGpus(PickGpus(node, 0b0111'0110, 5)), 5);
}

TEST(PlacerTest, BestFitSingleNodeWithConsolidate) {
  World w("3x4xV100");
  w.state.Allocate(OnNode(0, 0b0011));  // node 0: 2 free
  w.state.Allocate(OnNode(1, 0b0001));  // node 1: 3 free; node 2: 4 free
  ConsolidateScore consolidate;
  const std::vector<WeightedScore> scores = {{&consolidate, 1.0}};
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, scores);
  const Job job = MakeJob(1).Gpus(2).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, OnNode(0, 0b1100));
}

TEST(PlacerTest, GangSpansNodesInOneRackBeforeCrossingRacks) {
  // Racks of 2 nodes x 4 GPUs. Rack 0 has 5 free, rack 1 has 8 free: a 5-GPU gang takes rack 0.
  World w("4x4xV100", /*nodes_per_rack=*/2);
  w.state.Allocate(OnNode(0, 0b0111));
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(5).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  ASSERT_EQ(placement->num_nodes(), 2);
  EXPECT_EQ(placement->parts[0].node, NodeId(0));
  EXPECT_EQ(placement->parts[1].node, NodeId(1));
  EXPECT_EQ(placement->num_gpus(), 5);
}

TEST(PlacerTest, AcrossRacksWhenNoRackHoldsTheGang) {
  World w("4x4xV100", /*nodes_per_rack=*/2);
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(12).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->num_nodes(), 3);
  EXPECT_EQ(SpreadOf(w.cluster, *placement).racks, 2);
}

TEST(PlacerTest, NeverMixesGpuTypesAndHonoursTheRequiredType) {
  World w("1x4xK80+1x4xV100");
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job mixed = MakeJob(1).Gpus(6).Build();
  EXPECT_FALSE(placer.Find(JobView(mixed, kTimeZero), w.state).has_value());
  const Job typed = MakeJob(2).Gpus(2).GpuType("V100").Build();
  auto placement = placer.Find(JobView(typed, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->parts[0].node, NodeId(1));
}

TEST(PlacerTest, NothingWhenTooFewGpusAreFree) {
  World w("2x4xV100");
  w.state.Allocate(OnNode(0, 0b1111));
  w.state.Allocate(OnNode(1, 0b0111));
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(2).Build();
  EXPECT_FALSE(placer.Find(JobView(job, kTimeZero), w.state).has_value());
}

TEST(ClusterStateTest, DualViewsStayInStep) {
  const Cluster cluster = MakeCluster("1x4xK80+2x4xV100");
  ClusterState state(cluster);
  EXPECT_EQ(state.free_total(), 12);
  const Placement p{{{NodeId(0), 0b0011}, {NodeId(2), 0b1000}}};
  state.Allocate(p);
  EXPECT_EQ(state.free_total(), 9);
  EXPECT_EQ(state.free_of_type(cluster.FindGpuType("K80")), 2);
  EXPECT_EQ(state.free_of_type(cluster.FindGpuType("V100")), 7);
  EXPECT_FALSE(state.IsFree(p));
  state.Release(p);
  EXPECT_EQ(state.free_total(), 12);
  EXPECT_TRUE(state.IsFree(p));
}

}  // namespace
}  // namespace dlsched
