#pragma once

// The daemon's durable state in SQLite (WAL journal): one row per job and an append-only event
// log. Single writer: only the scheduler thread uses a Store, so it is not
// thread-safe. Every write happens inside Begin()/Commit(); a job is acknowledged to its
// submitter only after the transaction holding its row has committed.
//
// Schema (version 1):
//   meta(key TEXT PRIMARY KEY, value TEXT)             schema_version; store_id and owner
//                                                      (ownership.h)
//   jobs(id INTEGER PRIMARY KEY, ...)                  see JobRow; ids are the scheduler's
//                                                      dense JobIds, so they are 0..n-1
//   events(seq INTEGER PRIMARY KEY, time_us, job, kind, detail)
//   gpu_samples(job, time_us, memory_mib, utilization)  the GPU monitor's samples per job
//                                                      (GpuSampleRow); made when missing
// Times are microseconds since the Unix epoch; "never" is NULL.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/job.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dlsched::daemon {

// A job as stored: its lifecycle (the base, a column each) and the columns below.
// `spec_json` is the canonical request (JobRequestToJson), kept as text: the store does not
// parse requests (a stored spec that no longer parses fails only its own job, at Restore).
struct JobRow : JobLifecycle {
  int64_t id = 0;
  std::string user;
  std::string spec_json;
  Timestamp submit_time;
  std::string placement;  // "n0000:0,1;n0001:2" (node name: GPU indices); empty = none
  int64_t pid = 0;        // the job's process (group leader) while running; 0 = none
  int64_t pid_start = 0;  // its start time in clock ticks since boot (/proc/PID/stat field 22)
  std::optional<int> exit_code;
  // How a running job holds its GPU (a sharing policy's packed or time-sliced mode); kExclusive
  // otherwise.
  ShareMode share = ShareMode::kExclusive;
  int migrations = 0;  // Job::migrations
  // The OOM watchdog's counts (JobRecord::oom_restarts, oom_in_a_row).
  int oom_restarts = 0;
  int oom_in_a_row = 0;
  // Set by LoadJobs for a row it could not read whole (an unknown state); such a row is
  // otherwise as read, its state kFailed. Never stored.
  std::string load_error;

  friend bool operator==(const JobRow&, const JobRow&) = default;
};

struct EventRow {
  int64_t seq = 0;
  Timestamp time;
  int64_t job = -1;  // -1: not about one job
  std::string kind;
  std::string detail;
};

// What the GPU monitor observed of one job at one instant (daemon/core/gpu_usage.h).
struct GpuSampleRow {
  int64_t job = 0;
  Timestamp time;
  int64_t memory_mib = 0;  // the most its processes held on one of its GPUs
  double utilization = 0;  // its GPUs' utilisation, 0..1
  friend bool operator==(const GpuSampleRow&, const GpuSampleRow&) = default;
};

// Per job, over all its stored GPU samples.
struct GpuSampleTotals {
  int64_t job = 0;
  int64_t samples = 0;
  int64_t peak_memory_mib = 0;
  friend bool operator==(const GpuSampleTotals&, const GpuSampleTotals&) = default;
};

// How far a commit goes before it returns.
enum class Durability {
  // fsync at every commit (SQLite synchronous=FULL): a commit survives power loss.
  kFull,
  // No fsync at commit (synchronous=NORMAL with WAL): a commit survives a crash or kill -9 of
  // the daemon, but the last commits may be lost if the machine itself goes down.
  kProcessCrash,
};

// What the daemon needs of its durable state (the methods of Store below, which document them):
// the SQLite Store in the product; tests give the daemon an in-memory one
// (test/support/daemon/memory_store.h, DaemonOptions::store_factory). Not thread-safe.
class StateStore {
 public:
  virtual ~StateStore() = default;
  virtual Status Begin(bool durable = true) = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;
  virtual Status InsertJob(const JobRow& row) = 0;
  virtual Status UpdateJob(const JobRow& row) = 0;
  virtual Status AppendEvent(Timestamp time, int64_t job, std::string_view kind,
                             std::string_view detail) = 0;
  virtual Result<std::vector<JobRow>> LoadJobs() = 0;
  virtual Result<std::vector<EventRow>> LoadEvents(int64_t after_seq, int64_t limit) = 0;
  virtual Result<int64_t> CountJobs() = 0;
  virtual Result<std::optional<std::string>> GetMeta(std::string_view key) = 0;
  virtual Status SetMeta(std::string_view key, std::string_view value) = 0;
  virtual Status AppendGpuSample(const GpuSampleRow& row) = 0;
  virtual Result<std::vector<GpuSampleRow>> LoadGpuSamples(int64_t per_job) = 0;
  virtual Result<std::vector<GpuSampleTotals>> LoadGpuSampleTotals() = 0;
};

class Store final : public StateStore {
 public:
  // Opens (creating if needed) the database at `path` and its schema. The parent directory
  // must exist. IoError on failure, naming the path.
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             Durability durability = Durability::kFull);
  // Opens an existing database for reading only (the replay; safe while a daemon writes it):
  // NotFound if there is none at `path`, FailedPrecondition for another schema version.
  // InsertJob, UpdateJob and AppendEvent fail on it (IoError).
  static Result<std::unique_ptr<Store>> OpenReadOnly(const std::string& path);
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Starts a transaction. `durable` false: its commit skips the fsync even on a kFull store
  // (it survives a crash of the daemon, and power loss once a later durable commit has
  // returned): for rows nothing acknowledged depends on.
  Status Begin(bool durable = true) override;
  Status Commit() override;
  // Discards the open transaction (no-op without one).
  void Rollback() override;
  bool in_transaction() const { return in_transaction_; }

  // Adds a new job row. AlreadyExists if the id is taken.
  Status InsertJob(const JobRow& row) override;
  // Rewrites the mutable columns of an existing row (everything but id, user, spec_json,
  // submit_time). NotFound if there is no such row.
  Status UpdateJob(const JobRow& row) override;
  Status AppendEvent(Timestamp time, int64_t job, std::string_view kind,
                     std::string_view detail) override;

  // Every job, by ascending id. A row with an unreadable column comes back with load_error set
  // rather than failing the load (one bad row must not keep the daemon from starting).
  Result<std::vector<JobRow>> LoadJobs() override;
  // Events with seq > after_seq, oldest first, at most `limit`.
  Result<std::vector<EventRow>> LoadEvents(int64_t after_seq, int64_t limit) override;
  Result<int64_t> CountJobs() override;
  Result<int64_t> CountEvents();
  // The seq of the newest event (0 when there is none).
  Result<int64_t> LastEventSeq();
  // The value of a `meta` row; nullopt when there is none.
  Result<std::optional<std::string>> GetMeta(std::string_view key) override;
  // Inserts or replaces a `meta` row (inside Begin()/Commit() like every write).
  Status SetMeta(std::string_view key, std::string_view value) override;

  // Appends one GPU sample (inside Begin()/Commit()).
  Status AppendGpuSample(const GpuSampleRow& row) override;
  // The newest `per_job` samples of every job, by job, oldest first within a job.
  Result<std::vector<GpuSampleRow>> LoadGpuSamples(int64_t per_job) override;
  // Every job with samples, by job.
  Result<std::vector<GpuSampleTotals>> LoadGpuSampleTotals() override;

  const std::string& path() const { return path_; }

 private:
  Store(sqlite3* db, std::string path, Durability durability)
      : db_(db), path_(std::move(path)), durability_(durability) {}
  // Back to the store's own synchronous setting after a transaction begun with durable false.
  // An error here fails the commit: later commits must not silently skip their fsync.
  Status EndLazyTransaction();
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  Status Error(std::string_view what) const;
  Status Init(Durability durability);
  // FailedPrecondition unless the schema version is this build's; `create` writes it into a
  // database that has none yet.
  Status CheckSchemaVersion(bool create);
  Status PrepareStatements();
  // Whether the jobs table has the share column, and adding it to one that lacks it.
  Result<bool> HasShareColumn();
  Status AddShareColumn();
  // ... and the count columns (kCountColumns in store.cc), all three or none.
  Result<bool> HasCountColumns();
  Status AddCountColumns();

  sqlite3* db_;
  std::string path_;
  Durability durability_;
  bool in_transaction_ = false;
  bool lazy_ = false;  // the open transaction was begun with durable false
  sqlite3_stmt* insert_job_ = nullptr;
  sqlite3_stmt* update_job_ = nullptr;
  sqlite3_stmt* insert_event_ = nullptr;
};

}  // namespace dlsched::daemon
