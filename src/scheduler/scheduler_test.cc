#include "dlsched/runtime/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/policy/pipeline.h"
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

TEST_F(SchedulerTest, LaunchesWhatFitsAndAssumesTheGpus) {
  Start("1x4xV100", Profile("fifo", false));
  const JobId a = Submit(MakeJob(0).Gpus(2).Spec());
  const JobId b = Submit(MakeJob(1).Gpus(2).Spec());
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.launched(), 2);
  EXPECT_THAT(executor_.Launched(), ElementsAre(a, b));
  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_EQ(scheduler_->state().free_total(), 0);
}

TEST_F(SchedulerTest, StrictFifoBlocksBehindTheHeadButBackfillDoesNot) {
  for (bool backfill : {false, true}) {
    SCOPED_TRACE(backfill ? "backfill" : "strict");
    executor_.calls.clear();
    Start("1x4xV100", Profile("fifo", backfill));
    Submit(MakeJob(0).Gpus(3).Spec());
    scheduler_->RunCycle(kTimeZero);
    Submit(MakeJob(1).Gpus(4).Spec(), AtSeconds(1));  // blocked: 1 GPU free
    const JobId small = Submit(MakeJob(2).Gpus(1).Spec(), AtSeconds(2));
    scheduler_->RunCycle(AtSeconds(2));
    EXPECT_EQ(job(small).state, backfill ? JobState::kRunning : JobState::kQueued);
  }
}

TEST_F(SchedulerTest, RejectsAJobThatCanNeverFitWithAReason) {
  Start("2x4xV100", Profile("fifo", false));
  const JobId wide = Submit(MakeJob(0).Gpus(16).Spec());
  const JobId typed = Submit(MakeJob(1).GpuType("A100").Spec());
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.rejected(), 2);
  EXPECT_EQ(cycle.admitted(), 0);
  EXPECT_EQ(job(wide).state, JobState::kRejected);
  EXPECT_THAT(job(wide).reason, ::testing::HasSubstr("needs 16 GPUs"));
  EXPECT_THAT(job(typed).reason, ::testing::HasSubstr("A100"));
  ASSERT_EQ(cycle.rejections.size(), 2u);
  EXPECT_EQ(cycle.rejections[0].job, wide);
  EXPECT_EQ(cycle.rejections[0].reason, job(wide).reason);
  EXPECT_EQ(cycle.rejections[1].job, typed);
  EXPECT_EQ(cycle.rejections[1].reason, job(typed).reason);
}

TEST_F(SchedulerTest, FinishReleasesGpusAndRecordsService) {
  Start("1x4xV100", Profile("fifo", false));
  const JobId a = Submit(MakeJob(0).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a, JobState::kSucceeded, ""}, AtSeconds(10)).ok());
  EXPECT_EQ(job(a).state, JobState::kSucceeded);
  EXPECT_EQ(job(a).attained_gpu_time, seconds(40));
  EXPECT_EQ(job(a).finish_time, AtSeconds(10));
  EXPECT_EQ(scheduler_->state().free_total(), 4);
  EXPECT_THAT(scheduler_->running(), IsEmpty());
}

// Records what the scheduler tells it and answers a fixed estimate.
class RecordingRuntimeEstimator final : public RuntimeEstimator {
 public:
  struct Observation {
    std::string name;
    Duration run_time;
    Timestamp finish;
  };
  std::string_view Name() const override { return "recording"; }
  Duration EstimateTotal(const JobSpec&, Timestamp now) override {
    asked_at.push_back(now);
    return estimate;
  }
  void Observe(const JobSpec& spec, Duration run_time, Timestamp finish) override {
    observed.push_back({spec.name, run_time, finish});
  }
  Duration estimate = seconds(500);
  std::vector<Timestamp> asked_at;
  std::vector<Observation> observed;
};

TEST_F(SchedulerTest, RunTimeEstimatesComeFromTheEstimatorWhichLearnsFromSucceededJobs) {
  Start("1x8xV100", Profile("srtf", false));
  RecordingRuntimeEstimator estimator;
  scheduler_->set_runtime_estimator(&estimator);
  JobSpec spec = MakeJob(0).Gpus(4).Work(seconds(100)).Spec();
  spec.name = "a";
  const JobId a = Submit(spec);
  spec.name = "b";
  const JobId b = Submit(spec);
  scheduler_->RunCycle(AtSeconds(1));
  // Admission asked at the cycle's time; the job's own work (100 s) is not the estimate.
  ASSERT_FALSE(estimator.asked_at.empty());
  EXPECT_EQ(estimator.asked_at.front(), AtSeconds(1));
  EXPECT_EQ(job(a).estimated_total, seconds(500));
  EXPECT_EQ(job(b).estimated_remaining, seconds(500));
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a, JobState::kSucceeded, ""}, AtSeconds(101)).ok());
  ASSERT_TRUE(scheduler_->Handle(JobFinished{b, JobState::kKilled, ""}, AtSeconds(101)).ok());
  ASSERT_EQ(estimator.observed.size(), 1u) << "only succeeded jobs teach it";
  EXPECT_EQ(estimator.observed[0].name, "a");
  EXPECT_EQ(estimator.observed[0].run_time, seconds(100));
  EXPECT_EQ(estimator.observed[0].finish, AtSeconds(101));

  // A restored history teaches it too.
  Start("1x4xV100", Profile("srtf", false));
  RecordingRuntimeEstimator restored;
  scheduler_->set_runtime_estimator(&restored);
  Scheduler::RestoredJob done;
  done.spec = MakeJob(0).Spec();
  done.spec.name = "old";
  done.state = JobState::kSucceeded;
  done.run_time = seconds(70);
  done.finish_time = AtSeconds(90);
  ASSERT_TRUE(scheduler_->Restore(done).ok());
  ASSERT_EQ(restored.observed.size(), 1u);
  EXPECT_EQ(restored.observed[0].name, "old");
  EXPECT_EQ(restored.observed[0].run_time, seconds(70));
  EXPECT_EQ(restored.observed[0].finish, AtSeconds(90));
}

TEST_F(SchedulerTest, EventsThatDoNotMatchTheStateChangeNothing) {
  Start("1x4xV100", Profile("fifo", false));
  const JobId a = Submit(MakeJob(0).Spec());
  // Not yet running: a finish or a suspension is refused.
  EXPECT_EQ(scheduler_->Handle(JobFinished{a, JobState::kSucceeded, ""}, kTimeZero).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(scheduler_->Handle(JobSuspended{a, 0}, kTimeZero).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(scheduler_->Handle(JobFinished{JobId(99), JobState::kSucceeded, ""}, kTimeZero).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(job(a).state, JobState::kPending);
}

TEST_F(SchedulerTest, InvalidSpecIsRefusedAndNotStored) {
  Start("1x4xV100", Profile("fifo", false));
  JobSpec spec = MakeJob(0).Spec();
  spec.num_gpus = 0;
  EXPECT_EQ(scheduler_->Submit(spec, kTimeZero).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler_->jobs().size(), 0u);
}

TEST_F(SchedulerTest, PreemptionHoldsGpusUntilTheVictimHasStopped) {
  Start("1x4xV100", Profile("las", true, /*preempt=*/true));
  const JobId old_job = Submit(MakeJob(0).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  // After 100 s the old job has 400 GPU-s; a newcomer with none outranks it under LAS.
  const JobId newcomer = Submit(MakeJob(1).Gpus(4).Spec(), AtSeconds(100));
  const uint64_t revision = scheduler_->running_changes().revision();
  CycleResult cycle = scheduler_->RunCycle(AtSeconds(100));
  EXPECT_EQ(cycle.preempted(), 1);
  EXPECT_THAT(executor_.Preempted(), ElementsAre(old_job));
  // Still running, but asked to stop: logged for the policies that keep what running jobs are.
  std::vector<JobId> logged;
  ASSERT_TRUE(scheduler_->running_changes().Since(revision, logged));
  EXPECT_THAT(logged, ElementsAre(old_job));
  EXPECT_EQ(job(newcomer).state, JobState::kQueued);
  // Asked to stop, it is no victim for later searches to walk past (RunningIndex::Stopping).
  EXPECT_TRUE(scheduler_->running_by_rank().victims().empty());
  EXPECT_EQ(scheduler_->running_by_rank().size(), 1u);
  // Until the victim confirms, its GPUs are not free and nothing else is launched.
  cycle = scheduler_->RunCycle(AtSeconds(101));
  EXPECT_EQ(cycle.launched(), 0);
  EXPECT_EQ(cycle.preempted(), 0);  // not asked twice
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{old_job, 100}, AtSeconds(130)).ok());
  EXPECT_EQ(job(old_job).state, JobState::kSuspended);
  EXPECT_EQ(job(old_job).preemptions, 1);
  cycle = scheduler_->RunCycle(AtSeconds(130));
  EXPECT_EQ(cycle.launched(), 1);
  EXPECT_EQ(job(newcomer).state, JobState::kRunning);
  // The resumed estimate knows 100 of 3600 iterations are done.
  EXPECT_EQ(job(old_job).estimated_remaining, seconds(3500));
}

TEST_F(SchedulerTest, MinimumRunTimeProtectsAVictimAndSchedulesAWakeUp) {
  Start("1x4xV100", Profile("las", true, /*preempt=*/true, /*min_run_s=*/300));
  Submit(MakeJob(0).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  Submit(MakeJob(1).Gpus(4).Spec(), AtSeconds(100));
  const CycleResult cycle = scheduler_->RunCycle(AtSeconds(100));
  EXPECT_EQ(cycle.preempted(), 0);
  EXPECT_LE(cycle.wake_at, AtSeconds(300));
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(300)).preempted(), 1);
}

TEST_F(SchedulerTest, CancelRemovesAWaitingJobAndKillsARunningOne) {
  Start("1x4xV100", Profile("fifo", false));
  const JobId running = Submit(MakeJob(0).Gpus(4).Spec());
  const JobId waiting = Submit(MakeJob(1).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  ASSERT_TRUE(scheduler_->Handle(JobCancelRequested{waiting}, AtSeconds(1)).ok());
  EXPECT_EQ(job(waiting).state, JobState::kKilled);
  EXPECT_TRUE(scheduler_->queue().empty());
  ASSERT_TRUE(scheduler_->Handle(JobCancelRequested{running}, AtSeconds(2)).ok());
  EXPECT_EQ(executor_.calls.back().kind, RecordingExecutor::Call::kKill);
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{running, JobState::kKilled, "killed"}, AtSeconds(3)).ok());
  EXPECT_EQ(job(running).state, JobState::kKilled);
  EXPECT_EQ(scheduler_->state().free_total(), 4);
}

TEST_F(SchedulerTest, FailedLaunchForgetsTheAllocationAndRequeues) {
  Start("1x4xV100", Profile("fifo", false));
  const JobId a = Submit(MakeJob(0).Gpus(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  ASSERT_TRUE(scheduler_->Handle(JobLaunchFailed{a, "no such binary"}, AtSeconds(1)).ok());
  EXPECT_EQ(job(a).state, JobState::kQueued);
  EXPECT_EQ(scheduler_->state().free_total(), 4);
  EXPECT_THAT(job(a).reason, ::testing::HasSubstr("no such binary"));
}

TEST_F(SchedulerTest, ALaunchThatNeverStartsAvoidsThatGpuTypeThenFails) {
  Start("1x2xK80+1x2xV100", Profile("fifo", false));
  const JobId a = Submit(MakeJob(0).Gpus(2).Spec());
  scheduler_->RunCycle(kTimeZero);
  const auto type_of = [&](JobId id) {
    return std::string(scheduler_->cluster().gpu_type_name(
        scheduler_->cluster().node_gpu_type(job(id).placement.parts.at(0).node)));
  };
  const std::string first = type_of(a);
  ASSERT_TRUE(scheduler_->Handle(JobLaunchFailed{a, "out of memory", true}, AtSeconds(1)).ok());
  EXPECT_EQ(job(a).state, JobState::kQueued);
  EXPECT_THAT(job(a).reason, ::testing::HasSubstr("launch failed on " + first));

  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(a).state, JobState::kRunning);
  EXPECT_NE(type_of(a), first);  // the other type, although the first is free again
  ASSERT_TRUE(scheduler_->Handle(JobLaunchFailed{a, "out of memory", true}, AtSeconds(2)).ok());
  EXPECT_EQ(job(a).state, JobState::kFailed);
  EXPECT_THAT(job(a).reason, ::testing::HasSubstr("no GPU type it could use is left"));
  EXPECT_TRUE(scheduler_->queue().empty());
  EXPECT_EQ(scheduler_->state().free_total(), 4);
}

// A job with `work_s` of work at the reference speed, of class `qos`, due `deadline_s` after t=0.
JobSpec DeadlineJob(uint32_t id, double work_s, QosClass qos, std::optional<double> deadline_s) {
  JobSpec spec = MakeJob(id).Gpus(1).Work(Seconds(work_s)).Spec();
  spec.qos = qos;
  if (deadline_s) spec.deadline = AtSeconds(*deadline_s);
  return spec;
}

TEST_F(SchedulerTest, AWaitingStrictJobIsRejectedOnceItCanNoLongerMeetItsDeadline) {
  PipelineConfig profile = Profile("edf", true);
  profile.reject_late_strict = true;
  Start("1x1xV100", profile);
  const JobId running = Submit(DeadlineJob(0, 1000, QosClass::kBestEffort, std::nullopt));
  scheduler_->RunCycle(kTimeZero);
  // Needs 300 s by t=500: its latest start is t=200.
  const JobId strict = Submit(DeadlineJob(1, 300, QosClass::kStrict, 500), AtSeconds(10));
  const JobId soft = Submit(DeadlineJob(2, 300, QosClass::kSoft, 500), AtSeconds(10));
  scheduler_->RunCycle(AtSeconds(10));
  scheduler_->RunCycle(AtSeconds(200));
  EXPECT_EQ(job(strict).state, JobState::kQueued);
  const CycleResult late = scheduler_->RunCycle(AtSeconds(201));
  EXPECT_EQ(late.rejected(), 1);
  EXPECT_EQ(job(strict).state, JobState::kRejected);
  EXPECT_THAT(job(strict).reason, ::testing::HasSubstr("can no longer be met"));
  EXPECT_EQ(job(soft).state, JobState::kQueued);  // a soft job may still finish late
  EXPECT_EQ(job(running).state, JobState::kRunning);
}

TEST_F(SchedulerTest, LateJobsLastLetsJobsThatCanStillMeetTheirDeadlinesGoFirst) {
  for (const bool late_last : {false, true}) {
    SCOPED_TRACE(late_last);
    PipelineConfig profile = Profile("edf", true);
    profile.late_jobs_last = late_last;
    Start("1x1xV100", profile);
    const JobId first = Submit(DeadlineJob(0, 1000, QosClass::kBestEffort, std::nullopt));
    scheduler_->RunCycle(kTimeZero);
    // Earliest deadline, but late from the start (500 s of work, due at 300).
    const JobId late = Submit(DeadlineJob(1, 500, QosClass::kSoft, 300));
    const JobId on_time = Submit(DeadlineJob(2, 100, QosClass::kSoft, 2000));
    scheduler_->RunCycle(kTimeZero);
    ASSERT_TRUE(
        scheduler_->Handle(JobFinished{first, JobState::kSucceeded, ""}, AtSeconds(1000)).ok());
    scheduler_->RunCycle(AtSeconds(1000));
    EXPECT_EQ(job(late_last ? on_time : late).state, JobState::kRunning);
    EXPECT_EQ(job(late_last ? late : on_time).state, JobState::kQueued);
  }
}

TEST_F(SchedulerTest, ANoDeadlineStarvationGuardLeavesDeadlineJobsToTheirOrder) {
  for (const bool no_deadline_only : {false, true}) {
    SCOPED_TRACE(no_deadline_only);
    PipelineConfig profile = Profile("edf", true);
    profile.starvation_limit = seconds(100);
    profile.starvation_guard_no_deadline_only = no_deadline_only;
    Start("1x1xV100", profile);
    const JobId first = Submit(DeadlineJob(0, 1000, QosClass::kBestEffort, std::nullopt));
    scheduler_->RunCycle(kTimeZero);
    const JobId old_deadline = Submit(DeadlineJob(1, 100, QosClass::kSoft, 5000));
    const JobId old_best_effort =
        Submit(DeadlineJob(2, 100, QosClass::kBestEffort, std::nullopt), AtSeconds(1));
    const JobId urgent = Submit(DeadlineJob(3, 100, QosClass::kSoft, 1500), AtSeconds(2));
    scheduler_->RunCycle(AtSeconds(2));
    ASSERT_TRUE(
        scheduler_->Handle(JobFinished{first, JobState::kSucceeded, ""}, AtSeconds(1000)).ok());
    scheduler_->RunCycle(AtSeconds(1000));
    // All three waited past the limit: the guard takes the longest-waiting one it protects.
    EXPECT_EQ(job(no_deadline_only ? old_best_effort : old_deadline).state, JobState::kRunning);
    EXPECT_EQ(job(urgent).state, JobState::kQueued);
  }
}

TEST_F(SchedulerTest, AnOfflineNodeLeavesThePoolUntilItIsBack) {
  Start("2x2xV100", Profile("fifo", true));
  const JobId a = Submit(MakeJob(0).Gpus(2).Spec());
  scheduler_->RunCycle(kTimeZero);
  const NodeId node = job(a).placement.parts.at(0).node;
  ASSERT_TRUE(scheduler_->SetNodeOnline(node, false).ok());
  // The node's job is lost and requeued: it goes to the other node, never back to this one.
  ASSERT_TRUE(scheduler_->Handle(JobLaunchFailed{a, "node down"}, AtSeconds(1)).ok());
  const JobId b = Submit(MakeJob(1).Gpus(2).Spec(), AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(a).state, JobState::kRunning);
  EXPECT_NE(job(a).placement.parts.at(0).node, node);
  EXPECT_EQ(job(b).state, JobState::kQueued);
  EXPECT_EQ(scheduler_->state().allocated_total(), 2);

  ASSERT_TRUE(scheduler_->SetNodeOnline(node, true).ok());
  scheduler_->RunCycle(AtSeconds(2));
  ASSERT_EQ(job(b).state, JobState::kRunning);
  EXPECT_EQ(job(b).placement.parts.at(0).node, node);
  EXPECT_EQ(scheduler_->SetNodeOnline(NodeId(7), false).code(), StatusCode::kNotFound);
}

TEST_F(SchedulerTest, ExplainsWhyAJobWaits) {
  Start("1x4xV100", Profile("fifo", true));
  Submit(MakeJob(0).Gpus(3).Spec());
  scheduler_->RunCycle(kTimeZero);
  const JobId blocked = Submit(MakeJob(1).Gpus(2).Spec(), AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  const auto reasons = scheduler_->ExplainPending(AtSeconds(1));
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].job, blocked);
  EXPECT_EQ(reasons[0].cause, PendingCause::kGpusBusy);
  EXPECT_THAT(reasons[0].reason,
              ::testing::HasSubstr("waiting for 2 GPUs at once (gang) (1 free)"));
  EXPECT_EQ(job(blocked).state, JobState::kQueued);  // explaining changes nothing
}

TEST_F(SchedulerTest, ExplainsEachCauseOfWaiting) {
  {
    SCOPED_TRACE("no GPU with the required label is free");
    Start("2x4xV100", Profile("fifo", true), {"nvlink=true"});
    const PendingReason r = ExplainWaiting({MakeJob(0).Gpus(4).Selector("nvlink=true").Spec()},
                                           MakeJob(1).Gpus(1).Selector("nvlink=true").Spec());
    EXPECT_EQ(r.cause, PendingCause::kNoMatchingGpus);
    EXPECT_EQ(r.reason,
              "needs 1 GPU on nodes labelled nvlink=true: 0 free there (4 free in total)");
  }
  {
    SCOPED_TRACE("fragmentation across GPU types");
    Start("1x4xK80+1x4xV100", Profile("fifo", true));
    const PendingReason r = ExplainWaiting(
        {MakeJob(0).Gpus(2).GpuType("K80").Spec(), MakeJob(1).Gpus(2).GpuType("V100").Spec()},
        MakeJob(2).Gpus(4).Spec());
    EXPECT_EQ(r.cause, PendingCause::kFragmentation);
  }
  {
    SCOPED_TRACE("held to be consolidated");
    PipelineConfig profile = Profile("fifo", true);
    profile.placement.min_spread_speed = 0.9;
    Start("2x4xV100", profile);
    // One GPU stays free on each node: a 2-GPU gang fits only spread, at 85% of its speed.
    const PendingReason r = ExplainWaiting({MakeJob(0).Gpus(3).Spec(), MakeJob(1).Gpus(3).Spec()},
                                           MakeJob(2).Gpus(2).Spec());
    EXPECT_EQ(r.cause, PendingCause::kConsolidation);
  }
  {
    SCOPED_TRACE("head of line");
    Start("1x4xV100", Profile("fifo", false));
    const PendingReason r = ExplainWaiting({MakeJob(0).Gpus(3).Spec(), MakeJob(1).Gpus(4).Spec()},
                                           MakeJob(2).Gpus(1).Spec());
    EXPECT_EQ(r.cause, PendingCause::kHeadOfLine);
  }
  {
    SCOPED_TRACE("the running jobs rank above it or are protected");
    Start("1x4xV100", Profile("las", true, /*preempt=*/true, /*min_run_s=*/3600));
    const PendingReason r = ExplainWaiting({MakeJob(0).Gpus(4).Spec()}, MakeJob(1).Gpus(1).Spec());
    EXPECT_EQ(r.cause, PendingCause::kLowerPriority);
  }
}

TEST_F(SchedulerTest, ExplainsTheHostResourceCausesOfWaiting) {
  {
    SCOPED_TRACE("GPUs free on nodes that lack the CPUs");
    Start("2x4xV100:8c", Profile("fifo", true));
    // Node 0 keeps 3 GPUs and no CPU free, node 1 3 GPUs and 2 CPUs: enough for 1 GPU's share.
    const PendingReason r =
        ExplainWaiting({MakeJob(0).Gpus(1).Host(8).Spec(), MakeJob(1).Gpus(1).Host(6).Spec()},
                       MakeJob(2).Gpus(2).Host(4).Spec());
    EXPECT_EQ(r.cause, PendingCause::kHostShort);
    EXPECT_EQ(r.reason,
              "needs 2 GPUs with 4 CPUs: 6 GPUs free, but their nodes lack the CPUs or memory "
              "for it (enough for 1)");
  }
  {
    SCOPED_TRACE("CPUs free but no GPUs");
    Start("1x4xV100:32c:65536m", Profile("fifo", true));
    const PendingReason r = ExplainWaiting({MakeJob(0).Gpus(4).Host(8).Spec()},
                                           MakeJob(1).Gpus(1).Host(2, 1024).Spec());
    EXPECT_EQ(r.cause, PendingCause::kGpusBusy);
    EXPECT_EQ(r.reason,
              "waiting for 1 GPU with 2 CPUs and 1024 MiB of host memory (0 free); CPUs free but "
              "no GPUs: 24 CPUs free");
  }
  {
    SCOPED_TRACE("a CPU job waiting for CPUs");
    Start("1x0xcpu:8c+1x4xV100:4c", Profile("fifo", true));
    const PendingReason r =
        ExplainWaiting({MakeJob(0).Gpus(0).Host(6).Spec()}, MakeJob(1).Gpus(0).Host(6).Spec());
    EXPECT_EQ(r.cause, PendingCause::kCpusBusy);
    EXPECT_EQ(r.reason,
              "CPU job waiting for 6 CPUs on one node (6 CPUs free, at most 4 on a node)");
  }
}

TEST_F(SchedulerTest, CpuJobsRunOnCpuOnlyNodesAndGiveTheirCpusBack) {
  Start("1x4xV100:16c+1x0xcpu:8c", Profile("fifo", true));
  const JobId cpu_job = Submit(MakeJob(0).Gpus(0).Host(8, 512).Spec());
  const JobId gpu_job = Submit(MakeJob(1).Gpus(4).Host(16).Spec());
  const JobId second = Submit(MakeJob(2).Gpus(0).Host(4).Spec());
  scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(job(cpu_job).placement,
            (Placement{{{NodeId(1), 0, 8, 0}}}));  // node 1 states no memory
  EXPECT_EQ(job(gpu_job).placement, (Placement{{{NodeId(0), 0b1111, 16, 0}}}));
  EXPECT_EQ(job(second).state, JobState::kQueued);  // every CPU is taken
  EXPECT_EQ(scheduler_->state().free_cpus_total(), 0);
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{cpu_job, JobState::kSucceeded, ""}, AtSeconds(10)).ok());
  scheduler_->RunCycle(AtSeconds(10));
  EXPECT_EQ(job(second).state, JobState::kRunning);
  EXPECT_EQ(job(second).placement, (Placement{{{NodeId(1), 0, 4, 0}}}));
  EXPECT_EQ(scheduler_->state().free_cpus(NodeId(1)), 4);
  EXPECT_EQ(job(cpu_job).attained_gpu_time, Duration(0));  // it held no GPU
}

TEST_F(SchedulerTest, ACpuJobNoNodeCanHoldIsRejected) {
  Start("2x4xV100:16c", Profile("fifo", true));
  const JobId cpu_job = Submit(MakeJob(0).Gpus(0).Host(17).Spec());
  EXPECT_EQ(scheduler_->RunCycle(kTimeZero).rejected(), 1);
  EXPECT_EQ(job(cpu_job).reason,
            "a CPU job needs 17 CPUs on one node; the most a node states is 16");
}

TEST_F(SchedulerTest, AJobShortOfCpusPreemptsForThemButACpuJobNeverStopsGpuWork) {
  Start("1x4xV100:8c", Profile("las", true, /*preempt=*/true));
  const JobId old_job = Submit(MakeJob(0).Gpus(1).Host(8).Spec());
  scheduler_->RunCycle(kTimeZero);
  // At 100 s three GPUs are free but no CPU: a CPU job waits, a GPU job (it outranks the old
  // job under LAS) preempts it for its CPUs.
  const JobId cpu_job = Submit(MakeJob(1).Gpus(0).Host(2).Spec(), AtSeconds(100));
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(100)).preempted(), 0);
  EXPECT_EQ(job(cpu_job).state, JobState::kQueued);
  const JobId newcomer = Submit(MakeJob(2).Gpus(1).Host(4).Spec(), AtSeconds(100));
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(100)).preempted(), 1);
  EXPECT_THAT(executor_.Preempted(), ElementsAre(old_job));
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{old_job, 100}, AtSeconds(110)).ok());
  scheduler_->RunCycle(AtSeconds(110));
  EXPECT_EQ(job(newcomer).state, JobState::kRunning);
  EXPECT_EQ(job(newcomer).placement.parts.at(0).cpus, 4);
}

TEST_F(SchedulerTest, QuotasCapATenantAndReclaimBorrowedGpusForOneBelowItsGuarantee) {
  PipelineConfig profile = Profile("fifo", true, /*preempt=*/true);
  profile.quotas = {{"a", {0.5, 1.0}}, {"b", {0.5, 0.75}}};
  Start("1x4xV100", profile);
  const auto tenant_job = [](uint32_t id, const std::string& tenant, int gpus) {
    JobSpec spec = MakeJob(id).Gpus(gpus).Spec();
    spec.queue = tenant;
    return spec;
  };
  std::vector<JobId> b;
  for (uint32_t i = 0; i < 4; ++i) b.push_back(Submit(tenant_job(i, "b", 1)));
  scheduler_->RunCycle(kTimeZero);
  // b may hold 3 of the 4 GPUs; its fourth job waits on the cap though a GPU is free.
  EXPECT_EQ(job(b[2]).state, JobState::kRunning);
  EXPECT_EQ(job(b[3]).state, JobState::kQueued);
  EXPECT_EQ(scheduler_->state().free_total(), 1);
  auto reasons = scheduler_->ExplainPending(kTimeZero);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].cause, PendingCause::kQuota);
  EXPECT_EQ(reasons[0].reason, "tenant 'b' holds 3 GPUs; its cap is 3");

  // a is guaranteed 2 GPUs: it reclaims one from b (b keeps its guaranteed 2), though FIFO
  // ranks a's later job below all of b's.
  const JobId a = Submit(tenant_job(9, "a", 2), AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_THAT(executor_.Preempted(), ElementsAre(b[2]));  // b's lowest-ranked running job
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{b[2], 0}, AtSeconds(2)).ok());
  scheduler_->RunCycle(AtSeconds(2));
  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_EQ(scheduler_->state().free_total(), 0);
}

// --- Restore (the daemon's restart path, issue 6) ---

Scheduler::RestoredJob Restored(const JobSpec& spec, JobState state) {
  Scheduler::RestoredJob r;
  r.spec = spec;
  r.state = state;
  return r;
}

TEST_F(SchedulerTest, RestoreKeepsIdsStatesAndHeldGpus) {
  Start("1x4xV100", Profile("fifo", true));
  auto done = Restored(MakeJob(0).Spec(), JobState::kSucceeded);
  done.finish_time = AtSeconds(5);
  auto running = Restored(MakeJob(1).Gpus(2).Spec(), JobState::kRunning);
  running.placement = Placement{{{NodeId(0), 0b0011}}};
  running.segment_start = AtSeconds(10);
  running.first_start = AtSeconds(10);
  auto suspended = Restored(MakeJob(2).Gpus(1).Spec(), JobState::kSuspended);
  suspended.iterations_done = 1800;
  suspended.preemptions = 1;
  const auto queued = Restored(MakeJob(3).Gpus(1).Spec(), JobState::kQueued);
  const auto pending = Restored(MakeJob(4).Gpus(4).Spec(), JobState::kPending);

  std::vector<JobId> ids;
  for (const auto& r : {done, running, suspended, queued, pending}) {
    auto id = scheduler_->Restore(r);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  EXPECT_THAT(ids, ElementsAre(JobId(0), JobId(1), JobId(2), JobId(3), JobId(4)));
  EXPECT_EQ(job(JobId(0)).state, JobState::kSucceeded);
  EXPECT_EQ(job(JobId(1)).state, JobState::kRunning);
  EXPECT_EQ(scheduler_->state().free_total(), 2);
  EXPECT_THAT(scheduler_->running(), ElementsAre(JobId(1)));
  EXPECT_EQ(scheduler_->queue().size(), 2u);
  EXPECT_EQ(scheduler_->pending(), 1u);
  EXPECT_EQ(job(JobId(2)).estimated_remaining, job(JobId(2)).estimated_total / 2);
  EXPECT_TRUE(executor_.calls.empty());  // restoring starts nothing

  // New submissions continue the id sequence; the restored jobs schedule as usual.
  EXPECT_EQ(Submit(MakeJob(5).Gpus(1).Spec(), AtSeconds(20)), JobId(5));
  const CycleResult cycle = scheduler_->RunCycle(AtSeconds(20));
  EXPECT_EQ(cycle.launched(), 2);
  EXPECT_THAT(executor_.Launched(), ElementsAre(JobId(2), JobId(3)));
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{JobId(1), JobState::kSucceeded, ""}, AtSeconds(30)).ok());
  EXPECT_EQ(job(JobId(1)).run_time, Seconds(20));
}

TEST_F(SchedulerTest, RestoreRunningOrderPutsTheSavedOrderFirstAndKeepsTheRest) {
  Start("1x4xV100", Profile("fifo", true));
  for (uint32_t i = 0; i < 4; ++i) {
    auto r = Restored(MakeJob(i).Gpus(1).Spec(), JobState::kRunning);
    r.placement = Placement{{{NodeId(0), uint64_t{1} << i}}};
    r.migrations = static_cast<int>(i);
    ASSERT_TRUE(scheduler_->Restore(r).ok());
  }
  EXPECT_EQ(job(JobId(3)).migrations, 3);
  ASSERT_THAT(scheduler_->running(), ElementsAre(JobId(0), JobId(1), JobId(2), JobId(3)));
  // Job 7 does not exist and job 2 is listed twice: both are skipped.
  const std::vector<JobId> saved = {JobId(2), JobId(7), JobId(0), JobId(2)};
  scheduler_->RestoreRunningOrder(saved);
  EXPECT_THAT(scheduler_->running(), ElementsAre(JobId(2), JobId(0), JobId(1), JobId(3)));
  // The positions follow: a job that ends leaves its slot to the last one.
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{JobId(2), JobState::kSucceeded, ""}, AtSeconds(30)).ok());
  EXPECT_THAT(scheduler_->running(), ElementsAre(JobId(3), JobId(0), JobId(1)));
}

TEST_F(SchedulerTest, RestoreRefusesWhatCannotBeTrueAndChangesNothing) {
  Start("1x4xV100", Profile("fifo", true));
  auto first = Restored(MakeJob(0).Gpus(2).Spec(), JobState::kRunning);
  first.placement = Placement{{{NodeId(0), 0b0011}}};
  ASSERT_TRUE(scheduler_->Restore(first).ok());

  struct Case {
    std::string name;
    Scheduler::RestoredJob job;
  };
  auto taken = first;  // the same GPUs again
  auto wrong_size = first;
  wrong_size.placement = Placement{{{NodeId(0), 0b0100}}};
  auto no_such_gpu = first;
  no_such_gpu.placement = Placement{{{NodeId(0), 0b110000}}};
  auto no_such_node = first;
  no_such_node.placement = Placement{{{NodeId(3), 0b0011}}};
  auto waiting_with_gpus = Restored(MakeJob(1).Gpus(2).Spec(), JobState::kQueued);
  waiting_with_gpus.placement = Placement{{{NodeId(0), 0b1100}}};
  const std::vector<Case> cases = {
      {"taken", taken},
      {"wrong size", wrong_size},
      {"no such gpu", no_such_gpu},
      {"no such node", no_such_node},
      {"waiting with gpus", waiting_with_gpus},
      {"invalid spec", Restored(MakeJob(1).Gpus(0).Spec(), JobState::kQueued)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(scheduler_->Restore(c.job).ok());
    EXPECT_EQ(scheduler_->jobs().size(), 1u);
    EXPECT_EQ(scheduler_->state().free_total(), 2);
    EXPECT_EQ(scheduler_->queue().size(), 0u);
  }
}

// Two jobs that shared a GPU come back sharing it; an exclusive job cannot join them, nor a
// shared one take an exclusive job's GPU, and the shared GPU frees with its last holder.
TEST_F(SchedulerTest, RestoreKeepsSharedGpusShared) {
  Start("1x2xV100", Profile("fifo", true));
  auto a = Restored(MakeJob(0).Gpus(1).Spec(), JobState::kRunning);
  a.placement = Placement{{{NodeId(0), 0b01}}};
  a.share = ShareMode::kPacked;
  auto b = a;
  b.spec = MakeJob(1).Gpus(1).Spec();
  auto exclusive_there = a;
  exclusive_there.share = ShareMode::kExclusive;
  ASSERT_TRUE(scheduler_->Restore(a).ok());
  EXPECT_FALSE(scheduler_->CanKeepGpus(exclusive_there.spec, exclusive_there.placement));
  EXPECT_FALSE(scheduler_->Restore(exclusive_there).ok());
  ASSERT_TRUE(scheduler_->Restore(b).ok());
  EXPECT_EQ(scheduler_->state().sharers(NodeId(0), 0), 2);
  EXPECT_THAT(scheduler_->shared_gpus().holders(NodeId(0), 0), ElementsAre(JobId(0), JobId(1)));
  EXPECT_EQ(job(JobId(1)).share, ShareMode::kPacked);
  EXPECT_EQ(scheduler_->state().free_total(), 1);

  auto c = Restored(MakeJob(2).Gpus(1).Spec(), JobState::kRunning);
  c.placement = Placement{{{NodeId(0), 0b10}}};
  ASSERT_TRUE(scheduler_->Restore(c).ok());
  auto shared_on_exclusive = a;
  shared_on_exclusive.spec = MakeJob(3).Gpus(1).Spec();
  shared_on_exclusive.placement = c.placement;
  EXPECT_FALSE(scheduler_->Restore(shared_on_exclusive).ok());
  auto queued_shared = Restored(MakeJob(3).Gpus(1).Spec(), JobState::kQueued);
  queued_shared.share = ShareMode::kPacked;
  EXPECT_FALSE(scheduler_->Restore(queued_shared).ok());

  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{JobId(0), JobState::kSucceeded, ""}, AtSeconds(1)).ok());
  EXPECT_EQ(scheduler_->state().free_total(), 0);
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{JobId(1), JobState::kSucceeded, ""}, AtSeconds(2)).ok());
  EXPECT_EQ(scheduler_->state().free_total(), 1);
  EXPECT_EQ(scheduler_->shared_gpus().size(), 0);
}

// Gangs are placed all or nothing, so no two half-placed gangs can hold GPUs each other needs:
// random gangs under a preemptive policy always all finish, and at every step each running job
// holds exactly its gang while waiting jobs hold nothing.
TEST_F(SchedulerTest, GangsAreAllOrNothingSoTheyNeverDeadlock) {
  Start("2x8xV100", Profile("las", true, /*preempt=*/true));
  Rng rng(7);
  constexpr int kGangs[] = {1, 2, 4, 6, 8, 12, 16};
  constexpr int kJobs = 300;
  for (int i = 0; i < kJobs; ++i) {
    const int gang = kGangs[rng.Below(std::size(kGangs))];
    Submit(MakeJob(i).Gpus(gang).Work(Seconds(60.0 + rng.Below(3600))).Spec(), AtSeconds(i));
  }
  Timestamp now = AtSeconds(kJobs);
  size_t calls_seen = 0;
  for (int step = 0; step < 10 * kJobs; ++step) {
    scheduler_->RunCycle(now);
    int held = 0;
    for (const Job& j : scheduler_->jobs().all()) {
      if (j.state == JobState::kRunning) {
        ASSERT_EQ(j.placement.num_gpus(), j.spec.num_gpus) << "job " << j.id;
        held += j.spec.num_gpus;
      } else {
        ASSERT_TRUE(j.placement.empty()) << "job " << j.id;
      }
    }
    ASSERT_EQ(held + scheduler_->state().free_total(), 16);
    now += Seconds(1);
    // Preempted jobs checkpoint; then the running job that started first finishes.
    for (; calls_seen < executor_.calls.size(); ++calls_seen) {
      const RecordingExecutor::Call& call = executor_.calls[calls_seen];
      if (call.kind == RecordingExecutor::Call::kPreempt) {
        ASSERT_TRUE(scheduler_->Handle(JobSuspended{call.job, 0}, now).ok());
      }
    }
    if (scheduler_->running().empty()) {
      if (scheduler_->queue().size() == 0) break;
      continue;
    }
    const JobId first = *std::ranges::min_element(scheduler_->running());
    ASSERT_TRUE(scheduler_->Handle(JobFinished{first, JobState::kSucceeded, ""}, now).ok());
  }
  for (const Job& j : scheduler_->jobs().all()) {
    EXPECT_EQ(j.state, JobState::kSucceeded) << "job " << j.id << ": " << j.reason;
  }
}

// ---------------------------------------------------------------------------------------------
// GPU sharing: the scheduler's validation of shared launches and migrations, whatever the policy

// Admits everything and decides what the test scripted for the next cycle (then nothing).
class ScriptedPolicy final : public SchedulingPolicy {
 public:
  explicit ScriptedPolicy(Decisions* script) : script_(script) {}
  std::string_view Name() const override { return "scripted"; }
  Fit Admit(const JobView&, const SchedulingContext&) const override { return Fit::Yes(); }
  Decisions Decide(const SchedulingContext&) const override { return std::exchange(*script_, {}); }

 private:
  Decisions* script_;
};

class SchedulerSharingTest : public SchedulerTest {
 protected:
  void StartScripted(const std::string& cluster_spec) {
    cluster_ = MakeCluster(cluster_spec);
    scheduler_ = std::make_unique<Scheduler>(cluster_, std::make_unique<ScriptedPolicy>(&script_),
                                             executor_, model_, /*seed=*/1);
  }
  static LaunchDecision Launch(JobId job, int node, GpuMask gpus,
                               ShareMode share = ShareMode::kPacked) {
    return {job, Placement{{NodeGpus{NodeId(node), gpus}}}, share};
  }

  Decisions script_;
};

TEST_F(SchedulerSharingTest, SharedLaunchesOfSingleGpuJobsOnFreeOrSharedGpusOnly) {
  StartScripted("1x4xV100");
  const JobId a = Submit(MakeJob(0).Spec());
  const JobId b = Submit(MakeJob(1).Spec());
  const JobId wide = Submit(MakeJob(2).Gpus(2).Spec());
  const JobId whole = Submit(MakeJob(3).Spec());
  const JobId late = Submit(MakeJob(4).Spec());
  script_.launches = {
      Launch(a, 0, 0b0001),                             // free GPU: taken in shared mode
      Launch(b, 0, 0b0001, ShareMode::kTimeSliced),     // joins a
      Launch(wide, 0, 0b0110),                          // 2 GPUs: never shared
      Launch(whole, 0, 0b1000, ShareMode::kExclusive),  // exclusive, as ever
      Launch(late, 0, 0b1000),                          // exclusively held: refused
  };
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.launched(), 3);
  EXPECT_EQ(cycle.refused, 2);
  EXPECT_THAT(executor_.Launched(), ElementsAre(a, b, whole));
  const ClusterState& state = scheduler_->state();
  EXPECT_EQ(state.sharers(NodeId(0), 0), 2);
  EXPECT_EQ(state.shared_mask(NodeId(0)), 0b0001u);
  // The holders as the sharing policies read them: the refused launches are not among them.
  const SharedGpus& shared = scheduler_->shared_gpus();
  EXPECT_THAT(shared.holders(NodeId(0), 0), ElementsAre(a, b));
  EXPECT_EQ(shared.size(), 1);
  EXPECT_EQ(state.free_total(), 2);
  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_EQ(job(a).share, ShareMode::kPacked);
  EXPECT_EQ(job(b).share, ShareMode::kTimeSliced);
  EXPECT_EQ(job(whole).share, ShareMode::kExclusive);
  EXPECT_EQ(job(wide).state, JobState::kQueued);
  EXPECT_EQ(job(late).state, JobState::kQueued);
  EXPECT_EQ(job(wide).share, ShareMode::kExclusive);

  // The 2-GPU job's exclusive launch on the free GPUs is fine; a shared job cannot join them.
  script_.launches = {Launch(wide, 0, 0b0110, ShareMode::kExclusive), Launch(late, 0, 0b0010)};
  const CycleResult second = scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(second.launched(), 1);
  EXPECT_EQ(second.refused, 1);
  EXPECT_EQ(job(wide).state, JobState::kRunning);

  // One sharer ends: the GPU stays shared by the other; the job's share is reset.
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a, JobState::kSucceeded, ""}, AtSeconds(10)).ok());
  EXPECT_EQ(job(a).share, ShareMode::kExclusive);
  EXPECT_TRUE(job(a).placement.empty());
  EXPECT_EQ(state.sharers(NodeId(0), 0), 1);
  EXPECT_THAT(shared.holders(NodeId(0), 0), ElementsAre(b));
  EXPECT_EQ(state.free_total(), 0);
  EXPECT_EQ(job(a).attained_gpu_time, seconds(10));
  // An exclusive launch onto the still-shared GPU is refused; a shared one joins it.
  script_.launches = {Launch(late, 0, 0b0001, ShareMode::kExclusive)};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(11)).refused, 1);
  script_.launches = {Launch(late, 0, 0b0001)};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(12)).launched(), 1);
  EXPECT_EQ(state.sharers(NodeId(0), 0), 2);
  EXPECT_THAT(shared.holders(NodeId(0), 0), ElementsAre(b, late));

  // Both end: the GPU is free again.
  ASSERT_TRUE(scheduler_->Handle(JobFinished{b, JobState::kSucceeded, ""}, AtSeconds(20)).ok());
  ASSERT_TRUE(scheduler_->Handle(JobFinished{late, JobState::kFailed, "x"}, AtSeconds(20)).ok());
  EXPECT_EQ(job(b).share, ShareMode::kExclusive);
  EXPECT_EQ(job(late).share, ShareMode::kExclusive);
  EXPECT_EQ(state.shared_mask(NodeId(0)), 0u);
  EXPECT_EQ(shared.size(), 0);
  EXPECT_TRUE(shared.holders(NodeId(0), 0).empty());
  EXPECT_EQ(state.free_mask(NodeId(0)), 0b0001u);
}

TEST_F(SchedulerSharingTest, ASharedLaunchNamingNoRealGpuIsRefused) {
  StartScripted("1x4xV100");
  const JobId a = Submit(MakeJob(0).Spec());
  struct Case {
    std::string name;
    Placement placement;
  };
  const std::vector<Case> cases = {
      {"no such node", Placement{{NodeGpus{NodeId(7), 0b0001}}}},
      {"no such GPU on the node", Placement{{NodeGpus{NodeId(0), 0b10000}}}},
      {"an empty part first", Placement{{NodeGpus{NodeId(0), 0}, NodeGpus{NodeId(0), 0b0010}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    script_.launches = {{a, c.placement, ShareMode::kPacked}};
    const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
    EXPECT_EQ(cycle.launched(), 0);
    EXPECT_EQ(cycle.refused, 1);
    EXPECT_EQ(job(a).state, JobState::kQueued);
    EXPECT_EQ(scheduler_->state().free_total(), 4);
    EXPECT_EQ(scheduler_->state().shared_mask(NodeId(0)), 0u);
  }
}

TEST_F(SchedulerSharingTest, AMigrationCountsInMigrationsNotPreemptions) {
  StartScripted("1x4xV100");
  const JobId a = Submit(MakeJob(0).Spec());
  const JobId b = Submit(MakeJob(1).Spec());
  script_.launches = {Launch(a, 0, 0b0001), Launch(b, 0, 0b0001)};
  ASSERT_EQ(scheduler_->RunCycle(kTimeZero).launched(), 2);

  // b migrates off the shared GPU.
  script_.preemptions = {{b, "slowed by its sharer", /*migration=*/true}};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(100)).preempted(), 1);
  EXPECT_THAT(executor_.Preempted(), ElementsAre(b));
  EXPECT_TRUE(job(b).migrating);
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{b, 100}, AtSeconds(110)).ok());
  EXPECT_EQ(job(b).state, JobState::kSuspended);
  EXPECT_EQ(job(b).migrations, 1);
  EXPECT_EQ(job(b).preemptions, 0);
  EXPECT_FALSE(job(b).migrating);
  EXPECT_EQ(job(b).share, ShareMode::kExclusive);
  EXPECT_EQ(scheduler_->state().sharers(NodeId(0), 0), 1);  // a still holds it
  EXPECT_EQ(scheduler_->state().free_total(), 3);

  // Placed on a GPU of its own, then preempted plainly: a preemption, not a migration.
  script_.launches = {Launch(b, 0, 0b0100, ShareMode::kExclusive)};
  ASSERT_EQ(scheduler_->RunCycle(AtSeconds(110)).launched(), 1);
  script_.preemptions = {{b, "for a higher priority job"}};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(200)).preempted(), 1);
  EXPECT_FALSE(job(b).migrating);
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{b, 190}, AtSeconds(210)).ok());
  EXPECT_EQ(job(b).migrations, 1);
  EXPECT_EQ(job(b).preemptions, 1);

  // A migration that ends with the job finishing instead is not counted.
  script_.preemptions = {{a, "move", /*migration=*/true}};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(300)).preempted(), 1);
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a, JobState::kSucceeded, ""}, AtSeconds(301)).ok());
  EXPECT_FALSE(job(a).migrating);
  EXPECT_EQ(job(a).migrations, 0);
  EXPECT_EQ(job(a).preemptions, 0);
  EXPECT_EQ(scheduler_->state().shared_mask(NodeId(0)), 0u);
  EXPECT_EQ(scheduler_->state().free_total(), 4);
}

// The shared-GPU index logs what changes a shared GPU's standing beyond its holders: a holder
// asked to stop, its node going offline and back (SharedGpus::ChangedSince).
TEST_F(SchedulerSharingTest, TheSharedGpusLogAStopRequestAndTheNodeGoingOffline) {
  using Gpus = std::vector<std::pair<NodeId, int>>;
  StartScripted("1x4xV100");
  const JobId a = Submit(MakeJob(0).Spec());
  script_.launches = {Launch(a, 0, 0b0100)};
  ASSERT_EQ(scheduler_->RunCycle(kTimeZero).launched(), 1);
  script_.launches.clear();
  const uint64_t launched = scheduler_->shared_gpus().change_revision();
  script_.preemptions = {{a, "for a higher priority job"}};
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(10)).preempted(), 1);
  script_.preemptions.clear();
  Gpus gpus;
  ASSERT_TRUE(scheduler_->shared_gpus().ChangedSince(launched, gpus));
  EXPECT_EQ(gpus, (Gpus{{NodeId(0), 2}})) << "a's stop request";
  const uint64_t stopping = scheduler_->shared_gpus().change_revision();
  ASSERT_TRUE(scheduler_->SetNodeOnline(NodeId(0), false).ok());
  ASSERT_TRUE(scheduler_->SetNodeOnline(NodeId(0), true).ok());
  ASSERT_TRUE(scheduler_->shared_gpus().ChangedSince(stopping, gpus));
  EXPECT_EQ(gpus, (Gpus{{NodeId(0), 2}, {NodeId(0), 2}}));
}

TEST_F(SchedulerSharingTest, TheCycleListsWhatItAppliedInTheOrderTheExecutorGotIt) {
  StartScripted("1x4xV100");
  const JobId a = Submit(MakeJob(0).Spec());
  const JobId b = Submit(MakeJob(1).Spec());
  const JobId c = Submit(MakeJob(2).Spec());
  script_.launches = {Launch(b, 0, 0b0001, ShareMode::kExclusive),
                      Launch(a, 0, 0b0010, ShareMode::kExclusive),
                      Launch(c, 0, 0b0001, ShareMode::kExclusive)};  // b's GPU: refused
  CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_THAT(cycle.admissions, ElementsAre(a, b, c));
  EXPECT_THAT(cycle.launches, ElementsAre(b, a));
  EXPECT_EQ(cycle.refused, 1);

  script_.preemptions = {{a, "move", /*migration=*/true}, {b, "for c"}};
  script_.rejections = {{c, "never fits"}, {a, "running: refused"}};
  cycle = scheduler_->RunCycle(AtSeconds(10));
  EXPECT_THAT(cycle.admissions, IsEmpty());
  EXPECT_THAT(cycle.launches, IsEmpty());
  EXPECT_THAT(executor_.Preempted(), ElementsAre(a, b));
  ASSERT_EQ(cycle.preempted(), 2);
  EXPECT_EQ(cycle.preemptions[0].job, a);
  EXPECT_TRUE(cycle.preemptions[0].migration);
  EXPECT_EQ(cycle.preemptions[1].job, b);
  EXPECT_FALSE(cycle.preemptions[1].migration);
  EXPECT_FALSE(cycle.preemptions[1].for_service);
  ASSERT_EQ(cycle.rejected(), 1);
  EXPECT_EQ(cycle.rejections[0].job, c);
  EXPECT_EQ(cycle.rejections[0].reason, "never fits");
  EXPECT_EQ(job(c).reason, "never fits");
  EXPECT_EQ(cycle.refused, 1);  // a runs: not rejected
}

}  // namespace
}  // namespace dlsched
