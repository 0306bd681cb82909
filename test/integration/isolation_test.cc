// End-to-end tests of job isolation and of what a job's output may do to the daemon
// (docs/security.md; harness: daemon_harness.h). The isolation tests need root: they run jobs
// as the numeric accounts 60001 and 60002, which need no passwd entry.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

class IsolationTest : public DaemonIntegrationTest {
 protected:
  // A job with no working directory of its own (it runs in its job directory).
  static json Job(const std::string& script) { return {{"script", script}, {"gpus", 1}}; }

  // GET /v1/jobs/ID/logs?stream=STREAM: (status, body).
  std::pair<int, std::string> Logs(int64_t id, const std::string& stream,
                                   const std::string& token) {
    auto res =
        client_->Get("/v1/jobs/" + std::to_string(id) + "/logs?stream=" + stream, Auth(token));
    if (!res) return {0, ""};
    return {res->status, res->body};
  }

  fs::path JobDir(int64_t id) { return dir_ / "work" / "jobs" / std::to_string(id); }

  bool WaitFor(int64_t id, const std::string& state, const std::string& token) {
    return Eventually([&] {
      return Get("/v1/jobs/" + std::to_string(id) + "?explain=false", token)
                 .second.value("state", "") == state;
    });
  }
};

TEST_F(IsolationTest, EachUsersJobsRunAsTheirAccountAndCannotReachOthersOrTheDaemon) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (jobs run as uids 60001 and 60002)";
  const fs::path tokens = dir_ / "tokens";
  std::ofstream(tokens) << "t-admin,admin,admin,root\nt-ann,ann,user,60001\n"
                           "t-bob,bob,user,60002:60002\nt-cy,cy,user\n";
  ASSERT_EQ(chmod(tokens.c_str(), 0600), 0);
  StartDaemon({"--tokens", tokens.string()});
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("jobs run as their users' Unix accounts"),
            std::string::npos);
  const fs::path go = dir_ / "go";
  const std::string wait_go = "while [ ! -e " + go.string() + " ]; do sleep 0.02; done";

  // Bob's job reports progress and waits.
  auto [s0, bob] =
      Submit(Job("id -u; id -g; echo 7/100 > \"$DLSCHED_PROGRESS_FILE\"; " + wait_go), "t-bob");
  ASSERT_EQ(s0, 201) << bob;
  const int64_t b = bob["id"];
  ASSERT_TRUE(WaitFor(b, "running", "t-bob"));
  ASSERT_TRUE(Eventually([&] { return fs::exists(JobDir(b) / "progress"); }));

  // Ann's job tries everything it should not manage, then turns its stderr log into a link to
  // the tokens file.
  const std::string bob_dir = JobDir(b).string();
  const int bob_pid = Get("/v1/jobs/" + std::to_string(b), "t-bob").second.value("pid", 0);
  ASSERT_GT(bob_pid, 0);
  const std::string probe =
      "id -u; "
      "cat " +
      tokens.string() +
      " && echo READ-TOKENS; "
      "cat " +
      (dir_ / "state.db").string() +
      " > /dev/null && echo READ-DB; "
      "ls " +
      bob_dir +
      " && echo LIST-BOB; "
      "cat " +
      bob_dir +
      "/stdout.log && echo READ-BOB-LOG; "
      "echo 99/100 > " +
      bob_dir +
      "/progress && echo FORGED-PROGRESS; "
      "echo x >> " +
      bob_dir +
      "/stdout.log && echo WROTE-BOB-LOG; "
      "kill -TERM -" +
      std::to_string(bob_pid) +
      " && echo SIGNALLED-BOB; "
      "ln -sf " +
      tokens.string() + " stderr.log; echo done";
  auto [s1, ann] = Submit(Job(probe), "t-ann");
  ASSERT_EQ(s1, 201) << ann;
  const int64_t a = ann["id"];
  ASSERT_TRUE(WaitFor(a, "succeeded", "t-ann"));

  const auto [out_status, out] = Logs(a, "stdout", "t-ann");
  EXPECT_EQ(out_status, 200);
  EXPECT_EQ(out, "60001\ndone\n");
  // The log that became a link is not served, to its owner or an admin.
  for (const char* token : {"t-ann", "t-admin"}) {
    const auto [status, body] = Logs(a, "stderr", token);
    EXPECT_EQ(status, 409) << token;
    EXPECT_EQ(body.find("t-admin"), std::string::npos) << body;
  }
  // Bob's progress is his own: not forged through the file, refused over HTTP.
  auto forged = client_->Post("/v1/jobs/" + std::to_string(b) + "/progress", Auth("t-ann"),
                              R"({"iterations_done": 99})", "application/json");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 403);
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(b), "t-bob").second["progress"]["iterations_done"], 7);

  // Job directories are private to their accounts.
  for (auto [id, uid] : {std::pair{b, 60002u}, std::pair{a, 60001u}}) {
    struct stat st {};
    ASSERT_EQ(stat(JobDir(id).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, uid);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  struct stat db {};
  ASSERT_EQ(stat((dir_ / "state.db").c_str(), &db), 0);
  EXPECT_EQ(db.st_mode & 0777, 0600u);

  std::ofstream(go) << "";
  ASSERT_TRUE(WaitFor(b, "succeeded", "t-bob"));
  EXPECT_EQ(Logs(b, "stdout", "t-bob").second, "60002\n60002\n");

  // A working directory the account may not enter fails the job, as that account.
  const fs::path private_dir = dir_ / "root-only";
  fs::create_directories(private_dir);
  ASSERT_EQ(chmod(private_dir.c_str(), 0700), 0);
  json in_private = Job("touch here");
  in_private["workdir"] = private_dir.string();
  auto [s3, denied] = Submit(in_private, "t-ann");
  ASSERT_EQ(s3, 201) << denied;
  ASSERT_TRUE(WaitFor(denied["id"], "failed", "t-ann"));
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(denied["id"].get<int>()), "t-ann").second["exit_code"],
            126);
  EXPECT_NE(Logs(denied["id"], "stderr", "t-ann").second.find("cannot enter working directory"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(private_dir / "here"));

  // A user with no Unix account (no passwd entry "cy", no 4th column) is refused at submit.
  auto [s2, refused] = Submit(Job("true"), "t-cy");
  EXPECT_EQ(s2, 400) << refused;
  EXPECT_EQ(refused["error"]["field"], "user") << refused;
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("no Unix account"),
            std::string::npos);
}

TEST_F(IsolationTest, ATokensFileOthersMayWriteIsRefused) {
  const fs::path tokens = dir_ / "tokens";
  std::ofstream(tokens) << "t-admin,admin,admin\n";
  ASSERT_EQ(chmod(tokens.c_str(), 0666), 0);
  const pid_t pid = Spawn({DLSCHED_BINARY, "serve", "--listen", "127.0.0.1:0", "--gpus", "1x4xV100",
                           "--workdir", (dir_ / "work").string(), "--tokens", tokens.string()},
                          dir_ / "out", dir_ / "err");
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(ReadTextFile(dir_ / "err").find("may be written by other users"), std::string::npos);
}

TEST_F(IsolationTest, ADaemonThatIsNotRootSaysAllJobsRunAsOneUser) {
  if (geteuid() != 0 || !fs::exists("/usr/bin/setpriv")) {
    GTEST_SKIP() << "needs root and setpriv to start a daemon as uid 60001";
  }
  const fs::path home = dir_ / "nonroot";
  fs::create_directories(home);
  ASSERT_EQ(chown(home.c_str(), 60001, 60001), 0);
  const pid_t pid =
      Spawn({"/usr/bin/setpriv", "--reuid=60001", "--regid=60001", "--clear-groups", DLSCHED_BINARY,
             "serve", "--listen", "127.0.0.1:0", "--gpus", "1x4xV100", "--workdir",
             (home / "work").string(), "--db", (home / "state.db").string()},
            dir_ / "out", dir_ / "err");
  ASSERT_GT(pid, 0);
  const bool up = Eventually(
      [&] { return ReadTextFile(dir_ / "out").find("listening on") != std::string::npos; });
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(up) << ReadTextFile(dir_ / "err");
  EXPECT_NE(ReadTextFile(dir_ / "err").find("every job runs as this one Unix user"),
            std::string::npos)
      << ReadTextFile(dir_ / "err");
}

TEST_F(IsolationTest, ALogPastTheCapIsRotatedKeepingOneOlderFile) {
  StartDaemon({"--max-log-bytes", "4096"});
  // 100,000 bytes on stdout, a line on stderr.
  auto [s, job] = Submit(Job("head -c 100000 /dev/zero | tr '\\0' a; echo tail >&2"));
  ASSERT_EQ(s, 201) << job;
  const int64_t id = job["id"];
  ASSERT_TRUE(WaitFor(id, "succeeded", ""));
  // 100,000 = 24 x 4096 + 1,696: the current log holds the last 1,696 bytes, the rotated one
  // the 4,096 before them, and nothing else is kept.
  EXPECT_EQ(fs::file_size(JobDir(id) / "stdout.log"), 1696u);
  EXPECT_EQ(fs::file_size(JobDir(id) / "stdout.log.1"), 4096u);
  EXPECT_FALSE(fs::exists(JobDir(id) / "stdout.log.2"));
  EXPECT_EQ(ReadTextFile(JobDir(id) / "stderr.log"), "tail\n");
  EXPECT_FALSE(fs::exists(JobDir(id) / "stderr.log.1"));
}

TEST_F(IsolationTest, LaunchesWaitWhileTheStoreIsLowOnSpace) {
  // More free space than any disk has: launches stay paused.
  StartDaemon({"--min-free-mib", "1000000000000"});
  auto [s, job] = Submit(Job("true"));
  ASSERT_EQ(s, 201) << job;
  ASSERT_TRUE(Eventually([&] {
    return ReadTextFile(dir_ / "daemon.err").find("launches paused") != std::string::npos;
  }));
  std::this_thread::sleep_for(milliseconds(1500));  // a second check, a second chance to launch
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(job["id"].get<int>())).second["state"], "pending");
  EXPECT_EQ(Get("/v1/nodes").second["gpus_allocated"], 0);
}

}  // namespace
}  // namespace dlsched::integration
