#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/cluster_state.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/shared_gpus.h"
#include "dlsched/policy/sharing_view.h"
#include "dlsched/sharing/packing.h"

namespace dlsched {

// The shared GPUs another job may join, as the sharing decorator (policy/sharing_policy.h) asks
// at each cycle: held in a shared mode by fewer than max_jobs_per_gpu jobs, none of them asked
// to stop (Job::preempt_requested), on an online node. They are filed by GPU type and sharing
// group (SharingView::ShareGroup of the GPU's lowest holder), each with its holders as the
// packer sees them (features, memory demand), so that a cycle neither walks every shared GPU
// nor asks the view about their holders again.
// Kept across cycles: Sync rereads only the GPUs changed since the last Sync
// (SharedGpus::ChangedSince) and those of the running jobs whose figures changed
// (SharingView::DemandChangedSince); every shared GPU when either cannot say. O(changes) per
// Sync and O(1) per change while a GPU has few holders. Single-threaded.
class OpenSharedGpus {
 public:
  struct Options {
    int max_jobs_per_gpu = 2;  // k >= 1
    double memory_percentile = 95;
    // Time-sliced GPUs swap the other holders' memory out: a holder packs as 0 MiB.
    bool time_sliced = false;
  };
  // An open GPU. Its index is the cluster's (Cluster::first_gpu(node) + gpu), so ascending index
  // is ascending (node, GPU).
  struct Gpu {
    NodeId node;
    int gpu = 0;
    int64_t memory_mib = 0;  // the GPU's
    int64_t used_mib = 0;    // its holders' memory_mib, summed
    // Its holders in holders() order, as the packer sees them: SharingView::Features, the
    // MemoryDemandMib at the percentile (0 time-sliced), pinned_gpu -1.
    std::vector<sharing::PackJob> holders;
  };
  // The open GPUs of one type and sharing group.
  struct Group {
    std::vector<uint64_t> bits;  // bit per cluster GPU index: open here
    size_t gpus = 0;             // bits set
    size_t holders = 0;          // their holders, summed
  };
  using Key = std::pair<uint32_t, uint64_t>;  // (GPU type index, sharing group)

  explicit OpenSharedGpus(Options options) : options_(options) {}

  // Brings the index up to date with the world the arguments describe (the Scheduler's, through
  // a SchedulingContext). Objects other than those of the last call, or copies, are fine: their
  // revisions differ, and the index rebuilds.
  void Sync(const Cluster& cluster, const ClusterState& state, const JobTable& jobs,
            const SharedGpus& shared, const SharingView& sharing);

  // The groups with at least one open GPU, ascending by (type, group).
  const std::map<Key, Group>& groups() const { return groups_; }
  // An open GPU by index. Precondition: one of groups()' GPUs.
  const Gpu& gpu(uint32_t index) const { return gpus_[index].gpu; }
  // gpu(index).used_mib, read from an array of its own (a walk that reads only the memory
  // touches less).
  int64_t used_mib(uint32_t index) const { return used_mib_[index]; }
  // Calls fn(uint32_t index) for the group's GPUs, ascending by index, until it returns false.
  // O(cluster GPUs / 64 + GPUs visited).
  template <typename Fn>
  void ForEachGpu(const Group& group, Fn&& fn) const {
    for (size_t w = 0; w < group.bits.size(); ++w) {
      for (uint64_t word = group.bits[w]; word != 0; word &= word - 1) {
        const auto index =
            static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(word)));
        if (!fn(index)) return;
      }
    }
  }

 private:
  struct Entry {
    bool open = false;
    Key key;
    Gpu gpu;
  };
  void Rebuild(const Cluster& cluster, const ClusterState& state, const JobTable& jobs,
               const SharedGpus& shared, const SharingView& sharing);
  // Rereads one GPU: files it under its group if open, else files it nowhere.
  void Refresh(const Cluster& cluster, const ClusterState& state, const JobTable& jobs,
               const SharedGpus& shared, const SharingView& sharing, NodeId node, int gpu);
  void Unfile(uint32_t index);

  Options options_;
  std::vector<Entry> gpus_;        // per cluster GPU index
  std::vector<int64_t> used_mib_;  // per cluster GPU index: gpus_[i].gpu.used_mib
  std::map<Key, Group> groups_;
  // The revisions at the last Sync (SharedGpus::change_revision, SharingView::DemandRevision);
  // nullopt before the first, or where the view keeps no revision.
  std::optional<std::pair<uint64_t, uint64_t>> synced_at_;
  std::vector<std::pair<NodeId, int>> changed_gpus_;  // Sync's buffers
  std::vector<JobId> changed_jobs_;
};

}  // namespace dlsched
