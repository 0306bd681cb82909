#pragma once

// How a training job's speed depends on the host CPUs it holds: the simulator's model of data
// loading (issue 20's experiment, docs/multi-resource.md, "Experiment: CPU-aware allocation").
//
// A job's input pipeline (read, decode, augment) runs on the host's cores and feeds its GPUs.
// With c cores per GPU it delivers samples at a rate proportional to c until the GPUs are the
// bottleneck, at `saturating_cpus_per_gpu` (s); beyond that more cores do not help. So the
// speed factor is min(1, c / s), a roofline that saturates at a different point per model.
// The shapes follow Synergy (Mohan et al., OSDI '22), which measured that image and speech
// models keep speeding up well past the GPU-proportional share of a server's cores (3 per GPU
// on their 8-GPU, 24-core servers) while language models are GPU-bound at 1-2 cores per GPU.
// The numbers in DataLoadingModels() are this project's own choice in those shapes, not
// Synergy's measurements (ASSUMPTION).

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "dlsched/perf/throughput_model.h"

namespace dlsched::sim {

struct DataLoadingModel {
  std::string_view model;          // JobSpec::model
  double saturating_cpus_per_gpu;  // s: cores per GPU at which it is GPU-bound, > 0
  double mix_weight;               // its share of the synthetic mix=dataload workload
};

// The built-in table, in mix order: image models (alexnet, shufflenet_v2, resnet18,
// mobilenet_v2, resnet50, and Chronus' vgg16, resnet101, inception_v3 with zero mix weight),
// speech (m5, deepspeech) and language (gnmt, transformer_xl, lstm). Mix weights sum to 1.
std::span<const DataLoadingModel> DataLoadingModels();

// s for a model of the table; nullopt for any other (its speed does not depend on CPUs).
std::optional<double> SaturatingCpusPerGpu(std::string_view model);

// min(1, cpus_per_gpu / saturating): the speed factor, in [0, 1]. Precondition: saturating > 0.
double CpuSpeedFactor(double saturating, double cpus_per_gpu);

// The ground truth with data loading: `base`'s rate times CpuSpeedFactor of the job's model at
// the cores per GPU it holds, the smallest over the placement's parts (the slowest node holds
// the gang back). A part that holds no cores (its node states none, or the job asks for none),
// a part without GPUs, and a job whose model is not in the table run at `base`'s rate: CPUs are
// not modelled there.
class CpuSensitiveThroughputModel final : public ThroughputModel {
 public:
  explicit CpuSensitiveThroughputModel(std::unique_ptr<ThroughputModel> base)
      : base_(std::move(base)) {}

  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override;

 private:
  std::unique_ptr<ThroughputModel> base_;
};

}  // namespace dlsched::sim
