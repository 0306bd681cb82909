#include "dlsched/policy/placement.h"

#include <gtest/gtest.h>

#include "plugins/score/pack.h"
#include "support/builders.h"
#include "support/world.h"

namespace dlsched {
namespace {

using testing::MakeCluster;
using testing::MakeJob;

using testing::World;

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

TEST(PlacerTest, OnlyNodesMatchingTheSelectorAreEligible) {
  // Node 1 has NVLink; node 0 is emptier and would win on consolidation alone.
  World w("3x4xV100", 8, {"", "nvlink=true", "nvlink=true"});
  w.state.Allocate(OnNode(1, 0b0001));
  ConsolidateScore consolidate;
  const std::vector<WeightedScore> scores = {{&consolidate, 1.0}};
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, scores);
  const Job job = MakeJob(1).Gpus(2).Selector("nvlink=true").Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->parts[0].node, NodeId(1));
  // A gang larger than the matching nodes' free GPUs waits, though 11 GPUs are free.
  const Job wide = MakeJob(2).Gpus(8).Selector("nvlink=true").Build();
  EXPECT_FALSE(placer.Find(JobView(wide, kTimeZero), w.state).has_value());
  EXPECT_EQ(placer.EligibleFree(JobView(wide, kTimeZero), w.state), 7);
  // The built-in labels select too: gpu= and rack= are on every node.
  const Job by_rack = MakeJob(3).Gpus(1).Selector("rack=r0;gpu=V100").Build();
  EXPECT_TRUE(placer.Find(JobView(by_rack, kTimeZero), w.state).has_value());
  const Job nowhere = MakeJob(4).Gpus(1).Selector("gpu=A100").Build();
  EXPECT_FALSE(placer.Find(JobView(nowhere, kTimeZero), w.state).has_value());
}

TEST(PlacerTest, PreferredLabelsWinOverScoresButDoNotBlock) {
  World w("3x4xV100", 8, {"", "", "zone=b"});
  ConsolidateScore consolidate;
  const std::vector<WeightedScore> scores = {{&consolidate, 1.0}};
  w.state.Allocate(OnNode(0, 0b0011));  // node 0 is the tighter fit for 2 GPUs
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, scores);
  const Job job = MakeJob(1).Gpus(2).Prefer("zone=b").Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->parts[0].node, NodeId(2));
  // With node 2 full the preference yields: the job runs elsewhere instead of waiting.
  w.state.Allocate(OnNode(2, 0b1111));
  placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->parts[0].node, NodeId(0));
}

TEST(PlacerTest, PreferOneGroupChoosesANodeWhereOneNvlinkIslandHoldsTheGang) {
  // 8-GPU nodes, islands {0-3} and {4-7}. Node 0 has 5 free split 3+2 (the tighter fit), node 1
  // has all 8 free: a 3-GPU gang fits one island on both, a 4-GPU gang only on node 1.
  World w("2x8xV100");
  w.state.Allocate(OnNode(0, 0b1100'1000));
  ConsolidateScore consolidate;
  const std::vector<WeightedScore> scores = {{&consolidate, 1.0}};
  const SchedulingContext ctx = w.Context();
  const Job job = MakeJob(1).Gpus(4).Build();
  Placer unaware(ctx, {}, scores);
  EXPECT_EQ(unaware.Find(JobView(job, kTimeZero), w.state)->parts[0].node, NodeId(0));
  Placer aware(ctx, {}, scores, PlacementOptions{.prefer_one_group = true});
  auto placement = aware.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, OnNode(1, 0b0000'1111));
  const Job three = MakeJob(2).Gpus(3).Build();
  EXPECT_EQ(aware.Find(JobView(three, kTimeZero), w.state)->parts[0].node, NodeId(0));
}

TEST(PlacerTest, AConsolidationSensitiveGangWaitsRatherThanSpreadUntilRelaxed) {
  // Two 4-GPU nodes with 2 free each: a 4-GPU gang fits only spread over both. The built-in
  // estimator puts a spread gang at 85% of its consolidated speed.
  World w("2x4xV100");
  w.state.Allocate(OnNode(0, 0b0011));
  w.state.Allocate(OnNode(1, 0b0011));
  const SchedulingContext ctx = w.Context();
  const PlacementOptions strict{.min_spread_speed = 0.9, .relax_after = std::chrono::hours(1)};
  Placer placer(ctx, {}, {}, strict);
  Job job = MakeJob(1).Gpus(4).Build();
  job.queued_since = kTimeZero;
  EXPECT_FALSE(placer.Find(JobView(job, kTimeZero + std::chrono::minutes(59)), w.state));
  EXPECT_TRUE(placer.last_held_for_consolidation());
  // After an hour of waiting it takes the spread placement (Tiresias' relaxation).
  auto placement = placer.Find(JobView(job, kTimeZero + std::chrono::hours(1)), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->num_nodes(), 2);
  EXPECT_FALSE(placer.last_held_for_consolidation());
  // A tolerant profile (80%) spreads at once.
  Placer tolerant(ctx, {}, {}, PlacementOptions{.min_spread_speed = 0.8});
  EXPECT_TRUE(tolerant.Find(JobView(job, kTimeZero), w.state).has_value());
}

// Counts the nodes the placer asks about.
class CountingFilter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "counting"; }
  Fit FilterNode(const JobView&, NodeId, const SchedulingContext&) const override {
    ++calls;
    return Fit::Yes();
  }
  mutable int calls = 0;
};

// Frees `gpus` on `node` in `state`, noting the node in `freed` as the victim walk does.
void FreeOn(ClusterState& state, uint32_t node, GpuMask gpus, std::vector<Placer::Freed>& freed) {
  freed.push_back({NodeId(node), state.free_gpus(NodeId(node))});
  state.Release(OnNode(node, gpus));
}

TEST(PlacerTest, FindAfterFreeingAnswersAsFindAndLooksOnlyAtTheFreedNodesWhileHeld) {
  // Two racks of four 4-GPU nodes, one GPU free on each: a 4-GPU gang fits only spread over
  // rack 0's nodes (both racks hold it; ties to the lower), which min_spread_speed 0.9 refuses.
  World w("8x4xV100", /*nodes_per_rack=*/4);
  for (uint32_t n = 0; n < 8; ++n) w.state.Allocate(OnNode(n, 0b1110));
  const SchedulingContext ctx = w.Context();
  CountingFilter counting;
  const std::vector<const FilterPlugin*> filters = {&counting};
  const PlacementOptions strict{.min_spread_speed = 0.9};
  Placer placer(ctx, filters, {}, strict);
  Placer fresh(ctx, filters, {}, strict);
  const Job job = MakeJob(1).Gpus(4).Build();
  const JobView view(job, kTimeZero);
  EXPECT_FALSE(placer.Find(view, w.state));
  ASSERT_TRUE(placer.last_held_for_consolidation());
  std::vector<Placer::Freed> freed;
  // Frees `gpus` on `node`, asks again; the same answer as a fresh Find. Returns the nodes the
  // placer asked the filter about.
  const auto step = [&](uint32_t node, GpuMask gpus) {
    FreeOn(w.state, node, gpus, freed);
    counting.calls = 0;
    const std::optional<Placement> after = placer.FindAfterFreeing(view, w.state, freed);
    const int asked = counting.calls;
    freed.clear();
    EXPECT_EQ(after, fresh.Find(view, w.state)) << "after freeing on node " << node;
    EXPECT_EQ(placer.last_held_for_consolidation(), fresh.last_held_for_consolidation());
    return asked;
  };
  // Rack 1 to 5 free: rack 0 (4) still chosen, its spread unchanged; only node 5 is asked.
  EXPECT_EQ(step(5, 0b0010), 1);
  EXPECT_TRUE(placer.last_held_for_consolidation());
  // Node 0, one of the spread's nodes, to 2 free: the spread changes, a whole Find.
  EXPECT_GT(step(0, 0b0010), 1);
  EXPECT_TRUE(placer.last_held_for_consolidation());
  // Rack 1 to 6 free, rack 0 (5) still chosen: only node 4 is asked.
  EXPECT_EQ(step(4, 0b0010), 1);
  // Rack 0 to 7 free: rack 1 (6) is chosen now, a whole Find.
  EXPECT_GT(step(3, 0b0110), 1);
  // Node 7 to 4 free: a one-node fit, which a whole Find finds (its one-node tier asks node 7).
  step(7, 0b1110);
  EXPECT_FALSE(placer.last_held_for_consolidation());
  EXPECT_EQ(fresh.Find(view, w.state), OnNode(7, 0b1111));
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

// Multi-resource placement. Nodes 0-1: 4 V100, 16 CPUs, 64 GiB; node 2: 4 V100, stating nothing;
// nodes 3-4: CPU-only, 32 CPUs, 128 GiB.
constexpr char kHostCluster[] = "2x4xV100:16c:65536m+1x4xV100+2x0xcpu:32c:131072m";

TEST(PlacerHostTest, ANodeQualifiesOnlyWithTheCpusAndMemoryForThePart) {
  World w(kHostCluster);
  w.state.Allocate(Placement{{{NodeId(0), 0b0011, 12, 0}}});  // node 0: 2 GPUs, 4 CPUs free
  ConsolidateScore consolidate;
  const std::vector<WeightedScore> scores = {{&consolidate, 1.0}};
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, scores);
  // Best fit would take node 0, but its CPUs are short: node 1 (which states them) it is.
  const Job job = MakeJob(1).Gpus(2).Host(8, 1024).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(1), 0b0011, 8, 1024}}}));
  EXPECT_TRUE(placer.last_limited_by_host());
  // Short of memory on nodes 0-1, it goes to node 2, which states none: its part holds none.
  const Job big = MakeJob(2).Gpus(2).Host(2, 70000).Build();
  placement = placer.Find(JobView(big, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(2), 0b0011, 0, 0}}}));
}

TEST(PlacerHostTest, AGangsPartsTakeSharesInProportionToTheirGpus) {
  World w("3x4xV100:16c:65536m", /*nodes_per_rack=*/3);
  // Node 0 has 4 GPUs but only 4 CPUs free: it carries 1 GPU of a 8-GPU gang asking 32 CPUs.
  w.state.Allocate(Placement{{{NodeId(0), 0, 12, 0}}});
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(8).Host(32, 8192).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement,
            (Placement{{{NodeId(1), 0b1111, 16, 4096}, {NodeId(2), 0b1111, 16, 4096}}}));
  // 9 GPUs: nodes 1 and 2 carry 4 each (15 CPUs = ceil(32 * 4 / 9)), node 0 one (4 CPUs).
  const Job wider = MakeJob(2).Gpus(9).Host(32, 0).Build();
  placement = placer.Find(JobView(wider, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(0), 0b0001, 4, 0},
                                    {NodeId(1), 0b1111, 15, 0},
                                    {NodeId(2), 0b1111, 15, 0}}}));
  // 10 GPUs would need 2 GPUs' share (7 CPUs) on node 0: no placement.
  const Job widest = MakeJob(3).Gpus(10).Host(32, 0).Build();
  EXPECT_FALSE(placer.Find(JobView(widest, kTimeZero), w.state).has_value());
}

TEST(PlacerHostTest, PerGpuDefaultsApplyToJobsThatStateNothing) {
  World w("2x4xV100:16c:65536m");
  w.cluster.set_host_defaults({.cpus_per_gpu = 4, .memory_mib_per_gpu = 8192});
  w.state.Allocate(Placement{{{NodeId(0), 0, 9, 0}}});  // node 0: 7 CPUs free
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(2).Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(1), 0b0011, 8, 16384}}}));
}

TEST(PlacerHostTest, ACpuJobPrefersCpuOnlyNodesThenNodesWithFewerFreeGpus) {
  World w("1x4xV100:16c:65536m+1x4xV100:16c:65536m+1x0xcpu:8c:65536m");
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job small = MakeJob(1).Gpus(0).Host(8, 1024).Build();
  auto placement = placer.Find(JobView(small, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(2), 0, 8, 1024}}}));
  EXPECT_EQ(placement->num_gpus(), 0);
  w.state.Allocate(*placement);
  // The CPU-only node is full: the GPU node with fewer idle GPUs (node 1) takes the next one.
  w.state.Allocate(Placement{{{NodeId(1), 0b0111, 4, 0}}});
  placement = placer.Find(JobView(small, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(*placement, (Placement{{{NodeId(1), 0, 8, 1024}}}));
  // More CPUs than any node has free: it waits.
  const Job large = MakeJob(2).Gpus(0).Host(17).Build();
  EXPECT_FALSE(placer.Find(JobView(large, kTimeZero), w.state).has_value());
}

TEST(PlacerHostTest, ACpuJobNeverRunsOnNodesThatStateNoCpus) {
  World w("2x4xV100");
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(0).Host(1).Build();
  EXPECT_FALSE(placer.Find(JobView(job, kTimeZero), w.state).has_value());
}

TEST(PlacerHostTest, ACpuJobHonoursItsSelector) {
  World w("2x0xcpu:8c", 8, {"zone=a", "zone=b"});
  const SchedulingContext ctx = w.Context();
  Placer placer(ctx, {}, {});
  const Job job = MakeJob(1).Gpus(0).Host(2).Selector("zone=b").Build();
  auto placement = placer.Find(JobView(job, kTimeZero), w.state);
  ASSERT_TRUE(placement.has_value());
  EXPECT_EQ(placement->parts.front().node, NodeId(1));
}

}  // namespace
}  // namespace dlsched
