#include "dlsched/sharing/packing.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

namespace dlsched::sharing {
namespace {

// Slowdowns within this of the bound count as within it (products of float table entries).
constexpr double kSlowdownTolerance = 1e-9;
// A local-search step must lower the total slowdown by more than this.
constexpr double kMinImprovement = 1e-9;
// HeuristicPack remembers move costs while visited jobs x slots stays within this (16 MiB).
constexpr size_t kMaxMoveMemo = size_t{1} << 20;

// Both pair slowdowns of two jobs (SlowdownOf PairSpeed(a, b) and of PairSpeed(b, a)) by their
// features, remembered across calls for one model: a pair's speeds are a function of the two
// feature vectors (models are immutable), and one scheduling cycle's packing asks about the pairs
// the last one asked about, of the jobs still waiting beside the jobs still running.
// Direct-mapped; an entry answers only features with the same bits, and only the model it was
// filled for (Use forgets every entry when the model is another object). The caller hashes each
// job once (Hash).
class PairSlowdownMemo {
 public:
  void Use(const InterferenceModel& model) {
    model_ = &model;
    if (serial_ == model.serial()) return;
    serial_ = model.serial();
    entries_.assign(kEntries, Entry{});
  }

  // Spreads jobs over the entries; SameBits decides.
  static uint64_t Hash(const SharingJob& job) {
    return (std::bit_cast<uint64_t>(job.sm_util) ^ (std::bit_cast<uint64_t>(job.mem_bw_util) >> 7) ^
            static_cast<uint64_t>(job.memory_mib) ^
            static_cast<uint64_t>(static_cast<uint32_t>(job.type)) << 40) *
           0x9e3779b97f4a7c15ULL;
  }

  // `hash_a`, `hash_b`: Hash(a), Hash(b). Precondition: Use(model) for this call's model.
  std::pair<double, double> Slowdowns(const SharingJob& a, uint64_t hash_a, const SharingJob& b,
                                      uint64_t hash_b) {
    Entry& e = entries_[((hash_a + hash_b * 0x9e3779b97f4a7c15ULL) >> 32) % kEntries];
    if (!e.set || !SameBits(e.a, a) || !SameBits(e.b, b)) {
      e.set = true;
      e.a = a;
      e.b = b;
      e.slowdown_a = SlowdownOf(model_->PairSpeed(a, b));
      e.slowdown_b = SlowdownOf(model_->PairSpeed(b, a));
    }
    return {e.slowdown_a, e.slowdown_b};
  }

 private:
  static constexpr size_t kEntries = 4096;
  struct Entry {
    bool set = false;
    SharingJob a;
    SharingJob b;
    double slowdown_a = 0.0;
    double slowdown_b = 0.0;
  };
  static bool SameBits(const SharingJob& a, const SharingJob& b) {
    return a.type == b.type && a.memory_mib == b.memory_mib &&
           std::bit_cast<uint64_t>(a.sm_util) == std::bit_cast<uint64_t>(b.sm_util) &&
           std::bit_cast<uint64_t>(a.mem_bw_util) == std::bit_cast<uint64_t>(b.mem_bw_util);
  }

  const InterferenceModel* model_ = nullptr;
  uint64_t serial_ = 0;  // the model whose pair speeds entries_ holds (0: none)
  std::vector<Entry> entries_;  // kEntries once Use was called
};

// Predicted slowdowns of small groups, in scratch buffers the caller keeps (`group`, `speeds`,
// `hashes` for the jobs' PairSlowdownMemo::Hash, and `pairs`, pointed at `model`).
class GroupEvaluator {
 public:
  GroupEvaluator(std::span<const PackJob> jobs, const InterferenceModel& model, double bound,
                 std::vector<SharingJob>& group, std::vector<double>& speeds,
                 std::vector<uint64_t>& hashes, PairSlowdownMemo& pairs)
      : jobs_(jobs),
        model_(model),
        limit_(bound + kSlowdownTolerance),
        group_(group),
        speeds_(speeds),
        hashes_(hashes),
        pairs_(pairs) {
    pairs_.Use(model);
    hashes_.assign(jobs.size(), 0);
  }

  // Sum of slowdowns of `members` without `skip` and with `add` (-1 = none), or nullopt when a
  // job's slowdown exceeds the bound. 0 for an empty group.
  std::optional<double> Cost(std::span<const int> members, int skip, int add) {
    // Groups of one and two, the packers' usual ones (k = 2, holders pinned alone), without the
    // scratch group: the same products and sums as the general path.
    if (members.size() <= 3) {
      int few[4];
      size_t count = 0;
      for (int m : members) {
        if (m != skip) few[count++] = m;
      }
      if (add >= 0) few[count++] = add;
      if (count == 0) return 0.0;
      if (count == 1) return 1.0;  // alone: speed 1 (an empty product), within any bound >= 1
      if (count == 2) return PairCost(few[0], few[1]);
    }
    group_.clear();
    for (int m : members) {
      if (m != skip) group_.push_back(jobs_[m].job);
    }
    if (add >= 0) group_.push_back(jobs_[add].job);
    speeds_.resize(group_.size());
    GroupSpeeds(model_, group_, speeds_);
    double total = 0.0;
    for (double speed : speeds_) {
      const double slowdown = SlowdownOf(speed);
      if (slowdown > limit_) return std::nullopt;
      total += slowdown;
    }
    return total;
  }

  // Cost(members, -1, add): the group with `add` joined. A slot held by one job, the local
  // search's usual move target, goes straight to the pair.
  std::optional<double> CostWith(std::span<const int> members, int add) {
    if (members.size() == 1) return PairCost(members[0], add);
    return Cost(members, -1, add);
  }

  // Writes each member's slowdown into `slowdown` (indexed by job).
  void Slowdowns(std::span<const int> members, std::vector<double>& slowdown) {
    if (members.size() == 1) {
      slowdown[members[0]] = 1.0;
      return;
    }
    if (members.size() == 2) {
      const auto [slowdown_0, slowdown_1] = PairSlowdowns(members[0], members[1]);
      slowdown[members[0]] = slowdown_0;
      slowdown[members[1]] = slowdown_1;
      return;
    }
    group_.clear();
    for (int m : members) group_.push_back(jobs_[m].job);
    speeds_.resize(group_.size());
    GroupSpeeds(model_, group_, speeds_);
    for (size_t i = 0; i < members.size(); ++i) slowdown[members[i]] = SlowdownOf(speeds_[i]);
  }

 private:
  // Cost of the group {a, b}, a first (the order of the sum). Always inlined: the packers' most
  // frequent call (every probe and move beside one job), where the call itself cost a sixth.
  [[gnu::always_inline]] std::optional<double> PairCost(int a, int b) const {
    const auto [slowdown_a, slowdown_b] = PairSlowdowns(a, b);
    if (slowdown_a > limit_ || slowdown_b > limit_) return std::nullopt;
    return slowdown_a + slowdown_b;
  }
  // SlowdownOf the model's PairSpeed(a, b) and PairSpeed(b, a), through the memo.
  std::pair<double, double> PairSlowdowns(int a, int b) const {
    return pairs_.Slowdowns(jobs_[a].job, HashOf(a), jobs_[b].job, HashOf(b));
  }
  // PairSlowdownMemo::Hash of a job's features (never 0), at its first pair: most jobs of a packing
  // are never paired.
  uint64_t HashOf(int j) const {
    uint64_t& hash = hashes_[j];
    if (hash == 0) hash = PairSlowdownMemo::Hash(jobs_[j].job) | 1;
    return hash;
  }

  std::span<const PackJob> jobs_;
  const InterferenceModel& model_;
  double limit_;  // the bound, within kSlowdownTolerance
  std::vector<SharingJob>& group_;
  std::vector<double>& speeds_;
  std::vector<uint64_t>& hashes_;
  PairSlowdownMemo& pairs_;
};

// A max-tree over GPU slots' free memory (-1 for a slot nothing may join: unopened, full or
// closed) answering "the lowest slot >= pos with at least `need` free" in O(log n). All slots
// start at -1.
class FreeMemoryTree {
 public:
  // `storage` is the caller's buffer, reused across calls.
  FreeMemoryTree(size_t slots, std::vector<int64_t>& storage)
      : size_(std::bit_ceil(std::max<size_t>(slots, 1))), tree_(storage) {
    tree_.assign(2 * size_, -1);
  }

  void Set(size_t slot, int64_t free_mib) {
    size_t i = size_ + slot;
    tree_[i] = free_mib;
    for (i /= 2; i >= 1; i /= 2) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }
  // Set's leaf alone; the tree answers again only after Build. For filling many slots at once.
  void SetLeaf(size_t slot, int64_t free_mib) { tree_[size_ + slot] = free_mib; }
  // The inner nodes from the leaves, O(slots): the tree Set would have left for the same leaves.
  void Build() {
    for (size_t i = size_ - 1; i >= 1; --i) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }

  // -1 when no slot qualifies.
  int64_t FindFirst(size_t pos, int64_t need) const { return Find(1, 0, size_, pos, need); }
  // The most free memory of any slot (-1 when none may be joined).
  int64_t Max() const { return tree_[1]; }

 private:
  int64_t Find(size_t node, size_t lo, size_t hi, size_t pos, int64_t need) const {
    if (hi <= pos || tree_[node] < need) return -1;
    if (hi - lo == 1) return static_cast<int64_t>(lo);
    const size_t mid = (lo + hi) / 2;
    const int64_t left = Find(2 * node, lo, mid, pos, need);
    return left >= 0 ? left : Find(2 * node + 1, mid, hi, pos, need);
  }

  size_t size_;
  std::vector<int64_t>& tree_;
};

// The GPU slots a packer may use, by position in ascending slot index: with max_gpus, slots
// 0 .. max_gpus-1; without, the pinned slots, then one new slot per unpinned job numbered from
// the largest pinned index + 1.
struct Slots {
  std::vector<int> index;                 // slot index per position, ascending
  std::vector<std::vector<int>> members;  // jobs per position
  std::vector<int64_t> used_mib;
  // The pinned group on this position breaks a rule: it stays as it is and nothing joins it.
  // A byte per position (not vector<bool>): the local search reads it at every slot it visits.
  std::vector<uint8_t> closed;
  // Slot indices from here on are the packer's own (none with max_gpus): Finish renumbers the
  // non-empty ones without gaps.
  int first_new = 0;
};

// GreedySlots' heap key of an unpinned job; the order is decreasing memory demand, then SM
// utilisation, then ascending index.
struct OrderKey {
  int64_t memory_mib;
  double sm_util;
  int job;
};

// HeuristicSlots' view of a slot position, read at every visit of the slot.
struct SearchSlot {
  int64_t used_mib = 0;
  int64_t room_mib = -1;  // the memory a job joining it may demand: -1 when full or closed
  double cost = 0.0;      // its members' total slowdown
  int version = 0;        // counts the changes of its members
  uint32_t size = 0;      // members
  uint32_t unpinned = 0;  // members free to move (swap partners)
  uint8_t closed = 0;     // Slots::closed
};

// A move's cost (GroupEvaluator::Cost of the slot with the job added), as of a slot version.
struct MoveMemo {
  double cost = 0.0;  // when has_cost
  int version = -1;
  bool has_cost = false;
};


}  // namespace

// Every buffer of one packing, kept by a PackScratch between calls.
struct PackScratch::Buffers {
  Slots slots;
  std::vector<OrderKey> keys;     // GreedySlots' heap of the unpinned jobs' order
  std::vector<int64_t> tree;      // FreeMemoryTree's
  std::vector<SharingJob> group;  // GroupEvaluator's
  std::vector<double> speeds;
  // HeuristicSlots': position per job, slowdown per job, state per position, the jobs it visits,
  // their rows in the move memo, and the memo.
  std::vector<int> position_of;
  std::vector<double> slowdown;
  std::vector<SearchSlot> search;
  std::vector<int> visits;
  std::vector<int> row_of;
  std::vector<MoveMemo> memo;
  // GroupEvaluator's: the jobs' hashes, and the pair speeds it remembers across calls.
  std::vector<uint64_t> hashes;
  PairSlowdownMemo pairs;
};

PackScratch::PackScratch() : buffers_(std::make_unique<Buffers>()) {}
PackScratch::~PackScratch() = default;

namespace {

// The slots with the pinned jobs on theirs, into `slots` (its buffers reused); `jobs` and
// `options` are valid.
void PinnedSlots(std::span<const PackJob> jobs, const PackOptions& options, GroupEvaluator& eval,
                 Slots& slots) {
  slots.index.clear();
  if (options.max_gpus > 0) {
    slots.index.resize(static_cast<size_t>(options.max_gpus));
    std::iota(slots.index.begin(), slots.index.end(), 0);
    slots.first_new = options.max_gpus;
  } else {
    size_t num_free = 0;
    for (const PackJob& job : jobs) {
      if (job.pinned_gpu >= 0) {
        slots.index.push_back(job.pinned_gpu);
      } else {
        ++num_free;
      }
    }
    std::sort(slots.index.begin(), slots.index.end());
    slots.index.erase(std::unique(slots.index.begin(), slots.index.end()), slots.index.end());
    slots.first_new = slots.index.empty() ? 0 : slots.index.back() + 1;
    for (size_t i = 0; i < num_free; ++i) {
      slots.index.push_back(slots.first_new + static_cast<int>(i));
    }
  }
  const size_t positions = slots.index.size();
  slots.members.resize(positions);
  for (std::vector<int>& members : slots.members) members.clear();
  slots.used_mib.assign(positions, 0);
  slots.closed.assign(positions, 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].pinned_gpu < 0) continue;
    // With max_gpus a slot's position is its index.
    const size_t p =
        options.max_gpus > 0
            ? static_cast<size_t>(jobs[j].pinned_gpu)
            : static_cast<size_t>(
                  std::lower_bound(slots.index.begin(), slots.index.end(), jobs[j].pinned_gpu) -
                  slots.index.begin());
    slots.members[p].push_back(static_cast<int>(j));
    slots.used_mib[p] += jobs[j].memory_mib;
  }
  for (size_t p = 0; p < positions; ++p) {
    const std::vector<int>& members = slots.members[p];
    if (members.empty()) continue;
    // A job alone is within any bound (GroupEvaluator::Cost): only a group is evaluated.
    slots.closed[p] = members.size() > static_cast<size_t>(options.max_jobs_per_gpu) ||
                      slots.used_mib[p] > options.gpu_memory_mib ||
                      (members.size() > 1 && !eval.Cost(members, -1, -1).has_value());
  }
}

// The slot index of each position's jobs: a position's own below first_new, the packer's new
// ones renumbered without gaps in position order; -1 for an unplaced job.
void Number(const Slots& slots, size_t num_jobs, std::vector<int>& gpu_of) {
  gpu_of.assign(num_jobs, -1);
  int next_new = slots.first_new;
  for (size_t p = 0; p < slots.members.size(); ++p) {
    const std::vector<int>& members = slots.members[p];
    if (members.empty()) continue;
    const int slot = slots.index[p] < slots.first_new ? slots.index[p] : next_new++;
    for (int j : members) gpu_of[j] = slot;
  }
}

// The Packing of the slots: gpu_of, each list sorted, slowdowns and their total, and the jobs on
// no slot (never a pinned one) as unplaced.
Packing Finish(Slots& slots, GroupEvaluator& eval, size_t num_jobs) {
  Packing packing;
  packing.slowdown.assign(num_jobs, 0.0);
  Number(slots, num_jobs, packing.gpu_of);
  for (size_t j = 0; j < num_jobs; ++j) {
    if (packing.gpu_of[j] < 0) packing.unplaced.push_back(static_cast<int>(j));
  }
  for (std::vector<int>& members : slots.members) {
    if (members.empty()) continue;
    std::sort(members.begin(), members.end());
    eval.Slowdowns(members, packing.slowdown);
    packing.gpus.push_back(members);
  }
  for (double s : packing.slowdown) packing.total_slowdown += s;
  return packing;
}

// Sorts a slot's members ascending; a pair (k = 2, the usual) without a call to std::sort.
void SortSmall(std::vector<int>& members) {
  if (members.size() == 2) {
    if (members[1] < members[0]) std::swap(members[0], members[1]);
  } else if (members.size() > 2) {
    std::sort(members.begin(), members.end());
  }
}

// GreedyPack before Finish: the slots into `buf` (a job on none is unplaced).
void GreedySlots(std::span<const PackJob> jobs, const PackOptions& options, GroupEvaluator& eval,
                 PackScratch::Buffers& buf) {
  const int64_t capacity = options.gpu_memory_mib;
  const size_t k = static_cast<size_t>(options.max_jobs_per_gpu);
  Slots& slots = buf.slots;
  PinnedSlots(jobs, options, eval, slots);
  const size_t positions = slots.index.size();
  FreeMemoryTree tree(positions, buf.tree);
  const auto free_mib = [&](size_t p) -> int64_t {
    const bool open = !slots.closed[p] && slots.members[p].size() < k;
    return open ? capacity - slots.used_mib[p] : -1;
  };
  const auto update = [&](size_t p) { tree.Set(p, free_mib(p)); };
  for (size_t p = 0; p < positions; ++p) {
    if (!slots.members[p].empty()) tree.SetLeaf(p, free_mib(p));
  }
  tree.Build();
  // Positions below this one are all open (non-empty).
  size_t next_unopened = 0;
  const auto open_new = [&]() -> std::optional<size_t> {
    while (next_unopened < positions && !slots.members[next_unopened].empty()) ++next_unopened;
    if (next_unopened == positions) return std::nullopt;
    return next_unopened;
  };
  const auto place = [&](size_t p, int job) {
    slots.members[p].push_back(job);
    slots.used_mib[p] += jobs[job].memory_mib;
    update(p);
  };

  // The unpinned jobs' keys, taken in the order one at a time: a packing at every scheduling
  // cycle places a job or two of dozens, and the rest need not be sorted (below).
  std::vector<OrderKey>& keys = buf.keys;
  keys.clear();
  int64_t least_need = std::numeric_limits<int64_t>::max();
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].pinned_gpu < 0) {
      keys.push_back({jobs[j].memory_mib, jobs[j].job.sm_util, static_cast<int>(j)});
      least_need = std::min(least_need, jobs[j].memory_mib);
    }
  }
  // "a comes after b": the first in the order is the largest (std::max_element, the heap's top).
  const auto after = [](const OrderKey& a, const OrderKey& b) {
    if (a.memory_mib != b.memory_mib) return a.memory_mib < b.memory_mib;
    if (a.sm_util != b.sm_util) return a.sm_util < b.sm_util;
    return a.job > b.job;
  };
  // The first few jobs are picked by a scan of the rest (a packing that stops after one or two
  // never builds the heap), the others from the heap made of what is left then.
  constexpr int kScannedPicks = 2;
  int picks = 0;
  for (auto left_end = keys.end(); left_end != keys.begin(); ++picks) {
    // Free memory only shrinks and slots only fill: once no open GPU has room for the least
    // demanding job and no new one may open, every job left is unplaced, whatever its order.
    if (tree.Max() < least_need && !open_new().has_value()) break;
    if (picks < kScannedPicks) {
      std::iter_swap(std::max_element(keys.begin(), left_end, after), left_end - 1);
    } else {
      if (picks == kScannedPicks) std::make_heap(keys.begin(), left_end, after);
      std::pop_heap(keys.begin(), left_end, after);
    }
    --left_end;
    const int job = left_end->job;
    const int64_t need = jobs[job].memory_mib;
    if (need > capacity) continue;
    int probes = 0;
    size_t pos = 0;
    bool placed = false;
    while (true) {
      const int64_t found = tree.FindFirst(pos, need);
      if (found < 0) break;
      const size_t p = static_cast<size_t>(found);
      if (eval.Cost(slots.members[p], -1, job).has_value()) {
        place(p, job);
        placed = true;
        break;
      }
      if (++probes >= options.max_probes) break;
      pos = p + 1;
    }
    if (!placed) {
      // No open GPU takes the job: a new one, alone (slowdown 1), while any is left.
      if (const std::optional<size_t> p = open_new(); p.has_value()) place(*p, job);
    }
  }
}

// HeuristicPack before Finish: the slots into `buf` (a job on none is unplaced); the rounds run.
int HeuristicSlots(std::span<const PackJob> jobs, const PackOptions& options, GroupEvaluator& eval,
                   PackScratch::Buffers& buf) {
  const size_t n = jobs.size();
  const size_t k = static_cast<size_t>(options.max_jobs_per_gpu);
  const int64_t capacity = options.gpu_memory_mib;
  GreedySlots(jobs, options, eval, buf);
  Slots& slots = buf.slots;
  if (options.max_gpus == 0) {
    // Keep to the GPUs the greedy used: its new slots are a prefix of the new positions.
    size_t used = slots.members.size();
    while (used > 0 && slots.members[used - 1].empty()) --used;
    slots.index.resize(used);
    slots.members.resize(used);
    slots.used_mib.resize(used);
    slots.closed.resize(used);
  }
  std::vector<std::vector<int>>& gpus = slots.members;
  const int rounds = options.max_rounds > 0
                         ? options.max_rounds
                         : static_cast<int>(std::bit_width(static_cast<uint64_t>(n)));
  // The placed unpinned jobs, the only ones a round visits. Pinned jobs are never visited, and
  // never a swap partner below.
  std::vector<int>& order = buf.visits;
  order.clear();
  for (const std::vector<int>& members : gpus) {
    for (int j : members) {
      if (jobs[j].pinned_gpu < 0) order.push_back(j);
    }
  }
  // Without them the first round moves nothing (and ends the search): the greedy's slots stand.
  if (order.empty()) return std::min(rounds, 1);
  const size_t num_slots = gpus.size();
  std::vector<int>& gpu_of = buf.position_of;
  std::vector<double>& slowdown = buf.slowdown;
  std::vector<SearchSlot>& state = buf.search;
  gpu_of.assign(n, -1);
  slowdown.assign(n, 0.0);
  state.resize(num_slots);
  // A slot's state from its members and memory, but for its version (the caller's).
  const auto refresh = [&](size_t g) {
    SearchSlot& st = state[g];
    st.used_mib = slots.used_mib[g];
    st.size = static_cast<uint32_t>(gpus[g].size());
    st.unpinned = 0;
    st.closed = slots.closed[g];
    st.room_mib = st.size < k && !st.closed ? capacity - st.used_mib : -1;
    st.cost = 0.0;
    if (gpus[g].size() == 1) {  // alone: slowdown 1 (GroupEvaluator::Slowdowns)
      slowdown[gpus[g][0]] = 1.0;
    } else {
      eval.Slowdowns(gpus[g], slowdown);
    }
    for (int j : gpus[g]) {
      st.cost += slowdown[j];
      if (jobs[j].pinned_gpu < 0) ++st.unpinned;
    }
  };
  for (size_t g = 0; g < num_slots; ++g) {
    SortSmall(gpus[g]);
    for (int j : gpus[g]) gpu_of[j] = static_cast<int>(g);
    refresh(g);
    state[g].version = 0;
  }
  // The cost of each move evaluated (eval.Cost(gpus[h], -1, i)) per visited job and slot, valid
  // while the slot's members are the same (its version): a round after one that moved re-reads
  // the unchanged slots. Kept within kMaxMoveMemo entries (else every move is evaluated).
  std::vector<int>& row_of = buf.row_of;
  row_of.assign(n, -1);
  for (size_t r = 0; r < order.size(); ++r) row_of[order[r]] = static_cast<int>(r);
  std::vector<MoveMemo>& memo = buf.memo;
  const size_t memo_size = order.size() * num_slots;
  memo.assign(memo_size <= kMaxMoveMemo ? memo_size : 0, MoveMemo{});
  int rounds_run = 0;
  for (int round = 0; round < rounds; ++round) {
    ++rounds_run;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return slowdown[a] != slowdown[b] ? slowdown[a] > slowdown[b] : a < b;
    });
    bool moved = false;
    for (int i : order) {
      const size_t g = static_cast<size_t>(gpu_of[i]);
      const std::optional<double> without = eval.Cost(gpus[g], i, -1);
      const double cost_g = state[g].cost;
      const int64_t used_g = state[g].used_mib;
      const int64_t need = jobs[i].memory_mib;
      MoveMemo* const row =
          memo.empty() ? nullptr : memo.data() + static_cast<size_t>(row_of[i]) * num_slots;
      double best = -kMinImprovement;
      int best_gpu = -1;
      int best_partner = -1;  // -1: a move, else a swap with this job
      const auto consider = [&](double delta, size_t h, int partner) {
        if (delta >= best) return;
        best = delta;
        best_gpu = static_cast<int>(h);
        best_partner = partner;
      };
      bool tried_empty = false;
      for (size_t h = 0; h < num_slots; ++h) {
        const SearchSlot& st = state[h];
        // A closed slot holds only its pinned group: nothing joins it, nothing there may move.
        if (h == g || st.closed) continue;
        if (st.size == 0) {
          // Every empty GPU is alike: evaluate one.
          if (tried_empty || !without.has_value()) continue;
          tried_empty = true;
          consider(*without + 1.0 - cost_g, h, -1);
          continue;
        }
        if (without.has_value() && need <= st.room_mib) {
          std::optional<double> c;
          if (row == nullptr) {
            c = eval.CostWith(gpus[h], i);
          } else {
            MoveMemo& m = row[h];
            if (m.version != st.version) {
              const std::optional<double> cost = eval.CostWith(gpus[h], i);
              m.has_cost = cost.has_value();
              m.cost = cost.value_or(0.0);
              m.version = st.version;
            }
            if (m.has_cost) c = m.cost;
          }
          if (c.has_value()) consider(*without - cost_g + *c - st.cost, h, -1);
        }
        if (st.unpinned == 0) continue;  // no swap partner there
        for (int j : gpus[h]) {
          if (jobs[j].pinned_gpu >= 0) continue;
          const int64_t diff = jobs[j].memory_mib - need;
          if (used_g + diff > capacity || st.used_mib - diff > capacity) continue;
          const std::optional<double> cg = eval.Cost(gpus[g], i, j);
          if (!cg.has_value()) continue;
          const std::optional<double> ch = eval.Cost(gpus[h], j, i);
          if (!ch.has_value()) continue;
          consider(*cg + *ch - cost_g - st.cost, h, j);
        }
      }
      if (best_gpu < 0) continue;
      const size_t h = static_cast<size_t>(best_gpu);
      std::erase(gpus[g], i);
      slots.used_mib[g] -= jobs[i].memory_mib;
      if (best_partner >= 0) {
        std::erase(gpus[h], best_partner);
        slots.used_mib[h] -= jobs[best_partner].memory_mib;
        gpus[g].push_back(best_partner);
        slots.used_mib[g] += jobs[best_partner].memory_mib;
        gpu_of[best_partner] = static_cast<int>(g);
      }
      gpus[h].push_back(i);
      slots.used_mib[h] += jobs[i].memory_mib;
      gpu_of[i] = static_cast<int>(h);
      for (size_t slot : {g, h}) {
        const int version = state[slot].version;
        refresh(slot);
        state[slot].version = version + 1;
      }
      moved = true;
    }
    if (!moved) break;
  }
  return rounds_run;
}

}  // namespace

Status ValidatePackOptions(const PackOptions& options) {
  if (options.gpu_memory_mib <= 0) return InvalidArgument("pack: gpu_memory_mib must be > 0");
  if (options.max_jobs_per_gpu < 1) return InvalidArgument("pack: max_jobs_per_gpu must be >= 1");
  if (!(options.max_slowdown >= 1.0)) return InvalidArgument("pack: max_slowdown must be >= 1");
  if (options.max_gpus < 0) return InvalidArgument("pack: max_gpus must be >= 0");
  if (options.max_probes < 1) return InvalidArgument("pack: max_probes must be >= 1");
  if (options.max_rounds < 0) return InvalidArgument("pack: max_rounds must be >= 0");
  return Status::Ok();
}

Status ValidatePackJobs(std::span<const PackJob> jobs, const PackOptions& options) {
  // Without max_gpus new slots are numbered after the largest pinned one, one per job at most.
  const int64_t max_pinned = options.max_gpus > 0 ? int64_t{options.max_gpus} - 1
                                                  : int64_t{std::numeric_limits<int>::max()} -
                                                        static_cast<int64_t>(jobs.size());
  // The packers validate every call, every cycle: one pass without branches for a valid input
  // (pinned_gpu + 1 within [0, max_pinned + 1]), the messages only where a job is bad.
  if (max_pinned >= -1) {
    const auto pinned_span = static_cast<uint64_t>(max_pinned + 1);
    bool bad = false;
    for (const PackJob& job : jobs) {
      bad |= (job.memory_mib < 0) |
             (static_cast<uint64_t>(int64_t{job.pinned_gpu} + 1) > pinned_span);
    }
    if (!bad) return Status::Ok();
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int pinned = jobs[j].pinned_gpu;
    if (jobs[j].memory_mib >= 0 && pinned >= -1 && pinned <= max_pinned) continue;
    const std::string which = "pack: job " + std::to_string(j) + ": ";
    if (jobs[j].memory_mib < 0) return InvalidArgument(which + "memory_mib must be >= 0");
    if (pinned < -1) return InvalidArgument(which + "pinned_gpu must be -1 or a slot >= 0");
    if (pinned > max_pinned) {
      return InvalidArgument(which + "pinned_gpu " + std::to_string(pinned) +
                             (options.max_gpus > 0
                                  ? " must be < max_gpus " + std::to_string(options.max_gpus)
                                  : std::string(" too large")));
    }
  }
  return Status::Ok();
}

Result<Packing> GreedyPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                           const PackOptions& options) {
  DS_RETURN_IF_ERROR(ValidatePackOptions(options));
  DS_RETURN_IF_ERROR(ValidatePackJobs(jobs, options));
  PackScratch scratch;
  PackScratch::Buffers& b = scratch.buffers();
  GroupEvaluator eval(jobs, model, options.max_slowdown, b.group, b.speeds, b.hashes, b.pairs);
  GreedySlots(jobs, options, eval, b);
  return Finish(b.slots, eval, jobs.size());
}

Result<Packing> HeuristicPack(std::span<const PackJob> jobs, const InterferenceModel& model,
                              const PackOptions& options) {
  DS_RETURN_IF_ERROR(ValidatePackOptions(options));
  DS_RETURN_IF_ERROR(ValidatePackJobs(jobs, options));
  PackScratch scratch;
  PackScratch::Buffers& b = scratch.buffers();
  GroupEvaluator eval(jobs, model, options.max_slowdown, b.group, b.speeds, b.hashes, b.pairs);
  const int rounds = HeuristicSlots(jobs, options, eval, b);
  Packing packing = Finish(b.slots, eval, jobs.size());
  packing.rounds = rounds;
  return packing;
}

namespace {

// The placements alone of `slots_of`'s packing (GreedySlots or HeuristicSlots), in `scratch`'s
// buffers.
template <typename SlotsOf>
Status PlaceWith(std::span<const PackJob> jobs, const InterferenceModel& model,
                 const PackOptions& options, PackScratch& scratch, std::vector<int>& gpu_of,
                 SlotsOf slots_of) {
  DS_RETURN_IF_ERROR(ValidatePackOptions(options));
  DS_RETURN_IF_ERROR(ValidatePackJobs(jobs, options));
  PackScratch::Buffers& b = scratch.buffers();
  GroupEvaluator eval(jobs, model, options.max_slowdown, b.group, b.speeds, b.hashes, b.pairs);
  slots_of(jobs, options, eval, b);
  Number(b.slots, jobs.size(), gpu_of);
  return Status::Ok();
}

}  // namespace

Status GreedyPlace(std::span<const PackJob> jobs, const InterferenceModel& model,
                   const PackOptions& options, PackScratch& scratch, std::vector<int>& gpu_of) {
  return PlaceWith(jobs, model, options, scratch, gpu_of, GreedySlots);
}

Status HeuristicPlace(std::span<const PackJob> jobs, const InterferenceModel& model,
                      const PackOptions& options, PackScratch& scratch, std::vector<int>& gpu_of) {
  return PlaceWith(jobs, model, options, scratch, gpu_of, HeuristicSlots);
}

Status CheckPacking(const Packing& packing, std::span<const PackJob> jobs,
                    const InterferenceModel& model, const PackOptions& options) {
  const auto broken = [](std::string what) { return FailedPrecondition("packing: " + what); };
  std::vector<int> seen(jobs.size(), 0);
  const auto mark = [&](int j) {
    if (j < 0 || static_cast<size_t>(j) >= jobs.size()) return false;
    return ++seen[j] == 1;
  };
  if (options.max_gpus > 0 && packing.gpus.size() > static_cast<size_t>(options.max_gpus)) {
    return broken("uses " + std::to_string(packing.gpus.size()) + " GPUs, max_gpus is " +
                  std::to_string(options.max_gpus));
  }
  if (packing.slowdown.size() != jobs.size()) return broken("slowdown has the wrong size");
  if (packing.gpu_of.size() != jobs.size()) return broken("gpu_of has the wrong size");
  std::vector<SharingJob> group;
  std::vector<double> speeds;
  int last_slot = -1;
  for (size_t g = 0; g < packing.gpus.size(); ++g) {
    const std::vector<int>& members = packing.gpus[g];
    std::string where = "GPU " + std::to_string(g) + ": ";
    if (members.empty()) return broken(where + "empty");
    bool all_pinned = true;
    int64_t used = 0;
    group.clear();
    for (int j : members) {
      if (!mark(j)) return broken(where + "job " + std::to_string(j) + " bad or placed twice");
      all_pinned = all_pinned && jobs[j].pinned_gpu >= 0;
      used += jobs[j].memory_mib;
      group.push_back(jobs[j].job);
    }
    const int slot = packing.gpu_of[members.front()];
    where = "GPU " + std::to_string(g) + " (slot " + std::to_string(slot) + "): ";
    if (slot <= last_slot) return broken(where + "slots not ascending");
    if (options.max_gpus > 0 && slot >= options.max_gpus) {
      return broken(where + "slot outside max_gpus " + std::to_string(options.max_gpus));
    }
    last_slot = slot;
    for (int j : members) {
      if (packing.gpu_of[j] != slot) {
        return broken(where + "gpu_of of job " + std::to_string(j) + " disagrees");
      }
      if (jobs[j].pinned_gpu >= 0 && jobs[j].pinned_gpu != slot) {
        return broken(where + "job " + std::to_string(j) + " is pinned to slot " +
                      std::to_string(jobs[j].pinned_gpu));
      }
    }
    // A pinned group alone is accepted as it is; one that others joined obeys every rule.
    if (!all_pinned && members.size() > static_cast<size_t>(options.max_jobs_per_gpu)) {
      return broken(where + std::to_string(members.size()) + " jobs, k is " +
                    std::to_string(options.max_jobs_per_gpu));
    }
    if (!all_pinned && used > options.gpu_memory_mib) {
      return broken(where + std::to_string(used) + " MiB over " +
                    std::to_string(options.gpu_memory_mib));
    }
    speeds.resize(group.size());
    GroupSpeeds(model, group, speeds);
    for (size_t m = 0; m < members.size(); ++m) {
      const double s = SlowdownOf(speeds[m]);
      if (!all_pinned && s > options.max_slowdown + kSlowdownTolerance) {
        return broken(where + "job " + std::to_string(members[m]) + " slowdown " +
                      std::to_string(s) + " over the bound");
      }
      // Infinite for a pinned pair that may not share (speed 0).
      const double got = packing.slowdown[members[m]];
      if (got != s && !(std::isfinite(s) && std::abs(s - got) <= 1e-9 * s)) {
        return broken(where + "job " + std::to_string(members[m]) + " slowdown mismatch");
      }
    }
  }
  for (int j : packing.unplaced) {
    if (!mark(j)) return broken("unplaced job " + std::to_string(j) + " bad or listed twice");
    if (jobs[j].pinned_gpu >= 0) return broken("pinned job " + std::to_string(j) + " unplaced");
    if (packing.gpu_of[j] != -1) {
      return broken("gpu_of of unplaced job " + std::to_string(j) + " is not -1");
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (seen[j] == 0) return broken("job " + std::to_string(j) + " missing");
  }
  return Status::Ok();
}

}  // namespace dlsched::sharing
