#pragma once

// The commands that talk to `dlsched serve` over its REST API: submit, queue, show, cancel,
// nodes, logs. Each takes --server URL (or $DLSCHED_SERVER), --token (or $DLSCHED_TOKEN) and
// --json (print the API's JSON; a job always has "id" and "state"). Exit codes: 0 done,
// 1 runtime error (server unreachable, job not found, not allowed, server error), 2 usage
// (bad flags, or a job spec the server refused with 400); `submit --wait` exits with the job's
// exit code (1 when it failed, was killed or rejected without one).
//
// Tables escape control characters in what the server sends (cli/terminal_text.h): job names
// and reasons are other users' text. `queue --json` gives each waiting job its "position" in the
// whole queue and its "pending_reason" and "pending_cause", as the table does. `logs` prints the
// job's stdout to stdout and its stderr to stderr (--stdout / --stderr: only that one, to
// stdout); with --json
// {"id", "stream", "text", "next_offset"} for one stream, {"id", "logs": [that, per stream]}
// for both.

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dlsched::cli {

struct ClientFlags {
  std::string server;
  std::string token;
  bool json = false;
  // submit: one flag per field of the API's job spec (docs/api/openapi.yaml, JobSpec)
  int gpus = 1;
  std::string gpu_type;
  std::string framework;
  std::string deadline;  // relative ("30m", "2h", "1h30m"; cli/flag_values.h) or RFC 3339 or
                         // Unix seconds
  std::string name;
  std::string user;  // admins only; default: the token's user, or $USER without a token
  std::string queue;
  std::string workdir;                // default: the current directory
  std::vector<std::string> env;       // NAME=VALUE
  std::vector<std::string> selector;  // KEY=VALUE node labels required
  std::vector<std::string> prefer;    // KEY=VALUE node labels preferred
  int64_t memory_mib = -1;            // -1: not given
  int cpus = -1;                      // -1: not given
  std::string mem;                    // host memory, "64g" / "512m" (ParseMemoryMib); "": not given
  int priority = 0;
  std::string qos;
  std::string kind;          // training or service
  std::string service_load;  // SECONDS:GPUS;... (services)
  double max_run_time_s = 0;
  double runtime_estimate_s = 0;
  double iterations = 0;
  std::string model;
  int64_t batch_size = -1;  // -1: not given
  std::string script_path;  // a file ("-": standard input) run by /bin/sh -c, instead of command
  std::vector<std::string> command;
  bool parsable = false;  // print only the id (sbatch --parsable)
  bool wait = false;      // block until the job ends; exit with its exit code (sbatch --wait)
  // show, cancel, logs
  int64_t id = -1;
  // queue
  bool all = false;  // also finished jobs (the most recent 50)
  // logs: both streams unless one is chosen
  bool follow = false;
  bool stdout_stream = false;
  bool stderr_stream = false;
};

struct ClientCommands {
  ClientFlags flags;
  CLI::App* submit = nullptr;
  CLI::App* queue = nullptr;
  CLI::App* show = nullptr;
  CLI::App* cancel = nullptr;
  CLI::App* nodes = nullptr;
  CLI::App* logs = nullptr;

  bool parsed() const;
};

// Adds the subcommands to `app`; the returned object holds their flags (keep it alive).
std::unique_ptr<ClientCommands> AddClientCommands(CLI::App& app);
int RunClientCommand(const ClientCommands& commands, std::ostream& out, std::ostream& err);

}  // namespace dlsched::cli
