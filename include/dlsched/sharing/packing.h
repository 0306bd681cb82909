#pragma once

// Static allocation for opportunistic GPU sharing (seed 000, issue 3 item 4): pack jobs onto GPUs
// of one type so that at most k jobs share a GPU, their memory demand at a chosen percentile fits
// the GPU's memory, and every job's predicted slowdown stays within a bound. Two algorithms, as
// the seed's thesis gives them:
//   GreedyPack     O(n log n)    first-fit-decreasing by memory demand
//   HeuristicPack  O(n^2 log n)  the greedy's packing improved by local search (moves and pair
//                                swaps) that lowers the total predicted slowdown
// GPUs are slots 0, 1, ...; the caller maps them to real GPUs. Jobs already running on a GPU
// may be pinned to their slot (PackJob::pinned_gpu): the packers place the other jobs beside them
// and never move them, which is what an online policy needs each scheduling cycle (no
// migration). Pure functions; thread-safe when the model is.

#include <cstdint>
#include <memory>
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
  // -1: free to place. Otherwise the slot the job occupies and must stay on (>= 0; < max_gpus
  // when max_gpus is set). Pinned jobs count toward their slot's memory and k, and a job may
  // join their slot only if none of them then exceeds max_slowdown. A pinned group that already
  // breaks a rule (over memory, over k, over the bound: the world changed since it was placed)
  // is kept as it is, but no other job joins its slot.
  int pinned_gpu = -1;
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
//
// Slot indices are stable: with max_gpus set they are the caller's 0 .. max_gpus-1 (pinned jobs
// on theirs, new jobs on any); without it, pinned slots keep their indices and the slots the
// packer opens are numbered from the largest pinned index + 1 (from 0 without pinned jobs), in
// opening order, without gaps. `gpus` is the compact view: gpus[g] is the g-th non-empty slot in
// ascending slot index, so its slot index is gpu_of[gpus[g][0]]: g itself when nothing is pinned
// and no slot below a used one is empty (as GreedyPack leaves them without pinned jobs).
struct Packing {
  // Job indices (into the span given to the packer) per non-empty GPU slot, ascending within a
  // GPU; the lists in ascending slot index. No empty list.
  std::vector<std::vector<int>> gpus;
  // Per job, the slot index it is on (a pinned job: its pinned_gpu); -1 when unplaced.
  std::vector<int> gpu_of;
  // Jobs not placed, ascending: their memory exceeds a GPU's, or max_gpus ran out. Never a
  // pinned job.
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
// InvalidArgument for a job with negative memory or a bad pinned_gpu: below -1, >= max_gpus when
// max_gpus > 0, or (without max_gpus) so large that new slots' indices would overflow an int.
// `options` must be valid. The packers call both.
Status ValidatePackJobs(std::span<const PackJob> jobs, const PackOptions& options);

// Pinned jobs first, on their slots (a slot holding pinned jobs is open); then first-fit-
// decreasing of the others: in decreasing memory demand (ties: SM utilisation, then index), each
// on the lowest-numbered open GPU with fewer than k jobs, enough free memory and no job's
// slowdown (pinned ones included) over the bound once it joins; when none is found, or after
// max_probes rejected GPUs, on a new one (the lowest unused slot with max_gpus, else the next
// number). GPUs are found through a max-tree of free memory, O(log n) per probe, so O(n log n)
// in all (k and max_probes constant).
Result<Packing> GreedyPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                           const PackOptions& options);

// GreedyPack, then rounds of local search that lower the total predicted slowdown without
// breaking a constraint or using more GPUs: each round visits the placed unpinned jobs in
// decreasing slowdown and applies the best of (a) moving the job to another GPU (an empty one
// while the GPU budget allows) and (b) swapping it with an unpinned job on another GPU, if that
// lowers the total. Pinned jobs never move, but unpinned ones move onto and away from their
// slots (every rule checked, the pinned jobs' slowdowns included; never onto a slot whose pinned
// group breaks a rule). A visit looks at every GPU and every job, O(n k^2); a round O(n^2),
// ceil(log2(n + 1)) rounds: O(n^2 log n). Never worse than GreedyPack's total slowdown. Without
// max_gpus the opened slots are renumbered without gaps (Packing's numbering rule).
Result<Packing> HeuristicPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                              const PackOptions& options);

// The buffers of a packing, kept between calls of GreedyPlace and HeuristicPlace: a caller that
// packs at every scheduling cycle passes the same one, so that a call allocates only where its
// input is larger than any before. Across calls it remembers only the model's pair speeds, by the
// two jobs' features, for the model object of the last call (another model object, told apart by
// InterferenceModel::serial even at a reused address, forgets them): models are immutable, so a
// call's placements do not depend on the calls before. Not thread-safe: one per calling thread.
class PackScratch {
 public:
  PackScratch();
  ~PackScratch();
  PackScratch(const PackScratch&) = delete;
  PackScratch& operator=(const PackScratch&) = delete;

  struct Buffers;  // the packers' own (packing.cc)
  Buffers& buffers() { return *buffers_; }

 private:
  std::unique_ptr<Buffers> buffers_;
};

// GreedyPack's and HeuristicPack's placements alone: `gpu_of` (resized to jobs.size()) is the
// Packing's gpu_of for the same input, without the lists, slowdowns or unplaced jobs that the
// Packing also builds. The same errors.
Status GreedyPlace(std::span<const PackJob> jobs, const InterferenceModel& model,
                   const PackOptions& options, PackScratch& scratch, std::vector<int>& gpu_of);
Status HeuristicPlace(std::span<const PackJob> jobs, const InterferenceModel& model,
                      const PackOptions& options, PackScratch& scratch, std::vector<int>& gpu_of);

// FailedPrecondition naming the first broken rule: a job placed twice or neither placed nor
// unplaced, a GPU with more than k jobs or over its memory, a job over the slowdown bound, more
// GPUs than max_gpus (when set) or a slot index outside 0 .. max_gpus-1, gpu_of that disagrees
// with gpus (or lists not in ascending slot order), a pinned job off its slot or unplaced, or
// slowdowns that differ from the model's. A GPU holding only pinned jobs is exempt from the
// k, memory and bound rules (a pinned group is accepted as it is). For tests and for callers that
// edit a packing.
Status CheckPacking(const Packing& packing, std::span<const PackJob> jobs,
                    const InterferenceModel& model, const PackOptions& options);

}  // namespace dlsched::sharing
