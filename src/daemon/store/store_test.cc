#include "daemon/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

namespace dlsched::daemon {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlsched_store_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "state.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> Open() {
    auto store = Store::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static JobRow Row(int64_t id) {
    JobRow row;
    row.id = id;
    row.user = "ann";
    row.spec_json = R"({"command":["true"]})";
    row.state = JobState::kQueued;
    row.submit_time = AtSeconds(1000 + id);
    row.queued_since = AtSeconds(1000 + id);
    return row;
  }

  // Writes a database of one job, Row(0), then drops `columns` from its jobs table, as a
  // dlsched older than those columns left it.
  void WriteDatabaseWithout(std::initializer_list<const char*> columns) {
    {
      auto store = Open();
      ASSERT_NE(store, nullptr);
      ASSERT_TRUE(store->Begin().ok());
      ASSERT_TRUE(store->InsertJob(Row(0)).ok());
      ASSERT_TRUE(store->Commit().ok());
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    for (const char* column : columns) {
      EXPECT_EQ(sqlite3_exec(db, (std::string("ALTER TABLE jobs DROP COLUMN ") + column).c_str(),
                             nullptr, nullptr, nullptr),
                SQLITE_OK)
          << column;
    }
    sqlite3_close(db);
  }
  // Expects the old database to read, read-only, as Row(0) (the dropped columns at their
  // defaults), and, opened for writing, to take `updated` (Row(0) changed in the dropped
  // columns) and give it back.
  void ExpectTheOldDatabaseReadsAndKeeps(const JobRow& updated) {
    {
      auto reader = Store::OpenReadOnly(path_);
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      Result<std::vector<JobRow>> rows = (*reader)->LoadJobs();
      ASSERT_TRUE(rows.ok()) << rows.status().ToString();
      ASSERT_EQ(rows->size(), 1u);
      EXPECT_EQ((*rows)[0], Row(0));
    }
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->UpdateJob(updated).ok());
    ASSERT_TRUE(store->Commit().ok());
    Result<std::vector<JobRow>> rows = store->LoadJobs();
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0], updated);
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(StoreTest, RowsSurviveReopeningWithEveryField) {
  JobRow full = Row(0);
  full.state = JobState::kRunning;
  full.segment_start = AtSeconds(1500);
  full.first_start = AtSeconds(1400);
  full.run_time = Seconds(12.5);
  full.attained_gpu_time = Seconds(25);
  full.iterations_done = 7.5;
  full.preemptions = 2;
  full.placement = "n0000:0,1";
  full.reason = "why";
  full.pid = 4242;
  full.pid_start = 99;
  full.exit_code = 3;
  full.share = ShareMode::kPacked;
  full.migrations = 2;
  full.oom_restarts = 3;
  full.oom_in_a_row = 1;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->InsertJob(full).ok());
    ASSERT_TRUE(store->InsertJob(Row(1)).ok());
    ASSERT_TRUE(store->AppendEvent(AtSeconds(1), 0, "submit", "{}").ok());
    ASSERT_TRUE(store->Commit().ok());
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Result<std::vector<JobRow>> rows = store->LoadJobs();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0], full);
  EXPECT_EQ((*rows)[1], Row(1));
  EXPECT_EQ((*rows)[1].finish_time, kTimeNever);
  Result<std::vector<EventRow>> events = store->LoadEvents(0, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "submit");
  EXPECT_EQ((*events)[0].job, 0);
}

// A database of a dlsched older than the share column: read-only, its jobs read as exclusive;
// opened for writing, it gets the column, and share modes are kept from then on.
TEST_F(StoreTest, ADatabaseWithoutTheShareColumnGetsIt) {
  WriteDatabaseWithout({"share"});
  JobRow shared = Row(0);
  shared.state = JobState::kRunning;
  shared.placement = "n0000:1";
  shared.share = ShareMode::kTimeSliced;
  ExpectTheOldDatabaseReadsAndKeeps(shared);
}

// A database older than the count columns (migrations, oom_restarts, oom_in_a_row): read-only,
// its jobs read with counts of 0; opened for writing, it gets the columns and keeps the counts.
TEST_F(StoreTest, ADatabaseWithoutTheCountColumnsGetsThem) {
  WriteDatabaseWithout({"migrations", "oom_restarts", "oom_in_a_row"});
  JobRow counted = Row(0);
  counted.migrations = 1;
  counted.oom_restarts = 4;
  counted.oom_in_a_row = 4;
  ExpectTheOldDatabaseReadsAndKeeps(counted);
}

// A row with a column nobody can read (here a state no build writes) loads with load_error set,
// and the rows after it load as ever: one bad row must not keep the daemon from starting.
TEST_F(StoreTest, AnUnreadableRowLoadsWithItsError) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->InsertJob(Row(0)).ok());
    ASSERT_TRUE(store->InsertJob(Row(1)).ok());
    ASSERT_TRUE(store->Commit().ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "UPDATE jobs SET state = 'exploded' WHERE id = 0", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Result<std::vector<JobRow>> rows = store->LoadJobs();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].state, JobState::kFailed);
  EXPECT_NE((*rows)[0].load_error.find("exploded"), std::string::npos) << (*rows)[0].load_error;
  EXPECT_EQ((*rows)[0].spec_json, Row(0).spec_json);
  EXPECT_EQ((*rows)[1], Row(1));
}

TEST_F(StoreTest, UpdateRewritesMutableColumnsOnly) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  JobRow changed = Row(0);
  changed.user = "mallory";  // immutable: ignored
  changed.state = JobState::kSucceeded;
  changed.finish_time = AtSeconds(2000);
  changed.exit_code = 0;
  ASSERT_TRUE(store->UpdateJob(changed).ok());
  EXPECT_EQ(store->UpdateJob(Row(5)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Commit().ok());
  auto rows = store->LoadJobs();
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].user, "ann");
  EXPECT_EQ((*rows)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*rows)[0].finish_time, AtSeconds(2000));
  EXPECT_EQ((*rows)[0].exit_code, 0);
}

TEST_F(StoreTest, RollbackLeavesNothingAndDuplicatesAreRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  store->Rollback();
  EXPECT_EQ(*store->CountJobs(), 0);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  EXPECT_EQ(store->InsertJob(Row(0)).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(*store->CountJobs(), 1);
}

TEST_F(StoreTest, UsesWriteAheadLogging) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_TRUE(std::filesystem::exists(path_ + "-wal"));
}

TEST_F(StoreTest, OpenFailsOnAMissingDirectory) {
  auto store = Store::Open((dir_ / "no" / "such" / "dir.db").string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kIoError);
}

TEST_F(StoreTest, ATransactionWithoutFsyncCommitsLikeAnyOther) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin(/*durable=*/false).ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  ASSERT_TRUE(store->Commit().ok());
  ASSERT_TRUE(store->Begin(/*durable=*/false).ok());
  ASSERT_TRUE(store->InsertJob(Row(1)).ok());
  store->Rollback();
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(2)).ok());
  ASSERT_TRUE(store->Commit().ok());
  auto reader = Store::OpenReadOnly(path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(*(*reader)->CountJobs(), 2);
}

TEST_F(StoreTest, AReadOnlyStoreReadsWhatTheWriterCommitted) {
  EXPECT_EQ(Store::OpenReadOnly(path_).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));  // and created nothing
  auto writer = Open();
  ASSERT_NE(writer, nullptr);
  auto reader = Store::OpenReadOnly(path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(*(*reader)->LastEventSeq(), 0);
  ASSERT_TRUE(writer->Begin().ok());
  ASSERT_TRUE(writer->InsertJob(Row(0)).ok());
  ASSERT_TRUE(writer->AppendEvent(AtSeconds(1), 0, "submit", "").ok());
  ASSERT_TRUE(writer->AppendEvent(AtSeconds(1), -1, "cycle", "").ok());
  ASSERT_TRUE(writer->Commit().ok());
  EXPECT_EQ(*(*reader)->LastEventSeq(), 2);
  EXPECT_EQ((*reader)->LoadJobs()->size(), 1u);
  EXPECT_EQ((*reader)->AppendEvent(AtSeconds(2), -1, "cycle", "").code(), StatusCode::kIoError);
  EXPECT_EQ((*reader)->InsertJob(Row(9)).code(), StatusCode::kIoError);
  // The writer goes on undisturbed.
  ASSERT_TRUE(writer->Begin().ok());
  ASSERT_TRUE(writer->InsertJob(Row(1)).ok());
  ASSERT_TRUE(writer->Commit().ok());
  EXPECT_EQ(*(*reader)->CountJobs(), 2);
}

TEST_F(StoreTest, MetaRowsAreSetReplacedAndReadBack) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_FALSE(store->GetMeta("owner")->has_value());
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->SetMeta("owner", "pid=1 host=a since=x").ok());
    ASSERT_TRUE(store->SetMeta("owner", "pid=2 host=b since=y").ok());
    ASSERT_TRUE(store->Commit().ok());
  }
  auto reader = Store::OpenReadOnly(path_);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->GetMeta("owner")->value(), "pid=2 host=b since=y");
  EXPECT_EQ((*reader)->GetMeta("schema_version")->value(), "1");
  EXPECT_FALSE((*reader)->SetMeta("owner", "z").ok());
}

}  // namespace
}  // namespace dlsched::daemon
