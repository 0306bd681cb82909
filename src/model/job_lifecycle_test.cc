#include "dlsched/model/job_lifecycle.h"

#include <gtest/gtest.h>

namespace dlsched {
namespace {

// Every lifecycle field with a value of its own, none the default.
JobLifecycle Distinct() {
  JobLifecycle l;
  l.state = JobState::kSuspended;
  l.queued_since = Timestamp(Seconds(1));
  l.segment_start = Timestamp(Seconds(2));
  l.first_start = Timestamp(Seconds(3));
  l.finish_time = Timestamp(Seconds(4));
  l.run_time = Seconds(5);
  l.attained_gpu_time = Seconds(6);
  l.iterations_done = 7;
  l.preemptions = 8;
  l.reason = "nine";
  return l;
}

TEST(JobLifecycleTest, SetThenReadGivesBackEveryField) {
  Job job;
  SetLifecycle(job, Distinct());
  EXPECT_EQ(LifecycleOf(job), Distinct());
  EXPECT_EQ(job.state, JobState::kSuspended);
  EXPECT_EQ(job.segment_start, Timestamp(Seconds(2)));
  EXPECT_EQ(job.reason, "nine");
  EXPECT_FALSE(LifecycleOf(Job{}) == Distinct());
}

TEST(JobLifecycleTest, SetChangesNothingElse) {
  Job job;
  job.id = JobId(3);
  job.spec.name = "j";
  job.placement = Placement{{{NodeId(0), 0b11}}};
  job.last_segment = Seconds(10);
  job.loaned_gpus = 2;
  SetLifecycle(job, Distinct());
  EXPECT_EQ(job.id, JobId(3));
  EXPECT_EQ(job.spec.name, "j");
  EXPECT_EQ(job.placement.num_gpus(), 2);
  EXPECT_EQ(job.last_segment, Seconds(10));
  EXPECT_EQ(job.loaned_gpus, 2);
}

}  // namespace
}  // namespace dlsched
