#include "plugins/filter/avoid_labels.h"

#include <gtest/gtest.h>

#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/pipeline.h"
#include "dlsched/policy/registry.h"
#include "dlsched/runtime/scheduler.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using testing::MakeJob;
using testing::RecordingExecutor;

// Two nodes of 4 V100s; node n0 carries maintenance=true.
Cluster ClusterWithADrainedNode() {
  Cluster cluster;
  const GpuTypeId v100 = cluster.InternGpuType("V100");
  const RackId rack = cluster.InternRack("r0");
  for (int n = 0; n < 2; ++n) {
    NodeSpec node;
    node.name = "n" + std::to_string(n);
    node.rack = rack;
    node.gpus.assign(4, GpuSpec{v100, 32768, 0});
    if (n == 0) node.labels = {{"maintenance", "true"}};
    EXPECT_TRUE(cluster.AddNode(std::move(node)).ok());
  }
  return cluster;
}

TEST(AvoidLabelsFilterTest, ArgumentsAreChecked) {
  EXPECT_TRUE(AvoidLabelsFilter::Create(PluginArgs{{"labels", "maintenance=true"}}).ok());
  EXPECT_FALSE(AvoidLabelsFilter::Create(PluginArgs{}).ok());
  EXPECT_FALSE(AvoidLabelsFilter::Create(PluginArgs{{"labels", ""}}).ok());
  EXPECT_FALSE(AvoidLabelsFilter::Create(PluginArgs{{"labels", "no-equals"}}).ok());
  EXPECT_FALSE(AvoidLabelsFilter::Create(PluginArgs{{"label", "a=b"}}).ok());
}

// In a profile: jobs stay off the drained node, wait there with the filter's reason when the
// rest is full, and a job that selects the label (a burn-in job) may still use it.
TEST(AvoidLabelsFilterTest, KeepsJobsOffLabelledNodesUnlessTheirSelectorAsksForThem) {
  PluginRegistry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  PipelineConfig profile;
  profile.name = "drained";
  profile.queue_sort = {"fifo", {}, 1};
  profile.filter = {{"avoid_labels", PluginArgs{{"labels", "maintenance=true"}}, 1}};
  profile.score = {{"consolidate", {}, 1}};
  profile.backfill = true;
  const Cluster cluster = ClusterWithADrainedNode();
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, registry);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto submit = [&](testing::JobBuilder job) {
    Result<JobId> id = scheduler.Submit(job.Spec(), kTimeZero);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  };
  const JobId first = submit(MakeJob(0).Gpus(4));
  const JobId second = submit(MakeJob(1).Gpus(1));
  const JobId burn_in = submit(MakeJob(2).Gpus(2).Selector("maintenance=true"));
  scheduler.RunCycle(kTimeZero);
  ASSERT_EQ(scheduler.jobs().at(first).state, JobState::kRunning);
  EXPECT_EQ(scheduler.jobs().at(first).placement.parts.at(0).node, NodeId(1));
  EXPECT_EQ(scheduler.jobs().at(second).state, JobState::kQueued);
  ASSERT_EQ(scheduler.jobs().at(burn_in).state, JobState::kRunning);
  EXPECT_EQ(scheduler.jobs().at(burn_in).placement.parts.at(0).node, NodeId(0));

  const std::vector<PendingReason> reasons = scheduler.ExplainPending(kTimeZero);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].job, second);
  EXPECT_EQ(reasons[0].cause, PendingCause::kNoMatchingGpus);
  EXPECT_NE(reasons[0].reason.find("filter avoid_labels"), std::string::npos) << reasons[0].reason;
  EXPECT_NE(reasons[0].reason.find("the node carries maintenance=true"), std::string::npos)
      << reasons[0].reason;
}

}  // namespace
}  // namespace dlsched
