#include "dlsched/perf/noisy_throughput_model.h"

#include <algorithm>
#include <string_view>

#include "dlsched/common/rng.h"
#include "dlsched/common/status.h"

namespace dlsched {
namespace {

// FNV-1a over the bytes, then folded with `h`: a fixed function on every platform.
uint64_t Mix(uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t Mix(uint64_t h, int64_t value) {
  for (int i = 0; i < 8; ++i) {
    h ^= static_cast<uint64_t>(value >> (8 * i)) & 0xFF;
    h *= 0x100000001B3ull;
  }
  return h;
}

}  // namespace

NoisyThroughputModel::NoisyThroughputModel(std::shared_ptr<const ThroughputModel> base,
                                           double sigma, uint64_t seed)
    : base_(std::move(base)), sigma_(sigma), seed_(seed) {
  DS_CHECK(base_ != nullptr && sigma_ >= 0) << "noisy model needs a base and sigma >= 0";
}

double NoisyThroughputModel::Factor(const JobSpec& spec, std::string_view type) const {
  if (sigma_ == 0) return 1.0;
  uint64_t h = Mix(0xCBF29CE484222325ull, static_cast<int64_t>(seed_));
  h = Mix(h, spec.name);
  h = Mix(Mix(h, std::string_view("\x1f")), spec.user);
  h = Mix(h, spec.submit_time.time_since_epoch().count());
  h = Mix(h, static_cast<int64_t>(spec.num_gpus));
  h = Mix(Mix(h, std::string_view("\x1f")), type);
  Rng rng(h);
  return rng.LogNormal(0.0, sigma_);
}

double NoisyThroughputModel::ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                            const Placement& placement) const {
  const double rate = base_->ItersPerSecond(spec, cluster, placement);
  // (A CPU job runs on no GPU type: no type's error applies.)
  if (sigma_ == 0 || !(rate > 0) || spec.num_gpus == 0) return rate;
  // A synchronous gang is as slow as its slowest GPU: take the smallest error of its types.
  double factor = 0;
  GpuTypeId previous;
  for (const NodeGpus& part : placement.parts) {
    const GpuTypeId type = cluster.node_gpu_type(part.node);
    if (type == previous) continue;
    previous = type;
    const double f = Factor(spec, cluster.gpu_type_name(type));
    factor = factor == 0 ? f : std::min(factor, f);
  }
  return rate * factor;
}

}  // namespace dlsched
