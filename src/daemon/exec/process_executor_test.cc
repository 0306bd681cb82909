#include "daemon/exec/process_executor.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "daemon/exec/nvml.h"
#include "support/builders.h"
#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::FreshTestDir;
using test_support::ReadTextFile;

// Collects reports from the monitor thread; Next waits for one with a deadline.
class Reports {
 public:
  void Add(ExecutorReport r) {
    std::lock_guard lock(mu_);
    reports_.push_back(std::move(r));
    cv_.notify_all();
  }
  std::optional<ExecutorReport> Next(Duration timeout = seconds(8)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !reports_.empty(); })) return std::nullopt;
    ExecutorReport r = std::move(reports_.front());
    reports_.pop_front();
    return r;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ExecutorReport> reports_;
};

// The spare wrappers of this process: its children whose command line names the wrapper.
std::vector<int> SparePids() {
  std::vector<int> pids;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = ReadTextFile(entry.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != ::getpid() || state == "Z") continue;
    if (ReadTextFile(entry.path() / "cmdline").find("dlsched-job") == std::string::npos) continue;
    pids.push_back(std::stoi(name));
  }
  return pids;
}

class ProcessExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir("dlsched_exec_test");
    executor_ = MakeExecutor();
    ASSERT_TRUE(executor_->Start().ok());
  }
  void TearDown() override {
    if (executor_) executor_->KillAll();
    executor_.reset();
    // Reap whatever the tests started (adoption tests leave their children to us).
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    fs::remove_all(dir_);
  }

  std::unique_ptr<ProcessExecutor> MakeExecutor() {
    ProcessExecutor::Options options;
    options.grace = milliseconds(300);
    options.poll_interval = milliseconds(20);
    options.job_exec = DLSCHED_BINARY;
    options.host = host_;
    return std::make_unique<ProcessExecutor>(
        options, [this](ExecutorReport r) { reports_.Add(std::move(r)); });
  }

  // What the daemon would give `job`: script_ (or argv_) in dir_, its job directory dir_/<id>.
  LaunchSpec Spec(JobId job) const {
    LaunchSpec spec;
    spec.job = job;
    spec.argv = argv_.empty() ? std::vector<std::string>{"/bin/sh", "-c", script_} : argv_;
    spec.env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=1,3"};
    spec.job_dir = (dir_ / std::to_string(job.value())).string();
    spec.workdir = dir_.string();
    spec.time_limit = time_limit_;
    spec.cpus = cpus_;
    spec.host_memory_mib = host_memory_mib_;
    spec.gpus = gpus_;
    return spec;
  }

  // A new executor holding jobs through `choice` (cgroups under a group of this test's own);
  // false when this machine cannot.
  bool UseHostEnforcer(HostEnforcerChoice choice) {
    HostEnforcer::Options options;
    options.choice = choice;
    options.group_name = "dlsched-exec-test-" + std::to_string(getpid());
    options.memory_poll = milliseconds(20);
    options.gpu_cores = gpu_cores_;
    Result<std::unique_ptr<HostEnforcer>> made = HostEnforcer::Create(options);
    if (!made.ok()) return false;
    host_ = std::move(made).value();
    executor_->KillAll();
    executor_ = MakeExecutor();
    return executor_->Start().ok();
  }

  void Launch(const Job& job) { executor_->Launch(job, Placement{}, Spec(job.id)); }

  void Run(uint32_t id, std::string script) {
    script_ = std::move(script);
    Launch(testing::MakeJob(id).Build());
    executor_->Flush();
  }

  static void WaitForFile(const fs::path& path) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(8);
    while (!fs::exists(path) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_TRUE(fs::exists(path)) << path;
  }

  fs::path dir_;
  std::string script_;
  std::vector<std::string> argv_;  // instead of sh -c script_ when set
  std::optional<Duration> time_limit_;
  int cpus_ = 0;
  int64_t host_memory_mib_ = 0;
  GpuMask gpus_ = 0;
  std::vector<std::vector<int>> gpu_cores_;  // HostEnforcer::Options::gpu_cores
  std::shared_ptr<HostEnforcer> host_;
  Reports reports_;
  std::unique_ptr<ProcessExecutor> executor_;
};

TEST_F(ProcessExecutorTest, RunsTheCommandWithItsEnvironmentAndLogs) {
  Run(0, "echo $CUDA_VISIBLE_DEVICES > out; echo hello; echo oops >&2");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kSucceeded);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(ReadTextFile(dir_ / "out"), "1,3\n");
  EXPECT_EQ(ReadTextFile(dir_ / "0" / "stdout.log"), "hello\n");
  EXPECT_EQ(ReadTextFile(dir_ / "0" / "stderr.log"), "oops\n");
  EXPECT_EQ(ReadTextFile(dir_ / "0" / "exit"), "0\n");
  EXPECT_TRUE(fs::is_directory(dir_ / "0" / "checkpoint"));
  EXPECT_EQ(executor_->watched(), 0u);
}

// The job sees only its cores, a job over its host memory is killed with that cause, and a
// group never outlives its job: through cgroups (where this machine has a writable hierarchy:
// the project's machines do) and through affinity and the watchdog.
TEST_F(ProcessExecutorTest, JobsAreHeldToTheirCpusAndHostMemory) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nothing to confine to";
  for (const HostEnforcerChoice choice :
       {HostEnforcerChoice::kCgroup, HostEnforcerChoice::kAffinity}) {
    if (!UseHostEnforcer(choice)) {
      ASSERT_EQ(choice, HostEnforcerChoice::kCgroup) << "affinity is usable everywhere";
      continue;
    }
    SCOPED_TRACE(host_->Describe());
    cpus_ = 1;
    host_memory_mib_ = 0;
    Run(30, "grep Cpus_allowed_list /proc/self/status > cpus");
    std::optional<ExecutorReport> r = reports_.Next();
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(std::holds_alternative<JobFinished>(r->event));
    EXPECT_EQ(ReadTextFile(dir_ / "cpus"), "Cpus_allowed_list:\t0\n");

    host_memory_mib_ = 32;
    Run(31, "dd if=/dev/zero of=/dev/null bs=128M count=400");
    r = reports_.Next(seconds(20));
    ASSERT_TRUE(r.has_value());
    const auto* finished = std::get_if<JobFinished>(&r->event);
    ASSERT_NE(finished, nullptr);
    EXPECT_EQ(finished->final_state, JobState::kFailed);
    EXPECT_EQ(finished->detail, "killed: host memory over its limit of 32 MiB");
    EXPECT_EQ(r->exit_code, 128 + SIGKILL);
    for (const std::string& group : host_->JobGroupDirs(JobId(31))) {
      EXPECT_FALSE(fs::exists(group)) << group;
      fs::remove(fs::path(group).parent_path());
    }
  }
}

// Two fake GPUs whose PCI devices list disjoint cores (a sysfs tree of the test's own): a job
// gets the cores near its GPU, not the lowest free ones.
TEST_F(ProcessExecutorTest, JobsGetTheCoresNearTheirGpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> mine;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) mine.push_back(c);
  }
  if (mine.size() < 2) GTEST_SKIP() << "one core: nothing to choose between";
  const fs::path state = dir_ / "nvml-state";
  std::ofstream(state) << "gpu 16384 0 0 Tesla V100\ngpu 16384 0 0 Tesla V100\n"
                          "busid 0 00000000:3B:00.0\nbusid 1 00000000:5E:00.0\n";
  fs::create_directories(dir_ / "sys/bus/pci/devices/0000:3b:00.0");
  fs::create_directories(dir_ / "sys/bus/pci/devices/0000:5e:00.0");
  std::ofstream(dir_ / "sys/bus/pci/devices/0000:3b:00.0/local_cpulist")
      << FormatCpuList({mine.begin(), mine.begin() + mine.size() / 2}) << "\n";
  std::ofstream(dir_ / "sys/bus/pci/devices/0000:5e:00.0/local_cpulist")
      << FormatCpuList({mine.begin() + mine.size() / 2, mine.end()}) << "\n";
  setenv("DLSCHED_FAKE_NVML_STATE", state.c_str(), 1);
  Result<GpuTopology> topology = DiscoverGpuTopology(DLSCHED_FAKE_NVML, (dir_ / "sys").string());
  unsetenv("DLSCHED_FAKE_NVML_STATE");
  ASSERT_TRUE(topology.ok()) << topology.status().message();
  gpu_cores_ = topology->cores;
  ASSERT_TRUE(UseHostEnforcer(HostEnforcerChoice::kAffinity));
  const std::string near_gpu1 = std::to_string(mine[mine.size() / 2]);
  EXPECT_EQ(host_->CoresNear(0b10), topology->cores[1]);
  EXPECT_EQ(host_->CoresNear(0b11), mine);
  EXPECT_TRUE(host_->CoresNear(0b100).empty());

  cpus_ = 1;
  gpus_ = 0b10;
  Run(40, "grep Cpus_allowed_list /proc/self/status > cpus");
  ASSERT_TRUE(reports_.Next().has_value());
  EXPECT_EQ(ReadTextFile(dir_ / "cpus"), "Cpus_allowed_list:\t" + near_gpu1 + "\n");

  gpus_ = 0b01;
  Run(41, "grep Cpus_allowed_list /proc/self/status > cpus");
  ASSERT_TRUE(reports_.Next().has_value());
  EXPECT_EQ(ReadTextFile(dir_ / "cpus"), "Cpus_allowed_list:\t" + std::to_string(mine[0]) + "\n");
}

TEST_F(ProcessExecutorTest, NonZeroExitFails) {
  Run(1, "exit 3");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kFailed);
  EXPECT_EQ(finished->detail, "exit code 3");
  EXPECT_EQ(r->exit_code, 3);
}

TEST_F(ProcessExecutorTest, AJobDirectoryThatCannotBeMadeFailsTheLaunch) {
  std::ofstream(dir_ / "2") << "";  // a file where the job's directory goes
  Run(2, "touch ran");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* failed = std::get_if<JobLaunchFailed>(&r->event);
  ASSERT_NE(failed, nullptr);
  EXPECT_NE(failed->reason.find((dir_ / "2").string()), std::string::npos) << failed->reason;
  EXPECT_EQ(r->exit_code, std::nullopt);
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  EXPECT_EQ(executor_->watched(), 0u);
}

TEST_F(ProcessExecutorTest, ActionsWaitForFlush) {
  script_ = "touch ran";
  Launch(testing::MakeJob(4).Build());
  ASSERT_EQ(executor_->Queued().size(), 1u);
  EXPECT_EQ(executor_->Queued()[0].job, JobId(4));
  EXPECT_EQ(executor_->Queued()[0].kind, "launch");
  EXPECT_EQ(executor_->watched(), 0u);
  // The launch is prepared ahead (its directory, logs and pid.next), but the job runs only once
  // flushed: it has not run a while later, and the pid file is not yet in place.
  WaitForFile(dir_ / "4" / "pid.next");
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  EXPECT_FALSE(fs::exists(dir_ / "4" / "pid"));
  executor_->Flush();
  EXPECT_TRUE(executor_->Queued().empty());
  EXPECT_EQ(executor_->watched(), 1u);
  EXPECT_TRUE(fs::exists(dir_ / "4" / "pid"));
  EXPECT_FALSE(fs::exists(dir_ / "4" / "pid.next"));
  ASSERT_TRUE(reports_.Next().has_value());
  EXPECT_TRUE(fs::exists(dir_ / "ran"));
}

TEST_F(ProcessExecutorTest, ALaunchNeverFlushedRunsNothing) {
  script_ = "touch ran";
  Launch(testing::MakeJob(7).Build());
  // The daemon stops before the launch is durable: the prepared wrapper exits (Stop reaps it)
  // without running the job or reporting anything, and no pid file points at it.
  executor_.reset();
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
  EXPECT_FALSE(fs::exists(dir_ / "7" / "exit"));
  EXPECT_FALSE(fs::exists(dir_ / "7" / "pid"));
  EXPECT_FALSE(fs::exists(dir_ / "7" / "pid.next"));
  EXPECT_FALSE(reports_.Next(milliseconds(50)).has_value());
}

TEST_F(ProcessExecutorTest, ALaunchNeverFlushedLeavesThePreviousSegmentAsItEnded) {
  // A segment is preempted; the daemon prepares the job's relaunch but dies before the decision
  // is durable. The store still says the job runs: a restarted daemon must find the preempted
  // segment (its pid, exit and stop files) and report it suspended, not lost.
  Run(10, "echo ready > ready; sleep 30");
  WaitForFile(dir_ / "ready");
  const Job job = testing::MakeJob(10).Build();
  executor_->Preempt(job, kTimeZero);
  executor_->Flush();
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(std::holds_alternative<JobSuspended>(r->event));
  const std::string pid = ReadTextFile(dir_ / "10" / "pid");
  Launch(job);
  WaitForFile(dir_ / "10" / "pid.next");
  executor_.reset();
  EXPECT_EQ(ReadTextFile(dir_ / "10" / "pid"), pid);
  EXPECT_EQ(ReadTextFile(dir_ / "10" / "stop"), "preempt");
  EXPECT_EQ(ReadTextFile(dir_ / "10" / "exit"), std::to_string(128 + SIGTERM) + "\n");

  executor_ = MakeExecutor();
  ASSERT_TRUE(executor_->Start().ok());
  executor_->Adopt(JobId(10), (dir_ / "10").string(), std::nullopt, {});
  r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(std::holds_alternative<JobSuspended>(r->event));
}

TEST_F(ProcessExecutorTest, ADeadSpareIsReplacedNotHandedAJob) {
  // The spares are killed from outside (the OOM killer, say) while they wait: a launch gets a
  // live wrapper all the same.
  std::vector<int> spares;
  const auto deadline = std::chrono::steady_clock::now() + seconds(8);
  while ((spares = SparePids()).size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_EQ(spares.size(), 2u);
  for (int pid : spares) ASSERT_EQ(kill(pid, SIGKILL), 0);
  while (!SparePids().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  Run(11, "exit 0");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  if (const auto* failed = std::get_if<JobLaunchFailed>(&r->event)) FAIL() << failed->reason;
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kSucceeded);
}

TEST_F(ProcessExecutorTest, ArgvZeroIsAProgramNeverAShellBuiltin) {
  // As the builtin, `exit 3` would end the wrapper before it records a status, and `echo` would
  // print "--version".
  struct Case {
    std::vector<std::string> argv;
    int want_exit;
  };
  const Case cases[] = {
      {{"exit", "3"}, 127},  // no program "exit": not found
      {{"echo", "--version"}, 0},
  };
  uint32_t id = 12;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.argv[0]);
    argv_ = c.argv;
    Run(id, "");
    std::optional<ExecutorReport> r = reports_.Next();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->exit_code, c.want_exit);
    const fs::path job_dir = dir_ / std::to_string(id);
    EXPECT_EQ(ReadTextFile(job_dir / "exit"), std::to_string(c.want_exit) + "\n");
    EXPECT_NE(ReadTextFile(job_dir / "stdout.log"), "--version\n");
    ++id;
  }
}

TEST_F(ProcessExecutorTest, ArgvAndEnvironmentPassThroughExactly) {
  // Quotes, newlines, spaces and shell syntax in the argv and the environment reach the job as
  // given, and the job sees exactly the spec's environment (and PWD, its working directory).
  const std::string weird = "it's \"quoted\" $HOME `date` \\ a\nb; exit 9 '";
  ProcessExecutor::Options options;
  options.job_exec = DLSCHED_BINARY;
  for (int spares : {2, 0}) {  // 0: a spawn at launch, the path when the pool is empty
    SCOPED_TRACE(spares);
    options.spare_wrappers = spares;
    executor_ = std::make_unique<ProcessExecutor>(
        options, [this](ExecutorReport r) { reports_.Add(std::move(r)); });
    ASSERT_TRUE(executor_->Start().ok());
    LaunchSpec spec = Spec(JobId(8));
    spec.argv = {"/bin/sh", "-c", "printf %s \"$1\" > arg; env > env", "sh", weird};
    spec.env = {"PATH=/usr/bin:/bin", "WEIRD=" + weird, "EMPTY="};
    executor_->Launch(testing::MakeJob(8).Build(), Placement{}, spec);
    executor_->Flush();
    std::optional<ExecutorReport> r = reports_.Next();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(ReadTextFile(dir_ / "arg"), weird);
    const std::string env = ReadTextFile(dir_ / "env");
    EXPECT_NE(env.find("WEIRD=" + weird + "\n"), std::string::npos) << env;
    EXPECT_NE(env.find("EMPTY=\n"), std::string::npos) << env;
    std::set<std::string> names;
    std::istringstream lines(env);
    for (std::string line; std::getline(lines, line);) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos && eq > 0 && line.find_first_of(" '") > eq) {
        names.insert(line.substr(0, eq));
      }
    }
    EXPECT_EQ(names, (std::set<std::string>{"EMPTY", "PATH", "PWD", "WEIRD"})) << env;
    executor_.reset();
  }
}

TEST_F(ProcessExecutorTest, TheWrapperScriptQuotesEverything) {
  LaunchSpec spec;
  spec.argv = {"echo", "a'b"};
  spec.env = {"X=1"};
  spec.job_dir = "/j";
  spec.workdir = "/w d";
  EXPECT_EQ(WrapperScript(spec, "/bin/dl sched", 100),
            "cd '/j' || exit 126\n"
            "exec '/bin/dl sched' '__job-exec' '--job-dir' '/j' '--workdir' '/w d' "
            "'--max-log-bytes' '100' '--' 'echo' 'a'\\''b' <<'DLSCHED_ENV'\n"
            "583d31\n"  // X=1
            "DLSCHED_ENV\n"
            "# dlsched: end\n");
  spec.account = UnixAccount{60001, 60002, {60002, 7}, "ann", ""};
  EXPECT_NE(WrapperScript(spec, "/d", 0)
                .find("'--uid' '60001' '--gid' '60002' '--groups' '60002,7' '--' 'echo'"),
            std::string::npos);
}

TEST_F(ProcessExecutorTest, AJobDirectoryIsPrivateAndAForgedPidFileIsNotAdopted) {
  Run(20, "echo > ready; while [ ! -e go ]; do sleep 0.02; done");
  WaitForFile(dir_ / "ready");  // past its spare stage, when any directory would do
  const std::optional<ProcessExecutor::ProcessInfo> info = executor_->Info(JobId(20));
  ASSERT_TRUE(info.has_value());
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "20").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // The job's environment is the job's: the wrapper, which runs as the daemon's user (root),
  // has none of it (a request's LD_PRELOAD must not load into it).
  // (Only the wrapper's `cd` leaves PWD and OLDPWD.)
  const std::string wrapper_env = ReadTextFile("/proc/" + std::to_string(info->pid) + "/environ");
  EXPECT_EQ(wrapper_env.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << wrapper_env;
  EXPECT_EQ(wrapper_env.find("PATH="), std::string::npos) << wrapper_env;
  const std::string cmdline = ReadTextFile("/proc/" + std::to_string(info->pid) + "/cmdline");
  EXPECT_EQ(cmdline.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << cmdline;
  // The wrapper is recognised by its job directory, and only by that one.
  EXPECT_TRUE(IsJobWrapper(info->pid, info->start_ticks, (dir_ / "20").string()));
  fs::create_directories(dir_ / "21");
  EXPECT_FALSE(IsJobWrapper(info->pid, info->start_ticks, (dir_ / "21").string()));
  EXPECT_FALSE(IsJobWrapper(info->pid, info->start_ticks + 1, (dir_ / "20").string()));
  // A job pointing its pid file at another process (here: this test) gets it not adopted:
  // never signalled, the job reported lost.
  std::ofstream(dir_ / "21" / "pid")
      << ::getpid() << " " << ProcessStartTicks(::getpid()).value() << "\n";
  executor_->Adopt(JobId(21), (dir_ / "21").string(), std::nullopt, {});
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(std::holds_alternative<JobLaunchFailed>(r->event));
  std::ofstream(dir_ / "go") << "";
  r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 0);
}

TEST_F(ProcessExecutorTest, ALaunchWithoutASpecIsQueuedAndReportedFailed) {
  // The daemon could not build the spec (no Unix account for the job's user): the launch is
  // queued like any other (the daemon logs it) and fails at once, running nothing.
  executor_->Launch(testing::MakeJob(5).Build(), Placement{},
                    InvalidArgument("no Unix account for user 'ann'"));
  ASSERT_EQ(executor_->Queued().size(), 1u);
  EXPECT_EQ(executor_->Queued()[0].job, JobId(5));
  EXPECT_EQ(executor_->Queued()[0].kind, "launch");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* failed = std::get_if<JobLaunchFailed>(&r->event);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->job, JobId(5));
  EXPECT_EQ(failed->reason, "no Unix account for user 'ann'");
  executor_->Flush();
  EXPECT_TRUE(executor_->Queued().empty());
  EXPECT_EQ(executor_->watched(), 0u);
  EXPECT_FALSE(fs::exists(dir_ / "5"));
}

TEST_F(ProcessExecutorTest, KillRecordedWrapperKillsOnlyAWrapperOfThatDirectory) {
  Run(23, "echo ready > ready; sleep 30");
  WaitForFile(dir_ / "ready");
  // A pid file forged to name another process (this test) is not acted on.
  fs::create_directories(dir_ / "24");
  std::ofstream(dir_ / "24" / "pid")
      << ::getpid() << " " << ProcessStartTicks(::getpid()).value() << "\n";
  KillRecordedWrapper((dir_ / "24").string());
  KillRecordedWrapper((dir_ / "25").string());  // no pid file
  EXPECT_FALSE(reports_.Next(milliseconds(50)).has_value());
  // The job's own record: its whole group gets SIGKILL.
  KillRecordedWrapper((dir_ / "23").string());
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
}

TEST_F(ProcessExecutorTest, LogsAreCappedAndRotated) {
  executor_.reset();
  ProcessExecutor::Options options;
  options.job_exec = DLSCHED_BINARY;
  options.max_log_bytes = 1000;
  executor_ = std::make_unique<ProcessExecutor>(
      options, [this](ExecutorReport r) { reports_.Add(std::move(r)); });
  ASSERT_TRUE(executor_->Start().ok());
  LaunchSpec spec = Spec(JobId(22));
  // 10,000 bytes on stdout, 5 on stderr.
  spec.argv = {"/bin/sh", "-c", "head -c 10000 /dev/zero; printf oops >&2"};
  spec.env = {"PATH=/usr/bin:/bin"};
  executor_->Launch(testing::MakeJob(22).Build(), Placement{}, spec);
  executor_->Flush();
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(fs::file_size(dir_ / "22" / "stdout.log"), 1000u);
  EXPECT_EQ(fs::file_size(dir_ / "22" / "stdout.log.1"), 1000u);
  EXPECT_EQ(ReadTextFile(dir_ / "22" / "stderr.log"), "oops");
  EXPECT_FALSE(fs::exists(dir_ / "22" / "stderr.log.1"));
}

TEST_F(ProcessExecutorTest, PreemptStopsTheGroupAndReportsSuspended) {
  // The child sleeps in the same group: both must go.
  Run(2, "echo ready > ready; sleep 30 & wait");
  WaitForFile(dir_ / "ready");
  const Job job = testing::MakeJob(2).Build();
  ASSERT_TRUE(executor_->Info(job.id).has_value());
  executor_->Preempt(job, kTimeZero);
  executor_->Flush();
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(std::holds_alternative<JobSuspended>(r->event));
  EXPECT_EQ(r->exit_code, 128 + SIGTERM);  // stopped by SIGTERM, not by the SIGKILL after the grace
}

TEST_F(ProcessExecutorTest, AJobIgnoringSigtermIsKilledAfterTheGrace) {
  Run(3, "trap '' TERM; echo ready > ready; while true; do sleep 0.05; done");
  WaitForFile(dir_ / "ready");
  const Job job = testing::MakeJob(3).Build();
  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kKilled);
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
}

TEST_F(ProcessExecutorTest, MaxRunTimeIsEnforced) {
  time_limit_ = milliseconds(100);
  Run(5, "sleep 30");
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kFailed);
  EXPECT_EQ(finished->detail, "max run time exceeded");
}

TEST_F(ProcessExecutorTest, AnotherExecutorAdoptsARunningJobAndLearnsItsExitStatus) {
  Run(6, "while [ ! -e go ]; do sleep 0.02; done; exit 4");
  const std::optional<ProcessExecutor::ProcessInfo> info = executor_->Info(JobId(6));
  ASSERT_TRUE(info.has_value());
  executor_.reset();  // the "daemon" stops; the process runs on
  ASSERT_EQ(kill(info->pid, 0), 0);

  executor_ = MakeExecutor();
  ASSERT_TRUE(executor_->Start().ok());
  executor_->Adopt(JobId(6), (dir_ / "6").string(), std::nullopt, {});
  ASSERT_TRUE(executor_->Info(JobId(6)).has_value());
  std::ofstream(dir_ / "go") << "";
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kFailed);
  EXPECT_EQ(r->exit_code, 4);
}

TEST_F(ProcessExecutorTest, AdoptingAVanishedProcessWithoutStatusReportsItLost) {
  fs::create_directories(dir_ / "8");
  std::ofstream(dir_ / "8" / "pid") << "999999999 12345\n";
  executor_->Adopt(JobId(8), (dir_ / "8").string(), std::nullopt, {});
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(std::holds_alternative<JobLaunchFailed>(r->event));
}

TEST_F(ProcessExecutorTest, AdoptingAProcessThatEndedReadsItsExitFile) {
  fs::create_directories(dir_ / "9");
  std::ofstream(dir_ / "9" / "pid") << "999999999 12345\n";
  std::ofstream(dir_ / "9" / "exit") << "0\n";
  executor_->Adopt(JobId(9), (dir_ / "9").string(), std::nullopt, {});
  std::optional<ExecutorReport> r = reports_.Next();
  ASSERT_TRUE(r.has_value());
  const auto* finished = std::get_if<JobFinished>(&r->event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kSucceeded);
}

TEST(ProcessStartTicksTest, KnowsThisProcessAndNotAMissingOne) {
  EXPECT_TRUE(ProcessStartTicks(::getpid()).has_value());
  EXPECT_FALSE(ProcessStartTicks(999999999).has_value());
  EXPECT_FALSE(ProcessStartTicks(0).has_value());
}

}  // namespace
}  // namespace dlsched::daemon
