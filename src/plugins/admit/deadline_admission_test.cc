#include "plugins/admit/deadline_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "dlsched/policy/context.h"
#include "support/builders.h"
#include "support/world.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeJob;

// An idle cluster and the built-in estimator (V100 1.0, A100 1.9; -15% across nodes).
using testing::World;

// A job of `gpus` GPUs and `ideal` run time at the reference speed, of class `qos`, due at
// `deadline` (none when nullopt).
Job MakeQosJob(int gpus, Duration ideal, QosClass qos, std::optional<Timestamp> deadline) {
  Job job = MakeJob(1).Gpus(gpus).Work(ideal).Build();
  job.spec.qos = qos;
  job.spec.deadline = deadline;
  return job;
}

TEST(DeadlineAdmissionTest, Table) {
  World world("2x8xV100+2x4xA100");
  struct Case {
    std::string name;
    Job job;
    Timestamp now;
    bool want_ok;
    std::vector<std::string> want_reason;  // substrings
  };
  auto with_type = [](Job job, std::string type) {
    job.spec.gpu_type = std::move(type);
    return job;
  };
  // The scheduler's run-time estimate (Job::estimated_total), whatever its source.
  auto with_estimate = [](Job job, Duration estimate) {
    job.estimated_total = job.estimated_remaining = estimate;
    return job;
  };
  const Duration hour = seconds(3600);
  const std::vector<Case> cases = {
      // One A100 runs 3600 s of reference work in 3600 / 1.9 = 1894.7 s.
      {"fits on the fastest type",
       MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(1900)),
       kTimeZero,
       true,
       {}},
      {"misses even on the fastest type",
       MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(1800)),
       kTimeZero,
       false,
       {"strict deadline cannot be met", "alone on 1 A100 GPUs (1 node)", "estimated 31.6m",
        "1.6m after its deadline"}},
      {"a required type bounds the best case",
       with_type(MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(3000)), "V100"),
       kTimeZero,
       false,
       {"1 V100 GPUs (1 node)", "estimated 1.0h", "10.0m after"}},
      // 8 GPUs: one V100 node (3600 s) or two A100 nodes (3600 / (1.9 x 0.85) = 2229 s).
      {"a gang wider than a node of the fastest type spans nodes",
       MakeQosJob(8, hour, QosClass::kStrict, AtSeconds(2300)),
       kTimeZero,
       true,
       {}},
      {"and misses when even that is too slow",
       MakeQosJob(8, hour, QosClass::kStrict, AtSeconds(2000)),
       kTimeZero,
       false,
       {"8 A100 GPUs (2 nodes)", "estimated 37.2m"}},
      {"the run-time estimate, not the ideal duration, counts",
       with_estimate(MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(3000)), 2 * hour),
       kTimeZero,
       false,
       {"estimated 1.1h"}},
      {"time already waited counts",
       MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(1900)),
       AtSeconds(100),
       false,
       {"1.6m after its deadline"}},
      {"a deadline already past",
       MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(10)),
       AtSeconds(20),
       false,
       {"after its deadline"}},
      {"soft jobs are admitted",
       MakeQosJob(1, hour, QosClass::kSoft, AtSeconds(1)),
       kTimeZero,
       true,
       {}},
      {"best-effort jobs are admitted",
       MakeQosJob(1, hour, QosClass::kBestEffort, AtSeconds(1)),
       kTimeZero,
       true,
       {}},
      {"strict without a deadline is admitted",
       MakeQosJob(1, hour, QosClass::kStrict, std::nullopt),
       kTimeZero,
       true,
       {}},
      {"a job no type can hold is left to feasibility",
       MakeQosJob(64, hour, QosClass::kStrict, AtSeconds(1)),
       kTimeZero,
       true,
       {}},
      {"an unknown required type is left to feasibility",
       with_type(MakeQosJob(1, hour, QosClass::kStrict, AtSeconds(1)), "H100"),
       kTimeZero,
       true,
       {}},
  };
  DeadlineAdmission admission;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SchedulingContext ctx = world.Context(c.now);
    const Fit fit = admission.Admit(JobView(c.job, c.now), ctx);
    EXPECT_EQ(fit.ok, c.want_ok) << fit.reason;
    for (const std::string& want : c.want_reason) EXPECT_THAT(fit.reason, HasSubstr(want));
  }
}

TEST(DeadlineAdmissionTest, BestCasePlacementIsConsolidatedOnTheFastestType) {
  const Cluster cluster = MakeCluster("2x8xV100+3x4xA100");  // nodes 0-1 V100, 2-4 A100
  const SimpleThroughputModel model;
  const JobSpec one = MakeJob(1).Gpus(4).Work(seconds(1900)).Spec();
  const auto best = DeadlineAdmission::FindBestCase(one, one.ideal_duration(), cluster, model);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(cluster.gpu_type_name(best->type), "A100");
  ASSERT_EQ(best->placement.num_nodes(), 1);
  EXPECT_EQ(best->placement.parts[0].node, NodeId(2));
  EXPECT_EQ(best->placement.num_gpus(), 4);
  EXPECT_EQ(best->run_time, seconds(1000));

  // 10 A100s take all three A100 nodes, in ascending node order.
  const auto wide =
      DeadlineAdmission::FindBestCase(MakeJob(2).Gpus(10).Spec(), Hours(1), cluster, model);
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(cluster.gpu_type_name(wide->type), "A100");
  ASSERT_EQ(wide->placement.num_nodes(), 3);
  EXPECT_EQ(wide->placement.num_gpus(), 10);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wide->placement.parts[i].node, NodeId(2 + i));

  // 13 GPUs: only the V100 pool (16) is large enough.
  const auto v100 =
      DeadlineAdmission::FindBestCase(MakeJob(3).Gpus(13).Spec(), Hours(1), cluster, model);
  ASSERT_TRUE(v100.has_value());
  EXPECT_EQ(cluster.gpu_type_name(v100->type), "V100");
  EXPECT_EQ(v100->placement.num_gpus(), 13);

  EXPECT_FALSE(DeadlineAdmission::FindBestCase(MakeJob(4).Gpus(17).Spec(), Hours(1), cluster, model)
                   .has_value());
}

TEST(DeadlineAdmissionTest, CreateTakesNoArguments) {
  EXPECT_TRUE(DeadlineAdmission::Create(PluginArgs()).ok());
  EXPECT_FALSE(DeadlineAdmission::Create(PluginArgs({{"slack_s", "5"}})).ok());
}

}  // namespace
}  // namespace dlsched
