#pragma once

// Readers of the public measured-throughput tables, each converted to PerfProfile records (the
// one input of PerfPredictor and of `dlsched profile`).
//
// - gavel:  <traces>/gavel/simulation_throughputs.json (see io/gavel_throughputs.h). One record
//           per isolated measurement: consolidated for every worker type, spread for the
//           "<type>_unconsolidated" ones at 2+ GPUs (their 1-GPU rows repeat the consolidated
//           value and are skipped). Optionally the co-location pairs (colocated_with set).
// - sia:    <traces>/sia/profiles/<model>/{placements,scalability}-<suffix>.csv, the Sia SOSP'23
//           artifact. GPU type by file suffix (SiaGpuType): aws T4, azure V100, dgx-ext A100,
//           quad RTX6000, rtx RTX2080Ti. Not read: "dgx" (an earlier, smaller measurement of the
//           same DGX-A100 that dgx-ext covers; the two differ by a median 1-5% where they
//           overlap), gpt_pmp/ (pipeline-parallel GPT: its step_time is a compute time that does
//           not change with the placement, and its sync_time, often larger, is not included), and
//           adaptdl_seed/ + adaptdl_profiles/ (all 349 rows are exact copies of 1-GPU rows of
//           profiles/).
// - pollux: <traces>/pollux/profiles/<model>/{placements,scalability}.csv, the Pollux OSDI'21
//           testbed (AWS g4dn.12xlarge: 4 x T4 per node). The same numbers as Sia's aws files.
//
// Step-time CSVs (Sia, Pollux): columns by header name in any order; `local_bsz` (per-GPU batch
// size, the record's batch_size), `step_time` (seconds per iteration, including the gradient sync
// `sync_time`; iters_per_s = 1 / step_time), and either `placement` (a digit string, GPUs per
// node: "1123" = 7 GPUs on 4 nodes) or `num_nodes` + `num_replicas` (#GPUs). Other columns are
// ignored. A gang on one node is consolidated. Several rows of one configuration (different
// node shapes of the same count) become several records; PerfPredictor pools them.

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/perf/predictor.h"
#include "io/gavel_throughputs.h"

namespace dlsched {

// The table names `LoadProfileTables` and `dlsched profile --tables` accept.
inline constexpr std::array<std::string_view, 3> kProfileTableNames = {"gavel", "sia", "pollux"};

// Gavel's isolated measurements (and, with `colocation`, its pairs: one record per direction,
// [0, 0] pairs as 0 = may not share), source "gavel". In (job type, GPU type) order: the
// consolidated counts, the spread ones, then the pairs. Gavel measures 1, 2, 4 and 8 GPUs;
// counts up to 64 are looked for.
std::vector<PerfProfile> GavelProfiles(const GavelThroughputTable& table, bool colocation);

// What a step-time CSV file does not say itself.
struct StepTimeCsvInfo {
  std::string source;    // "sia", "pollux"
  std::string model;     // the model directory name: "cifar10"
  std::string gpu_type;  // "T4"
};

// Parses one step-time CSV. InvalidArgument "<origin>:<line>: ..." for a missing column, a short
// row, or a bad value (local_bsz not a positive integer, step_time not positive, a placement with
// a character outside 1-9, num_replicas < num_nodes).
Result<std::vector<PerfProfile>> ParseStepTimeCsv(std::string_view text, std::string_view origin,
                                                  const StepTimeCsvInfo& info);

// The GPU type of a Sia file suffix ("aws" -> "T4"); nullopt for suffixes not read (see above).
std::optional<std::string_view> SiaGpuType(std::string_view suffix);

// Every model directory under `dir` (<traces>/sia/profiles), in name order. NotFound when `dir`
// does not exist; InvalidArgument for a placements-/scalability- file with an unknown suffix.
Result<std::vector<PerfProfile>> LoadSiaProfiles(const std::string& dir);
// Every model directory under `dir` (<traces>/pollux/profiles), in name order.
Result<std::vector<PerfProfile>> LoadPolluxProfiles(const std::string& dir);

// The named tables (kProfileTableNames) from their usual places under `traces_dir`, in the given
// order. InvalidArgument for an unknown name; the readers' errors otherwise.
Result<std::vector<PerfProfile>> LoadProfileTables(const std::string& traces_dir,
                                                   std::span<const std::string> tables,
                                                   bool gavel_colocation);

}  // namespace dlsched
