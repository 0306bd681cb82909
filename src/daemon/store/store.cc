#include "daemon/store/store.h"

#include <sqlite3.h>

namespace dlsched::daemon {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY,
  user TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  submit_us INTEGER NOT NULL,
  queued_since_us INTEGER NOT NULL,
  segment_start_us INTEGER NOT NULL DEFAULT 0,
  first_start_us INTEGER,
  finish_us INTEGER,
  run_time_us INTEGER NOT NULL DEFAULT 0,
  attained_gpu_us INTEGER NOT NULL DEFAULT 0,
  iterations_done REAL NOT NULL DEFAULT 0,
  preemptions INTEGER NOT NULL DEFAULT 0,
  placement TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
CREATE TABLE IF NOT EXISTS events(
  seq INTEGER PRIMARY KEY,
  time_us INTEGER NOT NULL,
  job INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '');
)sql";

// The GPU monitor's samples (GpuSampleRow); added after version 1 was released, so a version 1
// database that lacks the table gets it.
constexpr const char* kGpuSampleSchema = R"sql(
CREATE TABLE IF NOT EXISTS gpu_samples(
  job INTEGER NOT NULL,
  time_us INTEGER NOT NULL,
  memory_mib INTEGER NOT NULL,
  utilization REAL NOT NULL);
CREATE INDEX IF NOT EXISTS gpu_samples_by_job ON gpu_samples(job, time_us);
)sql";

constexpr const char* kJobColumns =
    "id, user, spec, state, submit_us, queued_since_us, segment_start_us, first_start_us, "
    "finish_us, run_time_us, attained_gpu_us, iterations_done, preemptions, placement, reason, "
    "pid, pid_start, exit_code";

// A running job's share mode (JobRow::share: "" exclusive, else ShareModeName); added after
// version 1 was released, so a version 1 database that lacks the column gets it (AddShareColumn).
constexpr const char* kShareColumn = "share";
// A job's counts that a restart must keep (JobRow::migrations, oom_restarts and
// oom_in_a_row); added after the share column, in the same way (AddCountColumns).
constexpr const char* kCountColumns = "migrations, oom_restarts, oom_in_a_row";

// Never a null view: SQLite binds a null pointer as NULL, which the column refuses.
std::string_view ShareText(ShareMode mode) {
  return mode == ShareMode::kExclusive ? std::string_view("") : ShareModeName(mode);
}

// Unknown text reads as exclusive: the job then cannot keep a GPU another job holds.
ShareMode ParseShareText(std::string_view text) {
  for (ShareMode mode : {ShareMode::kPacked, ShareMode::kTimeSliced}) {
    if (text == ShareModeName(mode)) return mode;
  }
  return ShareMode::kExclusive;
}

int64_t Micros(Timestamp t) { return t.time_since_epoch().count(); }

void BindTime(sqlite3_stmt* stmt, int index, Timestamp t) {
  if (t == kTimeNever) {
    sqlite3_bind_null(stmt, index);
  } else {
    sqlite3_bind_int64(stmt, index, Micros(t));
  }
}

Timestamp ColumnTime(sqlite3_stmt* stmt, int index) {
  if (sqlite3_column_type(stmt, index) == SQLITE_NULL) return kTimeNever;
  return Timestamp(Duration(sqlite3_column_int64(stmt, index)));
}

std::string ColumnText(sqlite3_stmt* stmt, int index) {
  const unsigned char* text = sqlite3_column_text(stmt, index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt, index)));
}

void BindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// Binds the mutable columns in the order the UPDATE statement lists them, from `first`.
void BindMutable(sqlite3_stmt* stmt, int first, const JobRow& row) {
  int i = first;
  BindText(stmt, i++, JobStateName(row.state));
  sqlite3_bind_int64(stmt, i++, Micros(row.queued_since));
  sqlite3_bind_int64(stmt, i++, Micros(row.segment_start));
  BindTime(stmt, i++, row.first_start);
  BindTime(stmt, i++, row.finish_time);
  sqlite3_bind_int64(stmt, i++, row.run_time.count());
  sqlite3_bind_int64(stmt, i++, row.attained_gpu_time.count());
  sqlite3_bind_double(stmt, i++, row.iterations_done);
  sqlite3_bind_int(stmt, i++, row.preemptions);
  BindText(stmt, i++, row.placement);
  BindText(stmt, i++, row.reason);
  sqlite3_bind_int64(stmt, i++, row.pid);
  sqlite3_bind_int64(stmt, i++, row.pid_start);
  if (row.exit_code) {
    sqlite3_bind_int(stmt, i++, *row.exit_code);
  } else {
    sqlite3_bind_null(stmt, i++);
  }
  BindText(stmt, i++, ShareText(row.share));
  sqlite3_bind_int(stmt, i++, row.migrations);
  sqlite3_bind_int(stmt, i++, row.oom_restarts);
  sqlite3_bind_int(stmt, i++, row.oom_in_a_row);
}

// Resets a statement for reuse when it goes out of scope.
class StmtReset {
 public:
  explicit StmtReset(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StmtReset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  sqlite3_stmt* stmt_;
};

// Finalizes a statement when it goes out of scope.
class StmtOwner {
 public:
  StmtOwner() = default;
  ~StmtOwner() { sqlite3_finalize(stmt_); }
  sqlite3_stmt** out() { return &stmt_; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, Durability durability) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return IoError("cannot open database " + path + ": " + message);
  }
  std::unique_ptr<Store> store(new Store(db, path, durability));
  DS_RETURN_IF_ERROR(store->Init(durability));
  return store;
}

Result<std::unique_ptr<Store>> Store::OpenReadOnly(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const bool missing = rc == SQLITE_CANTOPEN;
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    if (missing) return NotFound("cannot open database " + path + ": " + message);
    return IoError("cannot open database " + path + ": " + message);
  }
  std::unique_ptr<Store> store(new Store(db, path, Durability::kProcessCrash));
  sqlite3_busy_timeout(db, 5000);
  // A file that is not a database (or not this one's) fails here, on its first read.
  DS_RETURN_IF_ERROR(store->CheckSchemaVersion(/*create=*/false));
  // Prepared so that the write methods fail cleanly (SQLITE_READONLY) instead of crashing.
  DS_RETURN_IF_ERROR(store->PrepareStatements());
  return store;
}

Store::~Store() {
  if (in_transaction_) Rollback();
  sqlite3_finalize(insert_job_);
  sqlite3_finalize(update_job_);
  sqlite3_finalize(insert_event_);
  sqlite3_close(db_);
}

Status Store::Error(std::string_view what) const {
  return IoError(path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_));
}

Status Store::Exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return IoError(path_ + ": " + text);
  }
  return Status::Ok();
}

Status Store::Prepare(const char* sql, sqlite3_stmt** stmt) {
  if (sqlite3_prepare_v2(db_, sql, -1, stmt, nullptr) != SQLITE_OK) {
    return Error("prepare");
  }
  return Status::Ok();
}

Status Store::Init(Durability durability) {
  // Another process holding the database (a second daemon on the same file) makes writes wait
  // up to 5 s, then fail, rather than fail at once.
  sqlite3_busy_timeout(db_, 5000);
  DS_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL;"));
  // The daemon commits once per scheduler-loop iteration (a batch of submissions), so FULL
  // costs one fsync per batch, not per job.
  DS_RETURN_IF_ERROR(Exec(durability == Durability::kFull ? "PRAGMA synchronous=FULL;"
                                                          : "PRAGMA synchronous=NORMAL;"));
  DS_RETURN_IF_ERROR(Exec(kSchema));
  DS_RETURN_IF_ERROR(Exec(kGpuSampleSchema));
  DS_RETURN_IF_ERROR(AddShareColumn());
  DS_RETURN_IF_ERROR(AddCountColumns());
  DS_RETURN_IF_ERROR(CheckSchemaVersion(/*create=*/true));
  return PrepareStatements();
}

Status Store::PrepareStatements() {
  // A read-only open of a database older than the share column writes nothing: its statements
  // only have to prepare (binding the share parameter then fails harmlessly); so for the count
  // columns.
  DS_ASSIGN_OR_RETURN(const bool has_share, HasShareColumn());
  DS_ASSIGN_OR_RETURN(const bool has_counts, HasCountColumns());
  const std::string insert =
      std::string(
          "INSERT INTO jobs(id, user, spec, submit_us, state, queued_since_us, segment_start_us, "
          "first_start_us, finish_us, run_time_us, attained_gpu_us, iterations_done, preemptions, "
          "placement, reason, pid, pid_start, exit_code") +
      (has_share ? ", share" : "") + (has_counts ? std::string(", ") + kCountColumns : "") +
      ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18" +
      (has_share ? ", ?19" : "") + (has_counts ? ", ?20, ?21, ?22" : "") + ")";
  DS_RETURN_IF_ERROR(Prepare(insert.c_str(), &insert_job_));
  const std::string update =
      std::string(
          "UPDATE jobs SET state=?2, queued_since_us=?3, segment_start_us=?4, first_start_us=?5, "
          "finish_us=?6, run_time_us=?7, attained_gpu_us=?8, iterations_done=?9, preemptions=?10, "
          "placement=?11, reason=?12, pid=?13, pid_start=?14, exit_code=?15") +
      (has_share ? ", share=?16" : "") +
      (has_counts ? ", migrations=?17, oom_restarts=?18, oom_in_a_row=?19" : "") + " WHERE id=?1";
  DS_RETURN_IF_ERROR(Prepare(update.c_str(), &update_job_));
  DS_RETURN_IF_ERROR(Prepare(
      "INSERT INTO events(time_us, job, kind, detail) VALUES(?1, ?2, ?3, ?4)", &insert_event_));
  return Status::Ok();
}

Result<bool> Store::HasShareColumn() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(
      Prepare("SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name='share'", stmt.out()));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return Error("read the jobs table's columns");
  return sqlite3_column_int(stmt.get(), 0) > 0;
}

Status Store::AddShareColumn() {
  DS_ASSIGN_OR_RETURN(const bool has, HasShareColumn());
  if (has) return Status::Ok();
  return Exec("ALTER TABLE jobs ADD COLUMN share TEXT NOT NULL DEFAULT '';");
}

Result<bool> Store::HasCountColumns() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare(
      "SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name='migrations'", stmt.out()));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return Error("read the jobs table's columns");
  return sqlite3_column_int(stmt.get(), 0) > 0;
}

Status Store::AddCountColumns() {
  DS_ASSIGN_OR_RETURN(const bool has, HasCountColumns());
  if (has) return Status::Ok();
  return Exec(
      "BEGIN IMMEDIATE;"
      "ALTER TABLE jobs ADD COLUMN migrations INTEGER NOT NULL DEFAULT 0;"
      "ALTER TABLE jobs ADD COLUMN oom_restarts INTEGER NOT NULL DEFAULT 0;"
      "ALTER TABLE jobs ADD COLUMN oom_in_a_row INTEGER NOT NULL DEFAULT 0;"
      "COMMIT;");
}

Status Store::CheckSchemaVersion(bool create) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key='schema_version'", stmt.out()));
  const int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) {
    const std::string version = ColumnText(stmt.get(), 0);
    if (version != std::to_string(kSchemaVersion)) {
      return FailedPrecondition(path_ + ": schema version " + version + ", this dlsched knows " +
                                std::to_string(kSchemaVersion));
    }
    return Status::Ok();
  }
  if (rc == SQLITE_DONE && create) {
    return Exec("INSERT INTO meta(key, value) VALUES('schema_version', '1');");
  }
  if (rc == SQLITE_DONE) return FailedPrecondition(path_ + ": no schema version");
  return Error("read schema version");
}

Status Store::Begin(bool durable) {
  DS_CHECK(!in_transaction_) << "nested transaction";
  // SQLite takes the synchronous setting only outside a transaction.
  if (!durable && durability_ == Durability::kFull) {
    DS_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL;"));
    lazy_ = true;
  }
  // IMMEDIATE: take the write lock now, so a conflict shows here and not at commit.
  if (Status begun = Exec("BEGIN IMMEDIATE;"); !begun.ok()) {
    (void)EndLazyTransaction();  // the error that matters is the first
    return begun;
  }
  in_transaction_ = true;
  return Status::Ok();
}

Status Store::Commit() {
  DS_CHECK(in_transaction_) << "commit without a transaction";
  Status status = Exec("COMMIT;");
  if (!status.ok()) Rollback();
  in_transaction_ = false;
  const Status restored = EndLazyTransaction();
  return status.ok() ? restored : status;
}

void Store::Rollback() {
  if (!in_transaction_) return;
  sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
  in_transaction_ = false;
  (void)EndLazyTransaction();  // after a rollback the daemon stops anyway
}

Status Store::EndLazyTransaction() {
  if (!lazy_) return Status::Ok();
  lazy_ = false;
  return Exec("PRAGMA synchronous=FULL;");
}

Status Store::InsertJob(const JobRow& row) {
  StmtReset reset(insert_job_);
  sqlite3_bind_int64(insert_job_, 1, row.id);
  BindText(insert_job_, 2, row.user);
  BindText(insert_job_, 3, row.spec_json);
  sqlite3_bind_int64(insert_job_, 4, Micros(row.submit_time));
  BindMutable(insert_job_, 5, row);
  const int rc = sqlite3_step(insert_job_);
  if (rc == SQLITE_CONSTRAINT) return AlreadyExists("job " + std::to_string(row.id) + " exists");
  if (rc != SQLITE_DONE) return Error("insert job " + std::to_string(row.id));
  return Status::Ok();
}

Status Store::UpdateJob(const JobRow& row) {
  StmtReset reset(update_job_);
  sqlite3_bind_int64(update_job_, 1, row.id);
  BindMutable(update_job_, 2, row);
  if (sqlite3_step(update_job_) != SQLITE_DONE) {
    return Error("update job " + std::to_string(row.id));
  }
  if (sqlite3_changes(db_) == 0) return NotFound("no stored job " + std::to_string(row.id));
  return Status::Ok();
}

Status Store::AppendEvent(Timestamp time, int64_t job, std::string_view kind,
                          std::string_view detail) {
  StmtReset reset(insert_event_);
  sqlite3_bind_int64(insert_event_, 1, Micros(time));
  sqlite3_bind_int64(insert_event_, 2, job);
  BindText(insert_event_, 3, kind);
  BindText(insert_event_, 4, detail);
  if (sqlite3_step(insert_event_) != SQLITE_DONE) return Error("append event");
  return Status::Ok();
}

Result<std::vector<JobRow>> Store::LoadJobs() {
  StmtOwner stmt;
  // A read-only open of a database older than the column reads every job as exclusive; older
  // than the count columns, with counts of 0.
  DS_ASSIGN_OR_RETURN(const bool has_share, HasShareColumn());
  DS_ASSIGN_OR_RETURN(const bool has_counts, HasCountColumns());
  const std::string sql = std::string("SELECT ") + kJobColumns + ", " +
                          (has_share ? kShareColumn : "''") + ", " +
                          (has_counts ? kCountColumns : "0, 0, 0") + " FROM jobs ORDER BY id";
  DS_RETURN_IF_ERROR(Prepare(sql.c_str(), stmt.out()));
  std::vector<JobRow> rows;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    JobRow row;
    row.id = sqlite3_column_int64(s, 0);
    row.user = ColumnText(s, 1);
    row.spec_json = ColumnText(s, 2);
    Result<JobState> state = ParseJobState(ColumnText(s, 3));
    if (state.ok()) {
      row.state = *state;
    } else {
      row.state = JobState::kFailed;
      row.load_error = "state: " + state.status().message();
    }
    row.submit_time = ColumnTime(s, 4);
    row.queued_since = ColumnTime(s, 5);
    row.segment_start = ColumnTime(s, 6);
    row.first_start = ColumnTime(s, 7);
    row.finish_time = ColumnTime(s, 8);
    row.run_time = Duration(sqlite3_column_int64(s, 9));
    row.attained_gpu_time = Duration(sqlite3_column_int64(s, 10));
    row.iterations_done = sqlite3_column_double(s, 11);
    row.preemptions = sqlite3_column_int(s, 12);
    row.placement = ColumnText(s, 13);
    row.reason = ColumnText(s, 14);
    row.pid = sqlite3_column_int64(s, 15);
    row.pid_start = sqlite3_column_int64(s, 16);
    if (sqlite3_column_type(s, 17) != SQLITE_NULL) row.exit_code = sqlite3_column_int(s, 17);
    row.share = ParseShareText(ColumnText(s, 18));
    row.migrations = sqlite3_column_int(s, 19);
    row.oom_restarts = sqlite3_column_int(s, 20);
    row.oom_in_a_row = sqlite3_column_int(s, 21);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return Error("load jobs");
  return rows;
}

Result<std::vector<EventRow>> Store::LoadEvents(int64_t after_seq, int64_t limit) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare(
      "SELECT seq, time_us, job, kind, detail FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
      stmt.out()));
  sqlite3_bind_int64(stmt.get(), 1, after_seq);
  sqlite3_bind_int64(stmt.get(), 2, limit);
  std::vector<EventRow> events;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    events.push_back({sqlite3_column_int64(s, 0), ColumnTime(s, 1), sqlite3_column_int64(s, 2),
                      ColumnText(s, 3), ColumnText(s, 4)});
  }
  if (rc != SQLITE_DONE) return Error("load events");
  return events;
}

Result<int64_t> Store::CountJobs() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("SELECT COUNT(*) FROM jobs", stmt.out()));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return Error("count jobs");
  return sqlite3_column_int64(stmt.get(), 0);
}

Result<int64_t> Store::LastEventSeq() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("SELECT COALESCE(MAX(seq), 0) FROM events", stmt.out()));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return Error("last event");
  return sqlite3_column_int64(stmt.get(), 0);
}

Result<int64_t> Store::CountEvents() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("SELECT COUNT(*) FROM events", stmt.out()));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return Error("count events");
  return sqlite3_column_int64(stmt.get(), 0);
}

Result<std::optional<std::string>> Store::GetMeta(std::string_view key) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key = ?1", stmt.out()));
  BindText(stmt.get(), 1, key);
  const int rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_ROW) return std::optional<std::string>(ColumnText(stmt.get(), 0));
  if (rc != SQLITE_DONE) return Error("read meta " + std::string(key));
  return std::optional<std::string>();
}

Status Store::SetMeta(std::string_view key, std::string_view value) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", stmt.out()));
  BindText(stmt.get(), 1, key);
  BindText(stmt.get(), 2, value);
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) return Error("write meta " + std::string(key));
  return Status::Ok();
}

Status Store::AppendGpuSample(const GpuSampleRow& row) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare(
      "INSERT INTO gpu_samples(job, time_us, memory_mib, utilization) VALUES(?1, ?2, ?3, ?4)",
      stmt.out()));
  sqlite3_bind_int64(stmt.get(), 1, row.job);
  sqlite3_bind_int64(stmt.get(), 2, Micros(row.time));
  sqlite3_bind_int64(stmt.get(), 3, row.memory_mib);
  sqlite3_bind_double(stmt.get(), 4, row.utilization);
  if (sqlite3_step(stmt.get()) != SQLITE_DONE) return Error("append GPU sample");
  return Status::Ok();
}

Result<std::vector<GpuSampleRow>> Store::LoadGpuSamples(int64_t per_job) {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(Prepare(
      "SELECT job, time_us, memory_mib, utilization FROM ("
      " SELECT *, ROW_NUMBER() OVER (PARTITION BY job ORDER BY time_us DESC, rowid DESC) AS n"
      " FROM gpu_samples) WHERE n <= ?1 ORDER BY job, time_us, rowid",
      stmt.out()));
  sqlite3_bind_int64(stmt.get(), 1, per_job);
  std::vector<GpuSampleRow> rows;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    rows.push_back({sqlite3_column_int64(s, 0), ColumnTime(s, 1), sqlite3_column_int64(s, 2),
                    sqlite3_column_double(s, 3)});
  }
  if (rc != SQLITE_DONE) return Error("load GPU samples");
  return rows;
}

Result<std::vector<GpuSampleTotals>> Store::LoadGpuSampleTotals() {
  StmtOwner stmt;
  DS_RETURN_IF_ERROR(
      Prepare("SELECT job, COUNT(*), MAX(memory_mib) FROM gpu_samples GROUP BY job ORDER BY job",
              stmt.out()));
  std::vector<GpuSampleTotals> totals;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = stmt.get();
    totals.push_back(
        {sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2)});
  }
  if (rc != SQLITE_DONE) return Error("load GPU sample totals");
  return totals;
}

}  // namespace dlsched::daemon
