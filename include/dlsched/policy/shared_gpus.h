#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/model/cluster.h"

namespace dlsched {

// The GPUs running jobs hold in a shared mode (ShareMode::kPacked or kTimeSliced) and the jobs
// holding each, kept across cycles: the Scheduler adds a job when it starts running shared (a
// launch, or a restored running job) and removes it when it stops, so a sharing policy reads the
// shared GPUs and their holders (SchedulingContext::shared_gpus) without reading every running
// job. A job held shared holds one GPU. O(1) per Add or Remove while a GPU has few holders;
// ForEach costs O(nodes / 64 + shared GPUs + holders). Owned by the Scheduler; single-threaded.
class SharedGpus {
 public:
  // `cluster` must outlive the index.
  explicit SharedGpus(const Cluster& cluster);

  // `job` now holds GPU `gpu` of `node` in a shared mode. Precondition: a real node and GPU, and
  // `job` not already among its holders.
  void Add(NodeId node, int gpu, JobId job);
  // `job` no longer holds it. Precondition: it is among its holders.
  void Remove(NodeId node, int gpu, JobId job);

  // The jobs holding GPU `gpu` of `node` in a shared mode, ascending by id; empty when none.
  std::span<const JobId> holders(NodeId node, int gpu) const {
    return holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  }
  // GPUs of `node` held in a shared mode.
  GpuMask mask(NodeId node) const { return mask_[node.index()]; }
  // How many GPUs are held in a shared mode.
  int size() const { return size_; }

  // Calls fn(NodeId node, int gpu, std::span<const JobId> holders) for each GPU held in a shared
  // mode, in ascending (node, GPU) order; `holders` as holders() gives them. `fn` must not change
  // the index.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t w = 0; w < nodes_.size(); ++w) {
      for (uint64_t word = nodes_[w]; word != 0; word &= word - 1) {
        const NodeId node(
            static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(word))));
        for (GpuMask gpus = mask_[node.index()]; gpus != 0; gpus &= gpus - 1) {
          const int gpu = std::countr_zero(gpus);
          fn(node, gpu, holders(node, gpu));
        }
      }
    }
  }

 private:
  const Cluster* cluster_;
  std::vector<std::vector<JobId>> holders_;  // per GPU (Cluster::first_gpu), ascending
  std::vector<GpuMask> mask_;                // per node: GPUs with holders
  std::vector<uint64_t> nodes_;              // bit per node: whether its mask_ is not 0
  int size_ = 0;                             // GPUs with holders
};

}  // namespace dlsched
