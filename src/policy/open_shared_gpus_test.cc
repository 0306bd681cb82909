#include "policy/open_shared_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlsched/policy/sharing_knowledge.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using ::testing::ElementsAre;
using testing::MakeCluster;
using testing::MakeJob;

// The index as "type/group: index(used,holders)" strings, by group then GPU.
std::vector<std::string> Describe(const OpenSharedGpus& index) {
  std::vector<std::string> out;
  for (const auto& [key, group] : index.groups()) {
    std::string line = std::to_string(key.first) + "/" + std::to_string(key.second) + ":";
    size_t gpus = 0;
    size_t holders = 0;
    index.ForEachGpu(group, [&](uint32_t g) {
      const OpenSharedGpus::Gpu& gpu = index.gpu(g);
      EXPECT_EQ(index.used_mib(g), gpu.used_mib);
      line += " " + std::to_string(g) + "(" + std::to_string(gpu.used_mib) + "," +
              std::to_string(gpu.holders.size()) + ")";
      int64_t used_mib = 0;
      for (const sharing::PackJob& holder : gpu.holders) {
        used_mib += holder.memory_mib;
        line += holder.job.type == sharing::SharingJob::kUnknownType
                    ? ""
                    : "t" + std::to_string(holder.job.type);
      }
      EXPECT_EQ(used_mib, gpu.used_mib) << line;
      ++gpus;
      holders += gpu.holders.size();
      return true;
    });
    EXPECT_EQ(group.gpus, gpus) << line;
    EXPECT_EQ(group.holders, holders) << line;
    out.push_back(line);
  }
  return out;
}

// A world as the Scheduler keeps it: jobs running shared on GPUs, the shared-GPU index, the
// sharing knowledge; the test changes it as the Scheduler and the drivers do.
class OpenSharedGpusTest : public ::testing::Test {
 protected:
  OpenSharedGpusTest()
      : cluster_(MakeCluster("2x4xV100")),
        state_(cluster_),
        shared_(cluster_),
        knowledge_({BuiltInInterferenceModel()}) {
    for (uint32_t i = 0; i < 8; ++i) {
      jobs_.Add(MakeJob(i).Spec());
      knowledge_.Set(JobId(i), {}, 1000);
    }
  }
  void Start(uint32_t job, uint32_t node, int gpu) {
    Job& j = jobs_.at(JobId(job));
    j.state = JobState::kRunning;
    j.share = ShareMode::kPacked;
    j.placement = Placement{{NodeGpus{NodeId(node), GpuMask{1} << gpu}}};
    shared_.Add(NodeId(node), gpu, JobId(job));
  }
  void Stop(uint32_t job) {
    Job& j = jobs_.at(JobId(job));
    const NodeGpus part = j.placement.parts.front();
    shared_.Remove(part.node, std::countr_zero(part.gpus), j.id);
    j.state = JobState::kQueued;
    j.share = ShareMode::kExclusive;
    j.placement = {};
    j.preempt_requested = false;
  }
  // Syncs the kept index and checks it against one built afresh; returns its description.
  std::vector<std::string> Sync() {
    index_.Sync(cluster_, state_, jobs_, shared_, knowledge_);
    OpenSharedGpus fresh(options_);
    fresh.Sync(cluster_, state_, jobs_, shared_, knowledge_);
    const std::vector<std::string> kept = Describe(index_);
    EXPECT_EQ(kept, Describe(fresh)) << "the kept index went stale";
    return kept;
  }

  OpenSharedGpus::Options options_{/*max_jobs_per_gpu=*/3, /*memory_percentile=*/100, false};
  Cluster cluster_;
  ClusterState state_;
  JobTable jobs_;
  SharedGpus shared_;
  SharingKnowledge knowledge_;
  OpenSharedGpus index_{options_};
};

// Every change that opens or closes a GPU, or changes its demand or group, shows at the next
// Sync exactly as a rebuild sees it.
TEST_F(OpenSharedGpusTest, FollowsEveryChangeAsARebuildSeesIt) {
  EXPECT_THAT(Sync(), ::testing::IsEmpty());
  Start(0, 0, 0);
  Start(1, 0, 1);
  Start(2, 1, 0);
  EXPECT_THAT(Sync(), ElementsAre("0/0: 0(1000,1) 1(1000,1) 4(1000,1)"));
  Start(3, 0, 0);
  EXPECT_THAT(Sync(), ElementsAre("0/0: 0(2000,2) 1(1000,1) 4(1000,1)"));
  Start(4, 0, 0);  // k = 3 holders: full
  EXPECT_THAT(Sync(), ElementsAre("0/0: 1(1000,1) 4(1000,1)"));
  knowledge_.Observe(JobId(1), {3000, 0.5});  // demand observed while it runs
  EXPECT_THAT(Sync(), ElementsAre("0/0: 1(3000,1) 4(1000,1)"));
  knowledge_.SetShareGroup(JobId(2), 5);
  EXPECT_THAT(Sync(), ElementsAre("0/0: 1(3000,1)", "0/5: 4(1000,1)"));
  jobs_.at(JobId(1)).preempt_requested = true;  // as the Scheduler asks it to stop
  shared_.Stopping(jobs_.at(JobId(1)));
  EXPECT_THAT(Sync(), ElementsAre("0/5: 4(1000,1)"));
  state_.SetOffline(NodeId(1));
  shared_.NodeChanged(NodeId(1));
  EXPECT_THAT(Sync(), ::testing::IsEmpty());
  state_.SetOnline(NodeId(1));
  shared_.NodeChanged(NodeId(1));
  Stop(1);
  Stop(4);                                    // GPU 0 has room again
  knowledge_.Observe(JobId(5), {9000, 0.5});  // not running: no GPU changes
  EXPECT_THAT(Sync(), ElementsAre("0/0: 0(2000,2)", "0/5: 4(1000,1)"));
  Stop(0);  // the lowest holder leaves: the GPU's group is the next one's
  knowledge_.SetShareGroup(JobId(3), 7);
  EXPECT_THAT(Sync(), ElementsAre("0/5: 4(1000,1)", "0/7: 0(1000,1)"));
  // Re-declared while it runs: new features and demand, and the group back to 0.
  knowledge_.Set(JobId(2), {3, 0.5, 0.3, 2000}, 2000);
  EXPECT_THAT(Sync(), ElementsAre("0/0: 4(2000,1)t3", "0/7: 0(1000,1)"));
}

// More changes between two Syncs than the logs keep: the index rebuilds.
TEST_F(OpenSharedGpusTest, RebuildsWhenTheLogsForgot) {
  Start(0, 0, 0);
  EXPECT_THAT(Sync(), ElementsAre("0/0: 0(1000,1)"));
  for (size_t i = 0; i < 2 * SharedGpus::kJoinLog; ++i) {
    Start(1, 1, 3);
    Stop(1);
  }
  Start(1, 1, 3);
  for (size_t i = 0; i < 2 * ChangeLog<JobId>::kKeep; ++i) knowledge_.Observe(JobId(0), {10, 0});
  knowledge_.Observe(JobId(0), {1500, 0});
  EXPECT_THAT(Sync(), ElementsAre("0/0: 0(1500,1) 7(1000,1)"));
}

// Time-sliced GPUs count no memory; with k = 1 nothing is open.
TEST(OpenSharedGpusOptionsTest, TimeSlicedCountsNoMemoryAndKOfOneOpensNothing) {
  const Cluster cluster = MakeCluster("1x2xV100");
  const ClusterState state(cluster);
  JobTable jobs;
  jobs.Add(MakeJob(0).Spec());
  SharedGpus shared(cluster);
  shared.Add(NodeId(0), 1, JobId(0));
  SharingKnowledge knowledge({BuiltInInterferenceModel()});
  knowledge.Set(JobId(0), {}, 4000);
  OpenSharedGpus sliced({2, 95, /*time_sliced=*/true});
  sliced.Sync(cluster, state, jobs, shared, knowledge);
  EXPECT_THAT(Describe(sliced), ElementsAre("0/0: 1(0,1)"));
  OpenSharedGpus alone({1, 95, false});
  alone.Sync(cluster, state, jobs, shared, knowledge);
  EXPECT_THAT(Describe(alone), ::testing::IsEmpty());
}

}  // namespace
}  // namespace dlsched
