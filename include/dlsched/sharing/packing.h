#pragma once

// Static allocation for opportunistic GPU sharing (seed 000, issue 3 item 4): pack jobs onto GPUs
// of one type so that at most k jobs share a GPU, their memory demand at a chosen percentile fits
// the GPU's memory, and every job's predicted slowdown stays within a bound. Two algorithms, as
// the seed's thesis gives them:
//   GreedyPack     O(n log n)    first-fit-decreasing by memory demand
//   HeuristicPack  O(n^2 log n)  the greedy's packing improved by local search (moves and pair
//                                swaps) that lowers the total predicted slowdown
// GPUs are slots 0, 1, ...; the caller maps them to real GPUs. Pure functions; thread-safe when
// the model is.

#include <cstdint>
#include <span>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/sharing/interference.h"

namespace dlsched::sharing {

// One job to place.
struct PackJob {
  SharingJob job;  // for the interference model
  // Memory demand at the chosen percentile (DemandHistory::MemoryPercentileMib(p), or a
  // profile's peak when nothing was observed). >= 0.
  int64_t memory_mib = 0;
};

struct PackOptions {
  int64_t gpu_memory_mib = 0;  // per GPU; > 0
  int max_jobs_per_gpu = 2;    // k >= 1
  // Every job's predicted slowdown (1 / GroupSpeeds) on its GPU must be <= this; >= 1.
  double max_slowdown = 1.5;
  // GPUs available; 0 = as many as needed. With 0, HeuristicPack keeps to as many GPUs as
  // GreedyPack used.
  int max_gpus = 0;
  // GreedyPack: open GPUs whose memory fits a job but whose interference bound fails are tried
  // this many times before the job opens a new GPU (what keeps the greedy O(n log n)). >= 1.
  int max_probes = 8;
  // HeuristicPack: local-search rounds; 0 = ceil(log2(n + 1)). A round that moves nothing ends
  // the search early.
  int max_rounds = 0;
};

// Where the jobs went.
struct Packing {
  // Job indices (into the span given to the packer) per GPU slot, ascending within a GPU.
  // Slots in use only: no empty list.
  std::vector<std::vector<int>> gpus;
  // Jobs not placed, ascending: their memory exceeds a GPU's, or max_gpus ran out.
  std::vector<int> unplaced;
  // Predicted slowdown per job (>= 1); 0 for an unplaced job.
  std::vector<double> slowdown;
  double total_slowdown = 0.0;  // over placed jobs
  // HeuristicPack: local-search rounds run, the last one included (it may have moved nothing);
  // 0 from GreedyPack.
  int rounds = 0;
};

// InvalidArgument naming the bad field.
Status ValidatePackOptions(const PackOptions& options);

// First-fit-decreasing: jobs in decreasing memory demand (ties: SM utilisation, then index), each
// on the lowest-numbered GPU with fewer than k jobs, enough free memory and no job's slowdown over
// the bound once it joins; after max_probes rejected GPUs, on a new one. GPUs are found through a
// max-tree of free memory, O(log n) per probe, so O(n log n) in all (k and max_probes constant).
Result<Packing> GreedyPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                           const PackOptions& options);

// GreedyPack, then rounds of local search that lower the total predicted slowdown without
// breaking a constraint or using more GPUs: each round visits the placed jobs in decreasing
// slowdown and applies the best of (a) moving the job to another GPU (an empty one while the GPU
// budget allows) and (b) swapping it with a job on another GPU, if that lowers the total. A visit
// looks at every GPU and every job, O(n k^2); a round O(n^2), ceil(log2(n + 1)) rounds:
// O(n^2 log n). Never worse than GreedyPack's total slowdown.
Result<Packing> HeuristicPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                              const PackOptions& options);

// FailedPrecondition naming the first broken rule: a job placed twice or neither placed nor
// unplaced, a GPU with more than k jobs or over its memory, a job over the slowdown bound, more
// GPUs than max_gpus (when set), or slowdowns that differ from the model's. For tests and for
// callers that edit a packing.
Status CheckPacking(const Packing& packing, std::span<const PackJob> jobs,
                    const InterferenceModel& model, const PackOptions& options);

}  // namespace dlsched::sharing
