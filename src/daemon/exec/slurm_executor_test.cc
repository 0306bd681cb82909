#include "daemon/exec/slurm_executor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "support/builders.h"
#include "support/test_files.h"

// Unit tests of what the Slurm executor does without Slurm: the scheduler-thread side (Flush),
// Start, and the worker against fake sbatch, squeue, scontrol and scancel scripts on the PATH
// (answers, failures and logs in files of the test directory). test/slurm has the end-to-end
// tests against a real Slurm.

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using test_support::FreshTestDir;
using test_support::ReadTextFile;

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDir("dlsched_slurm_exec_test"); }
  void TearDown() override {
    executor_.reset();
    if (!saved_path_.empty()) setenv("PATH", saved_path_.c_str(), 1);
    fs::remove_all(dir_);
  }

  // `poll_interval` hours: no poll after the first (which fails without Slurm commands).
  void Make(std::vector<SlurmNodeSite> sites = {}, Duration poll_interval = std::chrono::hours(1)) {
    SlurmExecutor::Options options;
    options.partition = "p";
    options.jobs_dir = dir_.string();
    options.poll_interval = poll_interval;
    options.extra_env = extra_env_;
    options.shards = shards_;
    executor_ = std::make_unique<SlurmExecutor>(
        options, std::move(sites),
        [this](ExecutorReport r) {
          std::lock_guard lock(mu_);
          reports_.push_back(std::move(r));
        },
        [this](NodeReport r) {
          std::lock_guard lock(mu_);
          node_reports_.push_back(std::move(r));
        });
  }

  // Fake Slurm commands in <dir>/bin, first on the PATH (restored by TearDown):
  //   sbatch    logs its arguments to sbatch.log and its environment to sbatch.env; prints
  //             sbatch.out and exits 0 if that file exists, else fails as a timed-out RPC;
  //   squeue    logs each call to squeue.log; fails while squeue.fail exists, else prints
  //             squeue.out (squeue --format=%i|%T|%r|%j|%k lines);
  //   scontrol  fails (node health stays as discovery saw it; exit codes from the exit file);
  //   scancel   logs its arguments to scancel.log.
  void FakeSlurm() {
    const fs::path bin = dir_ / "bin";
    fs::create_directories(bin);
    const std::string d = "D='" + dir_.string() + "'\n";
    const std::pair<const char*, std::string> scripts[] = {
        {"sbatch", d + "echo \"$*\" >> \"$D/sbatch.log\"\nenv > \"$D/sbatch.env\"\n"
                       "[ -f \"$D/sbatch.out\" ] && exec cat \"$D/sbatch.out\"\n"
                       "echo 'sbatch: error: Batch job submission failed: Socket timed out on "
                       "send/recv operation' >&2\nexit 1\n"},
        {"squeue", d + "echo call >> \"$D/squeue.log\"\n"
                       "[ -f \"$D/squeue.fail\" ] && { echo 'squeue: error: timed out' >&2; "
                       "exit 1; }\ncat \"$D/squeue.out\" 2>/dev/null\nexit 0\n"},
        {"scontrol", "exit 1\n"},
        {"scancel", d + "echo \"$*\" >> \"$D/scancel.log\"\n"},
    };
    for (const auto& [name, body] : scripts) {
      std::ofstream(bin / name) << "#!/bin/sh\n" << body;
      fs::permissions(bin / name, fs::perms::owner_all);
    }
    saved_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", (bin.string() + ":" + saved_path_).c_str(), 1);
  }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / (name + ".tmp")) << content;
    fs::rename(dir_ / (name + ".tmp"), dir_ / name);
  }
  // One squeue line of dlsched job `job`'s segment.
  std::string Listed(const std::string& slurm_id, const std::string& state, uint32_t job) const {
    return slurm_id + "|" + state + "|None|dlsched-" + std::to_string(job) +
           "|dlsched:" + JobDir(JobId(job)).string() + "\n";
  }
  static bool WaitFor(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }
  // Waits until the worker finished a poll that began after now.
  void WaitForPolls() {
    const auto calls = [&] {
      std::istringstream log(ReadTextFile(dir_ / "squeue.log"));
      int n = 0;
      for (std::string line; std::getline(log, line);) ++n;
      return n;
    };
    const int before = calls();
    ASSERT_TRUE(WaitFor([&] { return calls() >= before + 2; }));
  }
  std::vector<ExecutorReport> Reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }

  fs::path JobDir(JobId job) const { return dir_ / std::to_string(job.value()); }
  // What the daemon would give `job`: `true` with job_env_, in dir_.
  LaunchSpec Spec(JobId job) const {
    LaunchSpec spec;
    spec.job = job;
    spec.argv = {"true"};
    spec.env = job_env_;
    spec.job_dir = JobDir(job).string();
    spec.workdir = dir_.string();
    return spec;
  }

  fs::path dir_;
  std::string saved_path_;
  std::vector<std::string> job_env_;
  std::vector<std::string> extra_env_;
  bool shards_ = false;  // Options::shards
  std::unique_ptr<SlurmExecutor> executor_;
  std::mutex mu_;
  std::vector<ExecutorReport> reports_;
  std::vector<NodeReport> node_reports_;
};

std::vector<SlurmNodeSite> OneNode() { return {{"n1", "n1", {"", ""}, "IDLE", ""}}; }
Placement OnN1() { return Placement{{{NodeId(0), 0b1}}}; }

TEST_F(SlurmExecutorTest, FlushRecordsAStopBeforeTheWorkerCarriesItOut) {
  // No worker thread runs (no Start): what a restart finds is what Flush wrote itself.
  Make();
  const Job job = testing::MakeJob(1).Build();
  fs::create_directories(JobDir(job.id));
  std::ofstream(JobDir(job.id) / "slurm_job") << "41 node1\n";
  executor_->Adopt(job.id, JobDir(job.id).string(), std::nullopt, {});

  executor_->Preempt(job, kTimeZero);
  EXPECT_FALSE(fs::exists(JobDir(job.id) / "stop"));  // queued, not yet acknowledged
  executor_->Flush();
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "stop"), "preempt");
  // A kill overrides a preemption; nothing overrides a kill.
  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "stop"), "kill");
  executor_->Preempt(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "stop"), "kill");
}

TEST_F(SlurmExecutorTest, FlushRecordsAStopOfALaunchNotYetCarriedOut) {
  Make();
  const Job job = testing::MakeJob(2).Build();
  executor_->Launch(job, Placement{}, Spec(job.id));
  executor_->Flush();
  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "stop"), "kill");
}

TEST_F(SlurmExecutorTest, StartReportsTheNodesDiscoveryFoundOutOfService) {
  Make({{"n1", "n1", {""}, "IDLE", ""},
        {"n2", "n2", {""}, "IDLE+DRAIN", "disk failing"},
        {"n3", "n3", {""}, "MIXED", ""},
        {"n4", "n4", {""}, "DOWN+NOT_RESPONDING", "Not responding"}});
  // Without Slurm commands on the PATH the worker's first poll fails and changes nothing: every
  // report comes from Start.
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (dir_ / "empty").c_str(), 1);
  ASSERT_TRUE(executor_->Start().ok());
  executor_->Stop();
  setenv("PATH", path.c_str(), 1);
  std::lock_guard lock(mu_);
  ASSERT_EQ(node_reports_.size(), 2u);
  EXPECT_EQ(node_reports_[0].node, NodeId(1));
  EXPECT_FALSE(node_reports_[0].available);
  EXPECT_EQ(node_reports_[0].reason, "IDLE+DRAIN: disk failing");
  EXPECT_EQ(node_reports_[1].node, NodeId(3));
  EXPECT_FALSE(node_reports_[1].available);
  EXPECT_EQ(node_reports_[1].reason, "DOWN+NOT_RESPONDING: Not responding");
}

TEST_F(SlurmExecutorTest, SbatchRunsWithTheDaemonsEnvironmentNotTheJobs) {
  FakeSlurm();
  Write("sbatch.out", "80\n");
  job_env_ = {"DLSCHED_TEST_JOB_ONLY=1", "PATH=/job/bin"};
  extra_env_ = {"SLURM_CONF=/test/slurm.conf"};
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  const Job job = testing::MakeJob(1).Build();
  executor_->Launch(job, OnN1(), Spec(job.id));
  executor_->Flush();
  ASSERT_TRUE(
      WaitFor([&] { return ReadTextFile(JobDir(job.id) / "slurm_job") == "80 n1 srun\n"; }));
  const std::string env = "\n" + ReadTextFile(dir_ / "sbatch.env");
  EXPECT_NE(env.find("\nSLURM_CONF=/test/slurm.conf\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nPATH=" + std::string(std::getenv("PATH")) + "\n"), std::string::npos);
  EXPECT_EQ(env.find("DLSCHED_TEST_JOB_ONLY"), std::string::npos) << env;
  EXPECT_NE(ReadTextFile(dir_ / "sbatch.log").find("--export=NONE"), std::string::npos);
  // The job's environment is the batch script's to set.
  EXPECT_NE(
      ReadTextFile(JobDir(job.id) / "slurm-batch.sh").find("\nexport DLSCHED_TEST_JOB_ONLY='1'\n"),
      std::string::npos);
}

TEST_F(SlurmExecutorTest, UnderASharingProfileSingleGpuSegmentsHoldAShardAndGangsTheirGpus) {
  FakeSlurm();
  Write("sbatch.out", "80\n");
  shards_ = true;
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  Job shared = testing::MakeJob(1).Build();
  shared.share = ShareMode::kPacked;
  const Job alone = testing::MakeJob(2).Build();  // may be joined later: a shard too
  const Job gang = testing::MakeJob(3).Gpus(2).Build();
  executor_->Launch(shared, OnN1(), Spec(shared.id));
  executor_->Launch(alone, Placement{{{NodeId(0), 0b10}}}, Spec(alone.id));
  executor_->Launch(gang, Placement{{{NodeId(0), 0b11}}}, Spec(gang.id));
  executor_->Flush();
  ASSERT_TRUE(
      WaitFor([&] { return ReadTextFile(JobDir(gang.id) / "slurm_job") == "80 n1 srun\n"; }));
  std::istringstream log(ReadTextFile(dir_ / "sbatch.log"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find(" --gres=shard:1 "), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(" --gres=shard:1 "), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(" --gres=gpu:2 "), std::string::npos) << lines[2];
  // The shared launch went out (the fake squeue lists none of them, so later polls may report
  // them lost; never refused for shards).
  for (const ExecutorReport& r : Reports()) {
    const auto* failed = std::get_if<JobLaunchFailed>(&r.event);
    EXPECT_TRUE(failed == nullptr || failed->reason.find("shard") == std::string::npos)
        << failed->reason;
  }
}

TEST_F(SlurmExecutorTest, ASharedLaunchWithoutShardsFailsAtOnce) {
  Make(OneNode());
  Job job = testing::MakeJob(1).Build();
  job.share = ShareMode::kPacked;
  executor_->Launch(job, OnN1(), Spec(job.id));
  const std::vector<ExecutorReport> reports = Reports();
  ASSERT_EQ(reports.size(), 1u);
  const auto* failed = std::get_if<JobLaunchFailed>(&reports[0].event);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->job, job.id);
  EXPECT_NE(failed->reason.find("shard GRES"), std::string::npos) << failed->reason;
}

TEST_F(SlurmExecutorTest, AFailedSbatchIsFollowedWhenSlurmHasTheJobOnceSqueueAnswers) {
  // slurmctld overloaded: sbatch gets no answer, squeue neither.
  FakeSlurm();
  Write("squeue.fail", "");
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  const Job job = testing::MakeJob(1).Build();
  executor_->Launch(job, OnN1(), Spec(job.id));
  executor_->Flush();
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ / "sbatch.log"); }));
  WaitForPolls();
  // Nothing reported (the scheduler would launch the job again), still followed.
  EXPECT_TRUE(Reports().empty());
  EXPECT_TRUE(executor_->Info(job.id).has_value());
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "slurm_job"), "- n1 srun\n");

  // The submission did get in: it is the segment.
  Write("squeue.out", Listed("77", "PENDING", 1));
  fs::remove(dir_ / "squeue.fail");
  ASSERT_TRUE(
      WaitFor([&] { return ReadTextFile(JobDir(job.id) / "slurm_job") == "77 n1 srun\n"; }));
  WaitForPolls();
  EXPECT_TRUE(Reports().empty());
  EXPECT_EQ(ReadTextFile(dir_ / "scancel.log"), "");  // not an orphan

  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  ASSERT_TRUE(WaitFor([&] { return ReadTextFile(dir_ / "scancel.log") == "77\n"; }));
  Write("squeue.out", Listed("77", "CANCELLED", 1));
  ASSERT_TRUE(WaitFor([&] { return !Reports().empty(); }));
  const std::vector<ExecutorReport> reports = Reports();
  ASSERT_EQ(reports.size(), 1u);
  const auto* finished = std::get_if<JobFinished>(&reports[0].event);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->final_state, JobState::kKilled);
  EXPECT_EQ(ReadTextFile(dir_ / "sbatch.log").find('\n'),
            ReadTextFile(dir_ / "sbatch.log").size() - 1)
      << "submitted once";
}

TEST_F(SlurmExecutorTest, AStopDecidedWhileTheSubmissionIsUnconfirmedCancelsItWhenFound) {
  FakeSlurm();
  Write("squeue.fail", "");
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  const Job job = testing::MakeJob(3).Build();
  executor_->Launch(job, OnN1(), Spec(job.id));
  executor_->Flush();
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir_ / "sbatch.log"); }));
  executor_->Preempt(job, kTimeZero);
  executor_->Flush();
  WaitForPolls();
  EXPECT_EQ(ReadTextFile(JobDir(job.id) / "stop"), "preempt");
  Write("squeue.out", Listed("79", "PENDING", 3));
  fs::remove(dir_ / "squeue.fail");
  ASSERT_TRUE(WaitFor([&] { return ReadTextFile(dir_ / "scancel.log") == "79\n"; }));
  Write("squeue.out", Listed("79", "CANCELLED", 3));
  ASSERT_TRUE(WaitFor([&] { return !Reports().empty(); }));
  EXPECT_TRUE(std::holds_alternative<JobSuspended>(Reports()[0].event));
}

TEST_F(SlurmExecutorTest, AFailedSbatchSlurmDoesNotListIsAFailedLaunchAndALateArrivalAnOrphan) {
  FakeSlurm();
  Write("squeue.out", "90|RUNNING|None|someone|dlsched:/elsewhere/jobs/2\n");
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  const Job job = testing::MakeJob(2).Build();
  executor_->Launch(job, OnN1(), Spec(job.id));
  executor_->Flush();
  ASSERT_TRUE(WaitFor([&] { return !Reports().empty(); }));
  const std::vector<ExecutorReport> reports = Reports();
  const auto* failed = std::get_if<JobLaunchFailed>(&reports[0].event);
  ASSERT_NE(failed, nullptr);
  EXPECT_NE(failed->reason.find("Socket timed out"), std::string::npos) << failed->reason;
  EXPECT_FALSE(executor_->Info(job.id).has_value());

  // slurmctld accepts the submission after all: no segment owns it, so it is cancelled (once);
  // another daemon's job is left alone.
  Write("squeue.out",
        "90|RUNNING|None|someone|dlsched:/elsewhere/jobs/2\n" + Listed("78", "RUNNING", 2));
  ASSERT_TRUE(WaitFor([&] { return ReadTextFile(dir_ / "scancel.log") == "78\n"; }));
  WaitForPolls();
  EXPECT_EQ(ReadTextFile(dir_ / "scancel.log"), "78\n");
  EXPECT_EQ(Reports().size(), 1u);
}

TEST_F(SlurmExecutorTest, OrphansAreCancelledAtTheFirstPollThatSqueueAnswers) {
  // A restart whose first polls fail: the sweep still happens, later.
  FakeSlurm();
  Write("squeue.fail", "");
  Write("squeue.out", Listed("55", "RUNNING", 9));
  Make(OneNode(), std::chrono::milliseconds(20));
  ASSERT_TRUE(executor_->Start().ok());
  WaitForPolls();
  EXPECT_EQ(ReadTextFile(dir_ / "scancel.log"), "");
  fs::remove(dir_ / "squeue.fail");
  ASSERT_TRUE(WaitFor([&] { return ReadTextFile(dir_ / "scancel.log") == "55\n"; }));
}

TEST_F(SlurmExecutorTest, AdoptTakesFromTheRecordWhetherTheCommandRunsInTheBatchStep) {
  struct Case {
    std::string record;
    std::string batch_script;  // "" for none
    std::string scancel;       // the preemption's signal
  } cases[] = {
      {"41 n1 batch\n", "#!/bin/sh\nsrun x\n", "--signal=TERM --full 41\n"},
      {"41 n1 srun\n", "", "--signal=TERM 41\n"},
      // An older dlsched's record: the batch script tells.
      {"41 n1\n", "#!/bin/sh\nsrun --kill-on-bad-exit=1 x\n", "--signal=TERM 41\n"},
      {"41 n1\n", "#!/bin/sh\n'/w/slurm-task.sh' \"$@\"\n", "--signal=TERM --full 41\n"},
  };
  FakeSlurm();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.record + c.batch_script);
    fs::remove(dir_ / "scancel.log");
    const Job job = testing::MakeJob(4).Build();
    fs::create_directories(JobDir(job.id));
    std::ofstream(JobDir(job.id) / "slurm_job") << c.record;
    fs::remove(JobDir(job.id) / "slurm-batch.sh");
    if (!c.batch_script.empty()) std::ofstream(JobDir(job.id) / "slurm-batch.sh") << c.batch_script;
    Write("squeue.out", Listed("41", "RUNNING", 4));
    Make(OneNode(), std::chrono::milliseconds(20));
    executor_->Adopt(job.id, JobDir(job.id).string(), std::nullopt, {});
    ASSERT_TRUE(executor_->Start().ok());
    WaitForPolls();  // matched and seen running
    executor_->Preempt(job, kTimeZero);
    executor_->Flush();
    EXPECT_TRUE(WaitFor([&] { return ReadTextFile(dir_ / "scancel.log") == c.scancel; }))
        << ReadTextFile(dir_ / "scancel.log");
    executor_.reset();
    fs::remove(JobDir(job.id) / "stop");
  }
}

}  // namespace
}  // namespace dlsched::daemon
