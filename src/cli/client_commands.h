#pragma once

// The commands that talk to `dlsched serve` over its REST API: submit, queue, show, cancel,
// nodes, logs. Each takes --server URL (or $DLSCHED_SERVER), --token (or $DLSCHED_TOKEN) and
// --json (print the API's JSON; a job always has "id" and "state"). Exit codes: 0 done,
// 1 runtime error (server unreachable, job not found, not allowed, server error), 2 usage
// (bad flags, or a job spec the server refused with 400).

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
  // submit
  int gpus = 1;
  std::string gpu_type;
  std::string framework;
  std::string deadline;  // relative ("30m", "2h", "1d", "90s") or RFC 3339 or Unix seconds
  std::string name;
  std::string workdir;           // default: the current directory
  std::vector<std::string> env;  // NAME=VALUE
  int priority = 0;
  std::string qos;
  double max_run_time_s = 0;
  double runtime_estimate_s = 0;
  std::vector<std::string> command;
  // show, cancel, logs
  int64_t id = -1;
  // queue
  bool all = false;  // also finished jobs (the most recent 50)
  // logs
  bool follow = false;
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

// "30m" -> 1800 s; also "90s", "2h", "1d", "1h30m". nullopt if not a relative duration.
std::optional<double> ParseRelativeSeconds(const std::string& text);

}  // namespace dlsched::cli
