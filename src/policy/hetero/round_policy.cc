#include "policy/hetero/round_policy.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "dlsched/policy/placement.h"
#include "policy/hetero/tied_types.h"
#include "policy/hetero/visit_in_order.h"

namespace dlsched::hetero {
namespace {

// Restricts the Placer to one GPU type.
class TypeFilter final : public FilterPlugin {
 public:
  explicit TypeFilter(GpuTypeId type) : type_(type) {}
  std::string_view Name() const override { return "gpu_type_of_round"; }
  Fit FilterNode(const JobView& job, NodeId node, const SchedulingContext& ctx) const override {
    return ctx.cluster.node_gpu_type(node) == type_ ? Fit::Yes() : Fit::Unfit("other GPU type");
  }

 private:
  GpuTypeId type_;
};

// The type a job runs on, or -1 when it is not running (or is being preempted).
int RunningType(const Job& job, const Cluster& cluster) {
  if (job.state != JobState::kRunning || job.preempt_requested || job.placement.num_gpus() == 0) {
    return -1;  // (a CPU job runs outside the rounds)
  }
  return static_cast<int>(cluster.node_gpu_type(job.placement.parts.front().node).index());
}

// True while some type has room for a gang of `smallest_gang` GPUs.
bool AnyRoom(const std::vector<int>& room, int smallest_gang) {
  return std::ranges::any_of(room, [smallest_gang](int r) { return r >= smallest_gang; });
}

}  // namespace

RoundPolicy::RoundPolicy(RoundPolicyOptions options, Allocator allocate)
    : options_(std::move(options)), allocate_(std::move(allocate)) {
  DS_CHECK(options_.round > Duration::zero()) << "round length must be positive";
}

std::vector<double> RoundPolicy::AllocationOf(JobId job) const {
  const JobRecord* record = Find(job);
  if (record == nullptr || record->index < 0) return {};
  SolvePending();
  const int types = state_.x.num_types;
  const auto begin = state_.x.fraction.begin() + record->index * types;
  return {begin, begin + types};
}

RoundPolicy::JobRecord* RoundPolicy::Find(JobId id) const {
  if (!id.valid() || id.index() >= state_.slot.size() || state_.slot[id.index()] < 0) {
    return nullptr;
  }
  return &state_.jobs[state_.slot[id.index()]];
}

void RoundPolicy::CopyEstimates(const Job& job, JobRecord& record) {
  record.submit_time = job.spec.submit_time;
  record.ref_iters_per_s = job.spec.ref_iters_per_s;
  record.estimated_total = job.estimated_total;
  record.estimated_remaining = job.estimated_remaining;
}

bool RoundPolicy::SameEstimates(const Job& job, const JobRecord& record) {
  return record.submit_time == job.spec.submit_time &&
         record.ref_iters_per_s == job.spec.ref_iters_per_s &&
         record.estimated_total == job.estimated_total &&
         record.estimated_remaining == job.estimated_remaining;
}

bool RoundPolicy::RefreshRow(const SchedulingContext& ctx, const Job& job,
                             JobRecord& record) const {
  const size_t types = ctx.cluster.num_gpu_types();
  if (record.row.size() == types && record.failed_types == job.failed_gpu_types.size()) {
    return false;  // (a new record has no row yet)
  }
  record.row.assign(types, 0.0);
  FillThroughputRow(job, ctx.cluster, *state_.placements, ctx.estimator, record.row);
  if (options_.agnostic) MakeTypeBlind(record.row);
  record.failed_types = job.failed_gpu_types.size();
  return true;
}

size_t RoundPolicy::SyncAll(const SchedulingContext& ctx) const {
  // CPU jobs take no part in the rounds (no GPU type to allocate): Decide places them apart.
  std::vector<JobId> active;
  for (JobId id : ctx.queue.InOrder()) {
    if (ctx.jobs.at(id).spec.num_gpus > 0) active.push_back(id);
  }
  for (JobId id : ctx.running) {
    if (ctx.jobs.at(id).spec.num_gpus > 0) active.push_back(id);
  }
  std::sort(active.begin(), active.end());
  std::vector<JobRecord> old = std::move(state_.jobs);
  state_.jobs.clear();
  state_.jobs.reserve(active.size());
  size_t changed = 0;
  size_t k = 0;  // the next of `old` (by id) not yet matched
  for (JobId id : active) {
    for (; k < old.size() && old[k].id < id; ++k) ++changed;  // gone
    if (k < old.size() && old[k].id == id) {
      state_.jobs.push_back(std::move(old[k++]));
    } else {
      state_.jobs.emplace_back().id = id;
      state_.jobs.back().rounds_on.assign(ctx.cluster.num_gpu_types(), 0);
    }
    const Job& job = ctx.jobs.at(id);
    JobRecord& record = state_.jobs.back();
    record.gang = job.spec.num_gpus;
    CopyEstimates(job, record);
    if (RefreshRow(ctx, job, record)) ++changed;  // (every new record)
  }
  return changed + (old.size() - k);
}

std::span<const JobId> RoundPolicy::WatchedJobsToRead(const SchedulingContext& ctx) const {
  if (ctx.running_changes != nullptr && state_.running_revision &&
      ctx.running_changes->Since(*state_.running_revision, buffers_.changed)) {
    return buffers_.changed;
  }
  return state_.watch;
}

size_t RoundPolicy::RunningGpuJobs(const SchedulingContext& ctx) const {
  size_t count = 0;
  for (JobId id : ctx.running) {
    if (id.index() < state_.slot.size() && state_.slot[id.index()] >= 0) ++count;
  }
  return count;
}

size_t RoundPolicy::SyncJobs(const SchedulingContext& ctx) const {
  size_t changed = 0;
  // Whether a job left, or a record's row changed: only then can a round's assignment have
  // become one to drop (below); an arrival is assigned nothing yet.
  bool assignments_stale = false;
  // Whether a record's row changed, or the first sync rebuilt the records: the ranking table
  // must then be rebuilt. Departures and arrivals keep it (below): a departure's pairs go with
  // its record, and an arrival has no row in X yet, so no pairs.
  bool table_stale = false;
  // Positions in `jobs` from here on moved or are new, and the jobs removed: the slots to
  // update (a sync that only appends touches only the new slots).
  size_t first_moved = state_.jobs.size();
  std::vector<JobId> removed;
  // A posed problem not filled yet reads the records as they are now: filled before a change
  // unless the change poses a new problem this cycle (which replaces it).
  if (!ReplacedOnChange(ctx)) FillProblem();
  if (!state_.synced) {
    changed = SyncAll(ctx);
    assignments_stale = changed > 0;
    table_stale = true;
  } else {
    const size_t running_gpu_jobs = RunningGpuJobs(ctx);
    // The active set is the waiting jobs (all queued, services apart) and the running ones
    // (ctx.running) with GPUs. A job leaves it only by ending, and enters it only when admitted,
    // at the first cycle after it was added to the job table: the records of jobs that ended
    // go, the jobs added since the last sync come. Only jobs that ran since the last sync can
    // have ended or failed to launch on a type (a row to recompute), but for a waiting job
    // cancelled: when the count of active jobs says one went unseen, every record is checked.
    const auto ended = [](const Job& job) {
      return !IsWaiting(job.state) && job.state != JobState::kRunning;
    };
    // Removes the records `check` names, and their pairs from the ranking table if it is built.
    const auto remove_ended = [&](auto&& check) {
      std::vector<int>& begin = state_.table_begin;
      const bool table_built = !begin.empty();
      size_t kept = 0;
      size_t pairs_kept = 0;
      for (size_t i = 0; i < state_.jobs.size(); ++i) {
        if (check(i)) {
          ++changed;
          assignments_stale = true;
          removed.push_back(state_.jobs[i].id);
          first_moved = std::min(first_moved, i);
          continue;
        }
        if (kept != i) state_.jobs[kept] = std::move(state_.jobs[i]);
        if (table_built) {
          // (begin[i + 1] is read before begin[kept <= i] is written.)
          const int from = begin[i];
          const int to = begin[i + 1];
          begin[kept] = static_cast<int>(pairs_kept);
          std::copy(state_.table.begin() + from, state_.table.begin() + to,
                    state_.table.begin() + static_cast<std::ptrdiff_t>(pairs_kept));
          pairs_kept += static_cast<size_t>(to - from);
        }
        ++kept;
      }
      state_.jobs.resize(kept);
      if (table_built) {
        begin[kept] = static_cast<int>(pairs_kept);
        begin.resize(kept + 1);
        state_.table.resize(pairs_kept);
      }
    };
    std::vector<char> gone;  // by position, once a job is found gone
    for (JobId id : WatchedJobsToRead(ctx)) {
      JobRecord* record = Find(id);
      if (record == nullptr) continue;
      const Job& job = ctx.jobs.at(id);
      if (ended(job)) {
        gone.resize(state_.jobs.size(), 0);
        gone[record - state_.jobs.data()] = 1;
        continue;
      }
      if (!SameEstimates(job, *record)) {
        FillProblem();  // (an estimate changes without a new problem)
        CopyEstimates(job, *record);
      }
      if (RefreshRow(ctx, job, *record)) {
        ++changed;
        assignments_stale = true;
        table_stale = true;
      }
    }
    if (!gone.empty()) remove_ended([&](size_t i) { return gone[i] != 0; });
    size_t active = ctx.queue.size() + running_gpu_jobs;
    if (const auto cpu_jobs = ctx.queue.by_gang_order().find(0);
        cpu_jobs != ctx.queue.by_gang_order().end()) {
      active -= cpu_jobs->second.size();
    }
    size_t arrived = 0;
    for (size_t i = state_.jobs_seen; i < ctx.jobs.size(); ++i) {
      const Job& job = ctx.jobs.all()[i];
      if (job.spec.num_gpus > 0 && !job.spec.is_service() && !ended(job)) ++arrived;
    }
    if (state_.jobs.size() + arrived != active) {
      remove_ended([&](size_t i) { return ended(ctx.jobs.at(state_.jobs[i].id)); });
    }
    first_moved = std::min(first_moved, state_.jobs.size());
    const std::vector<Job>& table = ctx.jobs.all();
    for (size_t i = state_.jobs_seen; i < table.size(); ++i) {
      const Job& job = table[i];
      if (job.spec.num_gpus == 0 || job.spec.is_service() || ended(job)) continue;
      JobRecord& record = state_.jobs.emplace_back();
      record.id = job.id;
      record.gang = job.spec.num_gpus;
      record.rounds_on.assign(ctx.cluster.num_gpu_types(), 0);
      CopyEstimates(job, record);
      RefreshRow(ctx, job, record);
      ++changed;
      if (!state_.table_begin.empty()) state_.table_begin.push_back(state_.table_begin.back());
    }
  }
  state_.jobs_seen = ctx.jobs.size();
  state_.watch.assign(ctx.running.begin(), ctx.running.end());
  state_.running_revision.reset();
  if (ctx.running_changes != nullptr) state_.running_revision = ctx.running_changes->revision();
  if (!state_.synced) {
    state_.slot.assign(ctx.jobs.size(), -1);
    first_moved = 0;
  } else {
    state_.slot.resize(ctx.jobs.size(), -1);
    for (JobId id : removed) state_.slot[id.index()] = -1;
  }
  for (size_t i = first_moved; i < state_.jobs.size(); ++i) {
    state_.slot[state_.jobs[i].id.index()] = static_cast<int>(i);
  }
  if (table_stale) state_.table_begin.clear();
  if (assignments_stale) {
    // Drop the round's assignments of jobs gone, or to a type a job can no longer run on.
    std::erase_if(state_.assigned, [this](const auto& entry) {
      const JobRecord* record = Find(entry.first);
      return record == nullptr || record->row[entry.second] <= 0;
    });
  }
  return changed;
}

const RoundPolicy::RunningJobs& RoundPolicy::ReadRunning(const SchedulingContext& ctx) const {
  RunningJobs& running = buffers_.running;
  if (running.read) return running;
  running.read = true;
  const int types = ctx.cluster.num_gpu_types();
  running.held_by_gpu_jobs.assign(types, 0);
  running.placed_type.clear();
  running.placed_gpus.clear();
  running.running_type.clear();
  ForgetChangedRunningEntries(ctx);
  for (JobId id : ctx.running) {
    RunningEntry& entry = running_entries_.by_id[id.index()];
    if (!entry.known) {
      const Job& job = ctx.jobs.at(id);
      entry.known = true;
      entry.placed_gpus = job.placement.num_gpus();
      entry.placed_type = entry.placed_gpus > 0
                              ? static_cast<int>(
                                    ctx.cluster.node_gpu_type(job.placement.parts.front().node)
                                        .index())
                              : -1;
      entry.running_type = RunningType(job, ctx.cluster);
      entry.gang = job.spec.num_gpus;
    }
    if (entry.gang > 0) running.held_by_gpu_jobs[entry.placed_type] += entry.gang;
    running.placed_gpus.push_back(entry.placed_gpus);
    running.placed_type.push_back(entry.placed_type);
    running.running_type.push_back(entry.running_type);
  }
  return running;
}

void RoundPolicy::ForgetChangedRunningEntries(const SchedulingContext& ctx) const {
  RunningEntries& entries = running_entries_;
  if (entries.by_id.size() < ctx.jobs.size()) entries.by_id.resize(ctx.jobs.size());
  if (ctx.running_changes != nullptr && entries.revision &&
      ctx.running_changes->Since(*entries.revision, entries.changed)) {
    for (JobId id : entries.changed) entries.by_id[id.index()].known = false;
  } else {
    std::ranges::fill(entries.by_id, RunningEntry{});
  }
  entries.revision.reset();
  if (ctx.running_changes != nullptr) entries.revision = ctx.running_changes->revision();
}

void RoundPolicy::ComputeAllocation(const SchedulingContext& ctx) const {
  const RunningJobs& running = ReadRunning(ctx);
  const int types = ctx.cluster.num_gpu_types();
  const bool deficits =
      options_.reset_counts_at_allocation && (options_.deficit_ties || options_.zero_entries);
  // The deficits below read the X being replaced, row by its jobs' indexes: solved, even if no
  // round read it.
  if (deficits) SolvePending();
  AllocationProblem& problem = state_.problem;
  problem.num_types = types;
  // The GPUs training can have: free ones and those training jobs hold. Without online services
  // or offline nodes, every GPU of the type.
  problem.gpus_per_type.assign(types, 0);
  for (int t = 0; t < types; ++t) {
    problem.gpus_per_type[t] =
        ctx.state.free_of_type(GpuTypeId(static_cast<uint32_t>(t))) + running.held_by_gpu_jobs[t];
  }
  // Only jobs that ran since the last sync (state_.watch) can have new estimates (a suspension
  // or a launch failure re-estimates a job as it queues it again).
  for (JobId id : state_.watch) {
    if (JobRecord* record = Find(id)) CopyEstimates(ctx.jobs.at(id), *record);
  }
  int index = 0;
  for (JobRecord& record : state_.jobs) {
    if (deficits) {
      // What the X now replaced gave it over the rounds it was in force, less what it received
      // (a job that arrived after that X had no row: only what it received).
      record.deficit.resize(types, 0.0);
      for (int t = 0; t < types; ++t) {
        const double given =
            record.index >= 0 ? state_.x.fraction[static_cast<size_t>(record.index) * types + t] *
                                    record.rounds_active
                              : 0.0;
        record.deficit[t] += given - record.rounds_on[t];
      }
    }
    record.index = index++;
    if (options_.reset_counts_at_allocation) {
      record.rounds_active = 0;
      std::fill(record.rounds_on.begin(), record.rounds_on.end(), 0);
    }
  }
  state_.posed_at = ctx.now;
  state_.fill_pending = true;
  state_.solve_pending = true;
  state_.table_begin.clear();
  ++state_.allocations_computed;
  state_.last_allocation = ctx.now;
  state_.allocation_stale = false;
  state_.changes_since_allocation = 0;
}

bool RoundPolicy::ReplacedOnChange(const SchedulingContext& ctx) const {
  // The active jobs after this cycle's sync are at most the records and the jobs added to the
  // table since the last sync.
  const bool may_coalesce =
      options_.coalesce_above_jobs > 0 &&
      state_.jobs.size() + (ctx.jobs.size() - std::min(ctx.jobs.size(), state_.jobs_seen)) >
          static_cast<size_t>(options_.coalesce_above_jobs);
  return options_.realloc_interval == Duration::zero() && !may_coalesce &&
         !(options_.reset_counts_at_allocation && (options_.deficit_ties || options_.zero_entries));
}

bool RoundPolicy::AllocationDue(const SchedulingContext& ctx) const {
  const bool boundary = ctx.now >= state_.next_round;
  if (const Duration interval = options_.realloc_interval; interval > Duration::zero()) {
    return boundary &&
           (state_.last_allocation == kTimeZero || ctx.now - state_.last_allocation >= interval);
  }
  const size_t active = state_.jobs.size();
  if (boundary || options_.coalesce_above_jobs <= 0 ||
      active <= static_cast<size_t>(options_.coalesce_above_jobs)) {
    return true;
  }
  return static_cast<double>(state_.changes_since_allocation) >=
         options_.coalesce_fraction * static_cast<double>(active);
}

void RoundPolicy::FillProblem() const {
  if (!state_.fill_pending) return;
  state_.fill_pending = false;
  AllocationProblem& problem = state_.problem;
  const int types = problem.num_types;
  const size_t n = state_.jobs.size();
  problem.gang.resize(n);
  problem.iters_per_s.resize(n * types);
  problem.remaining_iters.resize(n);
  problem.elapsed_s.resize(n);
  problem.done_iters.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const JobRecord& record = state_.jobs[i];
    DS_CHECK(record.index == static_cast<int>(i))
        << "a posed job moved before its problem was filled";
    problem.gang[i] = record.gang;
    for (int t = 0; t < types; ++t) problem.iters_per_s[i * types + t] = record.row[t];
    // Estimated work left at the last checkpoint (the run-time estimator's, in iterations at
    // the reference speed: the true work is the simulator's); never 0, so a job about to finish
    // ranks first.
    const double ref = record.ref_iters_per_s;
    const double remaining_iters = ToSeconds(record.estimated_remaining) * ref;
    problem.remaining_iters[i] = std::max(remaining_iters, 1e-6 * std::max(1.0, ref));
    // For finish-time fairness: time since arrival, and the work done by that estimate.
    problem.elapsed_s[i] = std::max(0.0, ToSeconds(state_.posed_at - record.submit_time));
    problem.done_iters[i] =
        std::max(0.0, ToSeconds(record.estimated_total - record.estimated_remaining)) * ref;
  }
}

void RoundPolicy::SolvePending() const {
  if (!state_.solve_pending) return;
  state_.solve_pending = false;
  FillProblem();
  state_.problem.tentative = explaining_;
  Result<Allocation> x = allocate_(state_.problem);
  if (!x.ok()) x = AllocateGreedy(state_.problem);
  DS_CHECK(x.ok()) << x.status().ToString();
  if (options_.spread_tied_types) SpreadOverTiedTypes(state_.problem, *x);
  state_.x = std::move(x).value();
}

void RoundPolicy::BuildTable(int types) const {
  const size_t n = state_.jobs.size();
  state_.table.clear();
  state_.table_begin.resize(n + 1);
  for (size_t i = 0; i < n; ++i) {
    state_.table_begin[i] = static_cast<int>(state_.table.size());
    const JobRecord& record = state_.jobs[i];
    if (record.index < 0) continue;  // arrived after X
    const double* xs = state_.x.fraction.data() + static_cast<size_t>(record.index) * types;
    for (int t = 0; t < types; ++t) {
      if (xs[t] <= 0 || record.row[t] <= 0) continue;
      state_.table.push_back({xs[t], record.rounds_on[t] + options_.initial_rounds_received, t});
    }
  }
  state_.table_begin[n] = static_cast<int>(state_.table.size());
}

std::vector<int> RoundTypeOrder(RoundPolicyOptions::TypeWalk walk, int types, int64_t round_index) {
  std::vector<int> order(types);
  for (int t = 0; t < types; ++t) order[t] = t;
  if (walk != RoundPolicyOptions::TypeWalk::kShuffled) return order;
  // Fisher-Yates with splitmix64 from the round index: the same permutation on every platform
  // (std::shuffle's is implementation-defined).
  uint64_t z = static_cast<uint64_t>(round_index) * 0x9e3779b97f4a7c15ULL;
  const auto next = [&z] {
    z += 0x9e3779b97f4a7c15ULL;
    uint64_t r = z;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ULL;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebULL;
    return r ^ (r >> 31);
  };
  for (int i = types - 1; i > 0; --i) {
    std::swap(order[i], order[next() % static_cast<uint64_t>(i + 1)]);
  }
  return order;
}

void RoundPolicy::Assign(const SchedulingContext& ctx, const std::vector<int>& candidates,
                         const std::vector<int>& running_on, std::vector<int>& room,
                         bool count_rounds) const {
  using Entry = RankedEntry;
  if (options_.deficit_ties || options_.zero_entries) {
    AssignByLists(ctx, candidates, running_on, room, count_rounds);
    return;
  }
  const int types = ctx.cluster.num_gpu_types();
  const std::vector<int> order =
      RoundTypeOrder(options_.type_walk, types, ctx.now.time_since_epoch() / options_.round);
  std::vector<int> walk(types, 0);
  if (options_.type_walk != RoundPolicyOptions::TypeWalk::kRanked) {
    for (int i = 0; i < types; ++i) walk[order[i]] = i;
  }
  // Once no type has room for the smallest gang of a candidate, no entry can be assigned: the
  // walks below stop there.
  int smallest_gang = std::numeric_limits<int>::max();
  for (int slot : candidates) {
    const JobRecord& record = state_.jobs[slot];
    if (record.index >= 0) smallest_gang = std::min(smallest_gang, record.gang);
  }
  // X is solved even when nothing can be assigned: which problems max-min solves decides the
  // bases its later solves start from.
  SolvePending();
  if (!AnyRoom(room, smallest_gang)) return;  // (no candidate with a row, or no room for one)
  std::vector<char>& chosen = buffers_.chosen;  // this call's assignments, by position
  chosen.assign(state_.jobs.size(), 0);
  // Calls emit(entry) for every (candidate, type) pair the allocation gives time that could
  // still be assigned (the job not chosen yet, its gang within the type's room: room only
  // shrinks, so the walk would pass over the others), but for pairs skip(walk, x, rounds_on,
  // rounds_active) says rank after those wanted (a test without the priority's divisions).
  if (state_.table_begin.empty()) BuildTable(types);
  const auto each_entry = [&](auto&& skip, auto&& emit) {
    for (int slot : candidates) {
      const int first = state_.table_begin[slot];
      const int last = state_.table_begin[slot + 1];
      if (first == last || chosen[slot]) continue;  // (no pairs: e.g. arrived after X)
      const JobRecord& record = state_.jobs[slot];
      for (int k = first; k < last; ++k) {
        const auto& [x, on, t] = state_.table[k];
        if (record.gang > room[t]) continue;
        if (skip(walk[t], x, on, record.rounds_active)) continue;
        const double received = record.rounds_active > 0 ? on / record.rounds_active : 0.0;
        const double priority =
            received > 0 ? x / received : std::numeric_limits<double>::infinity();
        emit(Entry{walk[t], priority, x, running_on[slot] == t, record.id, t, slot});
      }
    }
  };
  const auto ranks_before = [](const Entry& a, const Entry& b) {
    if (a.walk != b.walk) return a.walk < b.walk;
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.x != b.x) return a.x > b.x;
    if (a.here != b.here) return a.here;
    if (a.id != b.id) return a.id < b.id;
    return a.type < b.type;
  };
  auto assign = [&](int slot, int type) {
    JobRecord& record = state_.jobs[slot];
    chosen[slot] = 1;
    room[type] -= record.gang;
    state_.assigned.emplace_back(record.id, type);
    if (!count_rounds) return;
    ++record.rounds_on[type];
    for (int k = state_.table_begin[slot]; k < state_.table_begin[slot + 1]; ++k) {
      if (state_.table[k].type == type) {
        state_.table[k].on = record.rounds_on[type] + options_.initial_rounds_received;
      }
    }
  };
  const auto visit = [&](const Entry& e) {
    if (!chosen[e.slot] && state_.jobs[e.slot].gang <= room[e.type]) assign(e.slot, e.type);
    return AnyRoom(room, smallest_gang);
  };
  // The walk: the first kHead entries in order, kept in a heap of the best seen (its front the
  // worst of them) as the entries are made, so that a round filling its GPUs with the first few
  // hundred entries neither stores nor sorts the others; should the walk go past them, the rest
  // are made again and visited in order after them. The heap is made when the head fills: a
  // round with fewer entries sorts them once (the order is total, so the same order).
  constexpr size_t kHead = 256;
  std::vector<Entry>& head = buffers_.head;
  head.clear();
  // Once the head is full, an entry ranks after its worst unless its walk comes earlier, or it
  // has the same walk and a priority no lower: x / (on / active) >= p, tested as x * active >=
  // p * on with a margin far above the rounding of either side (so no entry that belongs is
  // skipped; those let through are compared exactly).
  const auto after_head = [&](int entry_walk, double x, double on, int active) {
    if (head.size() < kHead) return false;
    const Entry& worst = head.front();
    if (entry_walk != worst.walk) return entry_walk > worst.walk;
    // (A pair never served, on t or at all, has an infinite priority; a served one a finite
    // one, which ranks after an infinite worst.)
    const double received = active > 0 ? on / active : 0.0;
    const bool infinite = !(received > 0);
    if (worst.priority == std::numeric_limits<double>::infinity()) {
      return !infinite || x < worst.x;
    }
    if (infinite) return false;
    return x * active < worst.priority * on * (1 - 1e-9);
  };
  each_entry(after_head, [&](const Entry& e) {
    if (head.size() < kHead) {
      head.push_back(e);
      if (head.size() == kHead) std::make_heap(head.begin(), head.end(), ranks_before);
    } else if (ranks_before(e, head.front())) {
      std::pop_heap(head.begin(), head.end(), ranks_before);
      head.back() = e;
      std::push_heap(head.begin(), head.end(), ranks_before);
    }
  });
  if (head.size() < kHead) {
    std::sort(head.begin(), head.end(), ranks_before);
  } else {
    std::sort_heap(head.begin(), head.end(), ranks_before);
  }
  bool walked_all = true;
  for (const Entry& e : head) {
    if (!visit(e)) {
      walked_all = false;
      break;
    }
  }
  if (walked_all && head.size() == kHead) {
    std::vector<Entry> rest;
    const Entry last = head.back();
    each_entry([](int, double, double, int) { return false; },
               [&](const Entry& e) {
                 if (ranks_before(last, e)) rest.push_back(e);
               });
    VisitInOrder(rest, ranks_before, visit);
  }
  if (!AnyRoom(room, smallest_gang)) return;
  // Work conservation: GPUs left go to the least-served unassigned jobs, fastest type first.
  std::vector<std::tuple<double, JobId, int>> rest = UnassignedByTimeReceived(candidates, chosen);
  VisitInOrder(rest, std::less<>(), [&](const std::tuple<double, JobId, int>& entry) {
    const int slot = std::get<2>(entry);
    const int best = FastestTypeWithRoom(state_.jobs[slot], order, room);
    if (best >= 0) assign(slot, best);
    return AnyRoom(room, smallest_gang);
  });
}

std::vector<std::tuple<double, JobId, int>> RoundPolicy::UnassignedByTimeReceived(
    const std::vector<int>& candidates, const std::vector<char>& chosen) const {
  std::vector<std::tuple<double, JobId, int>> rest;
  for (int slot : candidates) {
    const JobRecord& record = state_.jobs[slot];
    if (chosen[slot] || record.index < 0) continue;
    int on = 0;
    for (int r : record.rounds_on) on += r;
    rest.emplace_back(record.rounds_active > 0 ? static_cast<double>(on) / record.rounds_active : 0,
                      record.id, slot);
  }
  return rest;
}

int RoundPolicy::FastestTypeWithRoom(const JobRecord& record, const std::vector<int>& order,
                                     const std::vector<int>& room) {
  int best = -1;
  for (int t : order) {
    if (record.row[t] > 0 && record.gang <= room[t] &&
        (best < 0 || record.row[t] > record.row[best])) {
      best = t;
    }
  }
  return best;
}

void RoundPolicy::AssignByLists(const SchedulingContext& ctx, const std::vector<int>& candidates,
                                const std::vector<int>& running_on, std::vector<int>& room,
                                bool count_rounds) const {
  SolvePending();
  struct Entry {
    double priority;
    double deficit;
    double x;
    bool here;
    JobId id;
    int type;
    int slot;  // the job's position in state_.jobs
  };
  const int types = ctx.cluster.num_gpu_types();
  const std::vector<int> order =
      RoundTypeOrder(options_.type_walk, types, ctx.now.time_since_epoch() / options_.round);
  std::vector<std::vector<int>> levels;
  if (options_.type_walk == RoundPolicyOptions::TypeWalk::kRanked) {
    levels.push_back(order);
  } else {
    for (int t : order) levels.push_back({t});
  }
  const auto deficit = [](const JobRecord& record, int t) {
    return record.deficit.empty() ? 0.0 : record.deficit[t];
  };
  const bool by_deficit = options_.deficit_ties;
  const auto ranks_before = [by_deficit](const Entry& a, const Entry& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (by_deficit && a.deficit != b.deficit) return a.deficit > b.deficit;
    if (a.x != b.x) return a.x > b.x;
    if (!by_deficit && a.here != b.here) return a.here;
    if (a.id != b.id) return a.id < b.id;
    return a.type < b.type;
  };
  const auto zero_before = [](const Entry& a, const Entry& b) {
    if (a.deficit != b.deficit) return a.deficit > b.deficit;
    if (a.id != b.id) return a.id < b.id;
    return a.type < b.type;
  };
  std::vector<char> chosen(state_.jobs.size(), 0);  // this call's choices, by position
  const auto take = [&](const Entry& e) {
    JobRecord& record = state_.jobs[e.slot];
    if (chosen[e.slot] || record.gang > room[e.type]) return;
    chosen[e.slot] = 1;
    room[e.type] -= record.gang;
    if (record.index < 0) return;  // holds the GPUs, runs nowhere
    state_.assigned.emplace_back(record.id, e.type);
    if (count_rounds) ++record.rounds_on[e.type];
  };
  std::vector<Entry> entries;
  for (const std::vector<int>& level : levels) {
    entries.clear();
    for (int slot : candidates) {
      const JobRecord& record = state_.jobs[slot];
      if (record.index < 0 || chosen[slot]) continue;
      const double* xs = state_.x.fraction.data() + static_cast<size_t>(record.index) * types;
      for (int t : level) {
        const double x = xs[t];
        if (x <= 0 || record.row[t] <= 0) continue;
        const double on = record.rounds_on[t] + options_.initial_rounds_received;
        const double received = record.rounds_active > 0 ? on / record.rounds_active : 0.0;
        const double priority =
            received > 0 ? x / received : std::numeric_limits<double>::infinity();
        entries.push_back(
            {priority, deficit(record, t), x, running_on[slot] == t, record.id, t, slot});
      }
    }
    std::sort(entries.begin(), entries.end(), ranks_before);
    for (const Entry& e : entries) take(e);
    if (!options_.zero_entries) continue;
    entries.clear();
    for (int slot : candidates) {
      const JobRecord& record = state_.jobs[slot];
      if (chosen[slot] || (record.index < 0 && !count_rounds)) continue;
      for (int t : level) {
        if (record.row[t] <= 0) continue;
        if (record.index >= 0 &&
            state_.x.fraction[static_cast<size_t>(record.index) * types + t] > 0) {
          continue;
        }
        entries.push_back({0.0, deficit(record, t), 0.0, false, record.id, t, slot});
      }
    }
    std::sort(entries.begin(), entries.end(), zero_before);
    for (const Entry& e : entries) take(e);
  }
  if (options_.zero_entries) return;
  // Work conservation, as Assign's: GPUs left go to the least-served unassigned jobs, fastest
  // type first.
  std::vector<std::tuple<double, JobId, int>> rest = UnassignedByTimeReceived(candidates, chosen);
  std::sort(rest.begin(), rest.end());
  for (const auto& [received, id, slot] : rest) {
    const int best = FastestTypeWithRoom(state_.jobs[slot], order, room);
    if (best >= 0) take({0.0, 0.0, 0.0, false, id, best, slot});
  }
}

Decisions RoundPolicy::Decide(const SchedulingContext& ctx) const {
  if (!ctx.explain) return DecideAndUpdate(ctx);
  // Explaining (the daemon's queue view, the simulator's why-pending samples) must not move
  // the state: a round boundary seen here would be missed by the next cycle.
  // Nor may an allocator that learns from its calls learn from the ones made here.
  State kept = state_;
  explaining_ = true;
  Decisions decisions = DecideAndUpdate(ctx);
  explaining_ = false;
  state_ = std::move(kept);
  return decisions;
}

Decisions RoundPolicy::DecideAndUpdate(const SchedulingContext& ctx) const {
  if (state_.num_types != ctx.cluster.num_gpu_types()) {
    // First cycle, or a restored state of another cluster: start afresh.
    state_ = State{};
    state_.num_types = ctx.cluster.num_gpu_types();
  }
  if (!state_.placements) state_.placements.emplace(ctx.cluster);
  const int types = ctx.cluster.num_gpu_types();
  // The running jobs' entries in the job table are read (ReadRunning) only by the cycles that
  // need them: far apart in memory, they are most of a cycle's cost at thousands of running
  // jobs, and a cycle between round boundaries without backfill reads none of them.
  buffers_.running.read = false;
  // Only arrivals and departures (launch failures among them, the one change of a row) change
  // the active set or a row; other cycles (suspensions, timers) skip the comparison, which costs
  // O(n log n) in active jobs. A fresh or restored state compares once whatever the trigger.
  const bool may_change = !state_.synced || ctx.trigger.arrivals || ctx.trigger.departures;
  if (may_change) {
    if (const size_t changed = SyncJobs(ctx); changed > 0) {
      state_.allocation_stale = true;
      state_.changes_since_allocation += static_cast<int64_t>(changed);
    }
  }
  state_.synced = true;
  if (state_.allocation_stale && AllocationDue(ctx)) ComputeAllocation(ctx);
  const bool boundary = ctx.now >= state_.next_round;
  Decisions decisions;
  // Between boundaries without backfill only the round's assigned jobs start (below): no room
  // to count, nothing to rank.
  if (boundary || options_.backfill_between_rounds) {
    const RunningJobs& running = ReadRunning(ctx);
    // Capacity now: free GPUs plus those held by running jobs (offline nodes' GPUs are neither).
    std::vector<int> room(types);
    for (int t = 0; t < types; ++t) {
      room[t] = ctx.state.free_of_type(GpuTypeId(static_cast<uint32_t>(t)));
    }
    for (size_t r = 0; r < ctx.running.size(); ++r) {
      if (running.placed_gpus[r] > 0) room[running.placed_type[r]] += running.placed_gpus[r];
    }  // (CPU jobs hold none)

    // Per position in state_.jobs: the type the job runs on (RunningType), or -1 (also when it
    // runs but is being preempted); and whether it runs at all (else it waits: an active job not
    // running is queued).
    // Filled only where Assign runs: O(active jobs) each.
    const size_t n = state_.jobs.size();
    std::vector<int>& running_on = buffers_.running_on;
    std::vector<char>& is_running = buffers_.is_running;
    const auto mark_running = [&] {
      running_on.assign(n, -1);
      is_running.assign(n, 0);
      for (size_t r = 0; r < ctx.running.size(); ++r) {
        if (const JobRecord* record = Find(ctx.running[r])) {
          const size_t slot = record - state_.jobs.data();
          running_on[slot] = running.running_type[r];
          is_running[slot] = 1;
        }
      }
    };
    // Per position: the type this round assigned the job to, or -1.
    std::vector<int>& assigned_type = buffers_.assigned_type;
    const auto mark_assigned = [&] {
      assigned_type.assign(n, -1);
      for (const auto& [id, type] : state_.assigned) {
        assigned_type[Find(id) - state_.jobs.data()] = type;
      }
    };

    if (boundary) {
      const Duration round = options_.round;
      state_.next_round = Timestamp((ctx.now.time_since_epoch() / round + 1) * round);
      state_.assigned.clear();
      std::vector<int>& candidates = buffers_.candidates;
      candidates.resize(n);
      for (size_t i = 0; i < n; ++i) {
        ++state_.jobs[i].rounds_active;
        candidates[i] = static_cast<int>(i);
      }
      mark_running();
      Assign(ctx, candidates, running_on, room, /*count_rounds=*/true);
      mark_assigned();
      for (size_t r = 0; r < ctx.running.size(); ++r) {
        const JobId id = ctx.running[r];
        const int on = running.running_type[r];
        if (on < 0) continue;
        const JobRecord* record = Find(id);
        const int type = record != nullptr ? assigned_type[record - state_.jobs.data()] : -1;
        if (type != on) {
          decisions.preemptions.push_back(
              {id, type < 0 ? "not chosen for this round (round-based allocation)"
                            : "moves to " + ctx.cluster.gpu_type_name(GpuTypeId(type)) +
                                  " this round (round-based allocation)"});
        }
      }
    } else {
      // The round's assigned jobs hold their type's GPUs; running jobs outside the assignment
      // (none unless the assignment was cut by a change of the active set) still hold theirs.
      // Marked by job id, so that a cycle left no room (most of them at scale) walks no
      // position.
      std::vector<char>& assigned = buffers_.assigned_by_id;
      assigned.resize(ctx.jobs.size(), 0);
      for (const auto& [id, type] : state_.assigned) {
        room[type] -= Find(id)->gang;
        assigned[id.index()] = 1;
      }
      for (size_t r = 0; r < ctx.running.size(); ++r) {
        if (!assigned[ctx.running[r].index()] && running.placed_gpus[r] > 0) {
          room[running.placed_type[r]] -= running.placed_gpus[r];
        }
      }
      for (const auto& [id, type] : state_.assigned) assigned[id.index()] = 0;
      if (AnyRoom(room, 1)) {
        mark_running();
        mark_assigned();
        std::vector<int>& candidates = buffers_.candidates;
        candidates.clear();
        for (size_t i = 0; i < n; ++i) {
          if (!is_running[i] && assigned_type[i] < 0) candidates.push_back(static_cast<int>(i));
        }
        Assign(ctx, candidates, running_on, room, /*count_rounds=*/false);
      }
    }
  }

  // Launch the round's waiting jobs on their type, in assignment order.
  std::vector<TypeFilter> filters;
  std::vector<const FilterPlugin*> filter_of_type;
  std::vector<Placer> placers;
  filters.reserve(types);
  filter_of_type.reserve(types);
  placers.reserve(types);
  for (int t = 0; t < types; ++t) {
    filters.emplace_back(GpuTypeId(static_cast<uint32_t>(t)));
    filter_of_type.push_back(&filters.back());
    placers.emplace_back(ctx, std::span<const FilterPlugin* const>(&filter_of_type.back(), 1),
                         std::span<const WeightedScore>());
  }
  ClusterState& scratch = buffers_.scratch;
  scratch = ctx.state;
  for (const auto& [id, type] : state_.assigned) {
    if (!IsWaiting(ctx.jobs.at(id).state)) continue;
    std::optional<Placement> placement = placers[type].Find(ctx.View(id), scratch);
    if (placement) {
      scratch.Allocate(*placement);
      decisions.launches.push_back({id, std::move(*placement)});
    } else if (ctx.explain) {
      decisions.pending_reasons.push_back(
          {id, "assigned to " + ctx.cluster.gpu_type_name(GpuTypeId(static_cast<uint32_t>(type))) +
                   " this round; waiting for its GPUs to free"});
    }
  }
  for (const LaunchDecision& launch : decisions.launches) state_.watch.push_back(launch.job);
  if (state_.watch.size() > 2 * state_.jobs.size() + 64) {
    // Many rounds without an arrival or a departure: the same jobs launched again and again.
    std::ranges::sort(state_.watch);
    state_.watch.erase(std::unique(state_.watch.begin(), state_.watch.end()), state_.watch.end());
  }
  // CPU jobs, outside the rounds: in queue order, on the CPUs the round's launches left.
  if (const auto cpu_jobs = ctx.queue.by_gang_order().find(0);
      cpu_jobs != ctx.queue.by_gang_order().end() && !cpu_jobs->second.empty()) {
    const Placer placer(ctx, {}, {});
    for (const RankKey& key : cpu_jobs->second) {
      if (std::optional<Placement> placement = placer.Find(ctx.View(key.id), scratch)) {
        scratch.Allocate(*placement);
        decisions.launches.push_back({key.id, std::move(*placement)});
      } else if (ctx.explain) {
        decisions.pending_reasons.push_back(
            {key.id, "CPU job waiting for its CPUs on one node", PendingCause::kCpusBusy});
      }
    }
  }
  if (ctx.explain) {
    std::map<JobId, int> type_of(state_.assigned.begin(), state_.assigned.end());
    for (const JobRecord& record : state_.jobs) {
      if (IsWaiting(ctx.jobs.at(record.id).state) && !type_of.contains(record.id)) {
        decisions.pending_reasons.push_back(
            {record.id, "not chosen for this round (round-based allocation)"});
      }
    }
  }
  // With no active job there is no round to run; the next arrival starts one.
  decisions.wake_at = state_.jobs.empty() ? kTimeNever : state_.next_round;
  return decisions;
}

}  // namespace dlsched::hetero
