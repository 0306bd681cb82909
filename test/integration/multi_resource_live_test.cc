// CPUs and host memory, live (daemon/exec/host_enforcer.h): the real daemon holds each job to
// the CPUs and host memory of its placement, through cgroups where this machine has them (the
// project's machines: cgroup v1, as root) and through CPU affinity and its memory watchdog
// (--host-enforcer affinity) everywhere. Each test runs in both modes.
#include <unistd.h>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

class MultiResourceLiveTest : public DaemonIntegrationTest,
                              public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DaemonIntegrationTest::SetUp();
    if (GetParam() == "cgroup" &&
        (geteuid() != 0 || (access("/sys/fs/cgroup/cpuset/cpuset.cpus", W_OK) != 0 &&
                            access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0))) {
      GTEST_SKIP() << "no writable cgroup hierarchy here";
    }
  }

  void StartWithEnforcer() { StartDaemon({"--host-enforcer", GetParam()}); }

  // The daemon's start-up line about its enforcement ("" if none).
  std::string EnforcementLine() {
    std::istringstream err(ReadTextFile(dir_ / "daemon.err"));
    for (std::string line; std::getline(err, line);) {
      if (line.find("host enforcement ") != std::string::npos) return line;
    }
    return "";
  }

  // The job groups under the daemon's groups (the directories its start-up line names).
  std::vector<std::string> JobGroups() {
    std::vector<std::string> groups;
    std::string line = EnforcementLine();
    const size_t from = line.find("groups ");
    if (from == std::string::npos) return groups;
    line = line.substr(from + 7, line.find(';') - from - 7);
    std::istringstream dirs(line);
    for (std::string dir; std::getline(dirs, dir, ',');) {
      if (!dir.empty() && dir[0] == ' ') dir.erase(0, 1);
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().filename().string().starts_with("job-")) {
          groups.push_back(entry.path().string());
        }
      }
    }
    return groups;
  }

  std::string Metrics() {
    auto res = client_->Get("/metrics");
    return res ? res->body : "";
  }
};

TEST_P(MultiResourceLiveTest, TheDaemonSaysHowItHoldsJobs) {
  StartWithEnforcer();
  const std::string mode = GetParam() == "cgroup" ? "cgroup-v" : "affinity";
  EXPECT_NE(EnforcementLine().find("host enforcement " + mode), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  const json nodes = Get("/v1/nodes").second;
  EXPECT_TRUE(nodes["host_enforcement"].get<std::string>().starts_with(mode)) << nodes.dump();
  // The node states no CPUs or memory: it gets this machine's.
  EXPECT_GT(nodes["nodes"][0]["cpus"].get<int>(), 0);
  EXPECT_GT(nodes["nodes"][0]["memory_mib"].get<int64_t>(), 0);
  EXPECT_NE(Metrics().find("dlsched_host_enforcement{mode=\"" + mode), std::string::npos);
}

TEST_P(MultiResourceLiveTest, AJobOverItsHostMemoryIsKilledWithThatCause) {
  StartWithEnforcer();
  // dd's 256 MiB buffer, filled over and over: far over its 64 MiB.
  json hog = Script("dd if=/dev/zero of=/dev/null bs=256M count=400");
  hog["cpus"] = 1;
  hog["host_memory_mib"] = 64;
  const int64_t id = Submit(hog).second["id"];
  ASSERT_TRUE(WaitForState(id, "failed")) << Job(id).dump();
  const json job = Job(id);
  EXPECT_EQ(job["reason"], "killed: host memory over its limit of 64 MiB") << job.dump();
  EXPECT_EQ(job["host_memory_mib"], 64);
  EXPECT_EQ(StoredEvent("finished", id), "failed: killed: host memory over its limit of 64 MiB");
  EXPECT_NE(Metrics().find("dlsched_host_memory_kills_total 1\n"), std::string::npos);
  // A job within its limit runs to its end.
  json small = Script("dd if=/dev/zero of=/dev/null bs=1M count=10");
  small["cpus"] = 1;
  small["host_memory_mib"] = 64;
  const int64_t ok = Submit(small).second["id"];
  ASSERT_TRUE(WaitForState(ok, "succeeded")) << Job(ok).dump();
  // No group outlives its job.
  ASSERT_TRUE(Eventually([&] { return JobGroups().empty(); })) << JobGroups().front();
}

TEST_P(MultiResourceLiveTest, AJobSeesOnlyItsCpus) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nothing to confine to";
  StartWithEnforcer();
  json one = Script("grep Cpus_allowed_list /proc/self/status > cpus.$DLSCHED_JOB_ID; sleep 30");
  one["cpus"] = 1;
  const int64_t first = Submit(one).second["id"];
  const int64_t second = Submit(one).second["id"];
  const fs::path a = dir_ / ("cpus." + std::to_string(first));
  const fs::path b = dir_ / ("cpus." + std::to_string(second));
  ASSERT_TRUE(Eventually([&] { return !ReadTextFile(a).empty() && !ReadTextFile(b).empty(); }))
      << Job(first).dump() << Job(second).dump();
  // One core each, and not the same one.
  EXPECT_EQ(ReadTextFile(a), "Cpus_allowed_list:\t0\n");
  EXPECT_EQ(ReadTextFile(b), "Cpus_allowed_list:\t1\n");
  EXPECT_NE(Job(first)["placement"].get<std::string>().find("/cpus=1"), std::string::npos)
      << Job(first).dump();

  // Across a daemon restart the running jobs keep their cores: once the second one ends, a new
  // one gets its core (core 0 is still the first one's).
  Kill9();
  StartWithEnforcer();
  ASSERT_TRUE(WaitForState(second, "running"));
  ASSERT_EQ(Delete("/v1/jobs/" + std::to_string(second)).first, 202);
  ASSERT_TRUE(WaitForState(second, "killed"));
  const int64_t third = Submit(one).second["id"];
  const fs::path c = dir_ / ("cpus." + std::to_string(third));
  ASSERT_TRUE(Eventually([&] { return !ReadTextFile(c).empty(); })) << Job(third).dump();
  EXPECT_EQ(ReadTextFile(c), "Cpus_allowed_list:\t1\n");
  // The groups left are the running jobs' (none is the cancelled one's).
  for (const std::string& group : JobGroups()) {
    EXPECT_TRUE(group.ends_with("/job-" + std::to_string(first)) ||
                group.ends_with("/job-" + std::to_string(third)))
        << group;
  }
  if (GetParam() == "cgroup") EXPECT_FALSE(JobGroups().empty());
}

TEST_F(DaemonIntegrationTest, SubmitTakesCpusAndHostMemory) {
  StartDaemon({"--cpus-per-gpu", "1", "--mem-per-gpu", "1g"});
  const RunResult r =
      Cli({"submit", "--parsable", "--cpus", "1", "--mem", "64m", "--", "sleep", "30"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json job = Job(std::stoll(r.out));
  EXPECT_EQ(job["cpus"], 1);
  EXPECT_EQ(job["host_memory_mib"], 64);
  EXPECT_EQ(job["spec"]["host_memory_mib"], 64);
  const RunResult shown = Cli({"show", r.out.substr(0, r.out.size() - 1)});
  EXPECT_NE(shown.out.find("host_memory_mib:"), std::string::npos) << shown.out;
  // Sizes are checked before anything is sent; more than the node has is the server's 400.
  EXPECT_EQ(Cli({"submit", "--mem", "64x", "--", "true"}).code, 2);
  const RunResult big = Cli({"submit", "--cpus", "65536", "--", "true"});
  EXPECT_EQ(big.code, 2);
  EXPECT_NE(big.err.find("cpus: asks for 65536 CPUs; the largest node has"), std::string::npos)
      << big.err;
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("nodes that state no CPUs or host memory get"),
            std::string::npos);
}

// Why pending, live: GPUs free on a node whose CPUs the running job holds is the host-short
// cause under the default profile, with the pipeline's own text (the simulator's), not
// "waiting for GPUs".
TEST_F(DaemonIntegrationTest, WhyPendingNamesTheCpusShortBesideFreeGpus) {
  StartServe({"--gpus", "1x2xV100:2c:4g", "--host-enforcer", "none"});
  json hog = Script("sleep 60");
  hog["cpus"] = 2;
  const int64_t running = Submit(hog).second["id"];
  ASSERT_TRUE(WaitForState(running, "running"));
  json small = Script("true");
  small["cpus"] = 1;
  const int64_t waiting = Submit(small).second["id"];
  const auto explained = [&] { return Get("/v1/jobs/" + std::to_string(waiting)).second; };
  ASSERT_TRUE(Eventually([&] { return explained().contains("pending_cause"); }))
      << explained().dump();
  const json pending = explained();
  EXPECT_EQ(pending["pending_cause"], "host-short") << pending.dump();
  EXPECT_NE(pending["pending_reason"].get<std::string>().find("CPU"), std::string::npos)
      << pending.dump();
  EXPECT_EQ(Get("/v1/queue").second["jobs"][0]["cause"], "host-short");
}

INSTANTIATE_TEST_SUITE_P(Modes, MultiResourceLiveTest, ::testing::Values("cgroup", "affinity"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dlsched::integration
