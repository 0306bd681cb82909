#include "plugins/score/relative_speedup.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dlsched/policy/context.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using testing::MakeCluster;
using testing::MakeJob;

// Speed-ups by model on the fast type (the slow type runs every model at 1): what a fitted
// predictor would say of a table such as Gavel's.
class ByModelSpeed final : public ThroughputModel {
 public:
  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override {
    const bool fast =
        cluster.gpu_type_name(cluster.node_gpu_type(placement.parts.front().node)) == "V100";
    if (!fast) return 1;
    const auto it = kFastSpeed.find(spec.model);
    return it == kFastSpeed.end() ? 1 : it->second;
  }

 private:
  const std::map<std::string, double> kFastSpeed = {{"big-gain", 6}, {"small-gain", 1.5}};
};

struct World {
  explicit World(const std::string& spec = "1x1xK80+1x1xV100") : cluster(MakeCluster(spec)) {}
  Cluster cluster;
  ClusterState state{cluster};
  JobTable jobs;
  JobQueue queue{jobs, RankOrder::Fifo()};
  RunningIndex running{jobs, RankOrder::Fifo()};
  ByModelSpeed model;
  Rng rng;
  SchedulingContext Context() {
    return {kTimeZero, cluster, state, jobs, queue, {}, running, model, rng};
  }
  JobId Wait(const std::string& model_name) {
    JobSpec spec = MakeJob(0).Gpus(1).Estimate(seconds(100), seconds(100)).Spec();
    spec.model = model_name;
    const JobId id = jobs.Add(spec);
    queue.Insert(id);
    return id;
  }
};

const NodeId kK80(0);
const NodeId kV100(1);

TEST(RelativeSpeedupScoreTest, AloneAJobTakesItsFastestType) {
  World world;
  const JobId id = world.Wait("small-gain");
  const SchedulingContext ctx = world.Context();
  const RelativeSpeedupScore plugin(16, true);
  const JobView view(world.jobs.at(id), kTimeZero);
  EXPECT_GT(plugin.ScoreNode(view, kV100, 1, 1, ctx), plugin.ScoreNode(view, kK80, 1, 1, ctx));
}

TEST(RelativeSpeedupScoreTest, TheFastTypeGoesToTheJobThatGainsMostOnIt) {
  World world;
  const JobId small = world.Wait("small-gain");
  const JobId big = world.Wait("big-gain");
  const SchedulingContext ctx = world.Context();
  const RelativeSpeedupScore plugin(16, true);
  const JobView small_view(world.jobs.at(small), kTimeZero);
  const JobView big_view(world.jobs.at(big), kTimeZero);
  // The job that gains 1.5x leaves the V100 to the one that gains 6x, though it is first.
  EXPECT_GT(plugin.ScoreNode(small_view, kK80, 1, 1, ctx),
            plugin.ScoreNode(small_view, kV100, 1, 1, ctx));
  EXPECT_GT(plugin.ScoreNode(big_view, kV100, 1, 1, ctx),
            plugin.ScoreNode(big_view, kK80, 1, 1, ctx));
  // With no job compared, the first job takes the V100 again.
  const RelativeSpeedupScore alone(0, true);
  EXPECT_GT(alone.ScoreNode(small_view, kV100, 1, 1, ctx),
            alone.ScoreNode(small_view, kK80, 1, 1, ctx));
}

TEST(RelativeSpeedupScoreTest, ADeadlineThatAllowsItTakesTheCheaperTypeElseTheFaster) {
  World world;
  world.Wait("small-gain");
  const SchedulingContext ctx = world.Context();
  const RelativeSpeedupScore plugin(16, true);
  // big-gain needs 100 s on the K80 and 17 s on the V100.
  Job job = MakeJob(7).Gpus(1).Estimate(seconds(100), seconds(100)).Build();
  job.spec.model = "big-gain";
  job.spec.deadline = AtSeconds(500);
  const JobView loose(job, kTimeZero);
  EXPECT_GT(plugin.ScoreNode(loose, kK80, 1, 1, ctx), plugin.ScoreNode(loose, kV100, 1, 1, ctx));
  job.spec.deadline = AtSeconds(50);
  const JobView tight(job, kTimeZero);
  EXPECT_GT(plugin.ScoreNode(tight, kV100, 1, 1, ctx), plugin.ScoreNode(tight, kK80, 1, 1, ctx));
  // Without the fallback the deadline is ignored: it takes its fastest type.
  const RelativeSpeedupScore no_fallback(0, false);
  job.spec.deadline = AtSeconds(500);
  EXPECT_GT(no_fallback.ScoreNode(loose, kV100, 1, 1, ctx),
            no_fallback.ScoreNode(loose, kK80, 1, 1, ctx));
}

TEST(RelativeSpeedupScoreTest, OneGpuTypeLeavesTheChoiceToTheOtherScores) {
  World world("2x1xV100");
  const JobId id = world.Wait("big-gain");
  const SchedulingContext ctx = world.Context();
  const RelativeSpeedupScore plugin(16, true);
  const JobView view(world.jobs.at(id), kTimeZero);
  EXPECT_EQ(plugin.ScoreNode(view, NodeId(0), 1, 1, ctx), 0);
}

TEST(RelativeSpeedupScoreTest, CreateChecksItsArguments) {
  EXPECT_TRUE(RelativeSpeedupScore::Create({{"compare_jobs", "8"}}).ok());
  EXPECT_FALSE(RelativeSpeedupScore::Create({{"compare_jobs", "-1"}}).ok());
  EXPECT_FALSE(RelativeSpeedupScore::Create({{"compare", "8"}}).ok());
}

}  // namespace
}  // namespace dlsched
