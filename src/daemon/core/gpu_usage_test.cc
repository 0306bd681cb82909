#include "daemon/core/gpu_usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace dlsched::daemon {
namespace {

// Process groups of a made-up process table: pids 100.. are job 3's (group 100), 200.. job 5's
// (group 200), 999 another user's; other pids have gone.
int FakeGroupOf(int pid) {
  if (pid >= 100 && pid < 110) return 100;
  if (pid >= 200 && pid < 210) return 200;
  if (pid == 999) return 999;
  return -1;
}

const std::map<int, JobId> kGroups = {{100, JobId(3)}, {200, JobId(5)}};

TEST(GpuUsageTest, ProcessesAreAttributedToJobsThroughTheirProcessGroups) {
  GpuSample sample;
  sample.devices = {
      {0, 9000, 40960, 0.5, 0.1, {{100, 1000}, {101, 500}, {999, 7000}, {12345, 100}}},
      {1, 3000, 40960, 0.9, 0.2, {{102, 2000}, {200, 800}, {201, -1}}},
      {2, 0, 40960, 0.0, 0.0, {}},
  };
  const std::vector<JobGpuObservation> got = AttributeGpuSample(sample, kGroups, FakeGroupOf);
  // Job 3: 1500 MiB on GPU 0, 2000 on GPU 1 (the most on one GPU), utilisation the mean of both.
  // Job 5: 800 MiB (a process the driver cannot measure counts 0). The rest are no job's.
  const std::vector<JobGpuObservation> want = {{JobId(3), 2000, (0.5 + 0.9) / 2},
                                               {JobId(5), 800, 0.9}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(AttributeGpuSample(sample, {}, FakeGroupOf).empty());
}

TEST(GpuUsageTest, ProcessGroupOfARealProcess) {
  EXPECT_EQ(ProcessGroupOf(getpid()), getpgid(0));
  EXPECT_EQ(ProcessGroupOf(0), -1);
}

TEST(GpuUsageTest, TheBookKeepsLatestPeakCountAndHistory) {
  GpuUsageBook book;
  EXPECT_EQ(book.Find(JobId(3)), nullptr);
  EXPECT_EQ(book.History(JobId(3)), nullptr);
  const std::shared_ptr<const std::map<JobId, JobGpuUsage>> empty = book.Published();
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(book.Published(), empty);  // unchanged: the same copy

  book.Record({JobId(3), 2000, 0.5}, AtSeconds(10));
  book.Record({JobId(3), 5000, 0.7}, AtSeconds(11));
  book.Record({JobId(3), 1000, 0.2}, AtSeconds(12));
  JobGpuUsage want{1000, 5000, 0.2, 3, AtSeconds(12)};
  want.recent = std::make_shared<const std::vector<GpuUsagePoint>>(std::vector<GpuUsagePoint>{
      {AtSeconds(10), 2000, 0.5}, {AtSeconds(11), 5000, 0.7}, {AtSeconds(12), 1000, 0.2}});
  ASSERT_NE(book.Find(JobId(3)), nullptr);
  EXPECT_EQ(*book.Find(JobId(3)), want);
  ASSERT_NE(book.History(JobId(3)), nullptr);
  EXPECT_EQ(book.History(JobId(3))->size(), 3u);
  EXPECT_EQ(book.History(JobId(3))->MemoryPercentileMib(50), 2000);
  const std::shared_ptr<const std::map<JobId, JobGpuUsage>> published = book.Published();
  EXPECT_NE(published, empty);
  EXPECT_EQ(published->at(JobId(3)), want);
}

TEST(GpuUsageTest, RestoreBringsBackTotalsAndTheNewestSamples) {
  GpuUsageBook book;
  book.Record({JobId(1), 123, 0.1}, AtSeconds(1));
  const std::vector<GpuSampleTotals> totals = {{3, 40, 9000}, {4, 1, 10}};
  const std::vector<GpuSampleRow> newest = {
      {3, AtSeconds(20), 3000, 0.4}, {3, AtSeconds(21), 2500, 0.6}, {4, AtSeconds(5), 10, 0.0}};
  book.Restore(totals, newest);
  EXPECT_EQ(book.Find(JobId(1)), nullptr);
  JobGpuUsage want3{2500, 9000, 0.6, 40, AtSeconds(21)};
  want3.recent = std::make_shared<const std::vector<GpuUsagePoint>>(
      std::vector<GpuUsagePoint>{{AtSeconds(20), 3000, 0.4}, {AtSeconds(21), 2500, 0.6}});
  ASSERT_NE(book.Find(JobId(3)), nullptr);
  EXPECT_EQ(*book.Find(JobId(3)), want3);
  EXPECT_EQ(book.History(JobId(3))->size(), 2u);
  EXPECT_EQ(book.Find(JobId(4))->samples, 1);
  EXPECT_EQ(book.Published()->size(), 2u);
}

TEST(GpuUsageTest, RecentKeepsTheLatestObservationsOnly) {
  GpuUsageBook book;
  for (size_t i = 0; i < JobGpuUsage::kRecent + 5; ++i) {
    book.Record({JobId(2), static_cast<int64_t>(i), 0.5}, AtSeconds(static_cast<int64_t>(i)));
  }
  const std::shared_ptr<const std::map<JobId, JobGpuUsage>> before = book.Published();
  const std::vector<GpuUsagePoint>& recent = *before->at(JobId(2)).recent;
  ASSERT_EQ(recent.size(), JobGpuUsage::kRecent);
  EXPECT_EQ(recent.front().memory_mib, 5);  // the first five were dropped
  EXPECT_EQ(recent.back().memory_mib, static_cast<int64_t>(JobGpuUsage::kRecent + 4));
  EXPECT_EQ(before->at(JobId(2)).samples, static_cast<int64_t>(JobGpuUsage::kRecent + 5));
  // A published snapshot's series never changes: the next observation makes a new one.
  book.Record({JobId(2), 999, 0.1}, AtSeconds(1000));
  EXPECT_EQ(recent.back().memory_mib, static_cast<int64_t>(JobGpuUsage::kRecent + 4));
  EXPECT_EQ(book.Find(JobId(2))->recent->back().memory_mib, 999);
}

}  // namespace
}  // namespace dlsched::daemon
