#pragma once

// The program between a job's wrapper shell and the job itself (`dlsched __job-exec`, never
// typed by people): ProcessExecutor's wrapper execs it, as the daemon's user, and it
//  1. enters the job directory (its own working directory: a restarted daemon recognises the
//     job's wrapper by it, see IsJobWrapper);
//  2. opens the job's logs itself (OpenLog: never through a link the job planted) and starts the
//     job with stdout and stderr on pipes to it, so the job never holds a log's descriptor;
//  3. in the job's process (a child), drops to the job's Unix account when it has one
//     (setgroups, setgid, setuid, then checks they took and cannot be undone), enters the job's
//     working directory as that account (exit status 126 and a line on stderr if it cannot),
//     replaces its environment by the job's (and PWD) and execs the job's argv through the job's
//     PATH (127 if it cannot), stdin on /dev/null. The job's environment arrives on this
//     program's stdin (EncodeEnvironment), never as its own environment (it runs as root: a
//     request's LD_PRELOAD must not reach it) nor as arguments (anyone may read those);
//  4. copies the job's output into the logs, capped: a log that would grow past `max_log_bytes`
//     is renamed to <log>.1 (replacing the previous one) and a new one begun, so each stream
//     keeps at most 2 x max_log_bytes on disk whatever the job writes;
//  5. ignores SIGTERM, SIGINT and SIGHUP (sent to the whole process group when the job is
//     stopped; the job itself gets the default dispositions back), waits for the job, writes its
//     exit status (128+N for signal N) to <job dir>/exit and exits with it.
// The job's own account cannot signal, trace or replace it when it differs from the daemon's.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/exec/unix_account.h"
#include "dlsched/common/status.h"

namespace dlsched::daemon {

inline constexpr std::string_view kJobExecCommand = "__job-exec";

struct JobExecRequest {
  std::string job_dir;
  std::string workdir;
  std::optional<UnixAccount> account;  // run the job as this account (needs root); else as is
  int64_t max_log_bytes = 0;           // per stream; 0: no cap
  std::vector<std::string> env;        // "NAME=value": the job's whole environment
  std::vector<std::string> argv;
};

// The arguments after the program's name, kJobExecCommand first, that ParseJobExecArgs reads
// back to `request` (the account's uid, gid and groups; not its name or home; not the
// environment, which JobExecMain reads from stdin).
std::vector<std::string> JobExecArgs(const JobExecRequest& request);
Result<JobExecRequest> ParseJobExecArgs(std::span<const std::string> args);

// The environment as text for a shell here-document: one line of hex digits per entry (no line
// can be a here-document's end marker), and back (InvalidArgument on anything else).
std::string EncodeEnvironment(const std::vector<std::string>& env);
Result<std::vector<std::string>> DecodeEnvironment(std::string_view text);

// Steps 1-5 above; returns the exit status to exit with.
int RunJobExec(const JobExecRequest& request);

// main() for `dlsched __job-exec ...` (argv[1] is kJobExecCommand): reads the environment from
// stdin to its end, puts /dev/null there instead, and runs RunJobExec.
int JobExecMain(int argc, char** argv);

// Appends to a log file, keeping it at most `max_bytes` long (0: no cap): a write that would
// pass the cap first fills the log up to it, renames it to <path>.1 and continues in a fresh
// <path>. Not thread-safe.
class CappedLog {
 public:
  CappedLog(std::string path, int64_t max_bytes);
  ~CappedLog();
  CappedLog(const CappedLog&) = delete;
  CappedLog& operator=(const CappedLog&) = delete;

  // Opens (appending to) <path>; its current size counts towards the cap.
  Status Open();
  Status Append(std::string_view data);

 private:
  Status Rotate();

  std::string path_;
  int64_t max_bytes_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace dlsched::daemon
