#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace dlsched::cli {

// Flags of `dlsched simulate`. --trace, --cluster, --policy, --json, --report and --seed are a
// contract other tools script against.
struct SimulateFlags {
  std::string trace = "synthetic";
  std::string cluster;  // default depends on the trace (see DefaultCluster)
  std::string policies = "dlsched,fifo,fifo-backfill,sjf,srtf,las,tiresias,greedy-share";
  std::string json_path;
  std::string report_path;
  std::string jobs_csv_prefix;
  std::string traces_dir;
  std::string throughput = "auto";
  std::string predictor;  // profile store for the policies' estimator; empty = built-in model
  std::string deadlines;  // sim::DeadlineRule for jobs without a deadline; empty = none
  // How GPU jobs ask for host CPUs (sim::HostAllocation): requested, proportional, cpu-aware.
  std::string host_allocation = "requested";
  // GPU sharing's job types and interference: "auto" (the traces folder's Lucid and Gavel
  // measurements, the built-in ones when absent), "builtin", or a traces folder.
  std::string sharing_data = "auto";
  // A daemon database: replay its event log instead of simulating (--policy: at most one).
  std::string replay;
  bool policy_given = false;  // --policy was on the command line
  uint64_t seed = 1;
  double checkpoint_s = 30;
  double restore_s = 30;
  double estimate_error = 0;  // > 0: policies see users' estimates with this lognormal error
  bool oracle = false;        // policies see true run times and speeds (labelled "(oracle)")
  double stop_at_s = 0;
  double explain_every_s = 3600;    // why-pending sampling interval; 0 = off
  bool no_service_lending = false;  // services keep their idle GPUs
  size_t max_jobs = 0;
  bool skip_bad_rows = false;
  bool quiet = false;
  // Per run, the number of scheduling cycles and the wall time of a cycle (p50, p99, max) in
  // the table and the JSON; off by default, since wall time differs between runs.
  bool timings = false;
  int threads = 0;
};

void AddSimulateFlags(CLI::App& command, SimulateFlags& flags);
int RunSimulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace dlsched::cli
