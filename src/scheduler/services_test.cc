#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "dlsched/runtime/scheduler.h"
#include "scheduler/scheduler_test_fixture.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeCluster;
using testing::MakeJob;
using testing::Profile;
using testing::RecordingExecutor;
using testing::SchedulerTest;

// ---------------------------------------------------------------------------------------------
// Online services

class ServiceTest : public SchedulerTest {
 protected:
  void Suspend(JobId id, Timestamp at) {
    ASSERT_TRUE(scheduler_->Handle(JobSuspended{id, 0}, at).ok());
  }
  std::vector<JobId> PreemptedSince(size_t call) const {
    std::vector<JobId> ids;
    for (size_t i = call; i < executor_.calls.size(); ++i) {
      if (executor_.calls[i].kind == RecordingExecutor::Call::kPreempt) {
        ids.push_back(executor_.calls[i].job);
      }
    }
    return ids;
  }
};

TEST_F(ServiceTest, ServicesStartFirstAndPoliciesNeverSeeThem) {
  Start("1x8xV100", Profile("fifo", true, /*preempt=*/true));
  const JobId train = Submit(MakeJob(0).Gpus(6).Spec());
  const JobId service = Submit(MakeJob(1).Gpus(4).Service().Spec());
  scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(job(service).state, JobState::kRunning);
  EXPECT_EQ(job(train).state, JobState::kQueued);  // 4 GPUs left after the service
  EXPECT_THAT(scheduler_->running_services(), ElementsAre(service));
  EXPECT_THAT(scheduler_->running(), IsEmpty());
  EXPECT_EQ(scheduler_->queue().size(), 1u);
  EXPECT_EQ(scheduler_->state().free_total(), 4);
}

TEST_F(ServiceTest, AServiceMakesRoomByPreemptingTheLowestRankedTraining) {
  Start("1x8xV100", Profile("priority", true));
  const JobId low = Submit(MakeJob(0).Gpus(4).Priority(0).Spec());
  const JobId high = Submit(MakeJob(1).Gpus(4).Priority(5).Spec());
  scheduler_->RunCycle(kTimeZero);
  const JobId service = Submit(MakeJob(2).Gpus(4).Service().Spec(), AtSeconds(10));
  const size_t before = executor_.calls.size();
  const uint64_t revision = scheduler_->running_changes().revision();
  const CycleResult cycle = scheduler_->RunCycle(AtSeconds(10));
  EXPECT_EQ(cycle.preempted(), 1);
  EXPECT_THAT(PreemptedSince(before), ElementsAre(low));
  std::vector<JobId> logged;  // asked to stop: in the log of the running set
  ASSERT_TRUE(scheduler_->running_changes().Since(revision, logged));
  EXPECT_THAT(logged, ElementsAre(low));
  EXPECT_TRUE(cycle.preemptions[0].for_service);
  EXPECT_EQ(job(service).state, JobState::kQueued);
  EXPECT_THAT(job(service).reason, ::testing::HasSubstr("give back GPUs"));

  Suspend(low, AtSeconds(20));
  scheduler_->RunCycle(AtSeconds(20));
  EXPECT_EQ(job(service).state, JobState::kRunning);  // on the GPUs `low` gave back
  EXPECT_EQ(job(low).state, JobState::kSuspended);    // ... which it does not get back
  EXPECT_EQ(job(high).state, JobState::kRunning);
  EXPECT_EQ(scheduler_->service_yields(), 1);
}

TEST_F(ServiceTest, IdleReservedGpusAreLentAndTakenBackWhenTheLoadRises) {
  Start("1x8xV100", Profile("fifo", true));
  // Needs all 8 GPUs, then only 2 from 1 h to 2 h, then 8 again.
  const JobId service = Submit(MakeJob(0).Gpus(8).Service("0:8;3600:2;7200:8").Spec());
  const JobId borrower = Submit(MakeJob(1).Gpus(4).Spec());
  CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(job(borrower).state, JobState::kQueued);
  EXPECT_EQ(cycle.wake_at, AtSeconds(3600));  // the load's next step

  cycle = scheduler_->RunCycle(AtSeconds(3600));
  EXPECT_EQ(job(borrower).state, JobState::kRunning);
  EXPECT_EQ(job(borrower).loaned_gpus, 4);
  EXPECT_EQ(scheduler_->state().free_total(), 2);  // lent, still free
  EXPECT_EQ(cycle.wake_at, AtSeconds(7200));

  const size_t before = executor_.calls.size();
  cycle = scheduler_->RunCycle(AtSeconds(7200));
  EXPECT_THAT(PreemptedSince(before), ElementsAre(borrower));  // yields to the service
  EXPECT_EQ(scheduler_->state().free_total(), 0);  // the free lent GPUs came back at once
  Suspend(borrower, AtSeconds(7210));
  scheduler_->RunCycle(AtSeconds(7210));
  EXPECT_EQ(job(borrower).state, JobState::kSuspended);
  EXPECT_EQ(scheduler_->state().free_total(), 0);
  EXPECT_EQ(job(service).state, JobState::kRunning);
  EXPECT_EQ(scheduler_->service_yields(), 1);
  EXPECT_EQ(scheduler_->lent_gpu_time(AtSeconds(9000)), seconds(4 * 3610));
  // The service lacked the borrower's 4 GPUs while it checkpointed.
  EXPECT_EQ(scheduler_->service_shortfall_gpu_time(), seconds(4 * 10));
}

TEST_F(ServiceTest, AStoppingServiceLeavesItsBorrowersTheirGpus) {
  Start("1x8xV100", Profile("fifo", true));
  const JobId service = Submit(MakeJob(0).Gpus(8).Service("0:2").Spec());
  const JobId borrower = Submit(MakeJob(1).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  ASSERT_EQ(job(borrower).state, JobState::kRunning);
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{service, JobState::kSucceeded, ""}, AtSeconds(100)).ok());
  EXPECT_EQ(scheduler_->state().free_total(), 4);
  EXPECT_EQ(job(borrower).loaned_gpus, 0);
  EXPECT_EQ(scheduler_->lent_gpu_time(AtSeconds(500)), seconds(4 * 100));
  scheduler_->RunCycle(AtSeconds(500));  // nothing to take back from
  EXPECT_EQ(job(borrower).state, JobState::kRunning);
}

TEST_F(ServiceTest, CancellingAWaitingServiceTakesItOutOfLine) {
  Start("1x4xV100", Profile("fifo", true));
  Submit(MakeJob(0).Gpus(4).Service().Spec());
  const JobId second = Submit(MakeJob(1).Gpus(4).Service().Spec());
  scheduler_->RunCycle(kTimeZero);
  EXPECT_THAT(scheduler_->waiting_services(), ElementsAre(second));
  EXPECT_THAT(job(second).reason, ::testing::HasSubstr("other services hold the rest"));
  ASSERT_TRUE(scheduler_->Handle(JobCancelRequested{second}, AtSeconds(1)).ok());
  EXPECT_THAT(scheduler_->waiting_services(), IsEmpty());
  EXPECT_EQ(job(second).state, JobState::kKilled);
}

TEST_F(ServiceTest, RestoreAdoptsLoansInEitherOrder) {
  Start("1x8xV100", Profile("fifo", true));
  const JobId service = Submit(MakeJob(0).Gpus(8).Service("0:2;3600:8").Spec());
  const JobId borrower = Submit(MakeJob(1).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  ASSERT_EQ(job(borrower).loaned_gpus, 4);
  const auto restored = [&](JobId id) {
    const Job& j = job(id);
    Scheduler::RestoredJob r;
    r.spec = j.spec;
    r.state = j.state;
    r.placement = j.placement;
    r.segment_start = j.segment_start;
    r.first_start = j.first_start;
    return r;
  };
  for (bool service_first : {true, false}) {
    SCOPED_TRACE(service_first ? "service first" : "borrower first");
    RecordingExecutor executor;
    auto policy = BuildPipeline(Profile("fifo", true), InTreeRegistry());
    ASSERT_TRUE(policy.ok());
    Scheduler again(cluster_, std::move(policy).value(), executor, model_, 1);
    for (JobId id :
         service_first ? std::vector{service, borrower} : std::vector{borrower, service}) {
      ASSERT_TRUE(again.Restore(restored(id)).ok());
    }
    const JobId restored_borrower = service_first ? JobId(1) : JobId(0);
    EXPECT_EQ(again.jobs().at(restored_borrower).loaned_gpus, 4);
    // Only the borrowed GPUs are lent again; the next cycle lends or takes back per the load.
    EXPECT_EQ(again.state().free_total(), 0);
    again.RunCycle(AtSeconds(3600));  // the service needs all 8 again
    EXPECT_THAT(executor.Preempted(), ElementsAre(restored_borrower));
  }
  // Two training jobs on one GPU is no loan.
  RecordingExecutor executor;
  auto policy = BuildPipeline(Profile("fifo", true), InTreeRegistry());
  ASSERT_TRUE(policy.ok());
  Scheduler again(cluster_, std::move(policy).value(), executor, model_, 1);
  ASSERT_TRUE(again.Restore(restored(borrower)).ok());
  EXPECT_FALSE(again.Restore(restored(borrower)).ok());
}

}  // namespace
}  // namespace dlsched
