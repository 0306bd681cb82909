// End-to-end tests of `dlsched serve --executor slurm` against a real Slurm: the throw-away
// cluster of scripts/slurm/start-test-cluster.sh (node1, node2: 4 x v100; node3: 2 x t4; one
// partition "dlsched"), which the CTest fixture starts once before these tests and stops after
// them. The daemon is the real binary on port 0 with a temporary SQLite file; jobs are real
// Slurm batch jobs. Every wait is a poll with a deadline, and each test leaves the cluster as it
// found it (queue empty, every node up).
//
// Without the fixture's cluster (Slurm not installed) every test skips, saying why, except
// where $CI is set: there the missing cluster is a failure.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "daemon/exec/job_env.h"
#include "daemon/exec/slurm_command.h"
#include "daemon/exec/slurm_executor.h"
#include "daemon/exec/slurm_parse.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/pipeline.h"
#include "dlsched/policy/registry.h"
#include "io/profile.h"
#include "sim/simulator.h"
#include "support/test_files.h"

extern char** environ;

namespace dlsched {
namespace {

namespace fs = std::filesystem;
using daemon::RunChecked;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::FreshTestDir;
using test_support::ListeningUrl;
using test_support::ReadTextFile;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = seconds(20);
// The cluster's slurmd notices a dead slurmd after about 12 s (SlurmdTimeout=2, MessageTimeout=3).
constexpr auto kNodeDeadline = seconds(40);

bool Eventually(const std::function<bool()>& done, Clock::duration within = kDeadline) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return done();
}

pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// "KEY=value" lines of a file the job wrote with `env`.
std::map<std::string, std::string> EnvFile(const fs::path& path) {
  std::map<std::string, std::string> env;
  std::istringstream in(ReadTextFile(path));
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// The Slurm test cluster: SLURM_CONF and the partition from the fixture's env file.
struct TestCluster {
  bool ok = false;
  std::string why;
  fs::path dir;
  std::string partition;
};

const TestCluster& Cluster() {
  static const TestCluster cluster = [] {
    TestCluster c;
    c.dir = DLSCHED_SLURM_DIR;
    const std::string env = ReadTextFile(c.dir / "env");
    if (env.empty()) {
      c.why = "no Slurm test cluster at " + c.dir.string() +
              " (the slurm_cluster_start test starts it; it skips where Slurm is not installed: "
              "see scripts/install-deps.sh)";
      return c;
    }
    std::istringstream in(env);
    for (std::string line; std::getline(in, line);) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = line.substr(0, eq);
      const std::string value = line.substr(eq + 1);
      if (name == "SLURM_CONF") setenv("SLURM_CONF", value.c_str(), 1);
      if (name == "DLSCHED_SLURM_PARTITION") c.partition = value;
    }
    const std::string path = std::string(std::getenv("PATH") ? std::getenv("PATH") : "");
    setenv("PATH", (path + ":/usr/sbin:/sbin").c_str(), 1);
    c.ok = !c.partition.empty();
    if (!c.ok) c.why = c.dir.string() + "/env names no partition";
    return c;
  }();
  return cluster;
}

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const TestCluster& cluster = Cluster();
    if (!cluster.ok) {
      if (std::getenv("CI") != nullptr) FAIL() << cluster.why << " ($CI is set: no skipping)";
      GTEST_SKIP() << cluster.why;
    }
    partition_ = cluster.partition;
    dir_ = FreshTestDir("dlsched_slurm");
    fs::create_directories(dir_ / "work");
    ResetCluster();
  }

  void TearDown() override {
    StopDaemon(SIGTERM);  // a clean stop: its executor submits what it was about to
    if (!partition_.empty()) ResetCluster();
    if (HasFailure()) {
      std::cerr << "kept " << dir_ << " (job directories, daemon.err, state.db)\n";
    } else {
      fs::remove_all(dir_);
    }
  }

  // Every node up and idle, nothing queued.
  void ResetCluster() {
    for (const char* node : {"node1", "node2", "node3"}) {
      const fs::path pid_file = Cluster().dir / (std::string("slurmd-") + node + ".pid");
      const int pid = std::atoi(ReadTextFile(pid_file).c_str());
      if (pid <= 0 || kill(pid, 0) != 0) StartSlurmd(node);
    }
    for (const char* node : {"node1", "node2", "node3"}) {
      // Refused for a node that is neither drained nor down: nothing to undo there.
      (void)RunChecked({"scontrol", "update", std::string("nodename=") + node, "state=resume"});
    }
    EXPECT_TRUE(Eventually(
        [&] {
          // Again each time: a submission may still have been on its way.
          (void)RunChecked({"scancel", "--partition=" + partition_});
          Result<std::string> q = RunChecked({"squeue", "--noheader", "-p", partition_});
          Result<std::string> s =
              RunChecked({"sinfo", "--noheader", "-N", "-p", partition_, "-o", "%t"});
          return q.ok() && q->empty() && s.ok() && *s == "idle\nidle\nidle\n";
        },
        kNodeDeadline))
        << "the test cluster did not settle:\n"
        << Output({"sinfo", "-N", "-p", partition_}) << Output({"squeue", "-p", partition_});
  }

  // A command's stdout, or its error.
  static std::string Output(const std::vector<std::string>& argv) {
    Result<std::string> out = RunChecked(argv);
    return out.ok() ? *out : out.status().ToString() + "\n";
  }

  void StartSlurmd(const std::string& node) {
    const pid_t pid = Spawn({"slurmd", "-N", node}, dir_ / "slurmd.out", dir_ / "slurmd.out");
    ASSERT_GT(pid, 0);
    int status = 0;
    waitpid(pid, &status, 0);  // slurmd daemonizes
    ASSERT_EQ(WEXITSTATUS(status), 0) << ReadTextFile(dir_ / "slurmd.out");
  }

  void KillSlurmd(const std::string& node) {
    const int pid = std::atoi(ReadTextFile(Cluster().dir / ("slurmd-" + node + ".pid")).c_str());
    ASSERT_GT(pid, 0);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
  }

  void StartDaemon(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {DLSCHED_BINARY,
                                     "serve",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--executor",
                                     "slurm",
                                     "--slurm-partition",
                                     partition_,
                                     "--slurm-poll",
                                     "0.2",
                                     "--workdir",
                                     (dir_ / "work").string(),
                                     "--db",
                                     (dir_ / "state.db").string(),
                                     "--grace",
                                     "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const fs::path out = dir_ / "daemon.out";
    fs::remove(out);
    pid_ = Spawn(args, out, dir_ / "daemon.err");
    ASSERT_GT(pid_, 0);
    ASSERT_TRUE(Eventually([&] {
      const std::optional<std::string> url = ListeningUrl(out);
      if (url) url_ = *url;
      return url.has_value();
    })) << "daemon did not start: "
        << ReadTextFile(dir_ / "daemon.err");
    client_ = std::make_unique<httplib::Client>(url_);
    client_->set_read_timeout(seconds(10));
  }

  void StopDaemon(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  json Submit(const std::string& script, int gpus, const std::string& gpu_type,
              json extra = json::object()) {
    json job = {{"script", script}, {"gpus", gpus}, {"workdir", dir_.string()}};
    if (!gpu_type.empty()) job["gpu_type"] = gpu_type;
    job.update(extra);
    auto res = client_->Post("/v1/jobs", job.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 201) << (res ? res->body : "no reply");
    return res ? json::parse(res->body, nullptr, false) : json();
  }

  json Job(int64_t id) {
    auto res = client_->Get("/v1/jobs/" + std::to_string(id) + "?explain=false");
    return res ? json::parse(res->body, nullptr, false) : json();
  }

  bool WaitForState(int64_t id, const std::string& state, Clock::duration within = kDeadline) {
    const bool reached = Eventually([&] { return Job(id).value("state", "") == state; }, within);
    if (!reached) {
      ADD_FAILURE() << "job " << id << " is " << Job(id).dump() << ", not " << state
                    << "\ndaemon: " << ReadTextFile(dir_ / "daemon.err") << "\nsqueue:\n"
                    << Output({"squeue", "-p", partition_, "-o", "%i %T %r %j %N %k"})
                    << "events:\n"
                    << Events();
    }
    return reached;
  }

  fs::path JobDir(int64_t id) { return dir_ / "work" / "jobs" / std::to_string(id); }

  // The daemon's event log, one "job kind detail" line per event (for failure messages).
  std::string Events() {
    std::string out;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir_ / "state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db, "SELECT job, kind, detail FROM events ORDER BY seq", -1, &stmt,
                         nullptr);
      while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
        out += std::to_string(sqlite3_column_int64(stmt, 0)) + " " +
               reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)) + " " +
               reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2)) + "\n";
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return out;
  }

  // The Slurm jobs (any state Slurm still lists) of a dlsched job.
  std::vector<std::string> SlurmJobsOf(int64_t id) {
    Result<std::string> out = RunChecked({"squeue", "--noheader", "--states=all", "-p", partition_,
                                          "--format=" + std::string(daemon::kSqueueFormat)});
    std::set<std::string> ids;
    if (out.ok()) {
      for (const daemon::SlurmQueueEntry& e : daemon::ParseSqueue(*out)) {
        if (e.comment == "dlsched:" + JobDir(id).string()) ids.insert(e.job_id);
      }
    }
    return std::vector<std::string>(ids.begin(), ids.end());
  }

  // A job command that waits until the test releases it (touches <checkpoint>/release).
  static std::string WaitForRelease() {
    return "while [ ! -e \"$DLSCHED_CHECKPOINT_DIR/release\" ]; do sleep 0.1; done";
  }
  // The job's directory may not exist yet: the daemon decides a launch before its executor
  // submits it.
  void Release(int64_t id) {
    fs::create_directories(JobDir(id) / "checkpoint");
    std::ofstream(JobDir(id) / "checkpoint" / "release") << "";
  }

  std::string partition_;
  fs::path dir_;
  pid_t pid_ = -1;
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(SlurmTest, ATwoNodeGangSeesItsRankEnvironment) {
  StartDaemon();
  // Eight V100s are two whole nodes: one Slurm job, one task per node.
  const json job = Submit("env > \"$DLSCHED_CHECKPOINT_DIR/env.$SLURMD_NODENAME\"", 8, "V100",
                          {{"framework", "pytorch"}});
  ASSERT_TRUE(WaitForState(job["id"], "succeeded"));
  const fs::path checkpoint = JobDir(job["id"]) / "checkpoint";
  const auto first = EnvFile(checkpoint / "env.node1");
  const auto second = EnvFile(checkpoint / "env.node2");
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  for (const auto* env : {&first, &second}) {
    EXPECT_EQ(env->at("WORLD_SIZE"), "2");
    EXPECT_EQ(env->at("MASTER_ADDR"), "127.0.0.1");  // node1's NodeAddr
    EXPECT_EQ(env->at("MASTER_PORT"), first.at("MASTER_PORT"));
    EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
    EXPECT_EQ(env->at("DLSCHED_NUM_GPUS"), "8");
    EXPECT_EQ(env->at("DLSCHED_NODE_NUM_GPUS"), "4");
    EXPECT_EQ(env->at("DLSCHED_JOB_ID"), std::to_string(job["id"].get<int>()));
    EXPECT_EQ(env->at("LOCAL_RANK"), "0");
  }
  EXPECT_EQ(first.at("RANK"), "0");
  EXPECT_EQ(second.at("RANK"), "1");
  EXPECT_EQ(first.at("NODE_RANK"), "0");
  EXPECT_EQ(second.at("NODE_RANK"), "1");
  EXPECT_EQ(first.at("SLURM_PROCID"), "0");
  EXPECT_EQ(second.at("SLURM_PROCID"), "1");
  EXPECT_EQ(Job(job["id"])["exit_code"], 0);
  EXPECT_EQ(SlurmJobsOf(job["id"]).size(), 1u);
}

TEST_F(SlurmTest, AGangWithUnequalShareRunsAsAHeterogeneousJob) {
  StartDaemon();
  // One V100 taken on node1, then a gang of six: 2 + 4 across the two V100 nodes... or 3 + 3;
  // whatever dlsched chose, each node sees exactly its GPUs.
  const json blocker = Submit(WaitForRelease(), 1, "V100");
  ASSERT_TRUE(WaitForState(blocker["id"], "running"));
  const json gang = Submit("env > \"$DLSCHED_CHECKPOINT_DIR/env.$SLURMD_NODENAME\"", 6, "V100",
                           {{"framework", "pytorch"}});
  ASSERT_TRUE(WaitForState(gang["id"], "running", seconds(5)) ||
              Job(gang["id"])["state"] == "succeeded");
  const std::string placement = Job(gang["id"])["placement"];
  ASSERT_TRUE(WaitForState(gang["id"], "succeeded"));
  // "node1:1,2;node2:0,1,2,3"
  std::istringstream parts(placement);
  int rank = 0;
  for (std::string part; std::getline(parts, part, ';'); ++rank) {
    SCOPED_TRACE(part);
    const std::string node = part.substr(0, part.find(':'));
    const auto env = EnvFile(JobDir(gang["id"]) / "checkpoint" / ("env." + node));
    ASSERT_FALSE(env.empty());
    EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), part.substr(part.find(':') + 1));
    EXPECT_EQ(env.at("RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("WORLD_SIZE"), "2");
  }
  EXPECT_EQ(rank, 2) << placement;
  Release(blocker["id"]);
  EXPECT_TRUE(WaitForState(blocker["id"], "succeeded"));
}

TEST_F(SlurmTest, PreemptAndResumeFromTheCheckpoint) {
  const fs::path profile = dir_ / "priority-now.json";
  std::ofstream(profile) << R"({"name": "priority-now", "admit": ["feasibility"],
      "queue_sort": "priority", "score": ["consolidate"],
      "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";
  StartDaemon({"--profile", profile.string()});
  // Counts its runs in its checkpoint; the first run waits to be preempted (saves and exits on
  // SIGTERM), the second finishes.
  const std::string low_script =
      "n=$(cat \"$DLSCHED_CHECKPOINT_DIR/n\" 2>/dev/null || echo 0); n=$((n+1)); "
      "echo $n > \"$DLSCHED_CHECKPOINT_DIR/n\"; "
      "echo \"run $n restart $DLSCHED_RESTART_COUNT\" >> \"$DLSCHED_CHECKPOINT_DIR/log\"; "
      "if [ $n -ge 2 ]; then exit 0; fi; "
      "echo 50 > \"$DLSCHED_PROGRESS_FILE\"; "
      "trap 'echo saved >> \"$DLSCHED_CHECKPOINT_DIR/log\"; exit 0' TERM; "
      "while true; do sleep 0.05; done";
  const json low = Submit(low_script, 2, "T4", {{"priority", 0}, {"iterations", 100}});
  ASSERT_TRUE(WaitForState(low["id"], "running"));
  const fs::path log = JobDir(low["id"]) / "checkpoint" / "log";
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(log) == "run 1 restart 0\n"; }));

  const json high = Submit("true", 2, "T4", {{"priority", 10}});
  ASSERT_TRUE(WaitForState(high["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(low["id"], "succeeded"));
  EXPECT_EQ(ReadTextFile(log), "run 1 restart 0\nsaved\nrun 2 restart 1\n");
  const json done = Job(low["id"]);
  EXPECT_EQ(done["preemptions"], 1);
  // Two segments, two Slurm jobs; the high-priority job one.
  EXPECT_EQ(SlurmJobsOf(low["id"]).size(), 2u);
  EXPECT_EQ(SlurmJobsOf(high["id"]).size(), 1u);
}

TEST_F(SlurmTest, CancelEndsTheSlurmJob) {
  StartDaemon();
  const json job = Submit("echo $$ > \"$DLSCHED_CHECKPOINT_DIR/pid\"; exec sleep 300", 1, "V100");
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  const fs::path pid_file = JobDir(job["id"]) / "checkpoint" / "pid";
  ASSERT_TRUE(Eventually([&] { return !ReadTextFile(pid_file).empty(); }));
  const int pid = std::atoi(ReadTextFile(pid_file).c_str());
  auto res = client_->Delete("/v1/jobs/" + std::to_string(job["id"].get<int>()));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202);
  ASSERT_TRUE(WaitForState(job["id"], "killed"));
  EXPECT_TRUE(Eventually([&] { return kill(pid, 0) != 0; })) << "the job's process still runs";
  const std::vector<std::string> slurm = SlurmJobsOf(job["id"]);
  ASSERT_EQ(slurm.size(), 1u);
  // Ended in Slurm (FAILED: the job died of the SIGTERM before the final scancel was due).
  Result<std::string> state =
      RunChecked({"squeue", "--noheader", "--states=all", "-j", slurm[0], "-o", "%T"});
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(daemon::IsTerminalJobState(state->substr(0, state->find('\n')))) << *state;
}

TEST_F(SlurmTest, ADeadSlurmdRequeuesItsJobsAndTakesTheNodeOutUntilItIsBack) {
  StartDaemon();
  // node3 is the only T4 node.
  const json job =
      Submit("echo run >> \"$DLSCHED_CHECKPOINT_DIR/runs\"; " + WaitForRelease(), 2, "T4");
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  ASSERT_TRUE(
      Eventually([&] { return ReadTextFile(JobDir(job["id"]) / "checkpoint/runs") == "run\n"; }));
  KillSlurmd("node3");
  // Slurm marks node3 DOWN; dlsched requeues the job and keeps it off node3.
  ASSERT_TRUE(WaitForState(job["id"], "queued", kNodeDeadline));
  const json queued = Job(job["id"]);
  EXPECT_NE(queued["reason"].get<std::string>().find("node3"), std::string::npos) << queued;
  std::this_thread::sleep_for(seconds(1));  // several polls: it must stay queued
  EXPECT_EQ(Job(job["id"])["state"], "queued");

  StartSlurmd("node3");  // ReturnToService=2: the node is back once slurmd registers
  ASSERT_TRUE(WaitForState(job["id"], "running", kNodeDeadline));
  EXPECT_EQ(Job(job["id"])["placement"], "node3:0,1");
  ASSERT_TRUE(Eventually(
      [&] { return ReadTextFile(JobDir(job["id"]) / "checkpoint/runs") == "run\nrun\n"; }));
  Release(job["id"]);
  EXPECT_TRUE(WaitForState(job["id"], "succeeded"));
}

TEST_F(SlurmTest, ADrainedNodeRequeuesItsJobsUntilResumed) {
  StartDaemon();
  const json job = Submit(WaitForRelease(), 2, "T4");
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  ASSERT_TRUE(
      RunChecked({"scontrol", "update", "nodename=node3", "state=drain", "reason=dlsched test"})
          .ok());
  ASSERT_TRUE(WaitForState(job["id"], "queued"));
  EXPECT_NE(Job(job["id"])["reason"].get<std::string>().find("dlsched test"), std::string::npos)
      << Events();
  ASSERT_TRUE(RunChecked({"scontrol", "update", "nodename=node3", "state=resume"}).ok());
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  Release(job["id"]);
  EXPECT_TRUE(WaitForState(job["id"], "succeeded"));
}

TEST_F(SlurmTest, ARestartedDaemonReadoptsItsJobsAndLaunchesNothingTwice) {
  StartDaemon();
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    const json job =
        Submit("echo start >> \"$DLSCHED_CHECKPOINT_DIR/starts\"; " + WaitForRelease(), 2, "V100");
    ids.push_back(job["id"]);
  }
  for (int64_t id : ids) ASSERT_TRUE(WaitForState(id, "running"));
  for (int64_t id : ids) {
    ASSERT_TRUE(
        Eventually([&] { return ReadTextFile(JobDir(id) / "checkpoint/starts") == "start\n"; }));
  }
  StopDaemon(SIGKILL);
  Release(ids[0]);  // ends while no daemon watches
  ASSERT_TRUE(Eventually([&] { return fs::exists(JobDir(ids[0]) / "exit"); }));

  StartDaemon();
  EXPECT_TRUE(WaitForState(ids[0], "succeeded"));
  std::this_thread::sleep_for(seconds(1));  // several polls
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(Job(ids[i])["state"], "running");
  Release(ids[1]);
  Release(ids[2]);
  for (int64_t id : ids) {
    EXPECT_TRUE(WaitForState(id, "succeeded"));
    EXPECT_EQ(ReadTextFile(JobDir(id) / "checkpoint/starts"), "start\n") << "job " << id;
    EXPECT_EQ(SlurmJobsOf(id).size(), 1u) << "job " << id;
  }
}

TEST_F(SlurmTest, ARestartedDaemonFinishesAPreemptionItsPredecessorBegan) {
  const fs::path profile = dir_ / "priority-now.json";
  std::ofstream(profile) << R"({"name": "priority-now", "admit": ["feasibility"],
      "queue_sort": "priority", "score": ["consolidate"],
      "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";
  StartDaemon({"--profile", profile.string()});
  // Ignores SIGTERM, so only the final scancel after the grace period stops its first run.
  const json low = Submit(
      "echo run >> \"$DLSCHED_CHECKPOINT_DIR/runs\"; "
      "if [ \"$DLSCHED_RESTART_COUNT\" -ge 1 ]; then exit 0; fi; "
      "trap '' TERM; while true; do sleep 0.05; done",
      2, "T4", {{"priority", 0}});
  ASSERT_TRUE(WaitForState(low["id"], "running"));
  ASSERT_TRUE(Eventually(
      [&] { return ReadTextFile(JobDir(low["id"]) / "checkpoint" / "runs") == "run\n"; }));
  const json high = Submit("true", 2, "T4", {{"priority", 10}});
  ASSERT_TRUE(Eventually([&] { return Job(low["id"]).value("stopping", json()) == "preempt"; }));
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(JobDir(low["id"]) / "stop") == "preempt"; }));
  StopDaemon(SIGKILL);

  StartDaemon({"--profile", profile.string()});
  ASSERT_TRUE(WaitForState(high["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(low["id"], "succeeded"));
  EXPECT_EQ(Job(low["id"])["preemptions"], 1);
  EXPECT_EQ(ReadTextFile(JobDir(low["id"]) / "checkpoint" / "runs"), "run\nrun\n");
  EXPECT_EQ(SlurmJobsOf(low["id"]).size(), 2u);
}

// Records the first placement the policy gives each job, and when.
struct Launched {
  Timestamp at;
  Placement placement;
};
class RecordingPolicy final : public SchedulingPolicy {
 public:
  RecordingPolicy(std::unique_ptr<SchedulingPolicy> inner, std::map<int64_t, Launched>& out)
      : inner_(std::move(inner)), out_(&out) {}
  std::string_view Name() const override { return inner_->Name(); }
  const RankOrder& Order() const override { return inner_->Order(); }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    return inner_->Admit(job, ctx);
  }
  Decisions Decide(const SchedulingContext& ctx) const override {
    Decisions d = inner_->Decide(ctx);
    for (const LaunchDecision& launch : d.launches) {
      out_->emplace(launch.job.value(), Launched{ctx.now, launch.placement});
    }
    return d;
  }

 private:
  std::unique_ptr<SchedulingPolicy> inner_;
  std::map<int64_t, Launched>* out_;
};

TEST_F(SlurmTest, TheSameProfileGivesTheSamePlacementsAsTheSimulator) {
  // Arrivals one at a time, then two jobs end in a known order; everything else runs until the
  // end. The simulator gets the same arrivals (1 s apart) and durations that end the same two
  // jobs in the same order.
  struct Spec {
    int gpus;
    std::string type;
    double sim_duration_s;  // when the simulated job ends (its release in the real run)
  };
  const std::vector<Spec> specs = {
      {2, "V100", 200},   {1, "V100", 100},   {2, "T4", 10000}, {3, "V100", 10000},
      {4, "V100", 10000}, {1, "V100", 10000}, {1, "T4", 10000},
  };
  const std::vector<int> release_order = {1, 0};
  const std::string profile_name = "fifo";

  Result<daemon::SlurmDiscovery> discovery = daemon::DiscoverSlurmCluster(partition_);
  ASSERT_TRUE(discovery.ok()) << discovery.status().ToString();
  const dlsched::Cluster& cluster = discovery->cluster.cluster;
  Result<PolicyProfile> profile = LoadPolicyProfile(profile_name);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();

  // --- the simulator ---
  std::map<int64_t, Launched> simulated;
  {
    sim::Workload workload;
    for (size_t i = 0; i < specs.size(); ++i) {
      JobSpec spec;
      spec.name = "j" + std::to_string(i);
      spec.user = "u";
      spec.num_gpus = specs[i].gpus;
      spec.gpu_type = specs[i].type;
      spec.submit_time = AtSeconds(static_cast<double>(i));
      spec.iterations = specs[i].sim_duration_s - static_cast<double>(i);
      workload.jobs.push_back(spec);
    }
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*profile);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    SimpleThroughputModel model;
    sim::SimOptions options;
    options.stop_at = AtSeconds(1000);
    sim::Simulate({cluster, workload, model, model},
                  std::make_unique<RecordingPolicy>(std::move(policy).value(), simulated), options);
  }

  // --- the daemon through Slurm ---
  StartDaemon({"--profile", profile_name});
  std::map<int64_t, std::string> real;
  const auto record_running = [&] {
    for (size_t i = 0; i < specs.size(); ++i) {
      const json j = Job(static_cast<int64_t>(i));
      if (j.value("state", "") == "running" && !real.contains(i)) real[i] = j["placement"];
    }
  };
  // Waits until the running set is what the simulator has at that point, then records.
  const auto settle = [&](const std::set<int64_t>& want_running) {
    EXPECT_TRUE(Eventually([&] {
      std::set<int64_t> running;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (Job(static_cast<int64_t>(i)).value("state", "") == "running") running.insert(i);
      }
      return running == want_running;
    })) << "daemon: "
        << ReadTextFile(dir_ / "daemon.err");
    record_running();
  };
  // The simulated jobs running just after time t: started by then, not ended by then.
  const auto running_at = [&](double t) {
    std::set<int64_t> ids;
    for (const auto& [id, launched] : simulated) {
      if (launched.at <= AtSeconds(t) && specs[id].sim_duration_s > t) ids.insert(id);
    }
    return ids;
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    const json job = Submit(WaitForRelease(), specs[i].gpus, specs[i].type);
    ASSERT_EQ(job["id"], static_cast<int64_t>(i));
    // A job that the simulator starts at once must be running before the next arrives, one it
    // queues must be queued.
    EXPECT_TRUE(Eventually([&] {
      const std::string state = Job(static_cast<int64_t>(i)).value("state", "");
      return state == "running" || state == "queued";
    }));
    record_running();
  }
  for (int id : release_order) {
    Release(id);
    ASSERT_TRUE(WaitForState(id, "succeeded"));
    settle(running_at(specs[id].sim_duration_s));
  }

  std::map<int64_t, std::string> expected;
  for (const auto& [id, launched] : simulated) {
    expected[id] = daemon::PlacementText(cluster, launched.placement);
  }
  EXPECT_EQ(real, expected);
  EXPECT_EQ(expected.size(), specs.size() - 1);  // the second T4 job never gets its GPU
}

// GPU sharing through Slurm's shard GRES (the test cluster declares 2 shards per GPU), through
// the executor itself: the daemon decides shared launches only once it hands its policy the
// monitor's sharing knowledge (docs/sharing.md), so here the test makes them. Two single-GPU
// jobs on GPU 0 of node3, each holding one shard: Slurm runs both at once.
TEST_F(SlurmTest, TwoSingleGpuJobsRunAtOnceOnOneGpuThroughShards) {
  Result<daemon::SlurmDiscovery> found = daemon::DiscoverSlurmCluster(partition_);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  const std::vector<daemon::SlurmNodeSite>& sites = found->cluster.sites;
  ASSERT_TRUE(daemon::CheckSlurmShards(sites, 2, "greedy-share").ok());
  NodeId node3;
  for (size_t n = 0; n < sites.size(); ++n) {
    if (sites[n].name == "node3") node3 = NodeId(static_cast<uint32_t>(n));
  }
  ASSERT_TRUE(node3.valid());
  daemon::SlurmExecutor::Options options;
  options.partition = partition_;
  options.jobs_dir = (dir_ / "work" / "jobs").string();
  options.poll_interval = milliseconds(200);
  options.grace = seconds(2);
  options.extra_env = {std::string("SLURM_CONF=") + std::getenv("SLURM_CONF")};
  options.shards = true;
  std::mutex mu;
  std::vector<daemon::ExecutorReport> reports;
  daemon::SlurmExecutor executor(
      options, sites,
      [&](daemon::ExecutorReport r) {
        std::lock_guard lock(mu);
        reports.push_back(std::move(r));
      },
      [](daemon::NodeReport) {});
  ASSERT_TRUE(executor.Start().ok());
  const Placement gpu0{{NodeGpus{node3, GpuMask{1}}}};
  for (uint32_t id : {101u, 102u}) {
    dlsched::Job job;
    job.id = JobId(id);
    job.spec.num_gpus = 1;
    // The first runs alone (a shard all the same: it may be joined), the second joins it.
    job.share = id == 101 ? ShareMode::kExclusive : ShareMode::kPacked;
    daemon::LaunchSpec spec;
    spec.job = job.id;
    spec.job_dir = JobDir(id).string();
    spec.workdir = dir_.string();
    spec.env = {"DLSCHED_CHECKPOINT_DIR=" + (JobDir(id) / "checkpoint").string(),
                "PATH=/usr/bin:/bin"};
    spec.argv = {"/bin/sh", "-c", "env > \"$DLSCHED_CHECKPOINT_DIR/env\"; " + WaitForRelease()};
    executor.Launch(job, gpu0, spec);
  }
  executor.Flush();
  // Both running in Slurm at the same time, each with one shard, both on GPU 0.
  ASSERT_TRUE(Eventually([&] {
    return fs::exists(JobDir(101) / "checkpoint" / "env") &&
           fs::exists(JobDir(102) / "checkpoint" / "env");
  })) << Output({"squeue", "-p", partition_, "-o", "%i %T %r %j %N %b"});
  const std::string queue = Output({"squeue", "--noheader", "-p", partition_, "-o", "%T %N %b"});
  EXPECT_EQ(queue, "RUNNING node3 gres:shard:1\nRUNNING node3 gres:shard:1\n") << queue;
  for (uint32_t id : {101u, 102u}) {
    const std::map<std::string, std::string> env = EnvFile(JobDir(id) / "checkpoint" / "env");
    EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES") ? env.at("CUDA_VISIBLE_DEVICES") : "", "0") << id;
    EXPECT_EQ(env.count("SLURM_SHARDS_ON_NODE") ? env.at("SLURM_SHARDS_ON_NODE") : "", "1") << id;
  }
  Release(101);
  Release(102);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return reports.size() == 2;
  }));
  for (const daemon::ExecutorReport& r : reports) {
    const auto* finished = std::get_if<JobFinished>(&r.event);
    ASSERT_NE(finished, nullptr);
    EXPECT_EQ(finished->final_state, JobState::kSucceeded);
  }
  executor.Stop();
}

// A daemon under a sharing profile starts on the test cluster's shards and runs a single-GPU job
// on one; a profile that puts more jobs on a GPU than the nodes have shards per GPU is refused,
// saying what to configure.
TEST_F(SlurmTest, ASharingDaemonRunsOnShardsAndIsRefusedWithoutEnough) {
  StartDaemon({"--profile", "greedy-share"});
  const json job = Submit("env > \"$DLSCHED_CHECKPOINT_DIR/env\"", 1, "T4");
  ASSERT_TRUE(WaitForState(job["id"], "succeeded"));
  const std::map<std::string, std::string> env = EnvFile(JobDir(job["id"]) / "checkpoint" / "env");
  EXPECT_EQ(env.count("SLURM_SHARDS_ON_NODE") ? env.at("SLURM_SHARDS_ON_NODE") : "", "1");
  StopDaemon(SIGTERM);

  const fs::path three = dir_ / "three-share.json";
  std::ofstream(three) << R"({"name": "three-share", "base": "las",
      "share": {"packer": "greedy", "mode": "packed", "max_jobs_per_gpu": 3}})";
  const pid_t pid =
      Spawn({DLSCHED_BINARY, "serve", "--listen", "127.0.0.1:0", "--executor", "slurm",
             "--slurm-partition", partition_, "--workdir", (dir_ / "work").string(), "--db",
             (dir_ / "refused.db").string(), "--profile", three.string()},
            dir_ / "refused.out", dir_ / "refused.err");
  ASSERT_GT(pid, 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  const std::string err = ReadTextFile(dir_ / "refused.err");
  EXPECT_NE(err.find("profile 'three-share' shares GPUs (up to 3 jobs on one)"), std::string::npos)
      << err;
  EXPECT_NE(err.find("node1 declares shard:8 for 4 GPUs"), std::string::npos) << err;
  EXPECT_NE(err.find("or run a non-sharing profile"), std::string::npos) << err;
}

}  // namespace
}  // namespace dlsched
