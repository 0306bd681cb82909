#include "daemon/store/ownership.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;
using test_support::FreshTestDir;
using test_support::ReadTextFile;

class OwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir("dlsched_ownership_test");
    fs::create_directories(dir_ / "work" / "jobs");
    fs::create_directories(dir_ / "other" / "jobs");
    db_ = (dir_ / "state.db").string();
    work_ = (dir_ / "work").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> Open(const std::string& path) {
    auto store = Store::Open(path);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static void AddJob(Store& store) {
    JobRow row;
    row.user = "ann";
    row.spec_json = R"({"command":["true"]})";
    row.state = JobState::kSucceeded;
    ASSERT_TRUE(store.Begin().ok());
    ASSERT_TRUE(store.InsertJob(row).ok());
    ASSERT_TRUE(store.Commit().ok());
  }

  fs::path dir_;
  std::string db_;
  std::string work_;
};

TEST_F(OwnershipTest, ASecondHolderOfTheWorkdirIsRefusedWithTheFirstsPidAndHost) {
  Result<StateLock> first = StateLock::Acquire(work_, db_, AtSeconds(1764579398));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string pid = std::to_string(getpid());
  EXPECT_EQ(first->holder().rfind("pid=" + pid + " host=", 0), 0u) << first->holder();
  EXPECT_NE(first->holder().find(" since=2025-12-01T08:56:38Z"), std::string::npos);
  EXPECT_EQ(ReadTextFile(dir_ / "work" / "dlsched.lock"), first->holder() + "\n");

  // Another database, the same workdir.
  Result<StateLock> second =
      StateLock::Acquire(work_, (dir_ / "other.db").string(), AtSeconds(1764579400));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("workdir " + work_ + " is in use"), std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find("pid " + pid + " on host "), std::string::npos);
  EXPECT_NE(second.status().message().find("since 2025-12-01T08:56:38Z"), std::string::npos);
  // The refused one did not overwrite the holder's line.
  EXPECT_EQ(ReadTextFile(dir_ / "work" / "dlsched.lock"), first->holder() + "\n");
}

TEST_F(OwnershipTest, ASecondHolderOfTheDatabaseIsRefusedWithTheOwnerTheDatabaseNames) {
  Result<StateLock> first = StateLock::Acquire(work_, db_, AtSeconds(1764579398));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Before the holder has named itself in the database.
  Result<StateLock> early =
      StateLock::Acquire((dir_ / "other").string(), db_, AtSeconds(1764579399));
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("database " + db_ + " is in use"), std::string::npos)
      << early.status().message();
  {
    std::unique_ptr<Store> store = Open(db_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->SetMeta(kOwnerKey, first->holder()).ok());
    ASSERT_TRUE(store->Commit().ok());
  }
  // Another workdir, the same database (through another path to the same file).
  const std::string same_file = (dir_ / "work" / ".." / "state.db").string();
  Result<StateLock> second =
      StateLock::Acquire((dir_ / "other").string(), same_file, AtSeconds(1764579400));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(getpid()) + " on host "),
            std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find("run every job twice"), std::string::npos);

  // Released with the value: the next one gets both.
  *first = StateLock();
  EXPECT_TRUE(StateLock::Acquire(work_, db_, AtSeconds(1764579401)).ok());
}

TEST_F(OwnershipTest, ANewPairIsBoundAndThenRecognised) {
  std::unique_ptr<Store> store = Open(db_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(BindWorkdir(*store, db_, work_).ok());
  Result<std::optional<std::string>> id = store->GetMeta(kStoreIdKey);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(id->has_value());
  EXPECT_EQ(id->value().size(), 32u);
  EXPECT_EQ(ReadTextFile(dir_ / "work" / kStoreIdFile), **id + "\n");
  fs::create_directories(dir_ / "work" / "jobs" / "0");
  EXPECT_TRUE(BindWorkdir(*store, db_, work_).ok());
  EXPECT_EQ(store->GetMeta(kStoreIdKey)->value(), **id);
}

TEST_F(OwnershipTest, AWorkdirWhoseDatabaseIsLostIsRefused) {
  {
    std::unique_ptr<Store> store = Open(db_);
    ASSERT_TRUE(BindWorkdir(*store, db_, work_).ok());
    AddJob(*store);
  }
  fs::create_directories(dir_ / "work" / "jobs" / "0");
  fs::remove(db_);
  std::unique_ptr<Store> fresh = Open(db_);
  const Status bound = BindWorkdir(*fresh, db_, work_);
  EXPECT_EQ(bound.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bound.message().find("is new: the database this workdir was used with is lost or "
                                 "replaced"),
            std::string::npos)
      << bound.message();
  EXPECT_NE(bound.message().find("give a new --workdir"), std::string::npos);
  // Nothing was recorded: the refusal stands at the next try.
  EXPECT_FALSE(fresh->GetMeta(kStoreIdKey)->has_value());
  EXPECT_FALSE(BindWorkdir(*fresh, db_, work_).ok());
}

TEST_F(OwnershipTest, AWorkdirOfAnotherDatabaseIsRefused) {
  std::unique_ptr<Store> mine = Open(db_);
  ASSERT_TRUE(BindWorkdir(*mine, db_, work_).ok());
  const std::string other_db = (dir_ / "other.db").string();
  std::unique_ptr<Store> other = Open(other_db);
  ASSERT_TRUE(BindWorkdir(*other, other_db, (dir_ / "other").string()).ok());
  const Status bound = BindWorkdir(*other, other_db, work_);
  EXPECT_EQ(bound.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bound.message().find("belongs to another database"), std::string::npos)
      << bound.message();
}

TEST_F(OwnershipTest, JobDirectoriesWithoutAStoreIdNeedTheirDatabase) {
  fs::create_directories(dir_ / "work" / "jobs" / "0");
  {
    // A new database: the job directories are some lost database's.
    std::unique_ptr<Store> fresh = Open(db_);
    const Status bound = BindWorkdir(*fresh, db_, work_);
    EXPECT_EQ(bound.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(bound.message().find("has job directories"), std::string::npos) << bound.message();
    // Nor does a database that has its own id take them.
    ASSERT_TRUE(BindWorkdir(*fresh, db_, (dir_ / "other").string()).ok());
    const Status taken = BindWorkdir(*fresh, db_, work_);
    EXPECT_EQ(taken.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(taken.message().find("not this database's jobs"), std::string::npos)
        << taken.message();
  }
  // A pair from before store ids (the database has jobs, neither has an id): bound as it is.
  const std::string old_db = (dir_ / "old.db").string();
  std::unique_ptr<Store> old = Open(old_db);
  AddJob(*old);
  ASSERT_TRUE(BindWorkdir(*old, old_db, work_).ok());
  EXPECT_EQ(ReadTextFile(dir_ / "work" / kStoreIdFile), old->GetMeta(kStoreIdKey)->value() + "\n");
}

TEST_F(OwnershipTest, AnExistingJobDirectoryIsMovedAsideUnread) {
  const fs::path job = dir_ / "work" / "jobs" / "3";
  Result<std::string> nothing = SetAsideJobDir(work_, job.string(), AtSeconds(5));
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ(*nothing, "");
  // A plain file holds no job's files: it stays (the launch fails on it).
  std::ofstream(job.string()) << "";
  EXPECT_EQ(*SetAsideJobDir(work_, job.string(), AtSeconds(5)), "");
  fs::remove(job);
  // A link to another job's directory is moved, not followed.
  fs::create_directory_symlink(dir_ / "other", job);
  Result<std::string> link = SetAsideJobDir(work_, job.string(), AtSeconds(4));
  ASSERT_TRUE(link.ok());
  EXPECT_TRUE(fs::is_symlink(*link));
  EXPECT_TRUE(fs::exists(dir_ / "other" / "jobs"));

  fs::create_directories(job);
  std::ofstream(job / "stdout.log") << "an old job's output\n";
  Result<std::string> moved = SetAsideJobDir(work_, job.string(), AtSeconds(5));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(*moved, work_ + "/orphaned/3-5000000");
  EXPECT_FALSE(fs::exists(job));
  EXPECT_EQ(ReadTextFile(fs::path(*moved) / "stdout.log"), "an old job's output\n");
  EXPECT_EQ(fs::status(work_ + "/orphaned").permissions() & fs::perms::all, fs::perms::owner_all);
}

}  // namespace
}  // namespace dlsched::daemon
