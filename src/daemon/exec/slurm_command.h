#pragma once

// Runs the Slurm client commands (sbatch, squeue, scontrol, scancel, sinfo): fork/exec of an
// argv, never a shell command line, so no job name, path or argument is ever interpreted by a
// shell. Thread-safe (each call is its own child process).

#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/time.h"

namespace dlsched::daemon {

struct CommandOutput {
  int exit_code = 0;  // 128+N when killed by signal N
  std::string out;    // stdout
  std::string err;    // stderr
};

struct CommandOptions {
  // The child's whole environment ("NAME=value"); empty = the daemon's own.
  std::vector<std::string> env;
  // The child is killed (SIGKILL) after this long; the call then fails.
  Duration timeout = std::chrono::seconds(30);
};

// Runs argv[0] (looked up in PATH) with stdin on /dev/null and captures stdout and stderr (each
// cut at 64 MiB). Fails with Unavailable "<argv[0]>: ..." when the command cannot be started or
// runs past the timeout; a non-zero exit is not a failure here (see RunChecked).
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const CommandOptions& options = {});

// RunCommand, requiring exit status 0. Otherwise Unavailable naming the command line and quoting
// its stderr: "sbatch --parsable ... failed (exit 1): sbatch: error: Invalid partition name".
Result<std::string> RunChecked(const std::vector<std::string>& argv,
                               const CommandOptions& options = {});

// "sbatch --parsable --job-name=x ...": argv joined by spaces for messages, each argument cut at
// 80 characters.
std::string CommandLineText(const std::vector<std::string>& argv);

}  // namespace dlsched::daemon
