#include "daemon/exec/job_exec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using test_support::FreshTestDir;
using test_support::ReadTextFile;

class JobExecTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("dlsched_job_exec"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(JobExecTest, ArgumentsRoundTrip) {
  JobExecRequest request;
  request.job_dir = "/w/jobs/3";
  request.workdir = "/home/a b";
  request.max_log_bytes = 1234;
  request.argv = {"python", "--", "-x", ""};
  request.account = UnixAccount{60001, 60002, {60002, 4}, "ann", "/home/ann"};
  const std::vector<std::string> args = JobExecArgs(request);
  Result<JobExecRequest> back = ParseJobExecArgs(args);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job_dir, request.job_dir);
  EXPECT_EQ(back->workdir, request.workdir);
  EXPECT_EQ(back->max_log_bytes, 1234);
  EXPECT_EQ(back->argv, request.argv);
  EXPECT_TRUE(back->env.empty());  // the environment goes on stdin
  Result<std::vector<std::string>> env =
      DecodeEnvironment(EncodeEnvironment({"A=1", "B=x\ny'\"$", "", "C=\xff"}));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env, (std::vector<std::string>{"A=1", "B=x\ny'\"$", "", "C=\xff"}));
  EXPECT_EQ(EncodeEnvironment({"A=1"}), "413d31\n");
  for (const char* bad : {"41", "4\n", "zz\n"}) EXPECT_FALSE(DecodeEnvironment(bad).ok()) << bad;
  ASSERT_TRUE(back->account.has_value());
  EXPECT_EQ(back->account->uid, 60001u);
  EXPECT_EQ(back->account->gid, 60002u);
  EXPECT_EQ(back->account->groups, (std::vector<gid_t>{60002, 4}));

  request.account.reset();
  back = ParseJobExecArgs(JobExecArgs(request));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->account.has_value());

  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"__job-exec", "--job-dir", "/j", "--workdir", "/w"},  // no argv
           {"__job-exec", "--job-dir", "/j", "--workdir", "/w", "--uid", "1", "--", "x"},
           {"__job-exec", "--workdir", "/w", "--", "x"},
           {"__job-exec", "--job-dir", "/j", "--workdir", "/w", "--max-log-bytes", "-1", "--", "x"},
           {"run", "--", "x"}}) {
    EXPECT_FALSE(ParseJobExecArgs(bad).ok()) << bad.size();
  }
}

TEST_F(JobExecTest, ACappedLogRotatesKeepingOneOlderFile) {
  const std::string path = (dir_ / "out.log").string();
  std::ofstream(path) << "0123";  // an earlier segment's output counts
  {
    CappedLog log(path, 10);
    ASSERT_TRUE(log.Open().ok());
    ASSERT_TRUE(log.Append("456789abc").ok());
    EXPECT_EQ(ReadTextFile(path), "abc");
    EXPECT_EQ(ReadTextFile(path + ".1"), "0123456789");
    ASSERT_TRUE(log.Append(std::string(25, 'x')).ok());
  }
  EXPECT_EQ(ReadTextFile(path), "xxxxxxxx");
  EXPECT_EQ(ReadTextFile(path + ".1"), "xxxxxxxxxx");
  // No cap: it only grows.
  CappedLog open(path, 0);
  ASSERT_TRUE(open.Open().ok());
  ASSERT_TRUE(open.Append(std::string(100, 'y')).ok());
  EXPECT_EQ(fs::file_size(path), 108u);
}

TEST_F(JobExecTest, RunsTheJobRecordsItsStatusAndRefusesABadWorkdir) {
  JobExecRequest request;
  request.job_dir = dir_.string();
  request.workdir = dir_.string();
  request.max_log_bytes = 0;
  // RunJobExec ignores SIGTERM and friends for the rest of this process: run it in a child.
  auto run = [](const JobExecRequest& r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(RunJobExec(r));
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  request.env = {"PATH=/usr/bin:/bin", "X=ok"};
  request.argv = {"sh", "-c", "echo out $X; echo err >&2; pwd > where; exit 3"};
  EXPECT_EQ(run(request), 3);
  EXPECT_EQ(ReadTextFile(dir_ / "exit"), "3\n");
  EXPECT_EQ(ReadTextFile(dir_ / "stdout.log"), "out ok\n");
  EXPECT_EQ(ReadTextFile(dir_ / "stderr.log"), "err\n");
  EXPECT_EQ(ReadTextFile(dir_ / "where"), dir_.string() + "\n");

  request.workdir = (dir_ / "missing").string();
  EXPECT_EQ(run(request), 126);
  EXPECT_NE(ReadTextFile(dir_ / "stderr.log").find("cannot enter working directory"),
            std::string::npos);

  request.workdir = dir_.string();
  request.argv = {"no-such-program-dlsched"};
  EXPECT_EQ(run(request), 127);
  EXPECT_EQ(ReadTextFile(dir_ / "exit"), "127\n");
}

}  // namespace
}  // namespace dlsched::daemon
