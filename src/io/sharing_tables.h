#pragma once

// Readers of the measurements behind the GPU-sharing models (include/dlsched/sharing/):
// - Lucid (ASPLOS'23 artifact; shared/traces/lucid/SOURCE.md): single_data.csv, each job type's
//   exclusive-run profile, and colocate_info.csv, 1,388 measured pairs on one GPU (type not
//   stated).
// - Gavel's co-location pairs (io/gavel_throughputs.h), per GPU type, at one GPU per job.
// - Alibaba cluster-trace-gpu-v2023 pod lists: the fractional GPU requests (gpu_milli).
// CSV columns are found by header name, in any order; other columns are ignored. Errors are
// InvalidArgument "<file>:<line>: ...".

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/sharing/interference.h"
#include "io/gavel_throughputs.h"

namespace dlsched {

// One row of Lucid's single_data.csv.
struct LucidJobProfile {
  sharing::JobTypeKey key;  // model, batchsize, amp
  std::string dataset;
  double iters_per_s = 0.0;    // speed
  double gpu_util_pct = 0.0;   // SM utilisation, 0..100
  double gmem_util_pct = 0.0;  // memory-controller utilisation, 0..100
  double gmem_mib = 0.0;       // memory in use
  int label = 0;               // Lucid's sharing-friendliness class
};

// One row of Lucid's colocate_info.csv: each job's throughput beside the other as a fraction of
// its exclusive throughput, and the shared GPU's combined usage.
struct LucidPair {
  int line = 0;  // in the file, for error messages
  sharing::JobTypeKey a;
  sharing::JobTypeKey b;
  double speed_a = 1.0;
  double speed_b = 1.0;
  double gpu_util_pct = 0.0;
  double gmem_util_pct = 0.0;
  double gmem_mib = 0.0;
};

Result<std::vector<LucidJobProfile>> ParseLucidSingle(std::string_view text,
                                                      std::string_view origin);
Result<std::vector<LucidPair>> ParseLucidColocate(std::string_view text, std::string_view origin);
// gpu_milli (1..1000) of every single-GPU task of an openb pod list, in file order. A value
// below 1000 is a shared GPU.
Result<std::vector<int>> ParseAlibabaGpuMilli(std::string_view text, std::string_view origin);

// The catalog of job types and the measured pairs over it, ready for TableInterferenceModel and
// FittedInterferenceModel.
struct SharingMeasurements {
  sharing::JobTypeCatalog catalog;
  std::vector<sharing::MeasuredPair> pairs;
  // Fitting/test samples, both directions of every pair that could share (speed > 0); `group` =
  // the pair's number, so both directions land in one cross-validation fold.
  std::vector<sharing::PairSample> lucid_samples;
  std::vector<sharing::PairSample> gavel_samples;
};

// Lucid's types (features: gpu_util / 100, gmem_util / 100, gmem) and pairs (gpu_type empty).
// InvalidArgument "<pairs_origin>:<line>: ..." for a pair naming a type single_data lacks.
Result<SharingMeasurements> LucidMeasurements(const std::vector<LucidJobProfile>& singles,
                                              const std::vector<LucidPair>& pairs,
                                              std::string_view pairs_origin);

// Adds Gavel's job types and its 1-GPU pairs per GPU type, speeds normalised by each job's
// isolated throughput on that type; a [0, 0] pair becomes a MeasuredPair of speed 0 (may not
// share) and no sample. Gavel has no utilisation data, so each Gavel type borrows the features of
// the nearest Lucid type (kGavelToLucidModel, amp off, the batch size nearest in log2; a type
// without batch size takes the smallest): a documented approximation (docs/sharing.md). A Gavel
// type whose key the catalog already holds (Transformer at batch size 32) is that type.
// NotFound when a mapped Lucid model is missing from the catalog.
Status AddGavelMeasurements(const GavelThroughputTable& table, SharingMeasurements& out);

// Gavel model -> the Lucid model whose features it borrows.
inline constexpr std::pair<std::string_view, std::string_view> kGavelToLucidModel[] = {
    {"A3C", "PPO"},
    {"CycleGAN", "DCGAN"},
    {"LM", "LSTM"},
    {"Recommendation", "NeuMF"},
    {"ResNet-18", "ResNet18"},
    {"ResNet-50", "ResNet50"},
    {"Transformer", "Transformer"}};

// The interference model for one GPU type: the measured pairs (TableInterferenceModel), with a
// FittedInterferenceModel fitted to all of Lucid's samples as the fallback (docs/sharing.md gives
// its error). InvalidArgument when there are too few Lucid samples to fit.
Result<std::unique_ptr<sharing::TableInterferenceModel>> MakeInterferenceModel(
    const SharingMeasurements& measurements, std::string_view gpu_type);

// Reads <traces_dir>/lucid/{single_data,colocate_info}.csv and, with `with_gavel`,
// <traces_dir>/gavel/simulation_throughputs.json. NotFound when a file is missing.
Result<SharingMeasurements> LoadSharingMeasurements(const std::string& traces_dir, bool with_gavel);
// Reads an openb pod list (e.g. <traces>/alibaba-gpu-v2023/openb_pod_list_default.csv).
Result<std::vector<int>> LoadAlibabaGpuMilli(const std::string& path);

}  // namespace dlsched
