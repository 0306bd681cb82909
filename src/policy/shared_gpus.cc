#include "dlsched/policy/shared_gpus.h"

#include <algorithm>
#include <atomic>

#include "dlsched/common/status.h"

namespace dlsched {
namespace {

// A stamp no index has had before (SharedGpus::join_revision).
uint64_t NextJoinRevision() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

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
      several_(cluster),
      join_revision_(NextJoinRevision()),
      log_base_(join_revision_) {}

void SharedGpus::Add(NodeId node, int gpu, JobId job) {
  std::vector<JobId>& holders = holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  const auto at = std::ranges::lower_bound(holders, job);
  DS_CHECK(at == holders.end() || *at != job) << "job " << job << " already holds the GPU";
  holders.insert(at, job);
  if (holders.size() == 1) {
    ++size_;
    any_.Set(node, gpu);
    alone_.Set(node, gpu);
    return;
  }
  join_revision_ = NextJoinRevision();
  if (joins_.size() == 2 * kJoinLog - 1) {
    log_base_ = joins_[kJoinLog - 1].revision;
    joins_.erase(joins_.begin(), joins_.begin() + kJoinLog);
  }
  joins_.push_back({join_revision_, node, gpu});
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
  if (holders.empty()) {
    --size_;
    any_.Clear(node, gpu);
    alone_.Clear(node, gpu);
  } else if (holders.size() == 1) {
    several_.Clear(node, gpu);
    alone_.Set(node, gpu);
  }
}

bool SharedGpus::JoinedSince(uint64_t since, std::vector<std::pair<NodeId, int>>& gpus) const {
  gpus.clear();
  if (since == join_revision_) return true;
  // The entries' revisions ascend: the counter behind them only grows.
  size_t first;
  if (since == log_base_) {
    first = 0;
  } else {
    const auto at = std::ranges::lower_bound(joins_, since, {}, &Join::revision);
    if (at == joins_.end() || at->revision != since) return false;
    first = static_cast<size_t>(at - joins_.begin()) + 1;
  }
  for (size_t i = first; i < joins_.size(); ++i) gpus.emplace_back(joins_[i].node, joins_[i].gpu);
  return true;
}

}  // namespace dlsched
