#include "plugins/queue_sort/deadline_sorts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "support/builders.h"
#include "support/order_cases.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using testing::ExpectOrder;
using testing::MakeJob;

// `job` with a deadline `at` (none when nullopt).
Job Due(Job job, std::optional<Timestamp> at) {
  job.spec.deadline = at;
  return job;
}

// Less is a strict weak order without ties on `jobs` (a total order), at `now`.
void ExpectTotalOrder(const QueueSortPlugin& sort, const std::vector<Job>& jobs, Timestamp now) {
  for (const Job& x : jobs) {
    for (const Job& y : jobs) {
      const JobView a(x, now);
      const JobView b(y, now);
      if (x.id == y.id) {
        EXPECT_FALSE(sort.Less(a, b));
      } else {
        EXPECT_NE(sort.Less(a, b), sort.Less(b, a)) << x.id.value() << " vs " << y.id.value();
      }
      for (const Job& z : jobs) {
        const JobView c(z, now);
        if (sort.Less(a, b) && sort.Less(b, c)) {
          EXPECT_TRUE(sort.Less(a, c));
        }
      }
    }
  }
}

TEST(EdfSortTest, EarliestDeadlineFirstThenJobsWithoutOneInFifoOrder) {
  EdfSort sort;
  ExpectOrder(
      sort,
      {
          {"earlier deadline first", Due(MakeJob(2).Submit(seconds(5)).Build(), AtSeconds(100)),
           Due(MakeJob(1).Build(), AtSeconds(200)), true},
          {"later deadline second", Due(MakeJob(1).Build(), AtSeconds(300)),
           Due(MakeJob(2).Submit(seconds(5)).Build(), AtSeconds(200)), false},
          {"a deadline beats none, even submitted later",
           Due(MakeJob(2).Submit(seconds(50)).Build(), AtSeconds(1e6)), MakeJob(1).Build(), true},
          {"none after a deadline", MakeJob(1).Build(),
           Due(MakeJob(2).Submit(seconds(50)).Build(), AtSeconds(1e6)), false},
          {"no deadlines: fifo", MakeJob(2).Submit(seconds(1)).Build(),
           MakeJob(1).Submit(seconds(2)).Build(), true},
          {"equal deadlines: submit time", Due(MakeJob(2).Submit(seconds(1)).Build(), AtSeconds(9)),
           Due(MakeJob(1).Submit(seconds(2)).Build(), AtSeconds(9)), true},
          {"equal deadline and submit: id", Due(MakeJob(1).Build(), AtSeconds(9)),
           Due(MakeJob(2).Build(), AtSeconds(9)), true},
          {"work does not matter", Due(MakeJob(1).Work(seconds(5000)).Build(), AtSeconds(10)),
           Due(MakeJob(2).Work(seconds(1)).Build(), AtSeconds(11)), true},
      });
}

TEST(EdfSortTest, BestEffortShortestFirstOrdersJobsWithoutADeadlineByGpuTime) {
  EdfSort sort(/*best_effort_shortest_first=*/true);
  ExpectOrder(
      sort,
      {
          {"less GPU-time first, though submitted later",
           MakeJob(2).Submit(seconds(50)).Gpus(2).Estimate(seconds(100), seconds(100)).Build(),
           MakeJob(1).Gpus(1).Estimate(seconds(300), seconds(300)).Build(), true},
          {"more GPU-time second", MakeJob(1).Gpus(4).Estimate(seconds(100), seconds(100)).Build(),
           MakeJob(2).Submit(seconds(50)).Gpus(1).Estimate(seconds(300), seconds(300)).Build(),
           false},
          {"equal GPU-time: fifo",
           MakeJob(2).Submit(seconds(1)).Estimate(seconds(9), seconds(9)).Build(),
           MakeJob(1).Submit(seconds(2)).Estimate(seconds(9), seconds(9)).Build(), true},
          {"any deadline first, even the latest",
           Due(MakeJob(2).Estimate(seconds(1000000), seconds(1000000)).Build(), AtSeconds(1e9)),
           MakeJob(1).Estimate(seconds(1), seconds(1)).Build(), true},
          {"a huge estimate stays after the deadlines", Due(MakeJob(1).Build(), AtSeconds(1e9)),
           MakeJob(2).Estimate(Duration::max() / 8, Duration::max() / 8).Build(), true},
      });
  EXPECT_TRUE(EdfSort::Create(PluginArgs({{"best_effort_shortest_first", "true"}})).ok());
  EXPECT_FALSE(EdfSort::Create(PluginArgs({{"best_effort_shortest_first", "soon"}})).ok());
}

TEST(LaxitySortTest, LeastLaxityFirstThenJobsWithoutOneInFifoOrder) {
  LaxitySort sort;
  ExpectOrder(
      sort,
      {
          // Laxity keys: deadline - estimated remaining.
          {"less slack first, though its deadline is later",
           Due(MakeJob(1).Estimate(seconds(900), seconds(900)).Build(), AtSeconds(1000)),  // 100
           Due(MakeJob(2).Estimate(seconds(100), seconds(100)).Build(), AtSeconds(500)),   // 400
           true},
          {"more slack second",
           Due(MakeJob(1).Estimate(seconds(10), seconds(10)).Build(), AtSeconds(500)),     // 490
           Due(MakeJob(2).Estimate(seconds(600), seconds(600)).Build(), AtSeconds(1000)),  // 400
           false},
          {"remaining, not total, counts (a resumed job)",
           Due(MakeJob(1).Estimate(seconds(900), seconds(100)).Build(), AtSeconds(1000)),  // 900
           Due(MakeJob(2).Estimate(seconds(300), seconds(300)).Build(), AtSeconds(1000)),  // 700
           false},
          {"negative laxity (already late) is most urgent",
           Due(MakeJob(2).Estimate(seconds(500), seconds(500)).Build(), AtSeconds(100)),
           Due(MakeJob(1).Estimate(seconds(0), seconds(0)).Build(), AtSeconds(50)), true},
          {"a deadline beats none", Due(MakeJob(2).Submit(seconds(9)).Build(), AtSeconds(1e7)),
           MakeJob(1).Estimate(seconds(1), seconds(1)).Build(), true},
          {"no deadlines: fifo, not work", MakeJob(1).Estimate(seconds(900), seconds(900)).Build(),
           MakeJob(2).Submit(seconds(1)).Estimate(seconds(1), seconds(1)).Build(), true},
          {"equal laxity: submit time",
           Due(MakeJob(2).Submit(seconds(1)).Estimate(seconds(10), seconds(10)).Build(),
               AtSeconds(110)),
           Due(MakeJob(1).Submit(seconds(2)).Estimate(seconds(20), seconds(20)).Build(),
               AtSeconds(120)),
           true},
      });
}

TEST(LaxitySortTest, ARunningJobsCurrentSegmentCountsAsDone) {
  LaxitySort sort;
  // Running since t = 0 with 600 s remaining at its last checkpoint, deadline 1000: key 400 at
  // t = 0, 700 at t = 300 (its laxity stays 400; the waiting job's shrinks as time passes).
  const Job running = Due(
      MakeJob(1).Estimate(seconds(600), seconds(600)).Running(kTimeZero).Build(), AtSeconds(1000));
  const Job waiting =
      Due(MakeJob(2).Estimate(seconds(100), seconds(100)).Build(), AtSeconds(600));  // key 500
  EXPECT_EQ(LaxitySort::LaxityKey(JobView(running, AtSeconds(300))), AtSeconds(700));
  EXPECT_EQ(LaxitySort::LaxityKey(JobView(waiting, AtSeconds(300))), AtSeconds(500));
  EXPECT_TRUE(sort.Less(JobView(running, AtSeconds(50)), JobView(waiting, AtSeconds(50))));
  EXPECT_FALSE(sort.Less(JobView(running, AtSeconds(300)), JobView(waiting, AtSeconds(300))));
  // A job without a deadline has the largest key.
  EXPECT_EQ(LaxitySort::LaxityKey(JobView(MakeJob(3).Build(), kTimeZero)), kTimeNever);
}

TEST(LaxitySortTest, TwoRunningJobsNeverSwapWhileTheyRun) {
  LaxitySort sort;
  // Different start times, estimates and deadlines; one outlives its estimate.
  const Job a = Due(MakeJob(1).Estimate(seconds(100), seconds(100)).Running(AtSeconds(10)).Build(),
                    AtSeconds(400));  // key at 10 s: 300
  const Job b = Due(MakeJob(2).Estimate(seconds(500), seconds(500)).Running(AtSeconds(60)).Build(),
                    AtSeconds(900));  // key at 60 s: 400; a's key then: 350
  const bool want = sort.Less(JobView(a, AtSeconds(60)), JobView(b, AtSeconds(60)));
  EXPECT_TRUE(want);
  for (int t : {60, 61, 200, 1000, 100000}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(sort.Less(JobView(a, AtSeconds(t)), JobView(b, AtSeconds(t))), want);
    EXPECT_EQ(sort.NextRankChange(JobView(a, AtSeconds(t)), AtSeconds(t)), kTimeNever);
  }
}

TEST(DeadlineSortsTest, AreTotalOrders) {
  const std::vector<Job> jobs = {
      Due(MakeJob(0).Estimate(seconds(50), seconds(50)).Build(), AtSeconds(100)),
      Due(MakeJob(1).Estimate(seconds(60), seconds(10)).Build(), AtSeconds(100)),
      Due(MakeJob(2).Submit(seconds(5)).Estimate(seconds(50), seconds(50)).Build(), AtSeconds(100)),
      Due(MakeJob(3).Estimate(seconds(20), seconds(20)).Running(kTimeZero).Build(), AtSeconds(80)),
      Due(MakeJob(4).Estimate(seconds(500), seconds(500)).Build(), AtSeconds(90)),
      MakeJob(5).Submit(seconds(3)).Build(),
      MakeJob(6).Submit(seconds(3)).Build(),
      MakeJob(7).Running(kTimeZero).Build(),
  };
  for (int t : {0, 30, 1000}) {
    SCOPED_TRACE(t);
    {
      SCOPED_TRACE("edf");
      ExpectTotalOrder(EdfSort(), jobs, AtSeconds(t));
    }
    {
      SCOPED_TRACE("edf, best-effort shortest first");
      ExpectTotalOrder(EdfSort(true), jobs, AtSeconds(t));
    }
    {
      SCOPED_TRACE("laxity");
      ExpectTotalOrder(LaxitySort(), jobs, AtSeconds(t));
    }
  }
}

TEST(DeadlineSortsTest, CreateRejectsArguments) {
  EXPECT_TRUE(EdfSort::Create(PluginArgs()).ok());
  EXPECT_TRUE(LaxitySort::Create(PluginArgs()).ok());
  EXPECT_FALSE(EdfSort::Create(PluginArgs({{"quantum_s", "5"}})).ok());
  EXPECT_FALSE(LaxitySort::Create(PluginArgs({{"nope", "1"}})).ok());
}

}  // namespace
}  // namespace dlsched
