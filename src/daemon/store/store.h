#pragma once

// The daemon's durable state in SQLite (WAL journal): one row per job and an append-only event
// log. Single writer: only the scheduler thread uses a Store, so it is not
// thread-safe. Every write happens inside Begin()/Commit(); a job is acknowledged to its
// submitter only after the transaction holding its row has committed.
//
// Schema (version 1):
//   meta(key TEXT PRIMARY KEY, value TEXT)             schema_version
//   jobs(id INTEGER PRIMARY KEY, ...)                  see JobRow; ids are the scheduler's
//                                                      dense JobIds, so they are 0..n-1
//   events(seq INTEGER PRIMARY KEY, time_us, job, kind, detail)
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

// A job as stored. `spec_json` is the canonical request (JobRequestToJson).
struct JobRow {
  int64_t id = 0;
  std::string user;
  std::string spec_json;
  JobState state = JobState::kPending;
  Timestamp submit_time;
  Timestamp queued_since;
  Timestamp segment_start;  // while running
  Timestamp first_start = kTimeNever;
  Timestamp finish_time = kTimeNever;
  Duration run_time{0};
  Duration attained_gpu_time{0};
  double iterations_done = 0;
  int preemptions = 0;
  std::string placement;  // "n0000:0,1;n0001:2" (node name: GPU indices); empty = none
  std::string reason;
  int64_t pid = 0;        // the job's process (group leader) while running; 0 = none
  int64_t pid_start = 0;  // its start time in clock ticks since boot (/proc/PID/stat field 22)
  std::optional<int> exit_code;

  friend bool operator==(const JobRow&, const JobRow&) = default;
};

struct EventRow {
  int64_t seq = 0;
  Timestamp time;
  int64_t job = -1;  // -1: not about one job
  std::string kind;
  std::string detail;
};

// How far a commit goes before it returns.
enum class Durability {
  // fsync at every commit (SQLite synchronous=FULL): a commit survives power loss.
  kFull,
  // No fsync at commit (synchronous=NORMAL with WAL): a commit survives a crash or kill -9 of
  // the daemon, but the last commits may be lost if the machine itself goes down.
  kProcessCrash,
};

class Store {
 public:
  // Opens (creating if needed) the database at `path` and its schema. The parent directory
  // must exist. IoError on failure, naming the path.
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             Durability durability = Durability::kFull);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  Status Begin();
  Status Commit();
  // Discards the open transaction (no-op without one).
  void Rollback();
  bool in_transaction() const { return in_transaction_; }

  // Adds a new job row. AlreadyExists if the id is taken.
  Status InsertJob(const JobRow& row);
  // Rewrites the mutable columns of an existing row (everything but id, user, spec_json,
  // submit_time). NotFound if there is no such row.
  Status UpdateJob(const JobRow& row);
  Status AppendEvent(Timestamp time, int64_t job, std::string_view kind, std::string_view detail);

  // Every job, by ascending id.
  Result<std::vector<JobRow>> LoadJobs();
  // Events with seq > after_seq, oldest first, at most `limit`.
  Result<std::vector<EventRow>> LoadEvents(int64_t after_seq, int64_t limit);
  Result<int64_t> CountJobs();
  Result<int64_t> CountEvents();

  const std::string& path() const { return path_; }

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  Status Error(std::string_view what) const;
  Status Init(Durability durability);

  sqlite3* db_;
  std::string path_;
  bool in_transaction_ = false;
  sqlite3_stmt* insert_job_ = nullptr;
  sqlite3_stmt* update_job_ = nullptr;
  sqlite3_stmt* insert_event_ = nullptr;
};

}  // namespace dlsched::daemon
