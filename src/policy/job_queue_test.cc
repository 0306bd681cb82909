#include "dlsched/policy/job_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;

// Higher priority first (then submit time, then id).
class ByPriority final : public QueueSortPlugin {
 public:
  std::string_view Name() const override { return "by-priority"; }
  int64_t Rank(const JobView& job) const override { return -job.priority(); }
};

class JobQueueTest : public ::testing::Test {
 protected:
  JobId Add(int gpus, int priority, Duration waiting_since) {
    const JobId id =
        jobs_.Add(testing::MakeJob(0).Gpus(gpus).Priority(priority).Submit(waiting_since).Spec());
    jobs_.at(id).queued_since = Timestamp(waiting_since);
    return id;
  }
  std::vector<JobId> Order() const { return queue_.InOrder(); }

  ByPriority by_priority_;
  RankOrder order_{&by_priority_, {}, /*by_tenant=*/false};
  JobTable jobs_;
  JobQueue queue_{jobs_, order_};
};

TEST_F(JobQueueTest, KeepsPolicyOrderWaitOrderAndGangSplitsInStep) {
  const JobId a = Add(1, 0, seconds(30));
  const JobId b = Add(4, 5, seconds(20));
  const JobId c = Add(1, 9, seconds(10));
  for (JobId id : {a, b, c}) queue_.Insert(id);
  EXPECT_THAT(Order(), ElementsAre(c, b, a));
  EXPECT_EQ(queue_.oldest_wait(), Timestamp(seconds(10)));
  EXPECT_EQ(queue_.by_gang_order().at(1).size(), 2u);
  EXPECT_EQ(queue_.by_gang_order().at(1).begin()->id, c);
  EXPECT_EQ(queue_.by_gang_wait().at(4).begin()->second, b);
  EXPECT_TRUE(queue_.Before(c, a));

  queue_.Erase(c);
  EXPECT_THAT(Order(), ElementsAre(b, a));
  EXPECT_EQ(queue_.oldest_wait(), Timestamp(seconds(20)));
  EXPECT_EQ(queue_.by_gang_order().at(1).size(), 1u);
  EXPECT_EQ(queue_.by_gang_wait().at(1).size(), 1u);
  EXPECT_EQ(queue_.size(), 2u);
}

TEST_F(JobQueueTest, WalksMergeTheGangSizesAndSkipGangsTooLarge) {
  const JobId a = Add(8, 1, seconds(40));
  const JobId b = Add(2, 7, seconds(50));
  const JobId c = Add(1, 3, seconds(10));
  const JobId d = Add(2, 5, seconds(30));
  for (JobId id : {a, b, c, d}) queue_.Insert(id);
  EXPECT_THAT(Order(), ElementsAre(b, d, c, a));

  auto in_order = queue_.WalkInOrder();
  EXPECT_EQ(in_order.Next(kAnyGang)->id, b);
  EXPECT_EQ(in_order.Next(1)->id, c);  // d, of the 2-GPU gangs, is passed over for good
  EXPECT_EQ(in_order.Next(kAnyGang)->id, a);
  EXPECT_EQ(in_order.Next(kAnyGang), std::nullopt);

  auto by_wait = queue_.WalkByWait();
  std::vector<JobId> waited;
  while (auto entry = by_wait.Next(kAnyGang)) waited.push_back(entry->second);
  EXPECT_THAT(waited, ElementsAre(c, d, a, b));
}

TEST(JobQueueByTenantTest, SplitsThePolicyOrderByTenantOnlyWhenAsked) {
  JobTable jobs;
  const auto add = [&](const char* tenant, int gpus, int priority) {
    JobSpec spec = testing::MakeJob(0).Gpus(gpus).Priority(priority).Spec();
    spec.queue = tenant;
    return jobs.Add(std::move(spec));
  };
  const JobId a = add("x", 1, 3);
  const JobId b = add("y", 1, 2);
  const JobId c = add("x", 1, 1);
  const JobId d = add("x", 4, 0);
  const ByPriority by_priority;
  const RankOrder order(&by_priority, {}, /*by_tenant=*/false);
  const RankOrder order_by_tenant(&by_priority, {}, /*by_tenant=*/true);
  JobQueue plain(jobs, order);
  JobQueue by_tenant(jobs, order_by_tenant);
  for (JobId id : {a, b, c, d}) {
    plain.Insert(id);
    by_tenant.Insert(id);
  }
  EXPECT_FALSE(plain.indexes_tenants());
  EXPECT_TRUE(plain.by_tenant_order().empty());
  ASSERT_TRUE(by_tenant.indexes_tenants());
  const auto ids = [&](const std::string& tenant, int gang) {
    std::vector<JobId> out;
    for (const RankKey& key : by_tenant.by_tenant_order().at(tenant).at(gang)) {
      out.push_back(key.id);
    }
    return out;
  };
  EXPECT_THAT(ids("x", 1), ElementsAre(a, c));
  EXPECT_THAT(ids("x", 4), ElementsAre(d));
  EXPECT_THAT(ids("y", 1), ElementsAre(b));
  EXPECT_EQ(by_tenant.by_tenant_order().at("x").at(1).begin()->rank, by_tenant.KeyOf(a).rank);

  by_tenant.Erase(a);
  by_tenant.Erase(b);
  EXPECT_THAT(ids("x", 1), ElementsAre(c));
  EXPECT_TRUE(ids("y", 1).empty());  // the tenant stays, empty
  by_tenant.Insert(a);
  EXPECT_THAT(ids("x", 1), ElementsAre(a, c));
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
