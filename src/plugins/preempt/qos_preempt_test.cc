#include "plugins/preempt/qos_preempt.h"

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

// A job with `remaining` estimated time left (at its last checkpoint), due at `deadline`.
Job DeadlineJob(uint32_t id, Duration remaining, std::optional<Timestamp> deadline) {
  Job job = MakeJob(id).Estimate(remaining, remaining).Build();
  job.spec.deadline = deadline;
  job.spec.qos = deadline ? QosClass::kStrict : QosClass::kBestEffort;
  return job;
}

TEST(QosPreemptTest, Table) {
  const Cluster cluster = MakeCluster("1x1xV100");
  ClusterState state(cluster);
  JobTable jobs;
  JobQueue queue(jobs, RankOrder::Fifo());
  RunningIndex running(jobs, RankOrder::Fifo());
  SimpleThroughputModel model;
  Rng rng;
  const Timestamp now = AtSeconds(10000);
  const SchedulingContext ctx{now, cluster, state, jobs, queue, {}, running, model, rng};
  const QosPreempt plugin(seconds(60), seconds(3600));

  struct Case {
    std::string name;
    Job job;
    Job victim;  // running since t=9000 unless the case says otherwise
    bool ok;
    Timestamp retry_at = kTimeNever;
  };
  // The waiting job needs 1000 s; due at 10000 + 1000 + slack.
  const auto job_with_slack = [&](double slack_s) {
    return DeadlineJob(1, seconds(1000), now + seconds(1000) + Seconds(slack_s));
  };
  std::vector<Case> cases = {
      {"urgent job, best-effort victim", job_with_slack(600), DeadlineJob(2, seconds(5000), {}),
       true},
      {"a best-effort job never preempts", DeadlineJob(1, seconds(1000), {}),
       DeadlineJob(2, seconds(5000), {}), false},
      {"a job with slack waits until it is urgent", job_with_slack(5000),
       DeadlineJob(2, seconds(5000), {}), false, now + seconds(5000 - 3600)},
      // The victim has 4000 s left (its 1000 s segment counts as done) and is due in 6000 s:
      // after waiting 1000 s it still makes it.
      {"a deadline victim that can afford the wait", job_with_slack(0),
       DeadlineJob(2, seconds(5000), now + seconds(6000)), true},
      {"a deadline victim that cannot", job_with_slack(0),
       DeadlineJob(2, seconds(5000), now + seconds(4500)), false},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    c.victim.state = JobState::kRunning;
    c.victim.segment_start = AtSeconds(9000);
    const Fit fit = plugin.MayPreempt(JobView(c.job, now), JobView(c.victim, now), ctx);
    EXPECT_EQ(fit.ok, c.ok) << fit.reason;
    EXPECT_EQ(fit.retry_at, c.retry_at);
    // The job's part refuses alike for every victim, and passes where the victim decides.
    const Fit any = plugin.MayPreemptAny(JobView(c.job, now), ctx);
    EXPECT_EQ(any.ok, fit.ok || fit.reason == "victim's deadline") << any.reason;
    if (!any.ok) {
      EXPECT_EQ(any.reason, fit.reason);
      EXPECT_EQ(any.retry_at, fit.retry_at);
    }
  }
}

TEST(QosPreemptTest, VictimsRunTheirMinimumFirstAndArgumentsAreChecked) {
  Job victim = DeadlineJob(2, seconds(5000), {});
  victim.segment_start = AtSeconds(100);
  EXPECT_EQ(QosPreempt(seconds(60), seconds(0)).VictimFrom(JobView(victim, AtSeconds(120))),
            AtSeconds(160));
  EXPECT_FALSE(QosPreempt::Create(PluginArgs({{"min_run_s", "-1"}})).ok());
  EXPECT_FALSE(QosPreempt::Create(PluginArgs({{"urgent_slack_s", "-1"}})).ok());
  EXPECT_FALSE(QosPreempt::Create(PluginArgs({{"slack", "1"}})).ok());
  EXPECT_TRUE(QosPreempt::Create(PluginArgs({{"urgent_slack_s", "0"}})).ok());
}

}  // namespace
}  // namespace dlsched
