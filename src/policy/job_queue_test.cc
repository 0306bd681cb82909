#include "dlsched/policy/job_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;

// Orders by priority (higher first), then id.
bool ByPriority(const JobView& a, const JobView& b) {
  if (a.priority() != b.priority()) return a.priority() > b.priority();
  return a.id() < b.id();
}

class JobQueueTest : public ::testing::Test {
 protected:
  JobId Add(int gpus, int priority, Duration waiting_since) {
    const JobId id =
        jobs_.Add(testing::MakeJob(0).Gpus(gpus).Priority(priority).Submit(waiting_since).Spec());
    jobs_.at(id).queued_since = Timestamp(waiting_since);
    return id;
  }
  std::vector<JobId> Order() const { return {queue_.by_order().begin(), queue_.by_order().end()}; }

  JobTable jobs_;
  JobQueue queue_{jobs_, ByPriority};
};

TEST_F(JobQueueTest, KeepsPolicyOrderWaitOrderAndGangSplitsInStep) {
  const JobId a = Add(1, 0, seconds(30));
  const JobId b = Add(4, 5, seconds(20));
  const JobId c = Add(1, 9, seconds(10));
  for (JobId id : {a, b, c}) queue_.Insert(id);
  EXPECT_THAT(Order(), ElementsAre(c, b, a));
  EXPECT_EQ(queue_.by_wait().begin()->second, c);
  EXPECT_EQ(queue_.by_gang_order().at(1).size(), 2u);
  EXPECT_EQ(*queue_.by_gang_order().at(1).begin(), c);
  EXPECT_EQ(queue_.by_gang_wait().at(4).begin()->second, b);
  EXPECT_TRUE(queue_.Before(c, a));

  queue_.Erase(c);
  EXPECT_THAT(Order(), ElementsAre(b, a));
  EXPECT_EQ(queue_.by_wait().begin()->second, b);
  EXPECT_EQ(queue_.by_gang_order().at(1).size(), 1u);
  EXPECT_EQ(queue_.by_gang_wait().at(1).size(), 1u);
  EXPECT_EQ(queue_.size(), 2u);
}

TEST_F(JobQueueTest, InsertingTwiceIsAnInvariantViolation) {
  const JobId a = Add(1, 0, seconds(0));
  queue_.Insert(a);
  EXPECT_DEATH(queue_.Insert(a), "already queued");
  queue_.Erase(a);
  EXPECT_DEATH(queue_.Erase(a), "not queued");
}

}  // namespace
}  // namespace dlsched
