#include "dlsched/policy/shared_gpus.h"

#include <algorithm>

#include "dlsched/common/status.h"

namespace dlsched {

SharedGpus::Bits::Bits(const Cluster& cluster)
    : mask(static_cast<size_t>(cluster.num_nodes()), 0),
      nodes((static_cast<size_t>(cluster.num_nodes()) + 63) / 64, 0) {}

void SharedGpus::Bits::Set(NodeId node, int gpu) {
  mask[node.index()] |= GpuMask{1} << gpu;
  nodes[node.index() / 64] |= uint64_t{1} << (node.index() % 64);
}

void SharedGpus::Bits::Clear(NodeId node, int gpu) {
  mask[node.index()] &= ~(GpuMask{1} << gpu);
  if (mask[node.index()] == 0) nodes[node.index() / 64] &= ~(uint64_t{1} << (node.index() % 64));
}

SharedGpus::SharedGpus(const Cluster& cluster)
    : cluster_(&cluster),
      holders_(static_cast<size_t>(cluster.total_gpus())),
      any_(cluster),
      alone_(cluster),
      several_(cluster) {}

void SharedGpus::Add(NodeId node, int gpu, JobId job) {
  std::vector<JobId>& holders = holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  const auto at = std::ranges::lower_bound(holders, job);
  DS_CHECK(at == holders.end() || *at != job) << "job " << job << " already holds the GPU";
  holders.insert(at, job);
  changes_.Record({node, gpu});
  if (holders.size() == 1) {
    ++size_;
    any_.Set(node, gpu);
    alone_.Set(node, gpu);
    return;
  }
  joins_.Record({node, gpu});
  if (holders.size() == 2) {
    alone_.Clear(node, gpu);
    several_.Set(node, gpu);
  }
}

void SharedGpus::Remove(NodeId node, int gpu, JobId job) {
  std::vector<JobId>& holders = holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  const auto at = std::ranges::lower_bound(holders, job);
  DS_CHECK(at != holders.end() && *at == job) << "job " << job << " does not hold the GPU";
  holders.erase(at);
  changes_.Record({node, gpu});
  if (holders.empty()) {
    --size_;
    any_.Clear(node, gpu);
    alone_.Clear(node, gpu);
  } else if (holders.size() == 1) {
    several_.Clear(node, gpu);
    alone_.Set(node, gpu);
  }
}

void SharedGpus::Stopping(const Job& job) {
  if (job.share == ShareMode::kExclusive || job.placement.parts.empty()) return;
  const NodeGpus& part = job.placement.parts.front();
  changes_.Record({part.node, std::countr_zero(part.gpus)});
}

void SharedGpus::NodeChanged(NodeId node) {
  for (GpuMask gpus = mask(node); gpus != 0; gpus &= gpus - 1) {
    changes_.Record({node, std::countr_zero(gpus)});
  }
}

bool SharedGpus::JoinedSince(uint64_t since, std::vector<std::pair<NodeId, int>>& gpus) const {
  return joins_.Since(since, gpus);
}

}  // namespace dlsched
