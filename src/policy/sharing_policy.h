#pragma once

// Opportunistic GPU sharing as a policy (seed 000, issue 3; docs/sharing.md): a base policy
// (las, fifo-backfill, ...) orders and places jobs on whole GPUs as always; then single-GPU jobs
// it left waiting join GPUs that running single-GPU jobs hold, when the packer finds room:
//   - packed (greedy-share, heuristic-share, naive-share): at most k jobs per GPU, their memory
//     demand at a percentile of what was observed (not the peak: the "opportunistic" part) fits
//     the GPU's memory, and, when interference-aware, every job's predicted slowdown stays
//     within the bound. The packer is GreedyPack (O(n log n)) or HeuristicPack (O(n^2 log n)),
//     with the running jobs pinned to their GPUs.
//   - time-sliced (gandiva): up to k jobs take turns on a GPU; memory is swapped out between
//     turns, so only each job's own demand must fit.
// Dynamic adjustment: when GPUs are free beyond what waiting jobs need, jobs slowed by their
// GPU's sharers migrate (checkpoint, requeue, restore on a free GPU); so do jobs whose GPU's
// observed demand no longer fits. Hysteresis: a job migrates only after min_residence on its
// GPU, when slowed by at least min_slowdown, and at most max_per_job times.
// Without a SharingView (a driver that offers no sharing) it decides exactly as its base.

#include <memory>
#include <string>

#include "dlsched/policy/policy.h"

namespace dlsched {

struct SharingPolicyConfig {
  enum class Packer { kGreedy, kHeuristic };

  std::string name;
  std::string description;
  Packer packer = Packer::kGreedy;
  ShareMode mode = ShareMode::kPacked;  // kPacked or kTimeSliced
  bool interference_aware = true;       // false: k and memory only (naive packing)
  int max_jobs_per_gpu = 2;             // k >= 1
  double memory_percentile = 95;        // 0..100
  double max_slowdown = 1.5;            // >= 1
  int max_candidates = 64;              // waiting jobs offered to the packer per cycle
  bool migrate = true;
  int max_migrations_per_job = 2;
  Duration min_residence = std::chrono::minutes(10);
  double min_slowdown_to_migrate = 1.2;
};

// InvalidArgument naming the bad field.
Status ValidateSharingPolicyConfig(const SharingPolicyConfig& config);

// `base` must not be null.
std::unique_ptr<SchedulingPolicy> MakeSharingPolicy(SharingPolicyConfig config,
                                                    std::unique_ptr<SchedulingPolicy> base);

}  // namespace dlsched
