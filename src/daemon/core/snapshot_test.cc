#include "daemon/core/snapshot.h"

#include <gtest/gtest.h>

namespace dlsched::daemon {
namespace {

std::shared_ptr<const JobRecord> Record(uint32_t id, JobState state) {
  auto r = std::make_shared<JobRecord>();
  r->id = JobId(id);
  r->state = state;
  return r;
}

TEST(JobIndexTest, PublishedCopiesNeverChange) {
  JobIndex index;
  const size_t n = JobIndex::kChunkSize * 2 + 5;
  for (uint32_t i = 0; i < n; ++i) index.Set(Record(i, JobState::kQueued));
  index.Seal();
  const JobIndex published = index;  // what a snapshot holds

  index.Set(Record(3, JobState::kRunning));
  index.Set(Record(static_cast<uint32_t>(n), JobState::kPending));  // append
  index.Seal();

  EXPECT_EQ(published.size(), n);
  EXPECT_EQ(published.Find(JobId(3))->state, JobState::kQueued);
  EXPECT_EQ(published.Find(JobId(static_cast<uint32_t>(n))), nullptr);
  EXPECT_EQ(index.size(), n + 1);
  EXPECT_EQ(index.Find(JobId(3))->state, JobState::kRunning);
  EXPECT_EQ(index.at(n).state, JobState::kPending);
  // Untouched chunks are shared, not copied.
  EXPECT_EQ(published.Find(JobId(static_cast<uint32_t>(JobIndex::kChunkSize + 1))),
            index.Find(JobId(static_cast<uint32_t>(JobIndex::kChunkSize + 1))));
  EXPECT_EQ(index.Find(JobId()), nullptr);
}

TEST(DaemonMetricsTest, CycleHistogramBuckets) {
  DaemonMetrics m;
  m.RecordCycle(0.00005);  // first bucket
  m.RecordCycle(0.003);    // le 0.005
  m.RecordCycle(100);      // +Inf
  EXPECT_EQ(m.cycles, 3u);
  EXPECT_EQ(m.cycle_buckets[0], 1u);
  EXPECT_EQ(m.cycle_buckets[5], 1u);
  EXPECT_EQ(m.cycle_buckets.back(), 1u);
  EXPECT_DOUBLE_EQ(m.cycle_seconds_sum, 100.00305);
  EXPECT_DOUBLE_EQ(m.cycle_seconds_max, 100);
}

}  // namespace
}  // namespace dlsched::daemon
