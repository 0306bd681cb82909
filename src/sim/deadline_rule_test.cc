#include "sim/deadline_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched::sim {
namespace {

using ::testing::HasSubstr;
using testing::MakeJob;

std::vector<JobSpec> Jobs(int n) {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back(MakeJob(i).Submit(Seconds(10.0 * i)).Work(Seconds(100.0 + i)).Spec());
  }
  return jobs;
}

TEST(DeadlineRuleTest, DeadlinesFollowTheSlackOfTheIdealRunTime) {
  Result<DeadlineRule> rule = ParseDeadlineRule("slack=2:4,strict=1");
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  std::vector<JobSpec> jobs = Jobs(500);
  EXPECT_EQ(ApplyDeadlineRule(*rule, jobs), 500);
  double lowest = 10, highest = 0;
  for (const JobSpec& job : jobs) {
    ASSERT_TRUE(job.deadline.has_value());
    EXPECT_EQ(job.qos, QosClass::kStrict);
    const double slack =
        ToSeconds(*job.deadline - job.submit_time) / ToSeconds(job.ideal_duration());
    lowest = std::min(lowest, slack);
    highest = std::max(highest, slack);
  }
  EXPECT_GE(lowest, 2.0 - 1e-6);
  EXPECT_LE(highest, 4.0 + 1e-6);
  EXPECT_LT(lowest, 2.1);  // the whole range is used
  EXPECT_GT(highest, 3.9);
}

TEST(DeadlineRuleTest, SharesSplitTheClassesAndLeaveTheRestBestEffort) {
  Result<DeadlineRule> rule = ParseDeadlineRule("strict=0.3,soft=0.2,seed=9");
  ASSERT_TRUE(rule.ok());
  std::vector<JobSpec> jobs = Jobs(10000);
  jobs[0].deadline = AtSeconds(5);  // kept as the trace gives it
  jobs[1].service = ServiceLoad{};  // services have no deadline
  const int given = ApplyDeadlineRule(*rule, jobs);
  int strict = 0, soft = 0, none = 0;
  for (const JobSpec& job : jobs) {
    if (!job.deadline) ++none;
    if (job.deadline && job.qos == QosClass::kStrict) ++strict;
    if (job.qos == QosClass::kSoft) ++soft;
  }
  EXPECT_EQ(given, strict + soft);  // jobs[0] keeps its deadline and its best-effort class
  EXPECT_EQ(jobs[0].deadline, AtSeconds(5));
  EXPECT_FALSE(jobs[1].deadline.has_value());
  EXPECT_NEAR(strict / 10000.0, 0.3, 0.02);
  EXPECT_NEAR(soft / 10000.0, 0.2, 0.02);
  EXPECT_NEAR(none / 10000.0, 0.5, 0.02);
}

TEST(DeadlineRuleTest, AJobsDrawDependsOnlyOnItsPositionAndTheSeed) {
  const DeadlineRule rule{1.5, 3.0, 0.5, 0.0, 4};
  std::vector<JobSpec> all = Jobs(100);
  std::vector<JobSpec> first = Jobs(10);
  ApplyDeadlineRule(rule, all);
  ApplyDeadlineRule(rule, first);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].deadline, all[i].deadline);
  std::vector<JobSpec> other = Jobs(100);
  ApplyDeadlineRule(DeadlineRule{1.5, 3.0, 0.5, 0.0, 5}, other);
  int differ = 0;
  for (size_t i = 0; i < all.size(); ++i) differ += other[i].deadline != all[i].deadline;
  EXPECT_GT(differ, 10);
}

TEST(DeadlineRuleTest, BadRulesNameTheKey) {
  const struct {
    const char* text;
    const char* want;
  } cases[] = {
      {"slack=0:2", "slack=0:2"}, {"slack=3:2", "slack=3:2"},
      {"slack=x", "slack=x"},     {"strict=1.5", "strict=1.5"},
      {"soft=-0.1", "soft=-0.1"}, {"strict=0.7,soft=0.5", "at most 1"},
      {"colour=red", "colour"},   {"strict", "key=value"},
      {"seed=-1", "seed=-1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    Result<DeadlineRule> rule = ParseDeadlineRule(c.text);
    ASSERT_FALSE(rule.ok());
    EXPECT_THAT(rule.status().message(), HasSubstr(c.want));
  }
  Result<DeadlineRule> one = ParseDeadlineRule("slack=2");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->slack_lo, 2);
  EXPECT_EQ(one->slack_hi, 2);
}

}  // namespace
}  // namespace dlsched::sim
