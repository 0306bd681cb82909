#include "plugins/queue_sort/queue_sorts.h"

#include <gtest/gtest.h>

#include "support/builders.h"
#include "support/order_cases.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using testing::ExpectOrder;
using testing::MakeJob;

TEST(FifoSortTest, OrdersBySubmitThenId) {
  FifoSort sort;
  ExpectOrder(sort, {
                        {"earlier first", MakeJob(2).Submit(seconds(1)).Build(),
                         MakeJob(1).Submit(seconds(2)).Build(), true},
                        {"later second", MakeJob(1).Submit(seconds(5)).Build(),
                         MakeJob(2).Submit(seconds(2)).Build(), false},
                        {"tie breaks on id", MakeJob(1).Build(), MakeJob(2).Build(), true},
                    });
}

TEST(SjfSortTest, OrdersByEstimatedGpuTime) {
  SjfSort sort;
  ExpectOrder(sort,
              {
                  {"shorter first", MakeJob(2).Work(seconds(10)).Build(),
                   MakeJob(1).Work(seconds(20)).Build(), true},
                  {"wide short job weighs its GPUs", MakeJob(1).Work(seconds(10)).Gpus(8).Build(),
                   MakeJob(2).Work(seconds(40)).Build(), false},
                  {"equal work falls back to fifo", MakeJob(1).Work(seconds(10)).Build(),
                   MakeJob(2).Work(seconds(10)).Build(), true},
              });
}

TEST(SrtfSortTest, OrdersByRemainingAndCountsTheRunningSegment) {
  SrtfSort sort;
  ExpectOrder(sort,
              {
                  {"less remaining first", MakeJob(2).Estimate(seconds(100), seconds(10)).Build(),
                   MakeJob(1).Estimate(seconds(20), seconds(20)).Build(), true},
              });
  // A job running for 50 s of its 60 s remaining has 10 s left: ahead of a 20 s waiting job.
  const Job running = MakeJob(1).Estimate(seconds(60), seconds(60)).Running(kTimeZero).Build();
  const Job waiting = MakeJob(2).Estimate(seconds(20), seconds(20)).Build();
  const Timestamp now = AtSeconds(50);
  EXPECT_TRUE(sort.Less(JobView(running, now), JobView(waiting, now)));
  EXPECT_FALSE(sort.Less(JobView(running, AtSeconds(30)), JobView(waiting, AtSeconds(30))));
}

TEST(LasSortTest, OrdersByAttainedServiceAsOfTheLastGridPoint) {
  LasSort sort(seconds(10));
  ExpectOrder(sort, {
                        {"less attained first", MakeJob(2).Attained(seconds(10)).Build(),
                         MakeJob(1).Attained(seconds(20)).Build(), true},
                        {"tie breaks on submit", MakeJob(2).Submit(seconds(1)).Build(),
                         MakeJob(1).Submit(seconds(2)).Build(), true},
                    });
  // Running on 4 GPUs since t=0: it ranks by what it had at the last 10 s grid point.
  const Job running = MakeJob(1).Gpus(4).Attained(seconds(0)).Running(kTimeZero).Build();
  const Job waiting = MakeJob(2).Attained(seconds(30)).Build();
  auto running_first = [&](double t) {
    return sort.Less(JobView(running, AtSeconds(t)), JobView(waiting, AtSeconds(t)));
  };
  EXPECT_TRUE(running_first(5));    // grid 0: 0 GPU-s attained
  EXPECT_FALSE(running_first(10));  // grid 10: 40 GPU-s
  EXPECT_FALSE(running_first(19));  // still 40 GPU-s until the next grid point
}

TEST(LasSortTest, WakesOnAGlobalQuantumGrid) {
  LasSort sort(seconds(600));
  const Job running = MakeJob(1).Running(AtSeconds(17)).Build();
  EXPECT_EQ(sort.NextRankChange(JobView(running, AtSeconds(17)), AtSeconds(17)), AtSeconds(600));
  EXPECT_EQ(sort.NextRankChange(JobView(running, AtSeconds(600)), AtSeconds(600)), AtSeconds(1200));
}

TEST(TiresiasSortTest, DiscretisesIntoQueuesThenFifo) {
  TiresiasSort sort({seconds(100), seconds(1000)});
  EXPECT_EQ(sort.QueueOf(seconds(0)), 0);
  EXPECT_EQ(sort.QueueOf(seconds(99)), 0);
  EXPECT_EQ(sort.QueueOf(seconds(100)), 1);
  EXPECT_EQ(sort.QueueOf(seconds(5000)), 2);
  ExpectOrder(
      sort, {
                {"same queue: fifo even with more service",
                 MakeJob(1).Submit(seconds(1)).Attained(seconds(90)).Build(),
                 MakeJob(2).Submit(seconds(2)).Attained(seconds(0)).Build(), true},
                {"lower queue first", MakeJob(1).Submit(seconds(1)).Attained(seconds(150)).Build(),
                 MakeJob(2).Submit(seconds(2)).Attained(seconds(0)).Build(), false},
            });
}

TEST(TiresiasSortTest, WakesExactlyWhenAThresholdIsCrossed) {
  TiresiasSort sort({seconds(100), seconds(1000)});
  // 2 GPUs, 40 GPU-s attained: 60 GPU-s to the first threshold = 30 s.
  const Job job = MakeJob(1).Gpus(2).Attained(seconds(40)).Running(AtSeconds(10)).Build();
  EXPECT_EQ(sort.NextRankChange(JobView(job, AtSeconds(10)), AtSeconds(10)), AtSeconds(40));
  // Past the last threshold, nothing changes any more.
  const Job old = MakeJob(2).Attained(seconds(5000)).Running(AtSeconds(10)).Build();
  EXPECT_EQ(sort.NextRankChange(JobView(old, AtSeconds(10)), AtSeconds(10)), kTimeNever);
  // A CPU job attains no GPU time: it stays in its queue.
  const Job cpu_job = MakeJob(3).Gpus(0).Host(4).Running(AtSeconds(10)).Build();
  EXPECT_EQ(sort.NextRankChange(JobView(cpu_job, AtSeconds(10)), AtSeconds(10)), kTimeNever);
}

TEST(PrioritySortTest, HigherPriorityFirst) {
  PrioritySort sort;
  ExpectOrder(sort, {
                        {"higher first", MakeJob(2).Priority(5).Submit(seconds(9)).Build(),
                         MakeJob(1).Priority(1).Build(), true},
                        {"equal: fifo", MakeJob(1).Priority(1).Build(),
                         MakeJob(2).Priority(1).Build(), true},
                    });
}

PluginArgs Args(std::string key, std::string value) {
  std::map<std::string, std::string, std::less<>> values;
  values.emplace(std::move(key), std::move(value));
  return PluginArgs(std::move(values));
}

TEST(QueueSortCreateTest, RejectsBadArguments) {
  EXPECT_FALSE(TiresiasSort::Create(Args("thresholds_gpu_s", "10,5")).ok());
  EXPECT_FALSE(TiresiasSort::Create(Args("thresholds_gpu_s", "x")).ok());
  EXPECT_FALSE(LasSort::Create(Args("quantum_s", "0")).ok());
  EXPECT_FALSE(FifoSort::Create(Args("typo", "1")).ok());
  EXPECT_TRUE(LasSort::Create(Args("quantum_s", "60")).ok());
}

}  // namespace
}  // namespace dlsched
