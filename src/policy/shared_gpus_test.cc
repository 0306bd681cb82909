#include "dlsched/policy/shared_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/builders.h"

namespace dlsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeCluster;

// ForEach's visits as "node.gpu:holder,holder" strings.
std::vector<std::string> Visits(const SharedGpus& index) {
  std::vector<std::string> visits;
  index.ForEach([&](NodeId node, int gpu, std::span<const JobId> holders) {
    std::string visit = std::to_string(node.value()) + "." + std::to_string(gpu) + ":";
    for (size_t i = 0; i < holders.size(); ++i) {
      visit += (i > 0 ? "," : "") + std::to_string(holders[i].value());
    }
    visits.push_back(visit);
  });
  return visits;
}

TEST(SharedGpusTest, StartsEmpty) {
  const Cluster cluster = MakeCluster("2x4xV100");
  const SharedGpus index(cluster);
  EXPECT_EQ(index.size(), 0);
  EXPECT_THAT(Visits(index), IsEmpty());
  EXPECT_THAT(index.holders(NodeId(1), 3), IsEmpty());
  EXPECT_EQ(index.mask(NodeId(0)), 0u);
}

TEST(SharedGpusTest, HoldersAscendByIdWhateverTheOrderOfArrival) {
  const Cluster cluster = MakeCluster("2x4xV100");
  SharedGpus index(cluster);
  index.Add(NodeId(1), 2, JobId(9));
  index.Add(NodeId(1), 2, JobId(4));
  index.Add(NodeId(1), 2, JobId(6));
  EXPECT_THAT(index.holders(NodeId(1), 2), ElementsAre(JobId(4), JobId(6), JobId(9)));
  EXPECT_EQ(index.size(), 1);
  EXPECT_EQ(index.mask(NodeId(1)), GpuMask{1} << 2);
}

// The order a sharing policy's decisions depend on: by node, then GPU, not by arrival.
TEST(SharedGpusTest, ForEachVisitsGpusInNodeThenGpuOrder) {
  const Cluster cluster = MakeCluster("3x4xV100");
  SharedGpus index(cluster);
  index.Add(NodeId(2), 0, JobId(1));
  index.Add(NodeId(0), 3, JobId(2));
  index.Add(NodeId(0), 1, JobId(3));
  index.Add(NodeId(0), 1, JobId(0));
  EXPECT_THAT(Visits(index), ElementsAre("0.1:0,3", "0.3:2", "2.0:1"));
  EXPECT_EQ(index.size(), 3);
}

TEST(SharedGpusTest, AGpuLeavesWithItsLastHolder) {
  const Cluster cluster = MakeCluster("2x4xV100");
  SharedGpus index(cluster);
  index.Add(NodeId(0), 1, JobId(1));
  index.Add(NodeId(0), 1, JobId(2));
  index.Add(NodeId(1), 0, JobId(3));
  index.Remove(NodeId(0), 1, JobId(1));
  EXPECT_THAT(Visits(index), ElementsAre("0.1:2", "1.0:3"));
  index.Remove(NodeId(0), 1, JobId(2));
  EXPECT_THAT(Visits(index), ElementsAre("1.0:3"));
  EXPECT_EQ(index.mask(NodeId(0)), 0u);
  index.Remove(NodeId(1), 0, JobId(3));
  EXPECT_THAT(Visits(index), IsEmpty());
  EXPECT_EQ(index.size(), 0);
}

// Nodes past the first 64 sit in a second word of the node bitmap.
TEST(SharedGpusTest, VisitsNodesBeyondTheFirstWord) {
  const Cluster cluster = MakeCluster("130x2xV100", /*nodes_per_rack=*/16);
  SharedGpus index(cluster);
  index.Add(NodeId(129), 1, JobId(5));
  index.Add(NodeId(64), 0, JobId(6));
  index.Add(NodeId(63), 1, JobId(7));
  EXPECT_THAT(Visits(index), ElementsAre("63.1:7", "64.0:6", "129.1:5"));
  EXPECT_THAT(index.holders(NodeId(129), 1), ElementsAre(JobId(5)));
}

// The walks by holder count visit the GPUs held by one job, or by several, in the same order; a
// GPU moves between them as holders come and go.
TEST(SharedGpusTest, WalksByHolderCount) {
  const Cluster cluster = MakeCluster("2x4xV100");
  SharedGpus index(cluster);
  index.Add(NodeId(1), 0, JobId(1));
  index.Add(NodeId(0), 2, JobId(2));
  index.Add(NodeId(0), 2, JobId(3));
  index.Add(NodeId(0), 3, JobId(4));
  const auto walk = [&](SharedGpus::Held which) {
    std::vector<std::string> visits;
    index.ForEach(which, [&](NodeId node, int gpu, std::span<const JobId> holders) {
      visits.push_back(std::to_string(node.value()) + "." + std::to_string(gpu) + ":" +
                       std::to_string(holders.size()));
    });
    return visits;
  };
  EXPECT_THAT(walk(SharedGpus::Held::kAlone), ElementsAre("0.3:1", "1.0:1"));
  EXPECT_THAT(walk(SharedGpus::Held::kBySeveral), ElementsAre("0.2:2"));
  EXPECT_THAT(walk(SharedGpus::Held::kAny), ElementsAre("0.2:2", "0.3:1", "1.0:1"));
  index.Remove(NodeId(0), 2, JobId(2));
  index.Add(NodeId(1), 0, JobId(5));
  EXPECT_THAT(walk(SharedGpus::Held::kAlone), ElementsAre("0.2:1", "0.3:1"));
  EXPECT_THAT(walk(SharedGpus::Held::kBySeveral), ElementsAre("1.0:2"));
  index.Remove(NodeId(0), 2, JobId(3));
  EXPECT_THAT(walk(SharedGpus::Held::kAlone), ElementsAre("0.3:1"));
}

// The join revision moves only when a job joins a GPU others hold.
TEST(SharedGpusTest, TheJoinRevisionMovesOnlyWhenAJobJoinsAHeldGpu) {
  const Cluster cluster = MakeCluster("1x4xV100");
  SharedGpus index(cluster);
  const SharedGpus other(cluster);
  EXPECT_NE(index.join_revision(), other.join_revision());
  const uint64_t start = index.join_revision();
  index.Add(NodeId(0), 0, JobId(1));
  EXPECT_EQ(index.join_revision(), start) << "nobody held the GPU";
  index.Add(NodeId(0), 0, JobId(2));
  const uint64_t joined = index.join_revision();
  EXPECT_NE(joined, start);
  index.Add(NodeId(0), 0, JobId(3));
  EXPECT_NE(index.join_revision(), joined) << "a third holder joins too";
  const uint64_t third = index.join_revision();
  index.Remove(NodeId(0), 0, JobId(1));
  EXPECT_EQ(index.join_revision(), third);
}

// JoinedSince lists the GPUs joined after a revision, in the order of the joins; it knows the
// current revision, the last kJoinLog or more, and none of another index's.
TEST(SharedGpusTest, JoinedSinceListsTheJoinsAfterARevision) {
  using Gpus = std::vector<std::pair<NodeId, int>>;
  const Cluster cluster = MakeCluster("2x4xV100");
  SharedGpus index(cluster);
  const SharedGpus other(cluster);
  Gpus gpus{{NodeId(1), 1}};
  const uint64_t start = index.join_revision();
  EXPECT_TRUE(index.JoinedSince(start, gpus));
  EXPECT_THAT(gpus, IsEmpty());
  index.Add(NodeId(1), 3, JobId(1));  // not a join
  index.Add(NodeId(1), 3, JobId(2));
  const uint64_t first = index.join_revision();
  index.Add(NodeId(0), 2, JobId(3));  // not a join
  index.Add(NodeId(0), 2, JobId(4));
  index.Add(NodeId(1), 3, JobId(5));
  EXPECT_TRUE(index.JoinedSince(start, gpus));
  EXPECT_EQ(gpus, (Gpus{{NodeId(1), 3}, {NodeId(0), 2}, {NodeId(1), 3}}));
  EXPECT_TRUE(index.JoinedSince(first, gpus));
  EXPECT_EQ(gpus, (Gpus{{NodeId(0), 2}, {NodeId(1), 3}}));
  EXPECT_TRUE(index.JoinedSince(index.join_revision(), gpus));
  EXPECT_THAT(gpus, IsEmpty());
  EXPECT_FALSE(index.JoinedSince(other.join_revision(), gpus)) << "another index's";
  EXPECT_THAT(gpus, IsEmpty());

  // Many joins later the oldest revisions are forgotten, the last kJoinLog are not.
  uint64_t recent = 0;
  for (uint32_t i = 0; i < 2 * SharedGpus::kJoinLog; ++i) {
    index.Add(NodeId(0), 0, JobId(100 + i));
    if (i > 0) index.Remove(NodeId(0), 0, JobId(100 + i - 1));
    if (i == 0) continue;
    if (i + SharedGpus::kJoinLog == 2 * SharedGpus::kJoinLog) recent = index.join_revision();
  }
  EXPECT_FALSE(index.JoinedSince(start, gpus));
  EXPECT_FALSE(index.JoinedSince(first, gpus));
  ASSERT_TRUE(index.JoinedSince(recent, gpus));
  EXPECT_EQ(gpus.size(), SharedGpus::kJoinLog - 1);
  EXPECT_EQ(gpus.back(), std::pair(NodeId(0), 0));
}

// ChangedSince lists every change of a GPU's standing: holders added or removed, a holder asked
// to stop, its node going offline or coming back.
TEST(SharedGpusTest, ChangedSinceListsEveryChange) {
  using Gpus = std::vector<std::pair<NodeId, int>>;
  const Cluster cluster = MakeCluster("2x4xV100");
  SharedGpus index(cluster);
  Gpus gpus;
  const uint64_t start = index.change_revision();
  index.Add(NodeId(1), 3, JobId(1));
  index.Add(NodeId(1), 1, JobId(2));
  index.Add(NodeId(0), 2, JobId(3));
  const uint64_t added = index.change_revision();
  EXPECT_NE(added, start);
  index.Remove(NodeId(0), 2, JobId(3));
  Job job;
  job.id = JobId(2);
  job.share = ShareMode::kPacked;
  job.placement = Placement{{NodeGpus{NodeId(1), GpuMask{1} << 1}}};
  index.Stopping(job);
  job.share = ShareMode::kExclusive;
  const uint64_t before_exclusive = index.change_revision();
  index.Stopping(job);
  EXPECT_EQ(index.change_revision(), before_exclusive) << "an exclusive job holds no shared GPU";
  index.NodeChanged(NodeId(1));
  index.NodeChanged(NodeId(0));  // holds none: nothing changes
  EXPECT_TRUE(index.ChangedSince(start, gpus));
  EXPECT_EQ(gpus, (Gpus{{NodeId(1), 3},
                        {NodeId(1), 1},
                        {NodeId(0), 2},
                        {NodeId(0), 2},
                        {NodeId(1), 1},
                        {NodeId(1), 1},
                        {NodeId(1), 3}}));
  EXPECT_TRUE(index.ChangedSince(added, gpus));
  EXPECT_EQ(gpus.size(), 4u);
  const SharedGpus other(cluster);
  EXPECT_FALSE(index.ChangedSince(other.change_revision(), gpus));
}

}  // namespace
}  // namespace dlsched
