#pragma once

// The profile store: the JSON file `dlsched profile` writes and `dlsched simulate --predictor`
// reads. Format (docs/qos.md, "Profile store"):
//
//   {"format": "dlsched-perf-profiles", "version": 1,
//    "about": {"cluster": "9x4xK80+9x4xV100", "tables": "gavel", "seed": "1", ...},
//    "profiles": [
//      {"source": "gavel", "model": "ResNet-50", "batch_size": 64, "gpu_type": "V100",
//       "num_gpus": 4, "consolidated": true, "iters_per_s": 12.06},
//      {"source": "gavel", "model": "ResNet-50", "batch_size": 64, "gpu_type": "V100",
//       "num_gpus": 1, "consolidated": true, "iters_per_s": 3.1,
//       "colocated_with": {"model": "LM", "batch_size": 20}},
//      ...]}
//
// "about" (optional) holds provenance as string values; readers ignore it. In a profile,
// "batch_size" (default 0 = none), "consolidated" (default true) and "colocated_with" are
// optional; the rest are required. Unknown keys are errors. One PerfProfile per entry (see
// dlsched/perf/predictor.h for the meaning of each field).

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/perf/predictor.h"

namespace dlsched {

inline constexpr std::string_view kProfileStoreFormat = "dlsched-perf-profiles";
inline constexpr int kProfileStoreVersion = 1;

struct ProfileStore {
  std::map<std::string, std::string> about;
  std::vector<PerfProfile> profiles;
};

// Writes the store as JSON, one profile per line, numbers in shortest round-trip form. The same
// store always gives the same bytes.
void WriteProfileStore(const ProfileStore& store, std::ostream& out);
// Parses a store; `origin` (a path) prefixes errors. InvalidArgument for bad JSON, a wrong
// "format" or "version", an unknown key, or an invalid profile (naming its index).
Result<ProfileStore> ParseProfileStore(std::string_view json_text, std::string_view origin);
// Reads a store file. NotFound / IoError / ParseProfileStore's errors.
Result<ProfileStore> LoadProfileStore(const std::string& path);
// The estimator behind `--predictor FILE` (simulate and serve): a PerfPredictor fitted to the
// store at `path`, answering jobs its profiles cannot predict with the built-in
// SimpleThroughputModel. LoadProfileStore's and PerfPredictor::Fit's errors.
Result<PerfPredictor> FitProfileStore(const std::string& path);

}  // namespace dlsched
