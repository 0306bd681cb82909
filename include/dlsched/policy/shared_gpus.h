#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/change_log.h"

namespace dlsched {

// The GPUs running jobs hold in a shared mode (ShareMode::kPacked or kTimeSliced) and the jobs
// holding each, kept across cycles: the Scheduler adds a job when it starts running shared (a
// launch, or a restored running job) and removes it when it stops, so a sharing policy reads the
// shared GPUs and their holders (SchedulingContext::shared_gpus) without reading every running
// job. A job held shared holds one GPU. The GPUs are filed by holder count too (one, or several),
// so a walk that needs only one kind visits only those, and each change is logged (JoinedSince,
// ChangedSince), so a reader that keeps what it derived from the GPUs rereads only those that
// changed. O(1) per Add or Remove while a GPU has few holders; ForEach costs O(nodes / 64 + GPUs
// visited + their holders). Owned by the Scheduler; single-threaded.
class SharedGpus {
 public:
  // Which shared GPUs a walk visits, by how many jobs hold each.
  enum class Held { kAny, kAlone, kBySeveral };

  // `cluster` must outlive the index.
  explicit SharedGpus(const Cluster& cluster);

  // `job` now holds GPU `gpu` of `node` in a shared mode. Precondition: a real node and GPU, and
  // `job` not already among its holders.
  void Add(NodeId node, int gpu, JobId job);
  // `job` no longer holds it. Precondition: it is among its holders.
  void Remove(NodeId node, int gpu, JobId job);
  // What else changes a shared GPU's standing for ChangedSince: `job` was asked to stop
  // (Job::preempt_requested set; a no-op unless it holds a GPU in a shared mode), and `node` went
  // offline or came back (each GPU of it held in a shared mode changed).
  void Stopping(const Job& job);
  void NodeChanged(NodeId node);

  // The jobs holding GPU `gpu` of `node` in a shared mode, ascending by id; empty when none.
  std::span<const JobId> holders(NodeId node, int gpu) const {
    return holders_[static_cast<size_t>(cluster_->first_gpu(node) + gpu)];
  }
  // GPUs of `node` held in a shared mode.
  GpuMask mask(NodeId node) const { return any_.mask[node.index()]; }
  // How many GPUs are held in a shared mode.
  int size() const { return size_; }
  // A stamp that differs from every earlier one whenever a job joins a GPU others already hold
  // (so a GPU's holders may demand more than before); an Add to a GPU nobody held and a Remove
  // keep it. Taken from a process-wide counter: two indices share a stamp only where one is a
  // copy of the other with no join since.
  uint64_t join_revision() const { return joins_.revision(); }
  // The GPUs jobs joined since `since` was the join revision, for a caller that looks only at
  // what changed: whether the index still knows them (`since` is the current join revision or
  // one of the last kJoinLog or more it had), and if so `gpus` (cleared first) gets each joined
  // GPU in the order of the joins, once per join. False for another index's revision or one
  // forgotten; then `gpus` is empty and the caller must take every GPU as joined. O(log kJoinLog
  // + joins listed).
  bool JoinedSince(uint64_t since, std::vector<std::pair<NodeId, int>>& gpus) const;
  // How many of the last joins JoinedSince remembers at least.
  static constexpr size_t kJoinLog = ChangeLog<std::pair<NodeId, int>>::kKeep;

  // A stamp that differs from every earlier one whenever a GPU's holders change (Add, Remove),
  // a holder is asked to stop (Stopping) or its node goes offline or comes back (NodeChanged).
  uint64_t change_revision() const { return changes_.revision(); }
  // As JoinedSince, for every change change_revision() counts: the GPUs changed since `since`
  // was the change revision, in the order of the changes, once per change (the last kJoinLog or
  // more are known). O(log kJoinLog + changes listed).
  bool ChangedSince(uint64_t since, std::vector<std::pair<NodeId, int>>& gpus) const {
    return changes_.Since(since, gpus);
  }

  // Calls fn(NodeId node, int gpu, std::span<const JobId> holders) for each GPU held in a shared
  // mode (with `which`: by one job only, or by several), in ascending (node, GPU) order;
  // `holders` as holders() gives them. `fn` must not change the index.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForEach(Held::kAny, fn);
  }
  template <typename Fn>
  void ForEach(Held which, Fn&& fn) const {
    const Bits& bits = which == Held::kAny ? any_ : which == Held::kAlone ? alone_ : several_;
    for (size_t w = 0; w < bits.nodes.size(); ++w) {
      for (uint64_t word = bits.nodes[w]; word != 0; word &= word - 1) {
        const NodeId node(
            static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(word))));
        for (GpuMask gpus = bits.mask[node.index()]; gpus != 0; gpus &= gpus - 1) {
          const int gpu = std::countr_zero(gpus);
          fn(node, gpu, holders(node, gpu));
        }
      }
    }
  }

 private:
  // A set of GPUs: a mask per node and a bit per node whose mask is not 0.
  struct Bits {
    explicit Bits(const Cluster& cluster);
    void Set(NodeId node, int gpu);
    void Clear(NodeId node, int gpu);
    std::vector<GpuMask> mask;    // per node
    std::vector<uint64_t> nodes;  // bit per node: whether its mask is not 0
  };

  const Cluster* cluster_;
  std::vector<std::vector<JobId>> holders_;    // per GPU (Cluster::first_gpu), ascending
  Bits any_;                                   // GPUs with holders
  Bits alone_;                                 // GPUs with one holder
  Bits several_;                               // GPUs with two or more
  int size_ = 0;                               // GPUs with holders
  ChangeLog<std::pair<NodeId, int>> joins_;    // one entry per join
  ChangeLog<std::pair<NodeId, int>> changes_;  // one entry per change_revision() change
};

}  // namespace dlsched
