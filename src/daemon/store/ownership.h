#pragma once

// Who owns a daemon's state: one daemon process at a time holds its database and its workdir,
// and a database and a workdir that were used together stay together.
//
// The lock (StateLock). Two kernel locks, both taken before the daemon writes anything:
//  - flock(2) on <workdir>/dlsched.lock, which then holds "pid=P host=H since=T" for the
//    message a refused daemon prints;
//  - an open-file-description lock (F_OFD_SETLK) on one byte of the database file far beyond
//    the bytes SQLite locks, so a second daemon on the same file is refused whatever path names
//    the file; the holder names itself in the database's `meta` table (key `owner`).
// SQLite's own exclusive locking mode is not used: in WAL mode it keeps every other connection
// out, and the replay (`simulate --replay DB`) and read-only sqlite3 readers must read the
// database while the daemon runs. The kernel drops both locks when the process ends, however it
// ends, so a crash leaves nothing stale. Their descriptors are close-on-exec: job processes,
// which outlive their daemon by default, never hold them.
//
// The store id (BindWorkdir). A random id in the database (`meta` key `store_id`) and in
// <workdir>/.dlsched-store-id ties the two together. A daemon refuses to start when they
// disagree, and when a workdir with job directories meets a database that does not know it (a
// lost or replaced database restarts job ids at 0, and a new job must never read an old job's
// log or checkpoint). A database and workdir from before store ids (the database has jobs and
// no id, the workdir no id file) are taken to belong together once, and get one.
//
// A job directory that exists when a new job with its id is submitted (left by a launch whose
// decision never committed) is moved aside, never read (SetAsideJobDir).

#include <string>

#include "daemon/store/store.h"
#include "dlsched/common/status.h"
#include "dlsched/common/time.h"

namespace dlsched::daemon {

// Exclusive ownership of a database and a workdir by this process, for the value's lifetime.
// Movable, not copyable. Not thread-safe (the daemon takes it once, in Create).
class StateLock {
 public:
  // Takes both locks (see the header comment). `db_path` need not exist yet (it is created
  // empty, mode 0600, which SQLite then fills); `workdir` must exist. FailedPrecondition naming
  // the holder (pid, host, since when) when another process holds either; IoError when a lock
  // file cannot be opened. A lock held by another process is retried for up to 3 s first (a
  // daemon killed a moment ago may still hold it).
  static Result<StateLock> Acquire(const std::string& workdir, const std::string& db_path,
                                   Timestamp now);
  StateLock() = default;
  ~StateLock();
  StateLock(StateLock&& other) noexcept;
  StateLock& operator=(StateLock&& other) noexcept;
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

  // "pid=P host=H since=2026-12-01T08:56:38Z": what Acquire wrote into the lock file, and what
  // the daemon records as the database's owner.
  const std::string& holder() const { return holder_; }

 private:
  void Release();

  int workdir_fd_ = -1;
  int db_fd_ = -1;
  std::string holder_;
};

// The `meta` key under which the holder of a database names itself.
inline constexpr const char* kOwnerKey = "owner";
// The `meta` key of the store id, and the file in the workdir that repeats it.
inline constexpr const char* kStoreIdKey = "store_id";
inline constexpr const char* kStoreIdFile = ".dlsched-store-id";

// Checks that `workdir` belongs to `store`'s database and records the binding where it is new
// (see the header comment). FailedPrecondition, saying what happened and how to resolve it, when
// they do not belong together; IoError when the id cannot be read or written. Call with the
// StateLock held and before anything else writes to the workdir.
Status BindWorkdir(StateStore& store, const std::string& db_path, const std::string& workdir);

// If `job_dir` is a directory or a symbolic link (to another job's directory, say), renames it to
// <workdir>/orphaned/<name>-<now in microseconds> so that the new job of that id starts with an
// empty directory and nothing reads the old one's files. Returns the new path ("" when there was
// nothing to move); IoError when it cannot be moved.
Result<std::string> SetAsideJobDir(const std::string& workdir, const std::string& job_dir,
                                   Timestamp now);

}  // namespace dlsched::daemon
