#include "daemon/core/daemon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daemon/core/daemon_test_fixture.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

using DaemonTest = DaemonFixture;

TEST_F(DaemonTest, ASubmissionIsDurableBeforeItIsAcknowledged) {
  sqlite_ = true;
  StartDaemon();
  const JobId id = Submit(1);
  // Another connection to the database sees the row as soon as the submitter has its answer.
  auto reader = Store::Open((dir_ / "state.db").string());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*(*reader)->CountJobs(), 1);
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0"}));
  machine_.Exit(id, 0);
  Step();
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(Record(id).exit_code, 0);
  EXPECT_EQ(Record(id).user(), "ann");
}

TEST_F(DaemonTest, TheSubmissionsCommitIsDurableAndTheProcessRowsNeedNotBe) {
  StartDaemon();
  const int64_t commits = tables_->commits;
  const JobId id = Submit(1);
  // One durable commit holds the row and the launch decision; the launched process's pid
  // follows in a commit without an fsync (a restart finds it through the pid file).
  EXPECT_EQ(tables_->commits - commits, 2);
  EXPECT_EQ(tables_->lazy_commits, 1);
  EXPECT_EQ(tables_->jobs.at(id.value()).pid, machine_.pid(id));
}

TEST_F(DaemonTest, ARejectionIsLoggedAfterItsCycleWithItsReason) {
  StartDaemon();
  Result<JobRequest> request =
      ParseJobRequest(R"({"script": "exit 0", "gpus": 1, "gpu_type": "A100"})", "ann");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  SubmitResult result = Await(daemon_->Submit(*request));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // Its submission's iteration ran the cycle that rejected it (no A100 here).
  EXPECT_EQ((*result)->state, JobState::kRejected);
  EXPECT_NE((*result)->reason.find("A100"), std::string::npos);
  EXPECT_EQ(EventsFromFirstSubmit(),
            (std::vector<std::string>{"submit 0 ", "cycle -1 launched=0 preempted=0 rejected=1",
                                      "reject 0 " + (*result)->reason}));
  EXPECT_TRUE(machine_.TakeLog().empty());
}

TEST_F(DaemonTest, CancelsWaitingJobsAndRefusesEndedOnes) {
  StartDaemon();
  const JobId blocker = Submit(2);
  const JobId waiting = Submit(1);
  EXPECT_EQ(State(blocker), JobState::kRunning);
  EXPECT_EQ(State(waiting), JobState::kQueued);

  Result<QueueView> queue = Await(daemon_->Queue());
  ASSERT_TRUE(queue.ok());
  ASSERT_EQ(queue->order.size(), 1u);
  EXPECT_EQ(queue->order[0], waiting);
  EXPECT_NE(queue->reasons.at(waiting).reason.find("GPU"), std::string::npos);
  EXPECT_EQ(queue->reasons.at(waiting).cause, PendingCause::kGpusBusy);  // 2 of 2 GPUs held

  EXPECT_TRUE(Await(daemon_->Cancel(waiting)).ok());
  EXPECT_EQ(State(waiting), JobState::kKilled);
  EXPECT_EQ(Await(daemon_->Cancel(waiting)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Await(daemon_->Cancel(JobId(99))).code(), StatusCode::kNotFound);

  EXPECT_TRUE(Await(daemon_->Cancel(blocker)).ok());
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0", "kill 0"}));
  // Running until its process ends (the executor's grace period is the test's here).
  EXPECT_EQ(State(blocker), JobState::kRunning);
  EXPECT_EQ(Record(blocker).stopping, "kill");
  machine_.Exit(blocker, 128 + 15);
  Step();
  EXPECT_EQ(State(blocker), JobState::kKilled);
  EXPECT_EQ(Record(blocker).reason, "cancelled");
}

TEST_F(DaemonTest, APreemptedJobHoldsItsGpusUntilItHasStopped) {
  profile_json_ = kPreemptingProfile;
  StartDaemon();
  const JobId low = Submit(R"("script": "train", "gpus": 2, "priority": 0)");
  const JobId high = Submit(R"("script": "train", "gpus": 2, "priority": 10)");
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0", "preempt 0"}));
  EXPECT_EQ(Record(low).stopping, "preempt");
  // However long it takes to checkpoint, nothing else gets its GPUs meanwhile.
  Advance(std::chrono::minutes(10));
  EXPECT_EQ(State(low), JobState::kRunning);
  EXPECT_EQ(State(high), JobState::kQueued);
  EXPECT_EQ(daemon_->snapshot()->gpus_allocated, 2);
  EXPECT_TRUE(machine_.TakeLog().empty());

  machine_.Exit(low, 0);  // checkpointed and stopped
  Step();
  EXPECT_EQ(State(low), JobState::kSuspended);
  EXPECT_EQ(Record(low).preemptions, 1);
  EXPECT_EQ(State(high), JobState::kRunning);
  machine_.Exit(high, 0);
  Step();
  EXPECT_EQ(State(high), JobState::kSucceeded);
  EXPECT_EQ(State(low), JobState::kRunning);  // resumed
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 1", "launch 0"}));
  // Its record's timeline: the event log's rows about it (GET /v1/jobs/{id}).
  std::vector<std::string> timeline;
  ASSERT_NE(Record(low).timeline, nullptr);
  for (const JobTimelineEvent& e : *Record(low).timeline)
    timeline.push_back(e.kind + " " + e.detail);
  EXPECT_EQ(timeline, (std::vector<std::string>{"submit ", "launch " + Record(low).placement_text,
                                                "preempt ", "suspended iterations_done=0",
                                                "launch " + Record(low).placement_text}));
}

// The snapshot's GPU holdings are rebuilt when a placement changes, and shared by the
// snapshots in between (a submission that starts nothing rebuilds nothing).
TEST_F(DaemonTest, TheGpuHoldingsChangeWithPlacementsOnly) {
  StartDaemon("1x2xV100");
  const std::shared_ptr<const NodeHoldings> idle = daemon_->snapshot()->nodes;
  ASSERT_EQ(idle->gpus.size(), 1u);
  EXPECT_EQ(idle->gpus[0], (std::vector<GpuHolding>{{}, {}}));
  const JobId first = Submit(2);
  const std::shared_ptr<const NodeHoldings> held = daemon_->snapshot()->nodes;
  EXPECT_NE(held, idle);
  EXPECT_EQ(held->gpus[0], (std::vector<GpuHolding>{{{first}, {}}, {{first}, {}}}));
  const JobId second = Submit(2);  // waits
  EXPECT_EQ(State(second), JobState::kQueued);
  EXPECT_EQ(daemon_->snapshot()->nodes, held);
  machine_.Exit(first, 0);
  Step();
  ASSERT_EQ(State(second), JobState::kRunning);
  EXPECT_EQ(daemon_->snapshot()->nodes->gpus[0],
            (std::vector<GpuHolding>{{{second}, {}}, {{second}, {}}}));
  EXPECT_EQ(held->gpus[0], (std::vector<GpuHolding>{{{first}, {}}, {{first}, {}}}));  // as it was
}

// The running list's order depends on history (a job that ends leaves its slot to the last
// one): it is stored, and a restart restores it rather than id order.
TEST_F(DaemonTest, ARestartKeepsTheRunningListsOrder) {
  StartDaemon("1x3xV100");
  const JobId a = Submit(1);
  const JobId b = Submit(1);
  const JobId c = Submit(1);
  ASSERT_EQ(State(c), JobState::kRunning);
  EXPECT_EQ(tables_->meta.at("running_order"), "0 1 2");
  machine_.Exit(a, 0);
  Step();
  ASSERT_EQ(State(a), JobState::kSucceeded);
  ASSERT_EQ(tables_->meta.at("running_order"), "2 1") << "c took a's slot";

  Restart("1x3xV100");
  Step();
  EXPECT_EQ(State(b), JobState::kRunning);
  EXPECT_EQ(State(c), JobState::kRunning);
  EXPECT_EQ(tables_->meta.at("running_order"), "2 1") << "id order would be 1 2";
  const JobId d = Submit(1);
  ASSERT_EQ(State(d), JobState::kRunning);
  EXPECT_EQ(tables_->meta.at("running_order"), "2 1 3");
}

TEST_F(DaemonTest, ARestartRestoresEveryJobAndReadoptsRunningOnes) {
  StartDaemon();
  const JobId done = Submit(1);
  machine_.Exit(done, 3);
  Step();
  ASSERT_EQ(State(done), JobState::kFailed);
  const JobId running = Submit(2);
  const JobId waiting = Submit(1);
  const int pid = machine_.pid(running);
  ASSERT_GT(pid, 0);
  machine_.TakeLog();

  Restart();
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"adopt 1"}));
  snapshot_ = daemon_->snapshot();
  ASSERT_EQ(snapshot_->jobs.size(), 3u);
  EXPECT_EQ(snapshot_->jobs.Find(done)->state, JobState::kFailed);
  EXPECT_EQ(snapshot_->jobs.Find(done)->exit_code, 3);
  EXPECT_EQ(snapshot_->jobs.Find(running)->state, JobState::kRunning);
  EXPECT_EQ(snapshot_->jobs.Find(running)->pid, pid);
  EXPECT_EQ(snapshot_->jobs.Find(waiting)->state, JobState::kQueued);
  EXPECT_EQ(snapshot_->gpus_allocated, 2);

  // The next id continues the sequence; the adopted job's end frees its GPUs.
  EXPECT_EQ(Submit(1), JobId(3));
  machine_.Exit(running, 0);
  Step();
  EXPECT_EQ(State(running), JobState::kSucceeded);
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 2", "launch 3"}));
}

TEST_F(DaemonTest, AJobThatEndedWhileTheDaemonWasDownIsReportedAsItEnded) {
  StartDaemon();
  const JobId id = Submit(1);
  daemon_.reset();
  machine_.Exit(id, 0);  // its exit status waits for the next daemon
  StartDaemon();
  EXPECT_EQ(State(id), JobState::kRunning);
  Step();
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(Record(id).exit_code, 0);
}

TEST_F(DaemonTest, AStoredJobThatCannotBeReadBackFailsAlone) {
  StartDaemon();
  const JobId done = Submit(1);
  machine_.Exit(done, 0);
  Step();
  const JobId running = Submit(2);
  const JobId waiting = Submit(1);
  daemon_.reset();
  // A spec no parse accepts (as an older build could store a year-10000 deadline), in the
  // waiting job and in the one that had ended.
  for (JobId id : {done, waiting}) {
    tables_->jobs.at(id.value()).spec_json =
        R"({"command": ["true"], "deadline": "10000-01-01T00:00:00Z"})";
  }

  StartDaemon();
  snapshot_ = daemon_->snapshot();
  ASSERT_EQ(snapshot_->jobs.size(), 3u);
  EXPECT_EQ(snapshot_->jobs.Find(done)->state, JobState::kSucceeded);  // it had ended: kept
  EXPECT_EQ(snapshot_->jobs.Find(done)->user(), "ann");
  EXPECT_EQ(snapshot_->jobs.Find(running)->state, JobState::kRunning);
  const JobRecord* bad = snapshot_->jobs.Find(waiting);
  EXPECT_EQ(bad->state, JobState::kFailed);
  EXPECT_EQ(bad->reason.rfind("cannot be restored: stored spec: deadline:", 0), 0u) << bad->reason;
  EXPECT_EQ(bad->user(), "ann");
  // The failure is durable, and the daemon goes on.
  EXPECT_EQ(tables_->jobs.at(waiting.value()).state, JobState::kFailed);
  EXPECT_EQ(Submit(1), JobId(3));
  EXPECT_EQ(State(JobId(3)), JobState::kQueued);  // the running job holds both GPUs
}

TEST_F(DaemonTest, AnIdempotencyKeyGetsTheFirstJobBack) {
  StartDaemon();
  Result<JobRequest> request = ParseJobRequest(R"({"script": "train", "gpus": 1})", "ann");
  ASSERT_TRUE(request.ok());
  request->idempotency_key = "k1";
  SubmitResult first = Await(daemon_->Submit(*request));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->existing);
  SubmitResult again = Await(daemon_->Submit(*request));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->existing);
  EXPECT_EQ((*again)->id, (*first)->id);
  // The key of another user is another key; the same key for another request is refused.
  JobRequest bob = *request;
  bob.spec.user = "bob";
  SubmitResult bobs = Await(daemon_->Submit(bob));
  ASSERT_TRUE(bobs.ok());
  EXPECT_FALSE(bobs->existing);
  EXPECT_NE((*bobs)->id, (*first)->id);
  JobRequest other = *request;
  other.spec.num_gpus = 2;
  EXPECT_EQ(Await(daemon_->Submit(other)).status().code(), StatusCode::kAlreadyExists);

  Restart();
  SubmitResult restored = Await(daemon_->Submit(*request));
  ASSERT_TRUE(restored.ok());
  EXPECT_TRUE(restored->existing);
  EXPECT_EQ((*restored)->id, (*first)->id);
  EXPECT_EQ(daemon_->snapshot()->jobs.size(), 2u);
}

TEST_F(DaemonTest, RestoredJobsThatFitStartWithoutWaitingForAnEvent) {
  StartDaemon("1x2xV100");
  const JobId running = Submit(2);
  const JobId waiting = Submit(2);
  machine_.TakeLog();
  // Restarted with a second node (n0000 keeps its name, so the running job keeps its GPUs).
  Restart("2x2xV100");
  EXPECT_EQ(daemon_->NextWakeAt(), clock_.Now());
  Step();  // no input: the first iteration's cycle
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"adopt 0", "launch 1"}));
  EXPECT_EQ(State(waiting), JobState::kRunning);
  EXPECT_EQ(State(running), JobState::kRunning);
}

TEST_F(DaemonTest, AJobThatCannotBeStartedFailsInsteadOfRetryingForever) {
  StartDaemon();
  machine_.FailLaunches(JobId(0), 100, "cannot create its directory");
  const JobId id = Submit(1);
  Step();                     // 1st failure: held 20 ms
  Advance(milliseconds(20));  // 2nd launch fails: held 40 ms
  Step();
  Advance(milliseconds(40));  // 3rd launch fails: no more tries
  Step();
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_EQ(Record(id).reason, "could not be started 3 times; last: cannot create its directory");
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0", "launch 0", "launch 0"}));
  // The GPUs are free again and the next job runs.
  EXPECT_EQ(State(Submit(2)), JobState::kRunning);
}

TEST(LaunchRetryTest, TheBackOffDoublesUpToItsMaximum) {
  const LaunchRetry retry;  // the defaults: 1 s, doubling, at most 5 min
  EXPECT_EQ(LaunchRetryDelay(retry, 1), seconds(1));
  EXPECT_EQ(LaunchRetryDelay(retry, 2), seconds(2));
  EXPECT_EQ(LaunchRetryDelay(retry, 3), seconds(4));
  EXPECT_EQ(LaunchRetryDelay(retry, 9), seconds(256));
  EXPECT_EQ(LaunchRetryDelay(retry, 10), std::chrono::minutes(5));
  EXPECT_EQ(LaunchRetryDelay(retry, 1000), std::chrono::minutes(5));
  // Ten tries span over eight minutes, not milliseconds.
  Duration total{0};
  for (int n = 1; n < retry.max_failures; ++n) total += LaunchRetryDelay(retry, n);
  EXPECT_EQ(total, seconds(511));
}

TEST_F(DaemonTest, FailedLaunchesAreRetriedAfterABackOff) {
  launch_retry_ = {milliseconds(200), seconds(10), 3};
  StartDaemon();
  machine_.FailLaunches(JobId(0), 100, "no room");
  const Timestamp t0 = clock_.Now();
  const JobId id = Submit(1);
  Step();  // the failure arrives and is held; the job keeps its GPU meanwhile
  EXPECT_EQ(daemon_->NextWakeAt(), t0 + milliseconds(200));
  Advance(milliseconds(199));
  EXPECT_EQ(State(id), JobState::kRunning);
  EXPECT_EQ(daemon_->snapshot()->gpus_allocated, 1);
  EXPECT_EQ(EventTimes("launch", id).size(), 1u);
  Advance(milliseconds(1));  // released: requeued and launched again, which fails
  Step();
  EXPECT_EQ(daemon_->NextWakeAt(), t0 + milliseconds(600));
  Advance(milliseconds(400));
  Step();
  EXPECT_EQ(State(id), JobState::kFailed);
  // Three tries: held 200 ms after the first failure, 400 ms after the second.
  EXPECT_EQ(EventTimes("launch", id),
            (std::vector<Timestamp>{t0, t0 + milliseconds(200), t0 + milliseconds(600)}));
}

TEST_F(DaemonTest, AJobCancelledWhileItsFailedLaunchIsHeldEndsAtOnce) {
  launch_retry_ = {seconds(60), seconds(60), 3};
  StartDaemon();
  machine_.FailLaunches(JobId(0), 1, "no room");
  const JobId id = Submit(1);
  Step();  // the failure is held for a minute; a cancel does not wait for it
  ASSERT_TRUE(Await(daemon_->Cancel(id)).ok());
  EXPECT_EQ(daemon_->NextWakeAt(), clock_.Now());
  Step();
  EXPECT_EQ(State(id), JobState::kKilled);
  EXPECT_EQ(Record(id).reason, "cancelled");
}

TEST_F(DaemonTest, AJobWhoseProcessVanishedIsRequeued) {
  StartDaemon();
  const JobId id = Submit(1);
  const int pid = machine_.pid(id);
  daemon_.reset();
  machine_.Lose(id, "process lost while the daemon was down (no exit status)");

  StartDaemon();
  Step();  // the loss is held for the back-off
  EXPECT_EQ(State(id), JobState::kRunning);
  Advance(milliseconds(20));  // requeued, then started again (the GPUs are free)
  EXPECT_EQ(State(id), JobState::kRunning);
  EXPECT_NE(Record(id).pid, pid);
  EXPECT_EQ(Record(id).pid, machine_.pid(id));
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0", "adopt 0", "launch 0"}));
}

TEST_F(DaemonTest, LaunchesWaitWhileTheDiskIsShortOfSpace) {
  StartDaemon();
  const JobId blocker = Submit(2);
  const JobId waiting = Submit(1);
  ASSERT_EQ(State(waiting), JobState::kQueued);
  machine_.TakeLog();
  const auto cycles = [this] {
    return std::ranges::count(tables_->events, std::string("cycle"), &EventRow::kind);
  };
  const int64_t cycles_before = cycles();
  free_bytes_ = int64_t{1} << 20;  // 1 MiB, below the 256 MiB the daemon keeps
  Advance(seconds(1));             // the space is checked at most once a second
  machine_.Exit(blocker, 0);
  Step();
  // The GPUs are free, but no cycle runs (nor is logged) while launches are paused.
  EXPECT_EQ(State(blocker), JobState::kSucceeded);
  EXPECT_EQ(State(waiting), JobState::kQueued);
  EXPECT_EQ(cycles(), cycles_before);
  Result<QueueView> queue = Await(daemon_->Queue());
  ASSERT_TRUE(queue.ok());
  ASSERT_TRUE(queue->reasons.contains(waiting));
  EXPECT_EQ(queue->reasons.at(waiting).reason.rfind("launches paused", 0), 0u)
      << queue->reasons.at(waiting).reason;
  EXPECT_EQ(daemon_->NextWakeAt(), clock_.Now() + seconds(1));
  // A job submitted while paused is not admitted (no cycle runs) but waits for the same reason.
  const JobId late = Submit(1);
  queue = Await(daemon_->Queue());
  ASSERT_TRUE(queue.ok());
  EXPECT_EQ(queue->order, (std::vector<JobId>{waiting, late}));
  ASSERT_TRUE(queue->reasons.contains(late));
  EXPECT_EQ(queue->reasons.at(late).reason, queue->reasons.at(waiting).reason);

  free_bytes_ = int64_t{1} << 30;
  Advance(milliseconds(999));
  EXPECT_EQ(State(waiting), JobState::kQueued);
  Advance(milliseconds(1));
  EXPECT_EQ(State(waiting), JobState::kRunning);
  EXPECT_EQ(State(late), JobState::kRunning);
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 1", "launch 2"}));
}

TEST_F(DaemonTest, AStoreFailureStopsTheDaemonAndAcknowledgesNothing) {
  StartDaemon();
  tables_->failure = IoError("disk I/O error");
  Result<JobRequest> request = ParseJobRequest(R"({"script": "train", "gpus": 1})", "ann");
  ASSERT_TRUE(request.ok());
  std::future<SubmitResult> reply = daemon_->Submit(*request);
  EXPECT_FALSE(daemon_->RunOnce());
  const SubmitResult result = reply.get();
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(daemon_->failure().has_value());
  EXPECT_EQ(daemon_->failure()->message(), "disk I/O error");
  EXPECT_TRUE(tables_->jobs.empty());
  EXPECT_TRUE(machine_.TakeLog().empty());
  // Later callers are refused at once.
  EXPECT_EQ(daemon_->Submit(*request).get().status().code(), StatusCode::kUnavailable);
}

TEST_F(DaemonTest, ProgressReportsCorrectThePredictorWhileTheJobRuns) {
  const std::vector<PerfProfile> profiles = {{"test", "m", 8, "V100", 1, true, 10, {}}};
  Result<PerfPredictor> fitted =
      PerfPredictor::Fit(profiles, std::make_shared<const SimpleThroughputModel>());
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  StartDaemon("1x2xV100", std::make_shared<const PerfPredictor>(std::move(fitted).value()));
  // Predicted to take 1000 s; reports half of it done after 10 s, so it runs far faster.
  const JobId id = Submit(
      R"("script": "train", "gpus": 1, "model": "m", "batch_size": 8, "runtime_estimate_s": 1000)");
  ASSERT_EQ(State(id), JobState::kRunning);
  EXPECT_EQ(daemon_->NextWakeAt(), clock_.Now() + ProgressFeed::kReadInterval);
  std::string progress_file;
  for (const std::string& var : machine_.env(id)) {
    if (var.starts_with("DLSCHED_PROGRESS_FILE=")) progress_file = var.substr(var.find('=') + 1);
  }
  ASSERT_FALSE(progress_file.empty());
  fs::create_directories(fs::path(progress_file).parent_path());
  std::ofstream(progress_file) << "50/100\n";
  Advance(seconds(10));
  const JobPrediction* p = daemon_->snapshot()->prediction(id);
  ASSERT_NE(p, nullptr);
  // One job's observations move its correction up to the corrector's bound (10x) at most.
  EXPECT_GT(p->correction, 1.0);
  EXPECT_LE(p->correction, 10.0);
  EXPECT_DOUBLE_EQ(p->iters_per_s, p->correction);

  // An ended job has no prediction.
  ASSERT_TRUE(Await(daemon_->Cancel(id)).ok());
  machine_.Exit(id, 128 + 15);
  Step();
  ASSERT_EQ(State(id), JobState::kKilled);
  EXPECT_EQ(daemon_->snapshot()->prediction(id), nullptr);
}

}  // namespace
}  // namespace dlsched::daemon
