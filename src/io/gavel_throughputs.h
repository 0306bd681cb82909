#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"

namespace dlsched {

// Gavel's measured throughput table (stanford-futuredata/gavel, scheduler/
// simulation_throughputs.json; format in shared/traces/gavel/SOURCE.md):
//   {worker_type: {job_key: {"null": isolated, other_job_key: [self, other], ...}}}
// worker_type is "k80", "p100", "v100" or "<type>_unconsolidated" (a multi-GPU gang spread over
// servers); job_key is a Python tuple repr "('ResNet-50 (batch size 64)', 4)" (job type, scale
// factor = #GPUs). Throughputs are training iterations per second of the whole gang.
//
// Loaded once, immutable afterwards: every const method is safe to call from many threads.
class GavelThroughputTable {
 public:
  // A model at a batch size, e.g. {"ResNet-50", 64}. batch_size 0 means the table lists the model
  // without a batch size ("A3C", "CycleGAN"); such an entry matches any requested batch size.
  struct JobType {
    std::string model;
    int batch_size = 0;
    friend auto operator<=>(const JobType&, const JobType&) = default;
  };
  // A job type at a gang size: one row of the table.
  struct JobKey {
    std::string model;
    int batch_size = 0;
    int scale_factor = 1;  // #GPUs
    friend auto operator<=>(const JobKey&, const JobKey&) = default;
  };

  // Factor applied to the consolidated throughput of a multi-GPU gang spread over several nodes
  // when the table has no "<type>_unconsolidated" measurement for that job type (the snapshot
  // lacks k80 ResNet-50 bs64/bs128 at 2-8 GPUs). 0.85 matches SimpleThroughputModel's default
  // node_penalty of 0.15; the measured unconsolidated/consolidated ratios range from ~0.1 (v100
  // LM) to ~1.2 (k80 ResNet), so any single constant is a rough guess.
  static constexpr double kUnconsolidatedFallbackFactor = 0.85;

  // Reads and parses the table at `path`. NotFound when the file does not exist, IoError when it
  // cannot be read, InvalidArgument (naming the file and, where possible, the bad key) when it is
  // not valid JSON of the expected shape.
  static Result<GavelThroughputTable> Load(const std::string& path);
  // Parses the table from JSON text; `origin` (a file name) prefixes error messages.
  static Result<GavelThroughputTable> Parse(std::string_view json_text, std::string_view origin);

  // "ResNet-50 (batch size 64)" -> {"ResNet-50", 64}; "A3C" -> {"A3C", 0}. The form Gavel's
  // traces use in their job_type column. InvalidArgument on an empty name or a bad batch size.
  static Result<JobType> ParseJobType(std::string_view text);
  // "('ResNet-50 (batch size 64)', 4)" -> {"ResNet-50", 64, 4}. Accepts either quote character
  // and extra blanks. InvalidArgument on anything else, or a scale factor < 1.
  static Result<JobKey> ParseJobKey(std::string_view text);

  // Iterations per second of `model` at `batch_size` running alone on `num_gpus` GPUs of
  // `gpu_type` (case-insensitive: "V100" or "v100"). `consolidated` = the gang sits on one node;
  // ignored for num_gpus == 1. nullopt when the job type or the GPU type is not in the table or
  // num_gpus < 1. 0.0 when the table says the job cannot run there (k80 ResNet-50 bs128 on 2-8
  // GPUs is recorded as 0).
  //
  // Scale factors the table did not measure (Gavel measures 1, 2, 4, 8; some job types only 1):
  //   - between two measured sizes: linear interpolation of the gang throughput between the two
  //     neighbours (3 GPUs = mean of 2 and 4), or 0 if either neighbour is 0 (cannot run);
  //   - above the largest measured size M: the per-GPU throughput at M times num_gpus, i.e. no
  //     further loss of scaling efficiency beyond M (optimistic; 16 GPUs = 2 x the 8-GPU value);
  //   - below the smallest measured size: likewise from the smallest measured size.
  // Unconsolidated (num_gpus > 1, !consolidated): the same rule over the "<type>_unconsolidated"
  // measurements with scale factor >= 2 (a 1-GPU entry there is the consolidated value); when
  // there are none for this job type, the consolidated value x kUnconsolidatedFallbackFactor.
  std::optional<double> Isolated(std::string_view model, int batch_size, int num_gpus,
                                 std::string_view gpu_type, bool consolidated) const;

  // The raw measurement for `key` on `gpu_type` (no interpolation, no fallback); nullopt when
  // the table has no such row.
  std::optional<double> Measured(const JobKey& key, std::string_view gpu_type,
                                 bool consolidated) const;

  // Throughputs {of a, of b} when `a` and `b` space-share the same GPU(s) of `gpu_type`
  // (iterations per second each). nullopt when the table has no measurement for the pair.
  // {0, 0} means the pair may not (or was not measured to) share: the snapshot records every
  // multi-GPU pair and some 1-GPU pairs (memory) that way, and Gavel treats them as infeasible.
  // Pairs come from the consolidated worker types; the snapshot's unconsolidated copies are
  // identical where present and are validated but not stored. Job types match as in Isolated.
  std::optional<std::pair<double, double>> Colocated(const JobKey& a, const JobKey& b,
                                                     std::string_view gpu_type) const;

  // The iterations per second to put in JobSpec::ref_iters_per_s: `spec` alone on
  // spec.num_gpus GPUs of `reference_type`, consolidated (with the interpolation of Isolated).
  // nullopt when the table does not know the job or the type, or says it cannot run there.
  std::optional<double> ReferenceItersPerSecond(const JobSpec& spec,
                                                std::string_view reference_type) const;

  // Every job type of the table, sorted by (model, batch_size).
  const std::vector<JobType>& job_types() const { return job_types_; }
  // GPU types of the table, upper case, sorted ("K80", "P100", "V100").
  const std::vector<std::string>& gpu_types() const { return gpu_types_; }
  bool HasJobType(std::string_view model, int batch_size) const {
    return FindJobType(model, batch_size) >= 0;
  }
  bool HasGpuType(std::string_view gpu_type) const { return FindGpuType(gpu_type) >= 0; }
  // Number of isolated measurements and of stored co-location pairs (both directions counted).
  size_t num_measurements() const { return num_measurements_; }
  size_t num_pairs() const { return pairs_.size(); }

 private:
  struct Point {
    int scale_factor;
    double iters_per_s;
  };
  struct Pair {
    uint64_t key;  // PairKey(gpu, a_type, a_scale, b_type, b_scale)
    double self_iters_per_s;
    double other_iters_per_s;
  };
  class Builder;

  // Index into job_types_ / gpu_types_, or -1.
  int FindJobType(std::string_view model, int batch_size) const;
  int FindGpuType(std::string_view gpu_type) const;
  const std::vector<Point>& Series(int job_type, int gpu_type, bool unconsolidated) const {
    return series_[(static_cast<size_t>(job_type) * gpu_types_.size() + gpu_type) * 2 +
                   (unconsolidated ? 1 : 0)];
  }
  static uint64_t PairKey(int gpu, int a_type, int a_scale, int b_type, int b_scale);

  std::vector<JobType> job_types_;
  std::vector<std::string> gpu_types_;
  // [(job_type * gpu_types_.size() + gpu_type) * 2 + unconsolidated], sorted by scale factor.
  std::vector<std::vector<Point>> series_;
  std::vector<Pair> pairs_;  // sorted by key
  size_t num_measurements_ = 0;
};

// Ground-truth (or oracle) throughput from Gavel's table; jobs or GPU types the table does not
// know go to a fallback model. Immutable; safe to share across threads.
//
// ItersPerSecond: the table's isolated throughput of (spec.model, spec.batch_size) at the
// allocated GPU count (which may differ from spec.num_gpus), consolidated iff the placement is
// on one node. GPU type of a part = Cluster::node_gpu_type of its node; a gang mixing types runs
// at the minimum throughput over its types (synchronous training waits for the slowest). If any
// type of the placement, or the job type, is missing from the table, the whole answer comes from
// the fallback, so a job never mixes the two scales. Rack spread is not modelled (the table has
// none). Co-location is not modelled here (see GavelThroughputTable::Colocated).
class GavelThroughputModel final : public ThroughputModel {
 public:
  // `table` and `fallback` must be non-null.
  GavelThroughputModel(std::shared_ptr<const GavelThroughputTable> table,
                       std::shared_ptr<const ThroughputModel> fallback);

  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override;

  // See GavelThroughputTable::ReferenceItersPerSecond.
  std::optional<double> ReferenceItersPerSecond(const JobSpec& spec,
                                                std::string_view reference_type = "V100") const {
    return table_->ReferenceItersPerSecond(spec, reference_type);
  }
  const GavelThroughputTable& table() const { return *table_; }

 private:
  std::shared_ptr<const GavelThroughputTable> table_;
  std::shared_ptr<const ThroughputModel> fallback_;
};

}  // namespace dlsched
