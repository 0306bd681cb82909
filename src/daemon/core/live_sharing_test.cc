#include "daemon/core/live_sharing.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

using testing::MakeCluster;
using testing::MakeJob;

class LiveSharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = MakeCluster("1x4xV100");
    Result<SharingModels> models = LoadSharingModels("", cluster_);  // the built-in ones
    ASSERT_TRUE(models.ok()) << models.status().ToString();
    models_ = std::move(models).value();
  }
  // The knowledge a fresh daemon builds from the jobs and the usage book now (its first Refresh).
  SharingKnowledge FullBuild() {
    LiveSharingKnowledge fresh(cluster_, models_, /*group_by_user=*/false);
    return fresh.Refresh(jobs_, usage_);
  }
  JobId Add(JobSpec spec, JobState state = JobState::kQueued) {
    const JobId id = jobs_.Add(std::move(spec));
    jobs_.at(id).state = state;
    return id;
  }

  Cluster cluster_;
  SharingModels models_;
  JobTable jobs_;
  GpuUsageBook usage_;
};

TEST_F(LiveSharingTest, FeaturesFromTheSpecOrCautiousUntilObserved) {
  const int64_t gpu_mib = cluster_.node(NodeId(0)).gpus[0].memory_mib;
  ASSERT_GT(gpu_mib, 0);
  JobSpec typed = MakeJob(0).Spec();
  typed.model = "lstm";
  typed.batch_size = 128;
  JobSpec fraction = MakeJob(1).Spec();
  fraction.memory_mib = gpu_mib / 4;
  const JobSpec unknown = MakeJob(2).Spec();
  const JobId t = Add(typed, JobState::kRunning);
  const JobId f = Add(fraction);
  const JobId u = Add(unknown, JobState::kRunning);
  const JobId done = Add(unknown, JobState::kSucceeded);

  SharingKnowledge k = FullBuild();
  EXPECT_TRUE(k.Has(t));
  EXPECT_FALSE(k.Has(done));  // ended: no policy asks about it
  EXPECT_NE(k.Features(t).type, sharing::SharingJob::kUnknownType);
  EXPECT_EQ(k.MemoryDemandMib(t, 95), 5632);  // the built-in lstm type's memory
  EXPECT_DOUBLE_EQ(k.Features(f).sm_util, 0.25);
  EXPECT_EQ(k.MemoryDemandMib(f, 95), gpu_mib / 4);
  // Nothing known of it: it is taken to fill the GPU.
  EXPECT_EQ(k.Features(u).sm_util, 1.0);
  EXPECT_EQ(k.MemoryDemandMib(u, 95), gpu_mib);
  EXPECT_NE(k.Interference(GpuTypeId(0)), nullptr);

  // The monitor's observations: the demand is the observed percentile, and the unknown job's
  // features are its observed ones.
  for (int64_t mib : {1000, 1200, 1400, 1600}) usage_.Record({u, mib, 0.3}, AtSeconds(mib));
  usage_.Record({t, 7000, 0.9}, AtSeconds(1));
  k = FullBuild();
  EXPECT_EQ(k.MemoryDemandMib(u, 100), 1600);
  EXPECT_EQ(k.MemoryDemandMib(u, 50), 1200);
  EXPECT_DOUBLE_EQ(k.Features(u).sm_util, 0.3);
  EXPECT_DOUBLE_EQ(k.Features(u).mem_bw_util, 0.3 * 0.6);
  EXPECT_EQ(k.Features(u).memory_mib, 1600);
  EXPECT_EQ(k.MemoryDemandMib(t, 95), 7000);  // observed over the type's profiled memory
  EXPECT_NE(k.Features(t).type, sharing::SharingJob::kUnknownType);  // a typed job keeps its type
}

// The incremental knowledge answers as a full rebuild does, after submissions, observations and
// ends, and re-reads only what it was told changed.
TEST_F(LiveSharingTest, TheIncrementalKnowledgeAnswersAsAFullRebuild) {
  LiveSharingKnowledge live(cluster_, models_, /*group_by_user=*/false);
  const JobId a = Add(MakeJob(0).Spec(), JobState::kRunning);
  const JobId b = Add(MakeJob(1).Spec());
  const SharingKnowledge& k = live.Refresh(jobs_, usage_);
  EXPECT_TRUE(k.Has(a));
  EXPECT_TRUE(k.Has(b));
  EXPECT_EQ(k.Features(a).sm_util, 1.0);

  usage_.Record({a, 2000, 0.4}, AtSeconds(1));
  EXPECT_EQ(live.Refresh(jobs_, usage_).MemoryDemandMib(a, 100), k.MemoryDemandMib(b, 100))
      << "not told of the sample: unchanged";
  live.Observed(a);
  usage_.Record({a, 3000, 0.6}, AtSeconds(2));
  live.Observed(a);
  const JobId c = Add(MakeJob(2).Spec());
  const JobId ended = Add(MakeJob(3).Spec(), JobState::kFailed);
  EXPECT_EQ(&live.Refresh(jobs_, usage_), &k);
  const SharingKnowledge full = FullBuild();
  for (JobId id : {a, b, c}) {
    SCOPED_TRACE(id.value());
    ASSERT_TRUE(k.Has(id));
    for (double p : {0.0, 50.0, 95.0, 100.0}) {
      EXPECT_EQ(k.MemoryDemandMib(id, p), full.MemoryDemandMib(id, p));
    }
    EXPECT_EQ(k.Features(id).sm_util, full.Features(id).sm_util);
    EXPECT_EQ(k.Features(id).memory_mib, full.Features(id).memory_mib);
  }
  EXPECT_EQ(k.MemoryDemandMib(a, 100), 3000);
  EXPECT_DOUBLE_EQ(k.Features(a).sm_util, 0.5);
  EXPECT_FALSE(k.Has(ended));
  EXPECT_EQ(k.ShareGroup(a), k.ShareGroup(c));
}

// Under MPS, each user's jobs are a sharing group: the policy never puts two users on a GPU.
TEST_F(LiveSharingTest, GroupedByUserEachUsersJobsAreAGroup) {
  LiveSharingKnowledge live(cluster_, models_, /*group_by_user=*/true);
  const auto of = [](uint32_t n, const char* user) {
    JobSpec spec = MakeJob(n).Spec();
    spec.user = user;
    return spec;
  };
  const JobId a = Add(of(0, "alice"));
  const JobId b = Add(of(1, "bob"));
  const JobId c = Add(of(2, "alice"));
  const SharingKnowledge& k = live.Refresh(jobs_, usage_);
  EXPECT_EQ(k.ShareGroup(a), k.ShareGroup(c));
  EXPECT_NE(k.ShareGroup(a), k.ShareGroup(b));
  live.Observed(b);  // re-declared: keeps its group
  usage_.Record({b, 100, 0.1}, AtSeconds(1));
  EXPECT_NE(live.Refresh(jobs_, usage_).ShareGroup(b), k.ShareGroup(a));
}

}  // namespace
}  // namespace dlsched::daemon
