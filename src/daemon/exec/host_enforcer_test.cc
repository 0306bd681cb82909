#include "daemon/exec/host_enforcer.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/builders.h"
#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using test_support::FreshTestDir;
using test_support::ReadTextFile;

// This project's machines: cgroup v1 controllers beside an empty unified hierarchy, the memory
// controller's group a container's.
constexpr std::string_view kHybridCgroup =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n3:cpuset:/\n1:cpu:/\n0::/\n";
constexpr std::string_view kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(HostEnforcerTest, CpuListsRoundTrip) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n").value(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("").value(), std::vector<int>());
  EXPECT_EQ(ParseCpuList("3,1,1").value(), (std::vector<int>{1, 3}));
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({}), "");
  for (const char* bad : {"a", "1-", "3-1", "-1", "1,,2", "0-99999"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseCpuList(bad).ok());
  }
}

TEST(HostEnforcerTest, FindsTheProcessesOwnGroups) {
  EXPECT_EQ(ParseCgroupDirs(kHybridCgroup, kHybridMounts),
            (CgroupDirs{.unified = "/sys/fs/cgroup/unified",
                        .cpu = "/sys/fs/cgroup/cpu",
                        .cpuset = "/sys/fs/cgroup/cpuset",
                        .memory = "/sys/fs/cgroup/memory/process_api/abc"}));
  // cgroup v2 only, inside a container whose mount's root is its own group; cpu co-mounted
  // with cpuacct in v1.
  EXPECT_EQ(ParseCgroupDirs("0::/kubepods/pod1/c1\n",
                            "30 20 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            (CgroupDirs{.unified = "/sys/fs/cgroup/c1"}));
  EXPECT_EQ(ParseCgroupDirs("3:cpu,cpuacct:/a\n",
                            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
                            "rw,cpu,cpuacct\n"),
            (CgroupDirs{.cpu = "/sys/fs/cgroup/cpu,cpuacct/a"}));
  EXPECT_EQ(ParseCgroupDirs("", ""), CgroupDirs{});
}

// An enforcer over `cores` in `mode`, without cgroups.
std::unique_ptr<HostEnforcer> Enforcer(HostEnforcerChoice choice, std::vector<int> cores) {
  HostEnforcer::Options options;
  options.choice = choice;
  options.cores = std::move(cores);
  options.dirs = CgroupDirs{};
  Result<std::unique_ptr<HostEnforcer>> made = HostEnforcer::Create(options);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::move(made).value();
}

TEST(HostEnforcerTest, CoresGoToTheFewestHoldersNearFirstThenLowest) {
  std::unique_ptr<HostEnforcer> host = Enforcer(HostEnforcerChoice::kAffinity, {0, 1, 2, 3});
  EXPECT_EQ(host->mode(), HostEnforcement::kAffinity);
  EXPECT_EQ(host->Reserve(JobId(1), 2, 0).cores, (std::vector<int>{0, 1}));
  EXPECT_EQ(host->Reserve(JobId(2), 1, 0, {3}).cores, (std::vector<int>{3}));
  EXPECT_EQ(host->Reserve(JobId(3), 1, 0).cores, (std::vector<int>{2}));
  // Every core held once: sharing starts again from the lowest; a job keeps what it holds.
  EXPECT_EQ(host->Reserve(JobId(4), 2, 0, {2}).cores, (std::vector<int>{0, 2}));
  EXPECT_EQ(host->Reserve(JobId(1), 3, 0).cores, (std::vector<int>{0, 1}));
  host->Release(JobId(1));
  EXPECT_EQ(host->Reserve(JobId(5), 2, 0).cores, (std::vector<int>{0, 1}));
  // All the cores or none asked: every core, no list.
  const HostGrant all = host->Reserve(JobId(6), 4, 100);
  EXPECT_TRUE(all.cores.empty());
  EXPECT_EQ(all.cpus, 4);
  EXPECT_TRUE(host->Reserve(JobId(7), 0, 0).empty());
  EXPECT_TRUE(host->Watches(JobId(6)));
  EXPECT_FALSE(host->Watches(JobId(5)));
}

TEST(HostEnforcerTest, NoneHoldsNothingAndCgroupNeedsAHierarchy) {
  std::unique_ptr<HostEnforcer> none = Enforcer(HostEnforcerChoice::kNone, {0, 1});
  EXPECT_EQ(none->mode(), HostEnforcement::kNone);
  EXPECT_TRUE(none->Reserve(JobId(1), 1, 64).empty());
  EXPECT_EQ(none->Describe(), "none: CPUs and host memory are not enforced");
  // auto without a hierarchy falls back to affinity; cgroup refuses.
  EXPECT_EQ(Enforcer(HostEnforcerChoice::kAuto, {0})->mode(), HostEnforcement::kAffinity);
  HostEnforcer::Options options;
  options.choice = HostEnforcerChoice::kCgroup;
  options.dirs = CgroupDirs{};
  const auto refused = HostEnforcer::Create(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("no usable cgroup hierarchy"), std::string::npos);
}

TEST(HostEnforcerTest, AffinityConfinesTheProcessAndIsReadBack) {
  std::vector<int> mine;
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) mine.push_back(c);
  }
  if (mine.size() < 2) GTEST_SKIP() << "one core: nothing to confine to";
  std::unique_ptr<HostEnforcer> host = Enforcer(HostEnforcerChoice::kAffinity, mine);
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  host->Reserve(JobId(1), 1, 0);
  ASSERT_TRUE(host->Confine(JobId(1), child).ok());
  const std::string status = ReadTextFile("/proc/" + std::to_string(child) + "/status");
  EXPECT_NE(status.find("Cpus_allowed_list:\t" + std::to_string(mine[0]) + "\n"), std::string::npos)
      << status;
  // A new enforcer (a restarted daemon) finds the core on the process.
  std::unique_ptr<HostEnforcer> again = Enforcer(HostEnforcerChoice::kAffinity, mine);
  again->Readopt(JobId(1), child, 0);
  EXPECT_EQ(again->Reserve(JobId(1), 1, 0).cores, (std::vector<int>{mine[0]}));
  EXPECT_EQ(again->Reserve(JobId(2), 1, 0).cores, (std::vector<int>{mine[1]}));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(HostEnforcerTest, TheWatchdogFindsAGroupOverItsMemory) {
  std::unique_ptr<HostEnforcer> host = Enforcer(HostEnforcerChoice::kAffinity, {0});
  // This test's own process group holds some MiB; a limit of 1 MiB is below it.
  host->Reserve(JobId(1), 0, 1);
  host->Reserve(JobId(2), 0, int64_t{1} << 30);
  EXPECT_TRUE(host->NeedsTicks());
  const int group = getpgrp();
  EXPECT_EQ(host->OverMemory({{JobId(1), group}, {JobId(2), group}}), std::vector<JobId>{JobId(1)});
  EXPECT_EQ(host->KilledForMemory(JobId(1)), 1);
  EXPECT_EQ(host->KilledForMemory(JobId(2)), 0);
  // Once found, it is not found again.
  EXPECT_TRUE(host->OverMemory({{JobId(1), group}}).empty());
  host->Release(JobId(1));
  host->Release(JobId(2));
  EXPECT_FALSE(host->NeedsTicks());
}

// cgroup v2 through a directory tree standing in for the unified hierarchy: what is written
// where. (The kernel makes a group's files; here the test does.)
TEST(HostEnforcerTest, CgroupV2WritesTheJobsGroup) {
  const fs::path root = FreshTestDir("dlsched_cgroup_v2_test");
  const fs::path job = root / "dlsched-t" / "job-7";
  fs::create_directories(job);
  for (const fs::path& file :
       {root / "cgroup.controllers", root / "cgroup.subtree_control",
        root / "dlsched-t" / "cgroup.subtree_control", job / "cpuset.cpus", job / "cpu.max",
        job / "memory.max", job / "memory.swap.max", job / "cgroup.procs", job / "memory.events"}) {
    std::ofstream(file) << "";
  }
  std::ofstream(root / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  HostEnforcer::Options options;
  options.choice = HostEnforcerChoice::kCgroup;
  options.group_name = "dlsched-t";
  options.cores = {0, 1, 2, 3};
  options.dirs = CgroupDirs{.unified = root.string()};
  Result<std::unique_ptr<HostEnforcer>> made = HostEnforcer::Create(options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  HostEnforcer& host = **made;
  EXPECT_EQ(host.mode(), HostEnforcement::kCgroupV2);
  EXPECT_EQ(ReadTextFile(root / "cgroup.subtree_control"), "+cpu +cpuset +memory");
  host.Reserve(JobId(7), 2, 64);
  ASSERT_TRUE(host.Confine(JobId(7), 4242).ok());
  EXPECT_EQ(ReadTextFile(job / "cpuset.cpus"), "0-1");
  EXPECT_EQ(ReadTextFile(job / "cpu.max"), "200000 100000");
  EXPECT_EQ(ReadTextFile(job / "memory.max"), std::to_string(64 << 20));
  EXPECT_EQ(ReadTextFile(job / "memory.swap.max"), "0");
  EXPECT_EQ(ReadTextFile(job / "cgroup.procs"), "4242");
  EXPECT_EQ(host.KilledForMemory(JobId(7)), 0);
  std::ofstream(job / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  EXPECT_EQ(host.KilledForMemory(JobId(7)), 64);
  fs::remove_all(root);
}

// cgroup v1 on this machine's own hierarchies (the project's machines have them, writable by
// root): a real group, a real process in it, removed on release and as stale.
TEST(HostEnforcerTest, CgroupV1ConfinesARealProcess) {
  HostEnforcer::Options options;
  options.choice = HostEnforcerChoice::kCgroup;
  options.group_name = "dlsched-test-" + std::to_string(getpid());
  Result<std::unique_ptr<HostEnforcer>> made = HostEnforcer::Create(options);
  if (!made.ok() || (*made)->mode() != HostEnforcement::kCgroupV1) {
    GTEST_SKIP() << "no writable cgroup v1 hierarchy here: "
                 << (made.ok() ? (*made)->Describe() : made.status().ToString());
  }
  HostEnforcer& host = **made;
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  const HostGrant grant = host.Reserve(JobId(3), 1, 32);
  ASSERT_TRUE(host.Confine(JobId(3), child).ok());
  const std::vector<std::string> groups = host.JobGroupDirs(JobId(3));
  ASSERT_FALSE(groups.empty());
  const std::string status = ReadTextFile("/proc/" + std::to_string(child) + "/status");
  EXPECT_NE(status.find("Cpus_allowed_list:\t" + FormatCpuList(grant.cores) + "\n"),
            std::string::npos)
      << status;
  for (const std::string& dir : groups) {
    if (dir.find("/memory") == std::string::npos) continue;
    EXPECT_EQ(ReadTextFile(dir + "/memory.limit_in_bytes"), std::to_string(32 << 20) + "\n");
  }
  // A restarted daemon finds its core in the group.
  HostEnforcer::Options again_options = options;
  Result<std::unique_ptr<HostEnforcer>> again = HostEnforcer::Create(again_options);
  ASSERT_TRUE(again.ok());
  (*again)->Readopt(JobId(3), child, 32);
  EXPECT_EQ((*again)->Reserve(JobId(3), 1, 32).cores, grant.cores);
  // Stale groups go (their processes killed), kept ones stay.
  (*again)->RemoveStaleGroups({JobId(3)});
  for (const std::string& dir : groups) EXPECT_TRUE(fs::exists(dir)) << dir;
  (*again)->RemoveStaleGroups({});
  waitpid(child, nullptr, 0);
  (*again)->Sweep();
  for (const std::string& dir : groups) EXPECT_FALSE(fs::exists(dir)) << dir;
  for (const std::string& dir : groups) {
    fs::remove(fs::path(dir).parent_path());  // the test's daemon group
  }
}

TEST(HostEnforcerTest, LocalHostFillsTheNodesThatStateNone) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  const Cluster local = WithLocalHost(cluster, {.cpus = 16, .memory_mib = 1000});
  ASSERT_EQ(local.num_nodes(), 2);
  EXPECT_EQ(local.node(NodeId(1)).cpus, 16);
  EXPECT_EQ(local.node(NodeId(1)).memory_mib, 1000);
  EXPECT_EQ(local.node(NodeId(1)).name, cluster.node(NodeId(1)).name);
  EXPECT_EQ(local.total_gpus(), 8);
  EXPECT_EQ(local.total_cpus(), 32);
  const LocalHost here = DetectLocalHost();
  EXPECT_GT(here.cpus, 0);
  EXPECT_GT(here.memory_mib, 0);
  EXPECT_EQ(HostGroupName("/a"), HostGroupName("/a"));
  EXPECT_NE(HostGroupName("/a"), HostGroupName("/b"));
  EXPECT_EQ(HostGroupName("/a").size(), std::string("dlsched-").size() + 16);
}

}  // namespace
}  // namespace dlsched::daemon
