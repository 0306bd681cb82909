#include "dlsched/model/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

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
  // The free levels: exactly the nodes with at least k free GPUs, in id order.
  for (int k = 1; k <= cluster.max_gpus_per_node() + 1; ++k) {
    std::vector<NodeId> want;
    for (int i = 0; i < cluster.num_nodes(); ++i) {
      if (state.free_gpus(NodeId(i)) >= k) want.push_back(NodeId(i));
    }
    std::vector<NodeId> got;
    state.ForEachNodeWithFree(k, [&](NodeId node) { got.push_back(node); });
    ASSERT_EQ(got, want) << "at least " << k << " free";
  }
  // Host resources: the sums and the free-CPU nodes from the per-node detail, over the nodes
  // that state them.
  std::vector<int64_t> cpus_per_class(cluster.num_label_classes(), 0);
  std::vector<int64_t> memory_per_class(cluster.num_label_classes(), 0);
  int64_t cpus_total = 0;
  std::vector<NodeId> with_free_cpus;
  for (int i = 0; i < cluster.num_nodes(); ++i) {
    const NodeId node(static_cast<uint32_t>(i));
    const NodeSpec& spec = cluster.node(node);
    const size_t c = cluster.node_label_class(node).index();
    if (spec.cpus > 0) {
      ASSERT_GE(state.free_cpus(node), 0) << "node " << i;
      ASSERT_LE(state.free_cpus(node), spec.cpus) << "node " << i;
      cpus_per_class[c] += state.free_cpus(node);
      cpus_total += state.free_cpus(node);
      if (state.free_cpus(node) > 0) with_free_cpus.push_back(node);
    } else {
      ASSERT_EQ(state.free_cpus(node), ClusterState::kUntracked) << "node " << i;
    }
    if (spec.memory_mib > 0) {
      ASSERT_GE(state.free_memory_mib(node), 0) << "node " << i;
      ASSERT_LE(state.free_memory_mib(node), spec.memory_mib) << "node " << i;
      memory_per_class[c] += state.free_memory_mib(node);
    } else {
      ASSERT_EQ(state.free_memory_mib(node), ClusterState::kUntrackedMemory) << "node " << i;
    }
  }
  ASSERT_EQ(state.free_cpus_total(), cpus_total);
  for (int c = 0; c < cluster.num_label_classes(); ++c) {
    ASSERT_EQ(state.free_cpus_of_class(LabelClassId(c)), cpus_per_class[c]) << "class " << c;
    ASSERT_EQ(state.free_memory_of_class(LabelClassId(c)), memory_per_class[c]) << "class " << c;
  }
  std::vector<NodeId> got_free_cpus;
  state.ForEachNodeWithFreeCpus([&](NodeId node) { got_free_cpus.push_back(node); });
  ASSERT_EQ(got_free_cpus, with_free_cpus);
}

// Random-walk steps shared by the tests below: release a random held placement; take a node
// offline or bring it back.
void ReleaseOneOf(std::vector<Placement>& held, ClusterState& state, Rng& rng) {
  if (held.empty()) return;
  const size_t i = rng.Below(held.size());
  state.Release(held[i]);
  held.erase(held.begin() + static_cast<ptrdiff_t>(i));
}

void ToggleOnline(NodeId node, ClusterState& state) {
  if (state.offline(node)) {
    state.SetOnline(node);
  } else {
    state.SetOffline(node);
  }
}

// One random step with shared GPUs: a shared holder (twice as likely), an exclusive one, a
// release, or a node toggled offline/online. `held` has one entry per holder.
void RandomSharingStep(const Cluster& cluster, ClusterState& state, std::vector<Placement>& held,
                       Rng& rng) {
  const NodeId node(static_cast<uint32_t>(rng.Below(cluster.num_nodes())));
  const int gpus = static_cast<int>(cluster.node(node).gpus.size());
  switch (rng.Below(5)) {
    case 0:
    case 1: {
      const int gpu = static_cast<int>(rng.Below(static_cast<uint64_t>(gpus)));
      if (state.CanShare(node, gpu)) {
        state.AllocateShared(node, gpu);
        held.push_back(On(static_cast<int>(node.index()), GpuMask{1} << gpu));
      }
      break;
    }
    case 2:
      if (GpuMask free = state.free_mask(node); free != 0) {
        const Placement p = On(static_cast<int>(node.index()), free & -free);
        state.Allocate(p);
        held.push_back(p);
      }
      break;
    case 3:
      ReleaseOneOf(held, state, rng);
      break;
    default:
      ToggleOnline(node, state);
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
        ReleaseOneOf(held, state, rng);
        break;
      default:
        ToggleOnline(node, state);
    }
    ExpectViewsAgree(cluster, state);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ClusterStateDualViewTest, FreeLevelsSpanSeveralWordsOfNodes) {
  const Cluster cluster = testing::MakeCluster("130x2xV100");
  ClusterState state(cluster);
  Rng rng(3);
  std::vector<Placement> held;
  for (int step = 0; step < 2000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const NodeId node(static_cast<uint32_t>(rng.Below(cluster.num_nodes())));
    if (rng.Below(2) == 0) {
      if (const GpuMask free = state.free_mask(node); free != 0) {
        const Placement p = On(static_cast<int>(node.index()), free & -free);
        state.Allocate(p);
        held.push_back(p);
      }
    } else {
      ReleaseOneOf(held, state, rng);
    }
    ExpectViewsAgree(cluster, state);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ClusterStateDualViewTest, CountsAMixedNodesGpusByTheirOwnTypes) {
  Cluster cluster;
  const GpuTypeId v100 = cluster.InternGpuType("V100");
  const GpuTypeId k80 = cluster.InternGpuType("K80");
  const RackId rack = cluster.InternRack("r0");
  ASSERT_TRUE(cluster.AddNode({"mixed", rack, {{v100}, {k80}, {k80}}}).ok());
  ASSERT_TRUE(cluster.AddNode({"plain", rack, {{k80}, {k80}}}).ok());
  EXPECT_FALSE(cluster.node_homogeneous(NodeId(0)));
  EXPECT_TRUE(cluster.node_homogeneous(NodeId(1)));
  ClusterState state(cluster);
  EXPECT_EQ(state.free_of_type(v100), 1);
  EXPECT_EQ(state.free_of_type(k80), 4);
  state.Allocate(On(0, 0b011));  // the V100 and one K80
  EXPECT_EQ(state.free_of_type(v100), 0);
  EXPECT_EQ(state.free_of_type(k80), 3);
  ExpectViewsAgree(cluster, state);
  state.Release(On(0, 0b001));
  EXPECT_EQ(state.free_of_type(v100), 1);
  EXPECT_EQ(state.free_of_type(k80), 3);
  ExpectViewsAgree(cluster, state);
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

TEST(ClusterStateSharingTest, ASharedGpuLeavesTheFreePoolOnceAndReturnsWithItsLastHolder) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  const GpuTypeId v100 = cluster.FindGpuType("V100");
  const LabelClassId klass = cluster.node_label_class(NodeId(1));
  ClusterState state(cluster);
  ASSERT_TRUE(state.CanShare(NodeId(1), 2));

  state.AllocateShared(NodeId(1), 2);
  EXPECT_EQ(state.free_total(), 7);
  EXPECT_EQ(state.free_of_type(v100), 7);
  EXPECT_EQ(state.free_of_class(klass), 7);
  EXPECT_EQ(state.allocated_total(), 1);
  EXPECT_EQ(state.free_mask(NodeId(1)), 0b1011u);
  EXPECT_EQ(state.shared_mask(NodeId(1)), 0b0100u);
  EXPECT_EQ(state.sharers(NodeId(1), 2), 1);

  // A second holder changes no count.
  ASSERT_TRUE(state.CanShare(NodeId(1), 2));
  state.AllocateShared(NodeId(1), 2);
  EXPECT_EQ(state.sharers(NodeId(1), 2), 2);
  EXPECT_EQ(state.free_total(), 7);
  EXPECT_EQ(state.free_of_type(v100), 7);
  EXPECT_EQ(state.free_of_class(klass), 7);
  EXPECT_EQ(state.allocated_total(), 1);
  ExpectViewsAgree(cluster, state);

  // A policy that does not share sees it as busy.
  EXPECT_FALSE(state.IsFree(On(1, 0b0100)));
  EXPECT_FALSE(state.IsFree(On(1, 0b1100)));
  EXPECT_TRUE(state.IsFree(On(1, 0b1011)));

  // One holder leaves: still shared, still not free.
  state.Release(On(1, 0b0100));
  EXPECT_EQ(state.sharers(NodeId(1), 2), 1);
  EXPECT_EQ(state.shared_mask(NodeId(1)), 0b0100u);
  EXPECT_FALSE(state.IsFree(On(1, 0b0100)));
  EXPECT_EQ(state.free_total(), 7);
  EXPECT_TRUE(state.CanShare(NodeId(1), 2));

  // The last leaves: free again, no longer shared.
  state.Release(On(1, 0b0100));
  EXPECT_EQ(state.sharers(NodeId(1), 2), 0);
  EXPECT_EQ(state.shared_mask(NodeId(1)), 0u);
  EXPECT_TRUE(state.IsFree(On(1, 0b0100)));
  EXPECT_EQ(state.free_total(), 8);
  EXPECT_EQ(state.free_of_type(v100), 8);
  EXPECT_EQ(state.free_of_class(klass), 8);
  EXPECT_EQ(state.allocated_total(), 0);
  ExpectViewsAgree(cluster, state);

  // Exclusive again: the freed GPU can be allocated whole.
  state.Allocate(On(1, 0b0100));
  EXPECT_EQ(state.free_total(), 7);
}

TEST(ClusterStateSharingTest, AnExclusivelyHeldGpuCannotBeShared) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  ClusterState state(cluster);
  state.Allocate(On(0, 0b0011));
  EXPECT_FALSE(state.CanShare(NodeId(0), 0));
  EXPECT_FALSE(state.CanShare(NodeId(0), 1));
  EXPECT_TRUE(state.CanShare(NodeId(0), 2));
  // Releasing the exclusive holder touches no sharing state.
  state.AllocateShared(NodeId(0), 2);
  state.Release(On(0, 0b0011));
  EXPECT_EQ(state.free_mask(NodeId(0)), 0b1011u);
  EXPECT_EQ(state.shared_mask(NodeId(0)), 0b0100u);
  EXPECT_EQ(state.sharers(NodeId(0), 2), 1);
  ExpectViewsAgree(cluster, state);
}

TEST(ClusterStateSharingTest, ASharedGpuOfAnOfflineNodeTakesNoHolderAndIsWithheldByItsLast) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  ClusterState state(cluster);
  state.AllocateShared(NodeId(1), 0);
  state.AllocateShared(NodeId(1), 0);
  state.SetOffline(NodeId(1));
  EXPECT_FALSE(state.CanShare(NodeId(1), 0));  // shared, but the node is out of service
  EXPECT_FALSE(state.CanShare(NodeId(1), 1));  // free GPUs are withheld
  EXPECT_EQ(state.offline_total(), 3);
  EXPECT_EQ(state.free_total(), 4);
  EXPECT_EQ(state.allocated_total(), 1);

  state.Release(On(1, 0b0001));
  EXPECT_EQ(state.sharers(NodeId(1), 0), 1);
  EXPECT_EQ(state.offline_total(), 3);
  EXPECT_EQ(state.allocated_total(), 1);

  // The last holder leaves: withheld, not freed.
  state.Release(On(1, 0b0001));
  EXPECT_EQ(state.sharers(NodeId(1), 0), 0);
  EXPECT_EQ(state.shared_mask(NodeId(1)), 0u);
  EXPECT_EQ(state.free_mask(NodeId(1)), 0u);
  EXPECT_EQ(state.offline_total(), 4);
  EXPECT_EQ(state.free_total(), 4);
  EXPECT_EQ(state.allocated_total(), 0);
  ExpectViewsAgree(cluster, state);

  state.SetOnline(NodeId(1));
  EXPECT_EQ(state.free_mask(NodeId(1)), 0b1111u);
  EXPECT_EQ(state.free_total(), 8);
  EXPECT_EQ(state.offline_total(), 0);
  EXPECT_TRUE(state.CanShare(NodeId(1), 0));
  ExpectViewsAgree(cluster, state);
}

TEST(ClusterStateSharingTest, ANodeBackOnlineLetsItsSharedGpuTakeHoldersAgain) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  ClusterState state(cluster);
  state.AllocateShared(NodeId(0), 3);
  state.SetOffline(NodeId(0));
  EXPECT_FALSE(state.CanShare(NodeId(0), 3));
  state.SetOnline(NodeId(0));
  ASSERT_TRUE(state.CanShare(NodeId(0), 3));
  state.AllocateShared(NodeId(0), 3);
  EXPECT_EQ(state.sharers(NodeId(0), 3), 2);
  EXPECT_EQ(state.free_total(), 3);
}

TEST(ClusterStateSharingTest, AWhatIfCopyReleasingOneOfTwoHoldersFreesNothing) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  ClusterState state(cluster);
  state.AllocateShared(NodeId(0), 1);
  state.AllocateShared(NodeId(0), 1);
  ClusterState what_if = state;
  what_if.Release(On(0, 0b0010));
  EXPECT_EQ(what_if.free_total(), 3);
  EXPECT_FALSE(what_if.IsFree(On(0, 0b0010)));
  EXPECT_EQ(what_if.sharers(NodeId(0), 1), 1);
  // The original is untouched.
  EXPECT_EQ(state.sharers(NodeId(0), 1), 2);
  // A second what-if release does free it, in the copy only.
  what_if.Release(On(0, 0b0010));
  EXPECT_TRUE(what_if.IsFree(On(0, 0b0010)));
  EXPECT_EQ(what_if.free_total(), 4);
  EXPECT_EQ(state.free_total(), 3);
  EXPECT_EQ(state.shared_mask(NodeId(0)), 0b0010u);
}

// Every observable of the two states is equal.
void ExpectSameState(const Cluster& cluster, const ClusterState& a, const ClusterState& b) {
  ASSERT_EQ(a.free_total(), b.free_total());
  ASSERT_EQ(a.offline_total(), b.offline_total());
  ASSERT_EQ(a.allocated_total(), b.allocated_total());
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    ASSERT_EQ(a.free_of_type(GpuTypeId(t)), b.free_of_type(GpuTypeId(t))) << "type " << t;
  }
  for (int c = 0; c < cluster.num_label_classes(); ++c) {
    ASSERT_EQ(a.free_of_class(LabelClassId(c)), b.free_of_class(LabelClassId(c))) << "class " << c;
  }
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const NodeId id(static_cast<uint32_t>(n));
    ASSERT_EQ(a.free_mask(id), b.free_mask(id)) << "node " << n;
    ASSERT_EQ(a.shared_mask(id), b.shared_mask(id)) << "node " << n;
    ASSERT_EQ(a.offline(id), b.offline(id)) << "node " << n;
    for (int g = 0; g < static_cast<int>(cluster.node(id).gpus.size()); ++g) {
      ASSERT_EQ(a.sharers(id, g), b.sharers(id, g)) << "node " << n << " gpu " << g;
    }
    ASSERT_EQ(a.free_cpus(id), b.free_cpus(id)) << "node " << n;
    ASSERT_EQ(a.free_memory_mib(id), b.free_memory_mib(id)) << "node " << n;
  }
  ASSERT_EQ(a.free_cpus_total(), b.free_cpus_total());
  for (int c = 0; c < cluster.num_label_classes(); ++c) {
    ASSERT_EQ(a.free_cpus_of_class(LabelClassId(c)), b.free_cpus_of_class(LabelClassId(c)));
    ASSERT_EQ(a.free_memory_of_class(LabelClassId(c)), b.free_memory_of_class(LabelClassId(c)));
  }
}

TEST(ClusterStateTrialTest, RollBackRestoresTheStateBeforeTheTrialExactly) {
  Cluster cluster = testing::MakeCluster("4x8xV100+4x4xK80", 2);
  Rng rng(5);
  ClusterState state(cluster);
  std::vector<Placement> held;  // one entry per holder
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int step = 0; step < 10; ++step) RandomSharingStep(cluster, state, held, rng);
    // A trial releases a random subset of the holders, then rolls back.
    const ClusterState before = state;
    state.BeginTrial();
    EXPECT_TRUE(state.in_trial());
    std::vector<Placement> kept = held;
    for (int k = static_cast<int>(rng.Below(held.size() + 1)); k > 0; --k) {
      ReleaseOneOf(kept, state, rng);
    }
    ExpectViewsAgree(cluster, state);
    state.RollBackTrial();
    EXPECT_FALSE(state.in_trial());
    ExpectSameState(cluster, state, before);
    ExpectViewsAgree(cluster, state);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ClusterStateTrialTest, OnlyReleasesMayChangeTheStateDuringATrial) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  ClusterState state(cluster);
  state.BeginTrial();
  EXPECT_DEATH(state.Allocate(On(0, 0b0001)), "allocating during a trial");
  EXPECT_DEATH(state.AllocateShared(NodeId(0), 0), "sharing during a trial");
  EXPECT_DEATH(state.SetOffline(NodeId(0)), "offline during a trial");
  EXPECT_DEATH(state.BeginTrial(), "trials do not nest");
  state.RollBackTrial();
  EXPECT_DEATH(state.RollBackTrial(), "no trial to roll back");
}

TEST(ClusterStateSharingTest, AggregateCountsMatchThePerGpuDetailUnderRandomSharing) {
  Cluster cluster = testing::MakeCluster("4x8xV100+4x4xK80", 2);
  Rng rng(11);
  ClusterState state(cluster);
  std::vector<Placement> held;  // one entry per holder
  for (int step = 0; step < 5000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    RandomSharingStep(cluster, state, held, rng);
    ExpectViewsAgree(cluster, state);
    if (::testing::Test::HasFatalFailure()) return;
    // Every held GPU is neither free nor withheld; each shared GPU has as many holders as held.
    int distinct_held = 0;
    for (int n = 0; n < cluster.num_nodes(); ++n) {
      const NodeId id(static_cast<uint32_t>(n));
      GpuMask mask = 0;
      for (const Placement& p : held) {
        if (p.parts[0].node == id) mask |= p.parts[0].gpus;
      }
      ASSERT_EQ(state.free_mask(id) & mask, 0u) << "node " << n;
      distinct_held += CountGpus(mask);
      for (GpuMask m = state.shared_mask(id); m != 0; m &= m - 1) {
        const int gpu = std::countr_zero(m);
        const auto holders = std::count_if(held.begin(), held.end(), [&](const Placement& p) {
          return p.parts[0].node == id && p.parts[0].gpus == (GpuMask{1} << gpu);
        });
        ASSERT_EQ(state.sharers(id, gpu), holders) << "node " << n << " gpu " << gpu;
      }
    }
    ASSERT_EQ(state.allocated_total(), distinct_held);
  }
}

// Host resources. Nodes 0-1 state CPUs and memory, node 2 nothing, nodes 3-4 are CPU-only,
// node 5 states CPUs but not memory; two racks of three.
constexpr char kHostCluster[] = "2x4xV100:16c:65536m+1x4xV100+2x0xcpu:32c:131072m+1x4xK80:8c";

// What a job holds on one node.
Placement Holding(int node, GpuMask gpus, int cpus, int64_t memory_mib) {
  return Placement{{NodeGpus{NodeId(node), gpus, cpus, memory_mib}}};
}

// One random step with host resources: an exclusive part (some free GPUs, maybe none, with a
// random share of what the node states), a shared holder with a share, a release, or a node
// toggled offline/online. `held` has one entry per holder.
void RandomHostStep(const Cluster& cluster, ClusterState& state, std::vector<Placement>& held,
                    Rng& rng) {
  const NodeId node(static_cast<uint32_t>(rng.Below(cluster.num_nodes())));
  const NodeSpec& spec = cluster.node(node);
  const HostRequest share{static_cast<int>(rng.Below(9)), static_cast<int64_t>(rng.Below(40000))};
  switch (rng.Below(5)) {
    case 0:
    case 1: {
      GpuMask gpus = state.free_mask(node);
      for (uint64_t drop = rng.Below(CountGpus(gpus) + 1); drop > 0; --drop) gpus &= gpus - 1;
      const Placement p{{state.Part(node, gpus, share)}};
      if (gpus == 0 && p.parts[0].cpus == 0) break;  // holds nothing
      if (!state.IsFree(p)) break;
      state.Allocate(p);
      held.push_back(p);
      break;
    }
    case 2: {
      if (spec.gpus.empty()) break;
      const int gpu = static_cast<int>(rng.Below(spec.gpus.size()));
      const NodeGpus part = state.Part(node, GpuMask{1} << gpu, share);
      if (!state.CanShare(node, gpu) || !state.HasHostRoom(node, {part.cpus, part.memory_mib})) {
        break;
      }
      state.AllocateShared(node, gpu, {part.cpus, part.memory_mib});
      held.push_back(Placement{{part}});
      break;
    }
    case 3:
      ReleaseOneOf(held, state, rng);
      break;
    default:
      ToggleOnline(node, state);
  }
}

// Each node's free CPUs and memory are what it states less what the held parts hold (nothing
// while it is offline).
void ExpectHostMatchesHeld(const Cluster& cluster, const ClusterState& state,
                           const std::vector<Placement>& held) {
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const NodeId id(static_cast<uint32_t>(n));
    const NodeSpec& spec = cluster.node(id);
    int cpus = spec.cpus;
    int64_t memory = spec.memory_mib;
    for (const Placement& p : held) {
      for (const NodeGpus& part : p.parts) {
        if (part.node != id) continue;
        cpus -= part.cpus;
        memory -= part.memory_mib;
      }
    }
    if (state.offline(id)) cpus = memory = 0;
    if (spec.cpus > 0) ASSERT_EQ(state.free_cpus(id), cpus) << "node " << n;
    if (spec.memory_mib > 0) ASSERT_EQ(state.free_memory_mib(id), memory) << "node " << n;
  }
}

TEST(ClusterStateHostTest, AggregateCpusAndMemoryMatchThePerNodeDetailAfterEveryChange) {
  const Cluster cluster = testing::MakeCluster(kHostCluster, 3);
  ClusterState state(cluster);
  ASSERT_TRUE(state.tracks_host());
  Rng rng(13);
  std::vector<Placement> held;
  for (int step = 0; step < 5000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    RandomHostStep(cluster, state, held, rng);
    ExpectViewsAgree(cluster, state);
    ExpectHostMatchesHeld(cluster, state, held);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ClusterStateHostTest, RollBackRestoresCpusAndMemoryExactly) {
  const Cluster cluster = testing::MakeCluster(kHostCluster, 3);
  Rng rng(17);
  ClusterState state(cluster);
  std::vector<Placement> held;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (int step = 0; step < 10; ++step) RandomHostStep(cluster, state, held, rng);
    const ClusterState before = state;
    state.BeginTrial();
    std::vector<Placement> kept = held;
    for (int k = static_cast<int>(rng.Below(held.size() + 1)); k > 0; --k) {
      ReleaseOneOf(kept, state, rng);
    }
    ExpectViewsAgree(cluster, state);
    ExpectHostMatchesHeld(cluster, state, kept);
    state.RollBackTrial();
    ExpectSameState(cluster, state, before);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ClusterStateHostTest, AClusterStatingNoHostResourcesKeepsNoHostBookkeeping) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  ClusterState state(cluster);
  EXPECT_FALSE(state.tracks_host());
  EXPECT_TRUE(state.HasHostRoom(NodeId(0), {1000, 1 << 30}));
  EXPECT_EQ(state.Part(NodeId(0), 0b1, {8, 1024}), (NodeGpus{NodeId(0), 0b1}));
  EXPECT_EQ(state.free_cpus_total(), 0);
  int visited = 0;
  state.ForEachNodeWithFreeCpus([&](NodeId) { ++visited; });
  EXPECT_EQ(visited, 0);
}

TEST(ClusterStateHostTest, AResourceANodeDoesNotStateNeverLimitsAndIsNeverHeld) {
  const Cluster cluster = testing::MakeCluster(kHostCluster, 3);
  ClusterState state(cluster);
  // Node 2 states nothing, node 5 CPUs only.
  EXPECT_TRUE(state.HasHostRoom(NodeId(2), {1000, int64_t{1} << 40}));
  EXPECT_EQ(state.Part(NodeId(2), 0b1, {8, 1024}), (NodeGpus{NodeId(2), 0b1}));
  EXPECT_TRUE(state.HasHostRoom(NodeId(5), {8, int64_t{1} << 40}));
  EXPECT_FALSE(state.HasHostRoom(NodeId(5), {9, 0}));
  EXPECT_EQ(state.Part(NodeId(5), 0b1, {8, 1024}), (NodeGpus{NodeId(5), 0b1, 8, 0}));
  // A part asking for more than a node has free is not free, even with its GPUs free.
  EXPECT_TRUE(state.IsFree(Holding(0, 0b1, 16, 65536)));
  EXPECT_FALSE(state.IsFree(Holding(0, 0b1, 17, 0)));
  EXPECT_FALSE(state.IsFree(Holding(0, 0b1, 0, 65537)));
  EXPECT_EQ(state.free_cpus_total(), 16 + 16 + 32 + 32 + 8);
}

TEST(ClusterStateHostTest, ACpuJobOnACpuOnlyNodeTakesItsCpusAndMemory) {
  const Cluster cluster = testing::MakeCluster(kHostCluster, 3);
  ClusterState state(cluster);
  const Placement cpu_job = Holding(3, 0, 32, 1024);
  state.Allocate(cpu_job);
  EXPECT_EQ(state.free_cpus(NodeId(3)), 0);
  EXPECT_EQ(state.free_memory_mib(NodeId(3)), 131072 - 1024);
  EXPECT_EQ(state.free_total(), cluster.total_gpus());  // no GPU taken
  std::vector<NodeId> with_free_cpus;
  state.ForEachNodeWithFreeCpus([&](NodeId node) { with_free_cpus.push_back(node); });
  EXPECT_EQ(with_free_cpus, (std::vector<NodeId>{NodeId(0), NodeId(1), NodeId(4), NodeId(5)}));
  state.Release(cpu_job);
  EXPECT_EQ(state.free_cpus(NodeId(3)), 32);
  EXPECT_EQ(state.free_memory_mib(NodeId(3)), 131072);
  EXPECT_DEATH(state.Release(cpu_job), "releasing CPUs or memory that are not allocated");
}

TEST(ClusterStateHostTest, AnOfflineNodeWithholdsItsFreeCpusAndThoseReleasedLater) {
  const Cluster cluster = testing::MakeCluster(kHostCluster, 3);
  ClusterState state(cluster);
  const Placement job = Holding(0, 0b11, 6, 1000);
  state.Allocate(job);
  state.SetOffline(NodeId(0));
  EXPECT_EQ(state.free_cpus(NodeId(0)), 0);
  EXPECT_EQ(state.free_memory_mib(NodeId(0)), 0);
  EXPECT_FALSE(state.HasHostRoom(NodeId(0), {1, 0}));
  state.Release(job);
  EXPECT_EQ(state.free_cpus(NodeId(0)), 0);
  state.SetOnline(NodeId(0));
  EXPECT_EQ(state.free_cpus(NodeId(0)), 16);
  EXPECT_EQ(state.free_memory_mib(NodeId(0)), 65536);
  ExpectViewsAgree(cluster, state);
}

}  // namespace
}  // namespace dlsched
