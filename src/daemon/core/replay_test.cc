#include "daemon/core/replay.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "daemon/core/daemon_test_fixture.h"
#include "io/profile.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

// A daemon (the fake executor, the SQLite Store, a VirtualClock) fills a store; the replay reads
// it back.
class ReplayTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    sqlite_ = true;
    profile_json_ = kPreemptingProfile;
    seed_ = 7;
  }

  std::string db() const { return (dir_ / "state.db").string(); }

  JobId Submit(int gpus, int priority) {
    return DaemonFixture::Submit(R"("script": "train", "gpus": )" + std::to_string(gpus) +
                                 R"(, "priority": )" + std::to_string(priority));
  }
  // A second passes, then `job` exits with `exit_code` and the daemon handles it.
  void Exit(JobId job, int exit_code) {
    clock_.AdvanceTo(clock_.Now() + std::chrono::seconds(1));
    machine_.Exit(job, exit_code);
    Step();
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
    const JobId low = Submit(2, 0);
    ASSERT_EQ(State(low), JobState::kRunning);
    const JobId high = Submit(2, 10);  // preempts low
    Exit(low, 0);                      // checkpointed and stopped: high starts
    ASSERT_EQ(State(low), JobState::kSuspended);
    Exit(high, 0);  // low resumes
    ASSERT_EQ(State(high), JobState::kSucceeded);
    Exit(low, 0);
    ASSERT_EQ(State(low), JobState::kSucceeded);
    const JobId too_big = Submit(3, 0);
    ASSERT_EQ(State(too_big), JobState::kRejected);
    const JobId blocker = Submit(2, 5);
    ASSERT_EQ(State(blocker), JobState::kRunning);
    const JobId waiting = Submit(1, 0);
    ASSERT_TRUE(Await(daemon_->Cancel(waiting)).ok());
    const JobId doomed = Submit(1, 9);  // preempts the blocker, then is cancelled
    Exit(blocker, 128 + 15);
    ASSERT_EQ(State(doomed), JobState::kRunning);
    ASSERT_TRUE(Await(daemon_->Cancel(doomed)).ok());
    Exit(doomed, 128 + 15);
    ASSERT_EQ(State(doomed), JobState::kKilled);
    ASSERT_EQ(State(blocker), JobState::kRunning);
    daemon_.reset();  // the blocker runs on through the restart

    StartDaemon();
    const JobId after = Submit(2, 0);
    Exit(blocker, 0);
    ASSERT_EQ(State(blocker), JobState::kSucceeded);
    Exit(after, 0);
    ASSERT_EQ(State(after), JobState::kSucceeded);
    daemon_.reset();
  }
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
  options.profile = *LoadProfile("fifo");  // never preempts: the first preemption differs
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
