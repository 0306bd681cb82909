// The StateStore contract, checked on both implementations: the SQLite Store the daemon runs on,
// and the in-memory store its unit tests run on (test/support/daemon/memory_store.h), so that a
// daemon test on the fake means the same as one on SQLite.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "daemon/store/store.h"
#include "support/daemon/memory_store.h"

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

// Opens stores of one implementation on one database, across "restarts".
class SqliteStores {
 public:
  SqliteStores()
      : dir_(fs::temp_directory_path() /
             ("dlsched_state_store_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~SqliteStores() { fs::remove_all(dir_); }
  std::unique_ptr<StateStore> Open() {
    Result<std::unique_ptr<Store>> store = Store::Open((dir_ / "state.db").string());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

 private:
  fs::path dir_;
};

class MemoryStores {
 public:
  std::unique_ptr<StateStore> Open() { return std::make_unique<testing::MemoryStore>(tables_); }

 private:
  std::shared_ptr<testing::MemoryStore::Tables> tables_ =
      std::make_shared<testing::MemoryStore::Tables>();
};

JobRow Row(int64_t id) {
  JobRow row;
  row.id = id;
  row.user = "ann";
  row.spec_json = R"({"command":["true"]})";
  row.state = JobState::kQueued;
  row.submit_time = AtSeconds(1000 + id);
  row.queued_since = AtSeconds(1000 + id);
  return row;
}

template <typename Stores>
class StateStoreTest : public ::testing::Test {
 protected:
  Stores stores_;
};
using Implementations = ::testing::Types<SqliteStores, MemoryStores>;
TYPED_TEST_SUITE(StateStoreTest, Implementations);

TYPED_TEST(StateStoreTest, CommittedRowsComeBackWhole) {
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
  {
    std::unique_ptr<StateStore> store = this->stores_.Open();
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->InsertJob(Row(1)).ok());
    ASSERT_TRUE(store->InsertJob(full).ok());
    EXPECT_EQ(store->InsertJob(Row(1)).code(), StatusCode::kAlreadyExists);
    ASSERT_TRUE(store->Commit().ok());
  }
  std::unique_ptr<StateStore> store = this->stores_.Open();
  Result<std::vector<JobRow>> rows = store->LoadJobs();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, (std::vector<JobRow>{full, Row(1)}));  // by id
  EXPECT_EQ((*rows)[1].finish_time, kTimeNever);
  EXPECT_EQ((*rows)[1].exit_code, std::nullopt);
  EXPECT_EQ(*store->CountJobs(), 2);
}

TYPED_TEST(StateStoreTest, AnUpdateRewritesOnlyTheMutableColumns) {
  std::unique_ptr<StateStore> store = this->stores_.Open();
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  JobRow changed = Row(0);
  changed.user = "bob";
  changed.spec_json = "{}";
  changed.submit_time = AtSeconds(1);
  changed.state = JobState::kSucceeded;
  changed.finish_time = AtSeconds(2000);
  changed.exit_code = 0;
  ASSERT_TRUE(store->UpdateJob(changed).ok());
  EXPECT_EQ(store->UpdateJob(Row(7)).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->Commit().ok());
  JobRow want = changed;
  want.user = "ann";
  want.spec_json = Row(0).spec_json;
  want.submit_time = Row(0).submit_time;
  EXPECT_EQ(*store->LoadJobs(), std::vector<JobRow>{want});
}

TYPED_TEST(StateStoreTest, ARollbackDiscardsTheTransactionWhichItsOwnReadsSaw) {
  std::unique_ptr<StateStore> store = this->stores_.Open();
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  ASSERT_TRUE(store->AppendEvent(AtSeconds(1), 0, "submit", "").ok());
  ASSERT_TRUE(store->SetMeta("owner", "pid=1").ok());
  EXPECT_EQ(*store->CountJobs(), 1);
  EXPECT_EQ(store->LoadEvents(0, 10)->size(), 1u);
  EXPECT_EQ(*store->GetMeta("owner"), "pid=1");
  store->Rollback();
  EXPECT_EQ(*store->CountJobs(), 0);
  EXPECT_TRUE(store->LoadEvents(0, 10)->empty());
  EXPECT_EQ(*store->GetMeta("owner"), std::nullopt);
  // Begun without durability, a transaction commits all the same.
  ASSERT_TRUE(store->Begin(/*durable=*/false).ok());
  ASSERT_TRUE(store->InsertJob(Row(0)).ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(*this->stores_.Open()->CountJobs(), 1);
}

TYPED_TEST(StateStoreTest, EventsAreNumberedInOrderAndReadInPages) {
  std::unique_ptr<StateStore> store = this->stores_.Open();
  ASSERT_TRUE(store->Begin().ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store->AppendEvent(AtSeconds(i), i - 1, "e" + std::to_string(i), "d").ok());
  }
  ASSERT_TRUE(store->Commit().ok());
  Result<std::vector<EventRow>> page = store->LoadEvents(2, 2);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].seq, 3);
  EXPECT_EQ((*page)[0].time, AtSeconds(2));
  EXPECT_EQ((*page)[0].job, 1);
  EXPECT_EQ((*page)[0].kind, "e2");
  EXPECT_EQ((*page)[0].detail, "d");
  EXPECT_EQ((*page)[1].seq, 4);
  EXPECT_EQ(store->LoadEvents(4, 10)->size(), 1u);
  EXPECT_TRUE(store->LoadEvents(5, 10)->empty());
}

TYPED_TEST(StateStoreTest, MetaRowsAreReplaced) {
  std::unique_ptr<StateStore> store = this->stores_.Open();
  EXPECT_EQ(*store->GetMeta("store_id"), std::nullopt);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->SetMeta("store_id", "a").ok());
  ASSERT_TRUE(store->SetMeta("store_id", "b").ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(*this->stores_.Open()->GetMeta("store_id"), "b");
}

// Only the fake: what SQLite would let pass and the daemon must not do, and a failing disk.
TEST(MemoryStoreTest, RefusesWritesOutsideATransactionAndFailsWhenToldTo) {
  auto tables = std::make_shared<testing::MemoryStore::Tables>();
  testing::MemoryStore store(tables);
  EXPECT_EQ(store.InsertJob(Row(0)).code(), StatusCode::kInternal);
  tables->failure = IoError("disk I/O error");
  EXPECT_EQ(store.Begin().code(), StatusCode::kIoError);
  tables->failure.reset();
  ASSERT_TRUE(store.Begin().ok());
  ASSERT_TRUE(store.InsertJob(Row(0)).ok());
  tables->failure = IoError("disk I/O error");
  EXPECT_EQ(store.Commit().code(), StatusCode::kIoError);  // and rolled back
  tables->failure.reset();
  EXPECT_TRUE(tables->jobs.empty());
  EXPECT_EQ(tables->commits, 0);
}

}  // namespace
}  // namespace dlsched::daemon
