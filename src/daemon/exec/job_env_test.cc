#include "daemon/exec/job_env.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

std::map<std::string, std::string> EnvMap(const LaunchSpec& spec) {
  std::map<std::string, std::string> env;
  for (const std::string& e : spec.env) {
    const size_t eq = e.find('=');
    env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return env;
}

JobRequest Request(Framework framework) {
  Result<JobRequest> r =
      ParseJobRequest(R"({"command": ["train"], "name": "t", "gpus": 2})", "ann");
  DS_CHECK(r.ok());
  r->framework = framework;
  r->env["CUDA_VISIBLE_DEVICES"] = "7";  // dlsched's own value wins
  r->env["MY_VAR"] = "x";
  return *r;
}

TEST(JobEnvTest, SetsExactlyTheAssignedGpusAndDlschedVariables) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  Job job = testing::MakeJob(7).Gpus(2).Build();
  job.preemptions = 2;
  const Placement placement{{{NodeId(1), 0b1010}}};
  const LaunchSpec spec = BuildLaunchSpec(Request(Framework::kCustom), job, placement, cluster,
                                          "/w/jobs/7", {{"PATH", "/bin"}}, 0);
  const auto env = EnvMap(spec);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1,3");
  EXPECT_EQ(spec.gpus, GpuMask{0b1010});  // the executor prefers the cores near them
  EXPECT_EQ(env.at("DLSCHED_JOB_ID"), "7");
  EXPECT_EQ(env.at("DLSCHED_CHECKPOINT_DIR"), "/w/jobs/7/checkpoint");
  EXPECT_EQ(env.at("DLSCHED_PROGRESS_FILE"), "/w/jobs/7/progress");
  EXPECT_EQ(env.at("DLSCHED_RESTART_COUNT"), "2");
  EXPECT_EQ(env.at("DLSCHED_NODES"), "n1:1,3");
  EXPECT_EQ(env.at("MY_VAR"), "x");
  EXPECT_EQ(env.at("PATH"), "/bin");
  EXPECT_FALSE(env.contains("MASTER_ADDR"));
  EXPECT_EQ(spec.workdir, "/w/jobs/7");
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"train"}));
  EXPECT_TRUE(std::is_sorted(spec.env.begin(), spec.env.end()));
  EXPECT_FALSE(spec.time_limit.has_value());
}

TEST(JobEnvTest, FrameworkVariables) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  const Job job = testing::MakeJob(3).Gpus(2).Build();
  const Placement placement{{{NodeId(0), 0b0011}}};
  struct Case {
    Framework framework;
    std::map<std::string, std::string> want;
  };
  const std::vector<Case> cases = {
      {Framework::kPyTorch,
       {{"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", "29500"},
        {"WORLD_SIZE", "1"},
        {"RANK", "0"},
        {"LOCAL_RANK", "0"}}},
      {Framework::kMpi, {{"DLSCHED_HOSTS", "localhost:2"}, {"DLSCHED_HOSTFILE", "/j/hostfile"}}},
      {Framework::kHorovod, {{"DLSCHED_HOSTS", "localhost:2"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(FrameworkName(c.framework));
    const LaunchSpec spec =
        BuildLaunchSpec(Request(c.framework), job, placement, cluster, "/j", {}, 29500);
    const auto env = EnvMap(spec);
    for (const auto& [name, value] : c.want) EXPECT_EQ(env.at(name), value) << name;
  }
  const LaunchSpec tf =
      BuildLaunchSpec(Request(Framework::kTensorFlow), job, placement, cluster, "/j", {}, 2222);
  const auto config = nlohmann::json::parse(EnvMap(tf).at("TF_CONFIG"));
  EXPECT_EQ(config["cluster"]["worker"][0], "127.0.0.1:2222");
  EXPECT_EQ(config["task"]["index"], 0);
  const LaunchSpec mpi =
      BuildLaunchSpec(Request(Framework::kMpi), job, placement, cluster, "/j", {}, 0);
  ASSERT_EQ(mpi.files.size(), 1u);
  EXPECT_EQ(mpi.files[0].second, "localhost slots=2\n");
}

TEST(JobEnvTest, OnlyTcpFrameworksGetAPortAndItIsFree) {
  for (Framework framework : {Framework::kCustom, Framework::kMpi, Framework::kHorovod}) {
    EXPECT_EQ(FrameworkPort(framework), 0) << FrameworkName(framework);
  }
  for (Framework framework : {Framework::kPyTorch, Framework::kTensorFlow}) {
    SCOPED_TRACE(FrameworkName(framework));
    const int port = FrameworkPort(framework);
    ASSERT_GT(port, 0);
    ASSERT_LT(port, 65536);
    // Nothing listens there: a job can bind it (unless another process took it meanwhile,
    // which nothing in this test does).
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
}

TEST(JobEnvTest, TimeLimitIsWhatEarlierSegmentsLeft) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  JobRequest request = Request(Framework::kCustom);
  request.max_run_time = Seconds(100);
  Job job = testing::MakeJob(0).Build();
  job.run_time = Seconds(30);
  const LaunchSpec spec =
      BuildLaunchSpec(request, job, Placement{{{NodeId(0), 1}}}, cluster, "/j", {}, 0);
  EXPECT_EQ(*spec.time_limit, Seconds(70));
}

TEST(JobEnvTest, AnotherAccountGetsItsOwnIdentity) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  const Job job = testing::MakeJob(3).Build();
  const std::map<std::string, std::string> daemon_env = {
      {"HOME", "/root"}, {"USER", "root"}, {"LOGNAME", "root"}, {"PATH", "/bin"}};
  const Placement placement{{{NodeId(0), 1}}};
  JobRequest request = Request(Framework::kCustom);
  LaunchSpec spec = BuildLaunchSpec(request, job, placement, cluster, "/w/jobs/3", daemon_env, 0,
                                    UnixAccount{1000, 1000, {1000}, "ann", "/home/ann"});
  ASSERT_TRUE(spec.account.has_value());
  EXPECT_EQ(spec.account->uid, 1000u);
  std::map<std::string, std::string> env = EnvMap(spec);
  EXPECT_EQ(env["USER"], "ann");
  EXPECT_EQ(env["LOGNAME"], "ann");
  EXPECT_EQ(env["HOME"], "/home/ann");
  EXPECT_EQ(env["PATH"], "/bin");
  // Without a passwd home: the job directory. The request may still set its own HOME.
  request.env["HOME"] = "/scratch/ann";
  spec = BuildLaunchSpec(Request(Framework::kCustom), job, placement, cluster, "/w/jobs/3",
                         daemon_env, 0, UnixAccount{60001, 60001, {60001}, "60001", ""});
  EXPECT_EQ(EnvMap(spec)["HOME"], "/w/jobs/3");
  EXPECT_EQ(EnvMap(spec)["USER"], "60001");
  spec = BuildLaunchSpec(request, job, placement, cluster, "/w/jobs/3", daemon_env, 0,
                         UnixAccount{60001, 60001, {60001}, "60001", ""});
  EXPECT_EQ(EnvMap(spec)["HOME"], "/scratch/ann");
  // Without an account: the daemon's own.
  spec = BuildLaunchSpec(Request(Framework::kCustom), job, placement, cluster, "/w/jobs/3",
                         daemon_env, 0);
  EXPECT_FALSE(spec.account.has_value());
  EXPECT_EQ(EnvMap(spec)["HOME"], "/root");
}

TEST(JobEnvTest, PlacementTextRoundTrips) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  const Placement placement{{{NodeId(0), 0b0101}, {NodeId(1), 0b1000}}};
  EXPECT_EQ(PlacementText(cluster, placement), "n0:0,2;n1:3");
  Result<Placement> back = ParsePlacementText(cluster, "n0:0,2;n1:3");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, placement);
  EXPECT_TRUE(ParsePlacementText(cluster, "")->empty());
  for (const char* bad : {"n9:0", "n0:4", "n0", "n0:", "n0:x", "n0:0/cpus=", "n0:0/cpus=-1",
                          "n0:0/gpus=2", "n0:0/mem=1x", "n0:/cpus=0"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParsePlacementText(cluster, bad).ok());
  }
}

TEST(JobEnvTest, PlacementTextKeepsEachPartsCpusAndMemory) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  const Placement placement{{{NodeId(0), 0b0011, 8, 4096}, {NodeId(1), 0, 2, 0}}};
  EXPECT_EQ(PlacementText(cluster, placement), "n0:0,1/cpus=8/mem=4096;n1:/cpus=2");
  EXPECT_EQ(PlacementGpusText(cluster, placement), "n0:0,1;n1:");
  Result<Placement> back = ParsePlacementText(cluster, PlacementText(cluster, placement));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, placement);
  Result<Placement> memory_only = ParsePlacementText(cluster, "n1:3/mem=100");
  ASSERT_TRUE(memory_only.ok()) << memory_only.status().ToString();
  EXPECT_EQ(*memory_only, (Placement{{{NodeId(1), 0b1000, 0, 100}}}));
}

TEST(JobEnvTest, ProgressLines) {
  struct Case {
    std::string line;
    std::optional<std::pair<double, double>> want;
  };
  const std::vector<Case> cases = {
      {"1200", std::make_pair(1200.0, 0.0)},
      {"1200/5000\n", std::make_pair(1200.0, 5000.0)},
      {" 3.5 / 7 ", std::make_pair(3.5, 7.0)},
      {"", std::nullopt},
      {"abc", std::nullopt},
      {"-1", std::nullopt},
      {"5/0", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    const std::optional<Progress> p = ParseProgress(c.line);
    ASSERT_EQ(p.has_value(), c.want.has_value());
    if (p) {
      EXPECT_DOUBLE_EQ(p->done, c.want->first);
      EXPECT_DOUBLE_EQ(p->total, c.want->second);
    }
  }
}

TEST(JobEnvTest, FormattedProgressReadsBackExactly) {
  const std::vector<Progress> cases = {{0, 0}, {1200, 5000}, {0.1, 0}, {1.0 / 3, 7}, {5e20, 1e21}};
  for (const Progress& p : cases) {
    const std::string line = FormatProgress(p);
    SCOPED_TRACE(line);
    const std::optional<Progress> back = ParseProgress(line);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->done, p.done);
    EXPECT_EQ(back->total, p.total);
  }
  EXPECT_EQ(FormatProgress({1200, 5000}), "1200/5000");
  EXPECT_EQ(FormatProgress({2.5, 0}), "2.5");
}

TEST(JobEnvTest, WrittenProgressIsWhatTheJobWouldHaveWritten) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlsched_progress_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(ReadProgress(dir.string()).has_value());
  ASSERT_TRUE(WriteProgress(dir.string(), {30, 120}).ok());
  std::optional<Progress> read = ReadProgress(dir.string());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->done, 30);
  EXPECT_EQ(read->total, 120);
  // A later report replaces the line; no temporary file is left behind.
  ASSERT_TRUE(WriteProgress(dir.string(), {31, 0}).ok());
  read = ReadProgress(dir.string());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->done, 31);
  EXPECT_EQ(read->total, 0);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(WriteProgress(dir.string(), {1, 0}).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace dlsched::daemon
