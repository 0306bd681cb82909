#include "plugins/score/deadline_fit.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "dlsched/policy/context.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using testing::MakeCluster;
using testing::MakeJob;

TEST(DeadlineFitScoreTest, PicksTheSlowestTypeThatMeetsTheDeadlineElseTheFastest) {
  // Node 0: K80 (0.2 of a V100 in the built-in model), node 1: V100.
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  ClusterState state(cluster);
  JobTable jobs;
  JobQueue queue(jobs, RankOrder::Fifo());
  RunningIndex running(jobs, RankOrder::Fifo());
  SimpleThroughputModel model;
  Rng rng;
  const SchedulingContext ctx{kTimeZero, cluster, state, jobs, queue, {}, running, model, rng};
  const DeadlineFitScore plugin;
  const NodeId k80(0);
  const NodeId v100(1);

  struct Case {
    std::string name;
    std::optional<double> deadline_s;  // the job needs 100 s on a V100, 500 s on a K80
    std::optional<NodeId> best;        // nullopt: no preference
  };
  const std::vector<Case> cases = {
      {"a loose deadline goes to the cheaper K80", 600, k80},
      {"a tight one needs the V100", 200, v100},
      {"one missed everywhere takes the fastest", 50, v100},
      {"no deadline: no preference", std::nullopt, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Job job = MakeJob(1).Gpus(1).Estimate(seconds(100), seconds(100)).Build();
    if (c.deadline_s) job.spec.deadline = AtSeconds(*c.deadline_s);
    const JobView view(job, kTimeZero);
    const double on_k80 = plugin.ScoreNode(view, k80, 1, 1, ctx);
    const double on_v100 = plugin.ScoreNode(view, v100, 1, 1, ctx);
    if (!c.best) {
      EXPECT_EQ(on_k80, 0);
      EXPECT_EQ(on_v100, 0);
    } else if (*c.best == k80) {
      EXPECT_GT(on_k80, on_v100);
    } else {
      EXPECT_GT(on_v100, on_k80);
    }
  }
}

}  // namespace
}  // namespace dlsched
