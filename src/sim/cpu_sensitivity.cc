#include "sim/cpu_sensitivity.h"

#include <algorithm>
#include <array>

namespace dlsched::sim {
namespace {

// Image models decode and augment JPEGs per sample, so the lighter the network the more cores
// it takes to keep a GPU busy; speech models compute spectrograms on the host; language models
// read pre-tokenised text and are GPU-bound almost at once. ASSUMPTION: the saturation points
// are this project's choice in the shapes Synergy reports (see the header).
constexpr std::array<DataLoadingModel, 13> kModels = {{
    {"alexnet", 12, 0.05},
    {"shufflenet_v2", 9, 0.05},
    {"resnet18", 8, 0.10},
    {"mobilenet_v2", 6, 0.05},
    {"resnet50", 4, 0.10},
    {"vgg16", 3, 0},
    {"resnet101", 3, 0},
    {"inception_v3", 4, 0},
    {"m5", 10, 0.05},
    {"deepspeech", 5, 0.10},
    {"gnmt", 1, 0.20},
    {"transformer_xl", 1, 0.20},
    {"lstm", 1, 0.10},
}};

}  // namespace

std::span<const DataLoadingModel> DataLoadingModels() { return kModels; }

std::optional<double> SaturatingCpusPerGpu(std::string_view model) {
  for (const DataLoadingModel& m : kModels) {
    if (m.model == model) return m.saturating_cpus_per_gpu;
  }
  return std::nullopt;
}

double CpuSpeedFactor(double saturating, double cpus_per_gpu) {
  return std::clamp(cpus_per_gpu / saturating, 0.0, 1.0);
}

double CpuSensitiveThroughputModel::ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                                   const Placement& placement) const {
  const double rate = base_->ItersPerSecond(spec, cluster, placement);
  if (spec.model.empty()) return rate;  // most trace jobs: no lookup
  const std::optional<double> saturating = SaturatingCpusPerGpu(spec.model);
  if (!saturating) return rate;
  double factor = 1;
  for (const NodeGpus& part : placement.parts) {
    const int gpus = CountGpus(part.gpus);
    if (gpus == 0 || part.cpus == 0) continue;
    factor = std::min(factor, CpuSpeedFactor(*saturating, static_cast<double>(part.cpus) / gpus));
  }
  return rate * factor;
}

}  // namespace dlsched::sim
