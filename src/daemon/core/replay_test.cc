#include "daemon/core/replay.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "daemon/core/daemon.h"
#include "io/profile.h"
#include "support/builders.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Priority order with preemption at once (the shipped profile protects victims for 5 minutes).
constexpr const char* kProfile = R"({"name": "priority-now", "admit": ["feasibility"],
    "queue_sort": "priority", "score": ["consolidate"],
    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";

// A real Daemon (real processes, SystemClock) fills a store; the replay reads it back.
class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlsched_replay_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    StopDaemon();
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    fs::remove_all(dir_);
  }

  std::string db() const { return (dir_ / "state.db").string(); }

  void StartDaemon(const std::string& gpus = "1x2xV100") {
    DaemonOptions options;
    options.db_path = db();
    options.workdir = (dir_ / "work").string();
    Result<PolicyProfile> profile = ParsePolicyProfile(kProfile, "test");
    ASSERT_TRUE(profile.ok());
    options.profile = *profile;
    options.grace = milliseconds(200);
    options.job_exec = DLSCHED_BINARY;
    options.seed = 7;
    auto daemon = Daemon::Create(testing::MakeCluster(gpus), options, clock_);
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = std::move(daemon).value();
    ASSERT_TRUE(daemon_->Start().ok());
  }
  void StopDaemon() {
    if (!daemon_) return;
    daemon_->Stop();
    daemon_->KillAllJobs();
    daemon_.reset();
  }

  JobId Submit(const std::string& script, int gpus, int priority = 0) {
    Result<JobRequest> request =
        ParseJobRequest(R"({"script": ")" + script + R"(", "gpus": )" + std::to_string(gpus) +
                            R"(, "priority": )" + std::to_string(priority) + "}",
                        "ann");
    EXPECT_TRUE(request.ok()) << request.status().ToString();
    SubmitResult result = daemon_->Submit(*request).get();
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? (*result)->id : JobId();
  }

  bool WaitForState(JobId id, JobState state) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(8);
    while (std::chrono::steady_clock::now() < deadline) {
      const JobRecord* job = daemon_->snapshot()->jobs.Find(id);
      if (job && job->state == state) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    ADD_FAILURE() << "job " << id << " did not become " << JobStateName(state);
    return false;
  }

  // Runs SQL on the store (the tests' tampering).
  void Sql(const std::string& sql) {
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &handle), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(handle);
  }

  // Two daemon runs: launches, a preemption and the resume, a rejection at admission, a
  // cancellation of a waiting and of a running job (a kill), then a restart with a job running
  // through it and a submission after it.
  void FillStore() {
    StartDaemon();
    const std::string resumable =
        "[ -e $DLSCHED_CHECKPOINT_DIR/x ] && exit 0; touch $DLSCHED_CHECKPOINT_DIR/x; "
        "trap 'exit 0' TERM; while :; do sleep 0.02; done";
    const JobId low = Submit(resumable, 2, 0);
    ASSERT_TRUE(WaitForState(low, JobState::kRunning));
    // Preempted only once it has checkpointed, so its second run finishes.
    const fs::path checkpoint = dir_ / "work" / "jobs" / "0" / "checkpoint" / "x";
    for (int i = 0; i < 800 && !fs::exists(checkpoint); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_TRUE(fs::exists(checkpoint));
    const JobId high = Submit("exit 0", 2, 10);
    ASSERT_TRUE(WaitForState(high, JobState::kSucceeded));
    ASSERT_TRUE(WaitForState(low, JobState::kSucceeded));
    const JobId too_big = Submit("exit 0", 3);
    ASSERT_TRUE(WaitForState(too_big, JobState::kRejected));
    const fs::path go = dir_ / "go";
    const JobId blocker = Submit("while [ ! -e " + go.string() + " ]; do sleep 0.02; done", 2, 5);
    ASSERT_TRUE(WaitForState(blocker, JobState::kRunning));
    const JobId waiting = Submit("exit 0", 1);
    ASSERT_TRUE(daemon_->Cancel(waiting).get().ok());
    const JobId doomed = Submit("sleep 30", 1, 9);  // preempts the blocker, then is cancelled
    ASSERT_TRUE(WaitForState(doomed, JobState::kRunning));
    ASSERT_TRUE(daemon_->Cancel(doomed).get().ok());
    ASSERT_TRUE(WaitForState(doomed, JobState::kKilled));
    ASSERT_TRUE(WaitForState(blocker, JobState::kRunning));
    daemon_->Stop();  // the blocker runs on through the restart
    daemon_.reset();

    StartDaemon();
    const JobId after = Submit("exit 0", 2);
    std::ofstream(go) << "";
    ASSERT_TRUE(WaitForState(blocker, JobState::kSucceeded));
    ASSERT_TRUE(WaitForState(after, JobState::kSucceeded));
    StopDaemon();
  }

  SystemClock clock_;
  fs::path dir_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(ReplayTest, ReplaysADaemonsLogToTheSameDecisions) {
  ASSERT_NO_FATAL_FAILURE(FillStore());
  Result<ReplayReport> report = ReplayEventLog(db(), {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->divergence) << FormatReplayReport(*report, db());
  EXPECT_EQ(report->runs, 2);
  EXPECT_EQ(report->profiles, (std::vector<std::string>{"priority-now", "priority-now"}));
  // 7 submissions, 2 cancellations and the executor's reports; every cycle ran again.
  EXPECT_GE(report->inputs, 7 + 2 + 6);
  EXPECT_GE(report->cycles, report->inputs / 4);
  // Launches (low twice, high, blocker twice, doomed, after), the preemptions of low and of
  // the blocker, the kill of doomed, the rejection of too_big.
  EXPECT_GE(report->decisions, 7 + 2 + 1 + 1);
  EXPECT_NE(FormatReplayReport(*report, db()).find("decisions identical"), std::string::npos);
}

TEST_F(ReplayTest, ATamperedDecisionIsReportedWithBothSides) {
  ASSERT_NO_FATAL_FAILURE(FillStore());
  // The first launch (job 0 on both GPUs) now claims one GPU only.
  Sql("UPDATE events SET detail = 'n0:1' WHERE seq = "
      "(SELECT MIN(seq) FROM events WHERE kind = 'launch')");
  Result<ReplayReport> report = ReplayEventLog(db(), {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->divergence);
  EXPECT_EQ(report->decisions, 0);
  EXPECT_EQ(report->divergence->logged.rfind("launch job 0 on n0:1 at ", 0), 0u)
      << report->divergence->logged;
  EXPECT_EQ(report->divergence->replayed.rfind("launch job 0 on n0:0,1 at ", 0), 0u)
      << report->divergence->replayed;
  EXPECT_NE(FormatReplayReport(*report, db()).find("first divergence"), std::string::npos);
}

TEST_F(ReplayTest, AnInputTheReplayRefusesOrAMissingDecisionIsADivergence) {
  ASSERT_NO_FATAL_FAILURE(FillStore());
  // The daemon logs only inputs it applied: one the replayed state refuses shows the states
  // differ (job 0 ended long before).
  Sql("INSERT INTO events(time_us, job, kind, detail) "
      "SELECT MAX(time_us), 0, 'finished', 'failed: exit code 1' FROM events");
  Result<ReplayReport> refused = ReplayEventLog(db(), {});
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  ASSERT_TRUE(refused->divergence);
  EXPECT_EQ(refused->divergence->logged.rfind("applied finished of job 0 (failed: exit code 1)", 0),
            0u)
      << refused->divergence->logged;
  EXPECT_NE(refused->divergence->replayed.find("in state succeeded"), std::string::npos)
      << refused->divergence->replayed;

  Sql("DELETE FROM events WHERE detail = 'failed: exit code 1'");
  Sql("DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events WHERE kind = 'preempt')");
  Result<ReplayReport> missing = ReplayEventLog(db(), {});
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  ASSERT_TRUE(missing->divergence);
  EXPECT_EQ(missing->divergence->logged, "nothing more");
  EXPECT_EQ(missing->divergence->replayed.rfind("preempt job 0 at ", 0), 0u)
      << missing->divergence->replayed;
}

TEST_F(ReplayTest, ReplaysWithAnotherProfileOnRequest) {
  ASSERT_NO_FATAL_FAILURE(FillStore());
  ReplayOptions options;
  options.profile = *LoadPolicyProfile("fifo");  // never preempts: the first preemption differs
  Result<ReplayReport> report = ReplayEventLog(db(), options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->profiles.at(0), "fifo");
  ASSERT_TRUE(report->divergence);
  EXPECT_EQ(report->divergence->logged.rfind("preempt job 0", 0), 0u) << report->divergence->logged;
}

TEST_F(ReplayTest, ErrorsAreNotDivergences) {
  EXPECT_EQ(ReplayEventLog((dir_ / "none.db").string(), {}).status().code(), StatusCode::kNotFound);
  std::ofstream(dir_ / "text.db") << "not a database";
  EXPECT_FALSE(ReplayEventLog((dir_ / "text.db").string(), {}).ok());
  // A log an older daemon wrote (no start record).
  {
    auto store = Store::Open(db());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Begin().ok());
    ASSERT_TRUE((*store)->AppendEvent(AtSeconds(1), -1, "restart", "0 jobs, 0 running").ok());
    ASSERT_TRUE((*store)->Commit().ok());
  }
  EXPECT_EQ(ReplayEventLog(db(), {}).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dlsched::daemon
