#include "plugins/queue_sort/multi_priority.h"

#include <gtest/gtest.h>

#include "support/builders.h"
#include "support/order_cases.h"

namespace dlsched {
namespace {

using std::chrono::hours;
using testing::ExpectOrder;
using testing::MakeJob;

Job InQueue(uint32_t id, const std::string& queue, Duration submit) {
  Job job = MakeJob(id).Submit(submit).Build();
  job.spec.queue = queue;
  return job;
}

TEST(MultiPrioritySortTest, ComposesQueueClassPriorityAgingSizeAndRemainingWork) {
  MultiPrioritySort::Weights w;
  w.queue_weights = {{"prod", 10}};
  w.priority_weight = 2;
  w.wait_weight = 1;
  w.remaining_weight = 0.5;
  w.size_weight = 1;
  const MultiPrioritySort sort(w);
  ExpectOrder(sort,
              {
                  {"the production queue outranks 9 hours of waiting", InQueue(1, "prod", hours(9)),
                   InQueue(2, "dev", hours(0)), true},
                  {"but not 11", InQueue(1, "prod", hours(11)), InQueue(2, "dev", hours(0)), false},
                  {"priority 1 is worth 2 hours of waiting",
                   MakeJob(1).Priority(1).Submit(hours(1)).Build(),
                   MakeJob(2).Submit(hours(0)).Build(), true},
                  {"a GPU more costs more than half an hour of waiting", MakeJob(1).Gpus(2).Build(),
                   MakeJob(2).Submit(std::chrono::minutes(30)).Build(), false},
                  {"4 hours less remaining work is worth 2 hours",
                   MakeJob(1).Submit(hours(1)).Estimate(hours(1), hours(1)).Build(),
                   MakeJob(2).Estimate(hours(5), hours(5)).Build(), true},
              });
}

TEST(MultiPrioritySortTest, SlackRanksByLatestStartAndTreatsNoDeadlineAsAWeekOut) {
  MultiPrioritySort::Weights w;
  w.wait_weight = 0;
  w.slack_weight = 1;
  const MultiPrioritySort sort(w);
  Job due_soon = MakeJob(1).Submit(hours(1)).Estimate(hours(2), hours(2)).Build();
  due_soon.spec.deadline = kTimeZero + hours(5);  // latest start at 3 h
  Job due_later = MakeJob(2).Estimate(hours(2), hours(2)).Build();
  due_later.spec.deadline = kTimeZero + hours(10);  // latest start at 8 h
  const Job no_deadline = MakeJob(3).Build();       // counts as latest start 168 h
  ExpectOrder(sort, {
                        {"less slack first", due_soon, due_later, true},
                        {"any near deadline before none", due_later, no_deadline, true},
                    });
}

TEST(MultiPrioritySortTest, RejectsUnknownArgumentsAndBadQueueWeights) {
  EXPECT_FALSE(MultiPrioritySort::Create(PluginArgs({{"wait_weigth", "1"}})).ok());
  EXPECT_FALSE(MultiPrioritySort::Create(PluginArgs({{"queue_weights", "prod"}})).ok());
  auto ok = MultiPrioritySort::Create(PluginArgs({{"queue_weights", "prod=3,dev=-1"}}));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

}  // namespace
}  // namespace dlsched
