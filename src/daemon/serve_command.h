#pragma once

// `dlsched serve`: runs the live scheduler daemon until SIGINT or SIGTERM.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "daemon/core/oom_watchdog.h"

namespace CLI {
class App;
}

namespace dlsched::daemon {

struct ServeFlags {
  std::string listen = "127.0.0.1:8642";  // HOST:PORT; port 0 picks a free one
  std::string db;                         // default <workdir>/dlsched.db
  std::string profile = "dlsched";        // built-in name or .json file
  double round_s = 0;                     // > 0: the round-based profile's round length
  std::string gpus = "auto";              // "auto" (NVML) or a cluster spec
  std::string workdir = "dlsched-work";
  std::string tokens;  // tokens file; empty = no auth, loopback only
  double grace_s = 10;
  uint64_t seed = 1;
  int http_threads = 16;
  size_t max_body_bytes = 256 * 1024;
  double request_timeout_s = 10;    // a client's time to send one request, head and body
  std::string durability = "full";  // "full" (fsync per commit) or "process"
  bool kill_jobs_on_exit = false;
  std::string executor = "local";  // "local" (processes) or "slurm"
  std::string slurm_partition;     // empty: Slurm's default partition
  double slurm_poll_s = 1;
  std::string predictor;                      // profile store; empty: the built-in throughput model
  int64_t max_log_bytes = int64_t{64} << 20;  // per job log stream; 0: no cap
  int64_t min_free_mib = 256;                 // launches wait below this much free space
  // Empty: DefaultNvmlLibrary() (DLSCHED_NVML_LIBRARY, else the driver's).
  std::string nvml_library;
  // Seconds between GPU monitor samples; < 0: 5 with --gpus auto, else no monitor; 0: none.
  double monitor_period_s = -1;
  // A sharing profile's job types and interference: "builtin" or a traces folder (Lucid's and
  // Gavel's measurements, as `simulate --sharing-data`).
  std::string sharing_data = "builtin";
  std::string share_enforcer = "none";  // "none" (accounting only) or "mps"
  OomWatchdogOptions oom;               // --oom-slack-mib, --oom-samples
  // How the local executor holds jobs to their CPUs and host memory: auto, cgroup, affinity,
  // none (host_enforcer.h).
  std::string host_enforcer = "auto";
  // What a job that states no CPUs or host memory gets per GPU (Cluster::host_defaults); the
  // memory as a size ("4g"; ParseMemoryMib).
  int cpus_per_gpu = 0;
  std::string mem_per_gpu = "0";
};

void AddServeFlags(CLI::App& command, ServeFlags& flags);
// Prints "listening on http://HOST:PORT" on `out` once requests are accepted; diagnostics on
// `err`. Returns 0 after a clean stop, 1 on a runtime error (store, bind), 2 on bad flags.
int RunServe(const ServeFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace dlsched::daemon
