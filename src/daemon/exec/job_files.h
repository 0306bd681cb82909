#pragma once

// What the daemon's executors (ProcessExecutor, SlurmExecutor) share: the small files in which
// they keep a run segment's state in its job directory (pid, slurm_job, exit, stop), the job's
// logs, the names of their stop intents and queued actions, and shell quoting for the scripts
// they write.
//
// A job directory belongs to the job's Unix account (docs/security.md), so whatever is in it
// may have been put there by the job: a symbolic link to a file only the daemon may read, a
// FIFO that blocks its reader, a hard link to someone else's file, a file of gigabytes. Every
// function here that touches a path in a job directory therefore never follows a symbolic link
// in the last component, never blocks on a FIFO or device, reads a bounded amount, and writes
// only into files it has just created itself (O_EXCL) or checked are its own.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"

namespace dlsched::daemon {

// The content of the regular file `path`, at most `max_bytes` of it; "" if it cannot be read,
// is a symbolic link, or is not a regular file.
inline constexpr size_t kSmallFileBytes = 64 * 1024;
std::string ReadSmallFile(const std::string& path, size_t max_bytes = kSmallFileBytes);

// Writes `content` to `path` atomically: into a temporary file of its own beside `path` (created
// with O_EXCL, so never through a link someone planted), with permission bits `mode`, then
// renamed over `path`; false on any failure. Concurrent writers each leave a whole file; the
// last rename wins.
bool WriteSmallFile(const std::string& path, const std::string& content, mode_t mode = 0644);

// Opens the log `path` for appending (O_APPEND, close-on-exec), creating it with `mode`. A
// path that is anything but a regular file of this process's effective user with one link (a
// symbolic or hard link, a FIFO, someone else's file) is removed and a fresh file created
// instead, so the caller never writes through a link. Returns the descriptor.
Result<int> OpenLog(const std::string& path, mode_t mode = 0644);

// At most `limit` bytes of the log `path` from byte `offset` (fewer at its end; "" past it or
// when there is no log yet). FailedPrecondition when `path` is a symbolic link, not a regular
// file, or has more than one link: a job may have replaced its log with a link to a file it may
// not read, which the daemon must never serve.
Result<std::string> ReadLogRange(const std::string& path, int64_t offset, int64_t limit);

// Why an executor stops a run segment, as <job dir>/stop names it. kNodeLost and kNotStarted
// are the Slurm executor's (its node left service; Slurm did not start it in time).
enum class StopIntent { kNone, kPreempt, kKill, kTimeout, kNodeLost, kNotStarted };
// "", "preempt", "kill", "timeout", "node", "start".
std::string_view StopIntentName(StopIntent intent);
// The intent StopIntentName gives `name`; kNone for any other text.
StopIntent ParseStopIntent(std::string_view name);

// Makes the daemon's own file `path` (its database) private: created 0600 if missing, else
// chmod 0600, and so are its SQLite companions `path`-wal and `path`-shm when they exist
// (SQLite creates them with the database's mode); a companion that is not this user's own
// regular file is removed. IoError when that fails.
Status MakePrivateFile(const std::string& path);

// The directory of `path` if users other than its owner may write it (so they could rename
// or replace `path`), else "".
std::string DirectoryOthersMayWrite(const std::string& path);

// JobExecutor::QueuedAction's kinds, by action: launch, preempt, kill.
inline constexpr std::string_view kActionKinds[] = {"launch", "preempt", "kill"};

// `text` as one single-quoted POSIX shell word: every byte but ' as is, ' as '\''.
std::string ShellQuote(std::string_view text);

}  // namespace dlsched::daemon
