#pragma once

// The daemon's store in memory (daemon/store/store.h's StateStore), for the daemon's unit tests:
// the SQLite Store's behaviour (rows by id, the event log's seq numbers, transactions that commit
// or roll back whole, reads that see the open transaction's writes) without a file.
//
// The committed contents (MemoryStore::Tables) belong to the test and outlive the stores opened
// on them, as a database file outlives its daemon: a test restarts a daemon on the same tables,
// reads what was committed, tampers with it, or makes the store fail.
//
// Stricter than SQLite where the daemon's contract is: a write outside Begin()/Commit() fails
// (SQLite would autocommit it), and a nested Begin is a bug (DS_CHECK, as in Store).
//
// Not thread-safe (the daemon's scheduler thread, or the test driving it, is its only user).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/store.h"

namespace dlsched::testing {

class MemoryStore final : public daemon::StateStore {
 public:
  struct Tables {
    std::map<int64_t, daemon::JobRow> jobs;
    std::vector<daemon::EventRow> events;  // by seq
    std::map<std::string, std::string, std::less<>> meta;
    std::vector<daemon::GpuSampleRow> gpu_samples;  // in insertion order
    // Commits so far, and how many of them were begun with durable false.
    int64_t commits = 0;
    int64_t lazy_commits = 0;
    // Set: every Begin, write and Commit fails with it (a disk that went away).
    std::optional<Status> failure;
  };

  explicit MemoryStore(std::shared_ptr<Tables> tables) : committed_(std::move(tables)) {}
  // Rolls back an open transaction.
  ~MemoryStore() override;

  Status Begin(bool durable = true) override;
  Status Commit() override;
  void Rollback() override;
  Status InsertJob(const daemon::JobRow& row) override;
  Status UpdateJob(const daemon::JobRow& row) override;
  Status AppendEvent(Timestamp time, int64_t job, std::string_view kind,
                     std::string_view detail) override;
  Result<std::vector<daemon::JobRow>> LoadJobs() override;
  Result<std::vector<daemon::EventRow>> LoadEvents(int64_t after_seq, int64_t limit) override;
  Result<int64_t> CountJobs() override;
  Result<std::optional<std::string>> GetMeta(std::string_view key) override;
  Status SetMeta(std::string_view key, std::string_view value) override;
  Status AppendGpuSample(const daemon::GpuSampleRow& row) override;
  Result<std::vector<daemon::GpuSampleRow>> LoadGpuSamples(int64_t per_job) override;
  Result<std::vector<daemon::GpuSampleTotals>> LoadGpuSampleTotals() override;

 private:
  // The tables reads see: the open transaction's, else the committed ones.
  const Tables& current() const { return open_ ? *open_ : *committed_; }
  // OK when a write may go ahead: a transaction is open and no failure is set.
  Status CheckWrite() const;

  std::shared_ptr<Tables> committed_;
  std::optional<Tables> open_;  // the open transaction's tables
  bool lazy_ = false;
};

}  // namespace dlsched::testing
