// End-to-end tests of the daemon's start, stop and ownership of its state (harness:
// daemon_harness.h): one daemon per database and workdir, a workdir tied to its database,
// --kill-jobs-on-exit, and the signals.

#include <gtest/gtest.h>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

constexpr const char* kKilledOnExit = "daemon shut down with --kill-jobs-on-exit";

class LifecycleTest : public DaemonIntegrationTest {
 protected:
  // Runs `dlsched serve` on `workdir` and `db` (the harness's other flags) and waits for it to
  // exit; one still running at the deadline is killed and reported with code -1.
  RunResult ServeExpectingExit(const fs::path& workdir, const fs::path& db) {
    const fs::path out = dir_ / "refused.out";
    const fs::path err = dir_ / "refused.err";
    const pid_t pid =
        Spawn({DLSCHED_BINARY, "serve", "--listen", "127.0.0.1:0", "--gpus", "1x4xV100",
               "--workdir", workdir.string(), "--db", db.string(), "--grace", "1"},
              out, err);
    int status = 0;
    if (!Eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; })) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return {-1, ReadTextFile(out), ReadTextFile(err)};
    }
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadTextFile(out), ReadTextFile(err)};
  }
};

TEST_F(LifecycleTest, ASecondDaemonOnTheSameDatabaseOrWorkdirIsRefused) {
  StartDaemon();
  const fs::path runs = dir_ / "runs";
  auto [s0, running] = Submit(Script("echo run >> " + runs.string() + "; sleep 30", 4));
  auto [s1, queued] = Submit(Script("echo queued >> " + runs.string(), 4));
  ASSERT_EQ(s0, 201);
  ASSERT_EQ(s1, 201);
  ASSERT_TRUE(WaitForState(0, "running"));
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(runs) == "run\n"; }));
  const std::string holder =
      "in use by another dlsched daemon (pid " + std::to_string(pid_) + " on host ";

  // The same database, another workdir.
  const RunResult same_db = ServeExpectingExit(dir_ / "work2", dir_ / "state.db");
  EXPECT_EQ(same_db.code, 1) << same_db.err;
  EXPECT_NE(same_db.err.find("database " + (dir_ / "state.db").string() + " is " + holder),
            std::string::npos)
      << same_db.err;
  EXPECT_EQ(same_db.out.find("listening"), std::string::npos);
  // The same workdir, another database (which is not even created).
  const RunResult same_workdir = ServeExpectingExit(dir_ / "work", dir_ / "other.db");
  EXPECT_EQ(same_workdir.code, 1) << same_workdir.err;
  EXPECT_NE(same_workdir.err.find("workdir " + (dir_ / "work").string() + " is " + holder),
            std::string::npos)
      << same_workdir.err;
  EXPECT_NE(same_workdir.err.find(" since 20"), std::string::npos) << same_workdir.err;
  EXPECT_FALSE(fs::exists(dir_ / "other.db"));

  // The first daemon runs on, nothing ran twice, and the refused ones wrote nothing (the
  // database stays readable beside its daemon).
  EXPECT_EQ(waitpid(pid_, nullptr, WNOHANG), 0);
  EXPECT_EQ(Job(0)["state"], "running");
  EXPECT_EQ(Job(1)["state"], "queued");
  EXPECT_EQ(ReadTextFile(runs), "run\n");
  EXPECT_EQ(StoredRows("SELECT COUNT(*) FROM events WHERE kind = 'start'"),
            std::vector<std::string>{"1"});
  const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("all 1 decision identical"), std::string::npos) << replay.out;
  EXPECT_EQ(StoredRows("SELECT value FROM meta WHERE key = 'owner'")
                .at(0)
                .rfind("pid=" + std::to_string(pid_) + " host=", 0),
            0u);

  // A daemon that died leaves no lock behind (nor does its job, which outlives it): the next
  // one starts and re-adopts the job.
  Kill9();
  StartDaemon();
  EXPECT_EQ(Job(0)["state"], "running");
  EXPECT_EQ(ReadTextFile(runs), "run\n");
}

TEST_F(LifecycleTest, AWorkdirWhoseDatabaseWasLostIsRefused) {
  StartDaemon();
  auto [status, job] = Submit(Script("echo output of the first job 0", 1));
  ASSERT_EQ(status, 201);
  ASSERT_TRUE(WaitForState(0, "succeeded"));
  ASSERT_EQ(StopDaemon(), 0);
  const std::string store_id = ReadTextFile(dir_ / "work" / ".dlsched-store-id");
  EXPECT_EQ(store_id.size(), 33u) << store_id;
  EXPECT_EQ(StoredRows("SELECT value FROM meta WHERE key = 'store_id'"),
            std::vector<std::string>{store_id.substr(0, 32)});

  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dir_.string() + "/state.db" + suffix);
  const RunResult lost = ServeExpectingExit(dir_ / "work", dir_ / "state.db");
  EXPECT_EQ(lost.code, 1) << lost.err;
  EXPECT_NE(lost.err.find("workdir " + (dir_ / "work").string() +
                          " belongs to the database with store id " + store_id.substr(0, 32)),
            std::string::npos)
      << lost.err;
  EXPECT_NE(lost.err.find("is new: the database this workdir was used with is lost or replaced"),
            std::string::npos)
      << lost.err;
  EXPECT_NE(lost.err.find("give a new --workdir"), std::string::npos) << lost.err;
  EXPECT_EQ(ReadTextFile(dir_ / "work" / "jobs" / "0" / "stdout.log"),
            "output of the first job 0\n");

  // As the message says: a new workdir, and job 0 is a new job with its own files.
  fs::rename(dir_ / "work", dir_ / "old-work");
  StartDaemon();
  std::tie(status, job) = Submit(Script("echo second job 0", 1));
  ASSERT_EQ(status, 201);
  ASSERT_EQ(job["id"], 0);
  ASSERT_TRUE(WaitForState(0, "succeeded"));
  EXPECT_EQ(Cli({"logs", "0"}).out, "second job 0\n");
  EXPECT_EQ(ReadTextFile(dir_ / "old-work" / "jobs" / "0" / "stdout.log"),
            "output of the first job 0\n");
}

TEST_F(LifecycleTest, ANewJobNeverReadsADirectoryLeftWithItsId) {
  StartDaemon();
  // What a launch whose decision never committed leaves behind.
  const fs::path stale = dir_ / "work" / "jobs" / "0";
  fs::create_directories(stale / "checkpoint");
  std::ofstream(stale / "stdout.log") << "another job's output\n";
  std::ofstream(stale / "checkpoint" / "state") << "another job's checkpoint\n";
  auto [status, job] =
      Submit(Script("cat \"$DLSCHED_CHECKPOINT_DIR/state\" 2>/dev/null; echo fresh", 1));
  ASSERT_EQ(status, 201);
  ASSERT_EQ(job["id"], 0);
  ASSERT_TRUE(WaitForState(0, "succeeded"));
  EXPECT_EQ(Cli({"logs", "0"}).out, "fresh\n");

  std::vector<fs::path> moved;
  for (const auto& entry : fs::directory_iterator(dir_ / "work" / "orphaned")) {
    moved.push_back(entry.path());
  }
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].filename().string().rfind("0-", 0), 0u) << moved[0];
  EXPECT_EQ(ReadTextFile(moved[0] / "stdout.log"), "another job's output\n");
  EXPECT_EQ(ReadTextFile(moved[0] / "checkpoint" / "state"), "another job's checkpoint\n");
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("moved to " + moved[0].string() + " unread"),
            std::string::npos);
}

TEST_F(LifecycleTest, KillJobsOnExitTermsThenKillsAndRecordsTheJobsKilled) {
  StartDaemon({"--kill-jobs-on-exit"});
  const std::string d = dir_.string();
  // Exits on SIGTERM.
  auto [s0, a] = Submit(Script("trap 'echo term > " + d + "/a.term; exit 0' TERM; echo run >> " +
                                   d + "/a.runs; while true; do sleep 0.05; done",
                               2));
  // Ignores SIGTERM: SIGKILL once the grace period is over.
  auto [s1, b] = Submit(
      Script("trap '' TERM; echo run >> " + d + "/b.runs; while true; do sleep 0.05; done", 2));
  // Waits for the GPUs the others hold: it must not start while they are being killed.
  auto [s2, c] = Submit(Script("echo run >> " + d + "/c.runs", 4));
  ASSERT_EQ(s0, 201);
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(0, "running"));
  ASSERT_TRUE(WaitForState(1, "running"));
  ASSERT_TRUE(Eventually([&] {
    return ReadTextFile(dir_ / "a.runs") == "run\n" && ReadTextFile(dir_ / "b.runs") == "run\n";
  }));

  EXPECT_EQ(StopDaemon(), 0);
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err")
                .find("stopped; killed 2 running jobs (2 recorded as killed)"),
            std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  // A got SIGTERM and exited (status 0); B outlived it and got SIGKILL (128 + 9).
  EXPECT_EQ(ReadTextFile(dir_ / "a.term"), "term\n");
  const std::string killed = std::string("killed|") + kKilledOnExit;
  EXPECT_EQ(StoredRows("SELECT state, reason, exit_code FROM jobs ORDER BY id"),
            (std::vector<std::string>{killed + "|0", killed + "|137", "queued||NULL"}));
  EXPECT_FALSE(fs::exists(dir_ / "c.runs"));

  // A restart runs neither again; the waiting job runs now.
  StartDaemon();
  EXPECT_EQ(Job(0)["state"], "killed");
  EXPECT_EQ(Job(1)["reason"], kKilledOnExit);
  ASSERT_TRUE(WaitForState(2, "succeeded"));
  EXPECT_EQ(ReadTextFile(dir_ / "a.runs"), "run\n");
  EXPECT_EQ(ReadTextFile(dir_ / "b.runs"), "run\n");
  ASSERT_EQ(StopDaemon(), 0);
  // The shutdown's cancels and kills replay as the daemon decided them.
  const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("decisions identical"), std::string::npos) << replay.out;
}

TEST_F(LifecycleTest, SighupIsLoggedAndIgnored) {
  StartDaemon();
  ASSERT_EQ(kill(pid_, SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    return ReadTextFile(dir_ / "daemon.err").find("SIGHUP ignored") != std::string::npos;
  }));
  EXPECT_EQ(waitpid(pid_, nullptr, WNOHANG), 0);
  auto [status, job] = Submit(Script("true", 1));
  EXPECT_EQ(status, 201);
  EXPECT_TRUE(WaitForState(0, "succeeded"));
  EXPECT_EQ(StopDaemon(), 0);

  const RunResult help = Dlsched({"serve", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("SIGHUP is logged and ignored"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("a second one exits with status 1"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace dlsched::integration
