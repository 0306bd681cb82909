#include "daemon/exec/slurm_executor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "support/builders.h"

// Unit tests of what the Slurm executor does without Slurm: the scheduler-thread side (Flush)
// and Start. test/slurm has the end-to-end tests against a real Slurm.

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlsched_slurm_exec_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    executor_.reset();
    fs::remove_all(dir_);
  }

  void Make(std::vector<SlurmNodeSite> sites = {}) {
    SlurmExecutor::Options options;
    options.partition = "p";
    options.jobs_dir = dir_.string();
    // No poll after the first (which fails: these tests run no Slurm command).
    options.poll_interval = std::chrono::hours(1);
    executor_ = std::make_unique<SlurmExecutor>(
        options, std::move(sites),
        [this](const Job& job, const Placement&) -> Result<LaunchSpec> {
          LaunchSpec spec;
          spec.job = job.id;
          spec.argv = {"true"};
          spec.job_dir = JobDir(job.id).string();
          spec.workdir = dir_.string();
          return spec;
        },
        [](ExecutorReport) {},
        [this](NodeReport r) {
          std::lock_guard lock(mu_);
          node_reports_.push_back(std::move(r));
        });
  }

  fs::path JobDir(JobId job) const { return dir_ / std::to_string(job.value()); }

  fs::path dir_;
  std::unique_ptr<SlurmExecutor> executor_;
  std::mutex mu_;
  std::vector<NodeReport> node_reports_;
};

TEST_F(SlurmExecutorTest, FlushRecordsAStopBeforeTheWorkerCarriesItOut) {
  // No worker thread runs (no Start): what a restart finds is what Flush wrote itself.
  Make();
  const Job job = testing::MakeJob(1).Build();
  fs::create_directories(JobDir(job.id));
  std::ofstream(JobDir(job.id) / "slurm_job") << "41 node1\n";
  executor_->Adopt(job.id, JobDir(job.id).string(), std::nullopt);

  executor_->Preempt(job, kTimeZero);
  EXPECT_FALSE(fs::exists(JobDir(job.id) / "stop"));  // queued, not yet acknowledged
  executor_->Flush();
  EXPECT_EQ(ReadFile(JobDir(job.id) / "stop"), "preempt");
  // A kill overrides a preemption; nothing overrides a kill.
  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadFile(JobDir(job.id) / "stop"), "kill");
  executor_->Preempt(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadFile(JobDir(job.id) / "stop"), "kill");
}

TEST_F(SlurmExecutorTest, FlushRecordsAStopOfALaunchNotYetCarriedOut) {
  Make();
  const Job job = testing::MakeJob(2).Build();
  executor_->Launch(job, Placement{}, kTimeZero);
  executor_->Flush();
  executor_->Kill(job, kTimeZero);
  executor_->Flush();
  EXPECT_EQ(ReadFile(JobDir(job.id) / "stop"), "kill");
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

}  // namespace
}  // namespace dlsched::daemon
