#include "daemon/core/daemon.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "io/profile.h"
#include "support/builders.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlsched_daemon_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->Stop();
      daemon_->KillAllJobs();
    }
    daemon_.reset();
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    fs::remove_all(dir_);
  }

  void StartDaemon(const std::string& gpus = "1x2xV100",
                   std::shared_ptr<const PerfPredictor> predictor = nullptr) {
    DaemonOptions options;
    options.db_path = (dir_ / "state.db").string();
    options.workdir = (dir_ / "work").string();
    Result<PolicyProfile> profile = LoadPolicyProfile("fifo-backfill");
    ASSERT_TRUE(profile.ok());
    options.profile = *profile;
    options.grace = milliseconds(200);
    options.predictor = std::move(predictor);
    options.job_exec = DLSCHED_BINARY;
    options.launch_retry = launch_retry_;
    auto daemon = Daemon::Create(testing::MakeCluster(gpus), options, clock_);
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = std::move(daemon).value();
    ASSERT_TRUE(daemon_->Start().ok());
  }

  JobId Submit(const std::string& script, int gpus = 1) {
    Result<JobRequest> request = ParseJobRequest(
        R"({"script": ")" + script + R"(", "gpus": )" + std::to_string(gpus) + "}", "ann");
    EXPECT_TRUE(request.ok()) << request.status().ToString();
    SubmitResult result = daemon_->Submit(*request).get();
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? (*result)->id : JobId();
  }

  // Polls the published snapshot until `done` holds for job `id` (8 s at most).
  const JobRecord* WaitFor(JobId id, const std::function<bool(const JobRecord&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(8);
    while (std::chrono::steady_clock::now() < deadline) {
      snapshot_ = daemon_->snapshot();
      const JobRecord* job = snapshot_->jobs.Find(id);
      if (job && done(*job)) return job;
      std::this_thread::sleep_for(milliseconds(5));
    }
    ADD_FAILURE() << "job " << id << " did not get there in time";
    return nullptr;
  }
  const JobRecord* WaitForState(JobId id, JobState state) {
    return WaitFor(id, [state](const JobRecord& j) { return j.state == state; });
  }

  SystemClock clock_;
  LaunchRetry launch_retry_{milliseconds(20), milliseconds(100), 3};
  fs::path dir_;
  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<const Snapshot> snapshot_;
};

TEST_F(DaemonTest, ASubmissionIsDurableBeforeItIsAcknowledged) {
  StartDaemon();
  const JobId id = Submit("exit 0");
  // Another connection to the database sees the row as soon as the submitter has its answer.
  auto reader = Store::Open((dir_ / "state.db").string());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*(*reader)->CountJobs(), 1);
  const JobRecord* job = WaitForState(id, JobState::kSucceeded);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->exit_code, 0);
  EXPECT_EQ(job->user(), "ann");
}

TEST_F(DaemonTest, ARejectionIsLoggedAfterItsCycleWithItsReason) {
  StartDaemon();
  Result<JobRequest> request =
      ParseJobRequest(R"({"script": "exit 0", "gpus": 1, "gpu_type": "A100"})", "ann");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  SubmitResult result = daemon_->Submit(*request).get();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // Its submission's iteration ran the cycle that rejected it (no A100 here).
  EXPECT_EQ((*result)->state, JobState::kRejected);
  EXPECT_NE((*result)->reason.find("A100"), std::string::npos);
  auto reader = Store::Open((dir_ / "state.db").string());
  ASSERT_TRUE(reader.ok());
  Result<std::vector<EventRow>> events = (*reader)->LoadEvents(0, 1000);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> logged;
  bool submitted = false;
  for (const EventRow& e : *events) {
    submitted = submitted || e.kind == "submit";
    if (submitted) logged.push_back(e.kind + " " + std::to_string(e.job) + " " + e.detail);
  }
  EXPECT_EQ(logged,
            (std::vector<std::string>{"submit 0 ", "cycle -1 launched=0 preempted=0 rejected=1",
                                      "reject 0 " + (*result)->reason}));
}

TEST_F(DaemonTest, CancelsWaitingJobsAndRefusesEndedOnes) {
  StartDaemon();
  const JobId blocker = Submit("sleep 30", 2);
  const JobId waiting = Submit("exit 0", 1);
  WaitForState(blocker, JobState::kRunning);
  EXPECT_EQ(daemon_->snapshot()->jobs.Find(waiting)->state, JobState::kQueued);

  Result<QueueView> queue = daemon_->Queue().get();
  ASSERT_TRUE(queue.ok());
  ASSERT_EQ(queue->order.size(), 1u);
  EXPECT_EQ(queue->order[0], waiting);
  EXPECT_NE(queue->reasons.at(waiting).reason.find("GPU"), std::string::npos);
  EXPECT_EQ(queue->reasons.at(waiting).cause, PendingCause::kGpusBusy);  // 2 of 2 GPUs held

  EXPECT_TRUE(daemon_->Cancel(waiting).get().ok());
  EXPECT_EQ(daemon_->snapshot()->jobs.Find(waiting)->state, JobState::kKilled);
  EXPECT_EQ(daemon_->Cancel(waiting).get().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(daemon_->Cancel(JobId(99)).get().code(), StatusCode::kNotFound);

  EXPECT_TRUE(daemon_->Cancel(blocker).get().ok());
  const JobRecord* killed = WaitForState(blocker, JobState::kKilled);
  ASSERT_NE(killed, nullptr);
  EXPECT_EQ(killed->reason, "cancelled");
}

TEST_F(DaemonTest, ARestartRestoresEveryJobAndReadoptsRunningOnes) {
  StartDaemon();
  const JobId done = Submit("exit 3");
  WaitForState(done, JobState::kFailed);
  const fs::path go = dir_ / "go";
  const JobId running = Submit("while [ ! -e " + go.string() + " ]; do sleep 0.02; done", 2);
  const JobId waiting = Submit("exit 0", 1);
  const JobRecord* before = WaitForState(running, JobState::kRunning);
  ASSERT_NE(before, nullptr);
  const int pid = before->pid;
  ASSERT_GT(pid, 0);
  daemon_->Stop();  // the process runs on
  daemon_.reset();

  StartDaemon();
  snapshot_ = daemon_->snapshot();
  ASSERT_EQ(snapshot_->jobs.size(), 3u);
  EXPECT_EQ(snapshot_->jobs.Find(done)->state, JobState::kFailed);
  EXPECT_EQ(snapshot_->jobs.Find(done)->exit_code, 3);
  EXPECT_EQ(snapshot_->jobs.Find(running)->state, JobState::kRunning);
  EXPECT_EQ(snapshot_->jobs.Find(running)->pid, pid);
  EXPECT_EQ(snapshot_->jobs.Find(waiting)->state, JobState::kQueued);
  EXPECT_EQ(snapshot_->gpus_allocated, 2);

  // The next id continues the sequence; the adopted job's end frees its GPUs.
  EXPECT_EQ(Submit("exit 0"), JobId(3));
  std::ofstream(go) << "";
  ASSERT_NE(WaitForState(running, JobState::kSucceeded), nullptr);
  ASSERT_NE(WaitForState(waiting, JobState::kSucceeded), nullptr);
  ASSERT_NE(WaitForState(JobId(3), JobState::kSucceeded), nullptr);
}

TEST_F(DaemonTest, AStoredJobThatCannotBeReadBackFailsAlone) {
  StartDaemon();
  const JobId done = Submit("exit 0");
  WaitForState(done, JobState::kSucceeded);
  const JobId running = Submit("sleep 30", 2);
  const JobId waiting = Submit("exit 0", 1);
  ASSERT_NE(WaitForState(running, JobState::kRunning), nullptr);
  daemon_->Stop();
  daemon_.reset();
  // A spec no parse accepts (as an older build could store a year-10000 deadline), in the
  // waiting job and in the one that had ended.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "state.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "UPDATE jobs SET spec = '{\"command\": [\"true\"], \"deadline\": "
                         "\"10000-01-01T00:00:00Z\"}' WHERE id IN (0, 2)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

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
  auto reader = Store::OpenReadOnly((dir_ / "state.db").string());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->LoadJobs()->at(waiting.index()).state, JobState::kFailed);
  EXPECT_EQ(Submit("exit 0"), JobId(3));
  EXPECT_TRUE(daemon_->Cancel(running).get().ok());
  ASSERT_NE(WaitForState(JobId(3), JobState::kSucceeded), nullptr);
}

TEST_F(DaemonTest, AnIdempotencyKeyGetsTheFirstJobBack) {
  StartDaemon();
  Result<JobRequest> request = ParseJobRequest(R"({"script": "sleep 30", "gpus": 1})", "ann");
  ASSERT_TRUE(request.ok());
  request->idempotency_key = "k1";
  SubmitResult first = daemon_->Submit(*request).get();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->existing);
  SubmitResult again = daemon_->Submit(*request).get();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->existing);
  EXPECT_EQ((*again)->id, (*first)->id);
  // The key of another user is another key; the same key for another request is refused.
  JobRequest bob = *request;
  bob.spec.user = "bob";
  SubmitResult bobs = daemon_->Submit(bob).get();
  ASSERT_TRUE(bobs.ok());
  EXPECT_FALSE(bobs->existing);
  EXPECT_NE((*bobs)->id, (*first)->id);
  JobRequest other = *request;
  other.spec.num_gpus = 2;
  EXPECT_EQ(daemon_->Submit(other).get().status().code(), StatusCode::kAlreadyExists);
  daemon_->Stop();
  daemon_.reset();

  StartDaemon();
  SubmitResult restored = daemon_->Submit(*request).get();
  ASSERT_TRUE(restored.ok());
  EXPECT_TRUE(restored->existing);
  EXPECT_EQ((*restored)->id, (*first)->id);
  EXPECT_EQ(daemon_->snapshot()->jobs.size(), 2u);
}

TEST_F(DaemonTest, RestoredJobsThatFitStartWithoutWaitingForAnEvent) {
  StartDaemon("1x2xV100");
  const JobId running = Submit("sleep 30", 2);
  const JobId waiting = Submit("exit 0", 2);
  WaitForState(running, JobState::kRunning);
  daemon_->Stop();
  daemon_.reset();
  // Restarted with a second node (n0000 keeps its name, so the running job keeps its GPUs).
  StartDaemon("2x2xV100");
  EXPECT_NE(WaitForState(waiting, JobState::kSucceeded), nullptr);
  EXPECT_EQ(daemon_->snapshot()->jobs.Find(running)->state, JobState::kRunning);
}

TEST_F(DaemonTest, AJobThatCannotBeStartedFailsInsteadOfRetryingForever) {
  StartDaemon();
  // The job's directory cannot be created: a file is in the way.
  std::ofstream(dir_ / "work" / "jobs" / "0") << "";
  const JobId id = Submit("exit 0");
  const JobRecord* job = WaitForState(id, JobState::kFailed);
  ASSERT_NE(job, nullptr);
  EXPECT_NE(job->reason.find("could not be started 3 times"), std::string::npos) << job->reason;
  // The GPUs are free again and the next job runs.
  EXPECT_NE(WaitForState(Submit("exit 0"), JobState::kSucceeded), nullptr);
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
  std::ofstream(dir_ / "work" / "jobs" / "0") << "";
  const auto t0 = std::chrono::steady_clock::now();
  const JobId id = Submit("exit 0");
  const JobRecord* job = WaitForState(id, JobState::kFailed);
  ASSERT_NE(job, nullptr);
  // Three tries: held 200 ms after the first failure, 400 ms after the second.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(600));
  auto reader = Store::Open((dir_ / "state.db").string());
  ASSERT_TRUE(reader.ok());
  Result<std::vector<EventRow>> events = (*reader)->LoadEvents(0, 1000);
  ASSERT_TRUE(events.ok());
  std::vector<Timestamp> launches;
  for (const EventRow& e : *events) {
    if (e.kind == "launch" && e.job == static_cast<int64_t>(id.value())) {
      launches.push_back(e.time);
    }
  }
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_GE(launches[1] - launches[0], milliseconds(200));
  EXPECT_GE(launches[2] - launches[1], milliseconds(400));
}

TEST_F(DaemonTest, AJobCancelledWhileItsFailedLaunchIsHeldEndsAtOnce) {
  launch_retry_ = {seconds(60), seconds(60), 3};
  StartDaemon();
  std::ofstream(dir_ / "work" / "jobs" / "0") << "";
  const JobId id = Submit("exit 0");
  WaitForState(id, JobState::kRunning);
  // The failure comes back at once and is held for a minute; a cancel does not wait for it.
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(daemon_->Cancel(id).get().ok());
  const JobRecord* job = WaitForState(id, JobState::kKilled);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->reason, "cancelled");
}

TEST_F(DaemonTest, AJobWhoseProcessVanishedIsRequeued) {
  StartDaemon();
  const JobId id = Submit("sleep 30", 1);
  const JobRecord* job = WaitForState(id, JobState::kRunning);
  ASSERT_NE(job, nullptr);
  const int pid = job->pid;
  daemon_->Stop();
  daemon_.reset();
  // The process dies with the daemon down and leaves no exit status behind.
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  fs::remove(dir_ / "work" / "jobs" / std::to_string(id.value()) / "exit");

  StartDaemon();
  // Requeued, then started again (the GPUs are free).
  const JobRecord* again = WaitFor(id, [pid](const JobRecord& j) {
    return j.state == JobState::kRunning && j.pid != pid && j.pid > 0;
  });
  ASSERT_NE(again, nullptr);
}

TEST_F(DaemonTest, ProgressReportsCorrectThePredictorWhileTheJobRuns) {
  const std::vector<PerfProfile> profiles = {{"test", "m", 8, "V100", 1, true, 10, {}}};
  Result<PerfPredictor> fitted =
      PerfPredictor::Fit(profiles, std::make_shared<const SimpleThroughputModel>());
  ASSERT_TRUE(fitted.ok()) << fitted.status().ToString();
  StartDaemon("1x2xV100", std::make_shared<const PerfPredictor>(std::move(fitted).value()));
  // Predicted to take 1000 s; reports half of it done at once, so it runs far faster.
  Result<JobRequest> request = ParseJobRequest(
      R"({"script": "echo 50/100 > $DLSCHED_PROGRESS_FILE; sleep 30", "gpus": 1, "model": "m",
          "batch_size": 8, "runtime_estimate_s": 1000})",
      "ann");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  SubmitResult submitted = daemon_->Submit(*request).get();
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const JobId id = (*submitted)->id;
  ASSERT_NE(WaitFor(id,
                    [this](const JobRecord& j) {
                      const JobPrediction* p = snapshot_->prediction(j.id);
                      return p != nullptr && p->correction > 1;
                    }),
            nullptr);
  const JobPrediction* p = snapshot_->prediction(id);
  // One job's observations move its correction up to the corrector's bound (10x) at most.
  EXPECT_LE(p->correction, 10.0);
  EXPECT_DOUBLE_EQ(p->iters_per_s, p->correction);

  // An ended job has no prediction.
  ASSERT_TRUE(daemon_->Cancel(id).get().ok());
  ASSERT_NE(WaitForState(id, JobState::kKilled), nullptr);
  EXPECT_EQ(daemon_->snapshot()->prediction(id), nullptr);
}

}  // namespace
}  // namespace dlsched::daemon
