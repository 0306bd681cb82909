#pragma once

// `dlsched profile`: the offline evaluation module. In the simulator setting it "measures" each
// job type's iteration time on every GPU type and count the cluster offers by sampling the
// measured tables (the ground truth) with seeded noise, and writes a profile store that
// `dlsched simulate --predictor` loads. `--evaluate` reports the predictor's accuracy on
// held-back cells of the measured tables instead.

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "dlsched/perf/predictor.h"
#include "io/profile_store.h"

namespace CLI {
class App;
}

namespace dlsched::cli {

struct ProfileFlags {
  std::string cluster;         // required unless --evaluate
  std::string models = "all";  // "all" or a comma-separated list
  std::string tables = "gavel,sia,pollux";
  std::string out_path;    // required unless --evaluate
  std::string traces_dir;  // default $DLSCHED_TRACES or ../shared/traces
  uint64_t seed = 1;
  double noise = 0.05;
  bool colocation = false;
  bool evaluate = false;
  double holdout = 0.2;
  int repeats = 1;
  std::string in_path;  // --evaluate a profile store instead of the tables
  bool json = false;
};

void AddProfileFlags(CLI::App& command, ProfileFlags& flags);
int RunProfile(const ProfileFlags& flags, std::ostream& out, std::ostream& err);

// What the simulated profiler measures.
struct ProfileRunOptions {
  std::vector<std::string> models;  // empty = all; matched case-insensitively
  uint64_t seed = 1;
  double noise = 0.05;  // sigma of the multiplicative lognormal error of one measurement
};

struct ProfileRun {
  std::vector<PerfProfile> profiles;
  std::vector<std::string> unknown_types;  // cluster GPU types no table measured
  size_t infeasible = 0;                   // measured configurations the cluster cannot host
};

// Profiles `cluster` against the ground truth `truth` (table records): one measurement per
// configuration the tables measured on a GPU type of the cluster that the cluster can host
// (consolidated: count <= that type's GPUs on one node; spread: 2+ GPUs, 2+ nodes of the type,
// count <= the type's GPUs), for each selected model. A configuration's true value is the
// geometric mean of its table records; the measurement is that x exp(noise x N(0, 1)), drawn from
// Rng(seed) in sorted configuration order (0 = cannot run stays 0). Records use the cluster's
// spelling of the GPU type and come sorted by (source, model, batch, type, count, spread,
// partner). The profiler only runs configurations the tables cover, since it has no ground
// truth elsewhere; the predictor fills in the rest. Deterministic.
ProfileRun ProfileCluster(const Cluster& cluster, std::span<const PerfProfile> truth,
                          const ProfileRunOptions& options);

}  // namespace dlsched::cli
