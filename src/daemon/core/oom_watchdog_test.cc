#include "daemon/core/oom_watchdog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/core/daemon_test_fixture.h"
#include "daemon/core/replay.h"
#include "daemon/store/store.h"
#include "dlsched/policy/sharing_knowledge.h"

namespace dlsched::daemon {
namespace {

const JobId kA(0);
const JobId kB(1);

// Limits: job A 1000 MiB, job B none.
std::optional<int64_t> LimitOf(JobId job) {
  return job == kA ? std::optional<int64_t>(1000) : std::nullopt;
}

std::vector<JobId> Tripped(OomWatchdog& watchdog, std::vector<JobGpuObservation> sample) {
  std::vector<JobId> jobs;
  for (const OomVerdict& v : watchdog.Check(sample, LimitOf)) jobs.push_back(v.job);
  return jobs;
}

TEST(OomWatchdogTest, TripsAfterConsecutiveSamplesOverLimitPlusSlack) {
  OomWatchdog watchdog({.slack_mib = 100, .samples = 3});
  const std::vector<JobId> none;
  EXPECT_EQ(Tripped(watchdog, {{kA, 1101, 0}, {kB, 90000, 0}}), none);
  EXPECT_EQ(Tripped(watchdog, {{kA, 1200, 0}}), none);
  const std::vector<OomVerdict> third =
      watchdog.Check(std::vector<JobGpuObservation>{{kA, 1300, 0}}, LimitOf);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].job, kA);
  EXPECT_TRUE(third[0].reason.starts_with(kOutOfMemoryReason)) << third[0].reason;
  EXPECT_NE(third[0].reason.find("1300 MiB"), std::string::npos) << third[0].reason;
  EXPECT_NE(third[0].reason.find("1000 MiB limit"), std::string::npos) << third[0].reason;
  // The streak starts over.
  EXPECT_EQ(Tripped(watchdog, {{kA, 1300, 0}}), none);
}

TEST(OomWatchdogTest, ASampleWithinTheSlackOrWithoutTheJobBreaksTheStreak) {
  struct Case {
    std::string name;
    std::vector<JobGpuObservation> middle;  // the second of three samples
  };
  const std::vector<Case> cases = {
      {"at limit + slack", {{kA, 1100, 0}}},
      {"under the limit", {{kA, 500, 0}}},
      {"not observed", {{kB, 5000, 0}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    OomWatchdog watchdog({.slack_mib = 100, .samples = 2});
    EXPECT_TRUE(Tripped(watchdog, {{kA, 2000, 0}}).empty());
    EXPECT_TRUE(Tripped(watchdog, c.middle).empty());
    EXPECT_TRUE(Tripped(watchdog, {{kA, 2000, 0}}).empty());
    EXPECT_EQ(Tripped(watchdog, {{kA, 2000, 0}}), std::vector<JobId>{kA});
  }
}

TEST(OomWatchdogTest, ZeroSamplesIsOff) {
  OomWatchdog watchdog({.slack_mib = 0, .samples = 0});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Tripped(watchdog, {{kA, 99999, 0}}).empty());
}

TEST(OomWatchdogTest, TheLimitIsTheMemoryRequest) {
  Job job;
  EXPECT_EQ(GpuMemoryLimitMib(job), std::nullopt);
  job.spec.memory_mib = 4096;
  EXPECT_EQ(GpuMemoryLimitMib(job), 4096);
}

TEST(FindCudaOutOfMemoryTest, KnowsTheFrameworksMessages) {
  struct Case {
    std::string name;
    std::string log;
    std::optional<std::string_view> want;
  };
  const std::vector<Case> cases = {
      {"pytorch",
       "Traceback ...\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
       "CUDA out of memory"},
      {"pytorch class only", "torch.cuda.OutOfMemoryError\n", "OutOfMemoryError"},
      {"driver api", "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY\n", "CUDA_ERROR_OUT_OF_MEMORY"},
      {"runtime api", "error 2 cudaErrorMemoryAllocation\n", "cudaErrorMemoryAllocation"},
      {"runtime text", "RuntimeError: CUDA error: out of memory\n", "CUDA error: out of memory"},
      {"tensorflow", "ResourceExhaustedError: OOM when allocating tensor with shape[8]",
       "OOM when allocating tensor"},
      {"xla", "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate",
       "RESOURCE_EXHAUSTED: Out of memory"},
      {"cublas", "CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate",
       "CUBLAS_STATUS_ALLOC_FAILED"},
      {"other failure", "RuntimeError: CUDA error: device-side assert triggered\n", std::nullopt},
      {"host memory", "MemoryError: out of memory\n", std::nullopt},
      {"empty", "", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FindCudaOutOfMemory(c.log), c.want);
  }
}

// The daemon's side, with the fake executor: the runs' logs are written by the test.
class OomDaemonTest : public DaemonFixture {
 protected:
  // Appends `text` to the job's stderr.log, as its run would.
  void Log(JobId job, const std::string& text) {
    const std::filesystem::path dir = dir_ / "work" / "jobs" / std::to_string(job.value());
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "stderr.log", std::ios::app) << text;
  }
  void Exit(JobId job, int code) {
    clock_.AdvanceTo(clock_.Now() + std::chrono::seconds(1));
    machine_.Exit(job, code);
    Step();
  }
};

TEST_F(OomDaemonTest, ACudaOutOfMemoryExitRequeuesTheJobAndReplaysIdentically) {
  sqlite_ = true;
  StartDaemon();
  const JobId id = Submit(1);
  ASSERT_EQ(State(id), JobState::kRunning);
  Log(id, "step 10\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n");
  Exit(id, 1);
  // Requeued as an out-of-memory restart, and (a GPU being free) started again at once.
  EXPECT_EQ(State(id), JobState::kRunning);
  EXPECT_EQ(Record(id).oom_restarts, 1);
  EXPECT_EQ(daemon_->snapshot()->metrics.oom_restarts, 1u);
  EXPECT_EQ(machine_.TakeLog(), (std::vector<std::string>{"launch 0", "launch 0"}));
  // The next run fails otherwise: the first run's message in the log is not this run's.
  Log(id, "Segmentation fault\n");
  Exit(id, 139);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_EQ(Record(id).oom_restarts, 1);
  daemon_.reset();

  // The replay reads the logged restart back as an out-of-memory one.
  Result<ReplayReport> report = ReplayEventLog((dir_ / "state.db").string(), {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->divergence) << FormatReplayReport(*report, (dir_ / "state.db").string());
}

// The counts are stored: a restarted daemon goes on counting, and the cap on out-of-memory ends
// in a row (5) holds across the restart.
TEST_F(OomDaemonTest, TheOutOfMemoryCountsSurviveARestart) {
  sqlite_ = true;
  StartDaemon();
  const JobId id = Submit(1);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(State(id), JobState::kRunning);
    Log(id, "CUDA out of memory\n");
    Exit(id, 1);
  }
  ASSERT_EQ(State(id), JobState::kRunning);
  ASSERT_EQ(Record(id).oom_restarts, 4);
  Restart();
  Step();
  ASSERT_EQ(State(id), JobState::kRunning);
  EXPECT_EQ(Record(id).oom_restarts, 4);
  EXPECT_EQ(Record(id).oom_in_a_row, 4);
  Log(id, "CUDA out of memory\n");
  Exit(id, 1);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_NE(Record(id).reason.find("5 times in a row, not restarted"), std::string::npos)
      << Record(id).reason;
}

TEST_F(OomDaemonTest, AFailureWithoutTheMessageOrACancelledRunIsNotOutOfMemory) {
  StartDaemon();
  const JobId plain = Submit(1);
  Log(plain, "Traceback: ValueError: bad shape\n");
  Exit(plain, 1);
  EXPECT_EQ(State(plain), JobState::kFailed);
  EXPECT_EQ(Record(plain).oom_restarts, 0);

  const JobId cancelled = Submit(1);
  ASSERT_EQ(State(cancelled), JobState::kRunning);
  ASSERT_TRUE(Await(daemon_->Cancel(cancelled)).ok());
  Log(cancelled, "CUDA out of memory\n");
  Exit(cancelled, 1);
  EXPECT_EQ(State(cancelled), JobState::kKilled);
  EXPECT_EQ(Record(cancelled).oom_restarts, 0);
}

// Time-slicing over las, as gandiva, with one migration per job at most.
constexpr const char* kSlicingProfile =
    R"({"name": "slicing", "base": "las",
    "share": {"packer": "greedy", "mode": "time-sliced", "max_jobs_per_gpu": 2,
              "migration": {"enabled": true, "max_per_job": 1, "min_residence_s": 600,
                            "min_slowdown": 1.2}}})";

// Every job light and small: any two may share a GPU.
class LightJobsView final : public SharingView {
 public:
  const sharing::InterferenceModel* Interference(GpuTypeId) const override { return model_.get(); }
  sharing::SharingJob Features(JobId) const override {
    return {sharing::SharingJob::kUnknownType, 0.2, 0.1, 1000};
  }
  int64_t MemoryDemandMib(JobId, double) const override { return 1000; }

 private:
  std::shared_ptr<const sharing::InterferenceModel> model_ = BuiltInInterferenceModel();
};

// A sharing policy over the daemon, with the fake executor: what the policy decides about
// out-of-memory restarts and migrations is carried out live.
class SharingDaemonTest : public OomDaemonTest {
 protected:
  void SetUp() override {
    OomDaemonTest::SetUp();
    profile_json_ = kSlicingProfile;
    sharing_view_ = &view_;
  }
  LightJobsView view_;
};

TEST_F(SharingDaemonTest, AfterAnOutOfMemoryRestartTheJobWaitsForAGpuOfItsOwn) {
  StartDaemon("1x1xV100");
  const JobId a = Submit(1);
  const JobId b = Submit(1);
  ASSERT_EQ(State(a), JobState::kRunning);
  ASSERT_EQ(State(b), JobState::kRunning) << "b shares a's GPU";
  ASSERT_EQ(Record(b).placement, Record(a).placement);
  machine_.TakeLog();

  Log(b, "CUDA out of memory\n");
  Exit(b, 1);
  // The back-off: the policy offers b to the packer again only after min_residence (600 s),
  // while a job that did not run out of memory joins a's GPU at once.
  EXPECT_EQ(State(b), JobState::kQueued) << Record(b).reason;
  EXPECT_EQ(Record(b).oom_restarts, 1);
  EXPECT_EQ(State(a), JobState::kRunning) << "its partner runs on";
  clock_.AdvanceTo(kStart + std::chrono::seconds(300));
  const JobId c = Submit(1);
  EXPECT_EQ(State(c), JobState::kRunning);
  EXPECT_EQ(State(b), JobState::kQueued);
  EXPECT_EQ(machine_.TakeLog(), std::vector<std::string>{"launch 2"});
  // Once the back-off is over, the next cycle (c's end) places it beside a again.
  clock_.AdvanceTo(kStart + std::chrono::seconds(650));
  machine_.Exit(c, 0);
  Step();
  EXPECT_EQ(State(b), JobState::kRunning);
  EXPECT_EQ(Record(b).placement, Record(a).placement);
  EXPECT_EQ(machine_.TakeLog(), std::vector<std::string>{"launch 1"});
}

TEST_F(SharingDaemonTest, AMigrationCheckpointsRelaunchesOnTheFreeGpuAndIsCounted) {
  StartDaemon("1x2xV100");
  const JobId a = Submit(1);
  const JobId x = Submit(1);
  const JobId c = Submit(1);
  ASSERT_EQ(State(c), JobState::kRunning);
  const JobId partner = Record(c).placement == Record(a).placement ? a : x;
  const JobId alone = partner == a ? x : a;
  ASSERT_EQ(Record(c).placement, Record(partner).placement);
  Exit(alone, 0);  // a GPU is free and nothing waits
  machine_.TakeLog();

  // Hysteresis: nothing moves before the 600 s residence; then one of the two sharers does.
  Advance(std::chrono::seconds(60));
  EXPECT_TRUE(machine_.TakeLog().empty());
  clock_.AdvanceTo(kStart + std::chrono::seconds(600));
  Step();
  const std::vector<std::string> stops = machine_.TakeLog();
  ASSERT_EQ(stops.size(), 1u);
  ASSERT_TRUE(stops[0].starts_with("preempt ")) << stops[0];
  const JobId moved = stops[0] == "preempt " + std::to_string(c.value()) ? c : partner;
  EXPECT_EQ(Record(moved).stopping, "preempt");
  const Placement shared = Record(moved).placement;
  Exit(moved, 128 + 15);  // checkpointed on SIGTERM
  EXPECT_EQ(State(moved), JobState::kRunning);
  EXPECT_NE(Record(moved).placement, shared) << "relaunched on the free GPU";
  EXPECT_EQ(Record(moved).migrations, 1);
  EXPECT_EQ(Record(moved).preemptions, 0);
  EXPECT_EQ(daemon_->snapshot()->metrics.migrations, 1u);
}

// The migration count is stored: after a restart the job has used its one migration
// (max_per_job), so the policy's cap holds across it.
TEST_F(SharingDaemonTest, TheMigrationCountSurvivesARestart) {
  sqlite_ = true;
  StartDaemon("1x2xV100");
  const JobId a = Submit(1);
  const JobId x = Submit(1);
  const JobId c = Submit(1);
  ASSERT_EQ(State(c), JobState::kRunning);
  const JobId partner = Record(c).placement == Record(a).placement ? a : x;
  Exit(partner == a ? x : a, 0);
  clock_.AdvanceTo(kStart + std::chrono::seconds(600));
  Step();
  const std::vector<std::string> stops = machine_.TakeLog();
  ASSERT_FALSE(stops.empty());
  const JobId moved = stops.back() == "preempt " + std::to_string(c.value()) ? c : partner;
  Exit(moved, 128 + 15);
  ASSERT_EQ(Record(moved).migrations, 1);

  Restart("1x2xV100");
  Step();
  EXPECT_EQ(State(moved), JobState::kRunning);
  EXPECT_EQ(Record(moved).migrations, 1);
  EXPECT_EQ(Record(moved).preemptions, 0);
  daemon_.reset();
  Result<std::vector<JobRow>> rows = [&]() -> Result<std::vector<JobRow>> {
    DS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        Store::OpenReadOnly((dir_ / "state.db").string()));
    return store->LoadJobs();
  }();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[moved.index()].migrations, 1);
}

}  // namespace
}  // namespace dlsched::daemon
