#pragma once

// The daemon's logic, deterministically: a fake executor (the test ends each job's run), an
// in-memory store (the SQLite Store where a test says so) and a VirtualClock; the test runs each
// iteration itself (Daemon::RunOnce) instead of the scheduler thread. The real processes and
// the real thread are the integration tests' (test/integration).

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/daemon.h"
#include "io/profile.h"
#include "support/builders.h"
#include "support/daemon/fake_executor.h"
#include "support/daemon/memory_store.h"

namespace dlsched::daemon {

// Priority order with preemption at once (the shipped profile protects victims for 5 minutes).
inline constexpr const char* kPreemptingProfile =
    R"({"name": "priority-now", "admit": ["feasibility"],
    "queue_sort": "priority", "score": ["consolidate"],
    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";

// 2026-12-01T00:00:00Z: the virtual clock's start.
inline constexpr Timestamp kStart{std::chrono::seconds(1796083200)};

// A daemon on a FakeMachine, a MemoryStore (or the SQLite Store) and a VirtualClock, whose
// iterations the test runs (Daemon::RunOnce): the fixture of daemon_test.cc and replay_test.cc.
class DaemonFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlsched_daemon_fixture_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    clock_.AdvanceTo(kStart);
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A daemon on the fake machine and store (kept across restarts), not started: the test runs
  // its iterations.
  void StartDaemon(const std::string& gpus = "1x2xV100",
                   std::shared_ptr<const PerfPredictor> predictor = nullptr) {
    DaemonOptions options;
    options.db_path = (dir_ / "state.db").string();
    options.workdir = (dir_ / "work").string();
    Result<PolicyProfile> profile = profile_json_.empty()
                                        ? LoadPolicyProfile("fifo-backfill")
                                        : ParsePolicyProfile(profile_json_, "test");
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    options.profile = *profile;
    options.predictor = std::move(predictor);
    options.launch_retry = launch_retry_;
    options.seed = seed_;
    options.executor_factory = [this](JobExecutor::Sink sink, JobExecutor::NodeSink) {
      return Result<std::unique_ptr<JobExecutor>>(machine_.NewExecutor(std::move(sink)));
    };
    if (!sqlite_) {
      options.store_factory = [tables = tables_] {
        return Result<std::unique_ptr<StateStore>>(std::make_unique<testing::MemoryStore>(tables));
      };
    }
    options.free_bytes = [this](const std::string&) { return free_bytes_; };
    options.sharing_view = sharing_view_;
    auto daemon = Daemon::Create(testing::MakeCluster(gpus), options, clock_);
    ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
    daemon_ = std::move(daemon).value();
  }
  // The daemon goes down (its jobs run on, on the fake machine) and a new one starts.
  void Restart(const std::string& gpus = "1x2xV100") {
    daemon_.reset();
    StartDaemon(gpus);
  }

  // One iteration at the clock's now.
  void Step() { ASSERT_TRUE(daemon_->RunOnce()); }
  // Moves the clock on by `d`, then one iteration.
  void Advance(Duration d) {
    clock_.AdvanceTo(clock_.Now() + d);
    Step();
  }
  // Runs the iteration that answers `reply`, and returns the answer.
  template <typename T>
  T Await(std::future<T> reply) {
    EXPECT_EQ(reply.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "answered early";
    daemon_->RunOnce();
    EXPECT_EQ(reply.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "not answered";
    return reply.get();
  }

  JobId Submit(const std::string& fields) {
    Result<JobRequest> request = ParseJobRequest("{" + fields + "}", "ann");
    EXPECT_TRUE(request.ok()) << request.status().ToString();
    if (!request.ok()) return JobId();
    SubmitResult result = Await(daemon_->Submit(*request));
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? (*result)->id : JobId();
  }
  JobId Submit(int gpus) { return Submit(R"("script": "train", "gpus": )" + std::to_string(gpus)); }

  // The job as the latest snapshot has it.
  const JobRecord& Record(JobId id) {
    snapshot_ = daemon_->snapshot();
    const JobRecord* job = snapshot_->jobs.Find(id);
    EXPECT_NE(job, nullptr) << "no job " << id;
    static const JobRecord kNone;
    return job ? *job : kNone;
  }
  JobState State(JobId id) { return Record(id).state; }

  // The committed event log from the first submission on: "kind job detail" (memory store).
  std::vector<std::string> EventsFromFirstSubmit() const {
    std::vector<std::string> logged;
    bool submitted = false;
    for (const EventRow& e : tables_->events) {
      submitted = submitted || e.kind == "submit";
      if (submitted) logged.push_back(e.kind + " " + std::to_string(e.job) + " " + e.detail);
    }
    return logged;
  }
  // The times of the committed events of `kind` about `job` (memory store).
  std::vector<Timestamp> EventTimes(std::string_view kind, JobId job) const {
    std::vector<Timestamp> times;
    for (const EventRow& e : tables_->events) {
      if (e.kind == kind && e.job == static_cast<int64_t>(job.value())) times.push_back(e.time);
    }
    return times;
  }

  VirtualClock clock_;
  testing::FakeMachine machine_;
  std::shared_ptr<testing::MemoryStore::Tables> tables_ =
      std::make_shared<testing::MemoryStore::Tables>();
  bool sqlite_ = false;       // the SQLite Store at dir_/state.db instead of tables_
  std::string profile_json_;  // "": fifo-backfill
  uint64_t seed_ = 1;
  LaunchRetry launch_retry_{std::chrono::milliseconds(20), std::chrono::milliseconds(100), 3};
  std::optional<int64_t> free_bytes_ = int64_t{1} << 40;
  const SharingView* sharing_view_ = nullptr;  // DaemonOptions::sharing_view
  std::filesystem::path dir_;
  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<const Snapshot> snapshot_;
};

}  // namespace dlsched::daemon
