#include "dlsched/policy/shared_gpus.h"

#include <algorithm>

#include "dlsched/common/status.h"

namespace dlsched {

SharedGpus::SharedGpus(const Cluster& cluster)
    : cluster_(&cluster),
      holders_(static_cast<size_t>(cluster.total_gpus())),
      mask_(static_cast<size_t>(cluster.num_nodes()), 0),
      nodes_((static_cast<size_t>(cluster.num_nodes()) + 63) / 64, 0) {}

void SharedGpus::Add(NodeId node, int gpu, JobId job) {
  std::vector<JobId>& holders = holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  const auto at = std::ranges::lower_bound(holders, job);
  DS_CHECK(at == holders.end() || *at != job) << "job " << job << " already holds the GPU";
  holders.insert(at, job);
  if (holders.size() > 1) return;
  ++size_;
  mask_[node.index()] |= GpuMask{1} << gpu;
  nodes_[node.index() / 64] |= uint64_t{1} << (node.index() % 64);
}

void SharedGpus::Remove(NodeId node, int gpu, JobId job) {
  std::vector<JobId>& holders = holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  const auto at = std::ranges::lower_bound(holders, job);
  DS_CHECK(at != holders.end() && *at == job) << "job " << job << " does not hold the GPU";
  holders.erase(at);
  if (!holders.empty()) return;
  --size_;
  mask_[node.index()] &= ~(GpuMask{1} << gpu);
  if (mask_[node.index()] == 0) nodes_[node.index() / 64] &= ~(uint64_t{1} << (node.index() % 64));
}

}  // namespace dlsched
