// The store's GPU samples (store.h: gpu_samples), apart from store_test.cc.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <functional>

#include "daemon/store/store.h"
#include "support/daemon/memory_store.h"
#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

class StoreGpuSamplesTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::FreshTestDir("dlsched_store_gpu"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "state.db").string(); }

  std::filesystem::path dir_;
};

// Writes samples through one store, and checks what a second one opened on the same contents
// reads back: the SQLite Store and the daemon tests' MemoryStore keep the same contract.
void WriteAndReadBack(const std::function<std::unique_ptr<StateStore>()>& open) {
  {
    std::unique_ptr<StateStore> store = open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Begin().ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(store->AppendGpuSample({0, AtSeconds(10 + i), 100 * (i + 1), 0.1 * i}).ok());
    }
    ASSERT_TRUE(store->AppendGpuSample({3, AtSeconds(12), 7000, 0.9}).ok());
    ASSERT_TRUE(store->Commit().ok());
    ASSERT_TRUE(store->Begin().ok());
    ASSERT_TRUE(store->AppendGpuSample({3, AtSeconds(13), 8000, 0.9}).ok());
    store->Rollback();
  }
  std::unique_ptr<StateStore> store = open();
  ASSERT_NE(store, nullptr);
  Result<std::vector<GpuSampleRow>> newest = store->LoadGpuSamples(2);
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  const std::vector<GpuSampleRow> want = {{0, AtSeconds(13), 400, 0.1 * 3},
                                          {0, AtSeconds(14), 500, 0.1 * 4},
                                          {3, AtSeconds(12), 7000, 0.9}};
  EXPECT_EQ(*newest, want);
  Result<std::vector<GpuSampleTotals>> totals = store->LoadGpuSampleTotals();
  ASSERT_TRUE(totals.ok()) << totals.status().ToString();
  const std::vector<GpuSampleTotals> want_totals = {{0, 5, 500}, {3, 1, 7000}};
  EXPECT_EQ(*totals, want_totals);
}

TEST_F(StoreGpuSamplesTest, SamplesSurviveReopeningNewestPerJobAndTotals) {
  WriteAndReadBack([&]() -> std::unique_ptr<StateStore> {
    Result<std::unique_ptr<Store>> store = Store::Open(path());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  });
}

TEST_F(StoreGpuSamplesTest, TheMemoryStoreKeepsTheSameContract) {
  auto tables = std::make_shared<testing::MemoryStore::Tables>();
  WriteAndReadBack([&] { return std::make_unique<testing::MemoryStore>(tables); });
}

TEST_F(StoreGpuSamplesTest, ADatabaseWithoutTheTableGetsIt) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(path());
    ASSERT_TRUE(store.ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE gpu_samples", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<Store>> store = Store::Open(path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<std::vector<GpuSampleTotals>> totals = (*store)->LoadGpuSampleTotals();
  ASSERT_TRUE(totals.ok()) << totals.status().ToString();
  EXPECT_TRUE(totals->empty());
}

}  // namespace
}  // namespace dlsched::daemon
