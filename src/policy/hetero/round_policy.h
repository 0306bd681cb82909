#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "dlsched/policy/policy.h"
#include "plugins/admit/feasibility.h"
#include "policy/hetero/allocation.h"
#include "policy/hetero/throughput_matrix.h"

namespace dlsched::hetero {

struct RoundPolicyOptions {
  std::string name;
  std::string description;
  Duration round = std::chrono::seconds(360);  // Gavel's default round length
  // Type-blind throughput matrix (MakeTypeBlind): the heterogeneity-agnostic baseline.
  bool agnostic = false;
  // Least simulated time between two computations of X (Gavel's
  // minimum_time_between_allocation_resets, 1920 s in its simulator). Zero (the default): X is
  // recomputed at the first cycle after every change of the active set. Positive: a change
  // marks X stale, and a stale X is recomputed only at a round boundary at least this long
  // after the last computation (or while the last one was at time zero); until then jobs that
  // arrived since the last computation have no row in X and are not placed, even on idle GPUs.
  Duration realloc_interval = Duration::zero();
  // Coalesced recomputation for large active sets (realloc_interval zero only: it already
  // recomputes at round boundaries alone). Zero (the default): off. Positive: while more than
  // this many jobs are active, a change of the active set or of a row marks X stale and counts
  // the jobs it changed, and a stale X is recomputed once the jobs changed since the last
  // computation reach coalesce_fraction of the active jobs, or at a round boundary. Until then
  // arrivals have no row in X and wait, and the GPUs of jobs that left go to the backfill. At
  // most this many active jobs: every change recomputes, as when off. An allocation over ten
  // thousand active jobs costs a second (BENCHMARKS.md), and at that scale jobs arrive and leave
  // every few seconds.
  int coalesce_above_jobs = 0;
  double coalesce_fraction = 0.05;  // in (0, 1]
  // Between round boundaries, give GPUs no assigned job uses to unassigned waiting jobs (the
  // default). False: as in Gavel's simulator, GPUs freed mid-round stay idle until the next
  // boundary and arrivals wait for it (jobs assigned at the boundary still start as their GPUs
  // free).
  bool backfill_between_rounds = true;
  // Every computation of X sets each job's rounds_active and rounds_on back to zero, so the
  // ranking measures the time received under the current X only (Gavel's simulator resets its
  // per-job time counters at every allocation reset). False (the default): counted since the
  // job arrived.
  bool reset_counts_at_allocation = false;
  // How a round's (job, type) entries are walked when jobs are assigned. kRanked (the default):
  // one list of every pair by priority, the type only breaking the last tie. kTypeOrder and
  // kShuffled, as Gavel's simulator: each type's entries sorted by priority and the per-type
  // lists joined in a type order, the cluster's (kTypeOrder; Gavel's *_perf policies walk v100,
  // p100, k80) or one drawn afresh for every round from the round's index (kShuffled; Gavel's
  // heterogeneity-agnostic policies). The work-conserving pass takes ties in the same order.
  enum class TypeWalk { kRanked, kTypeOrder, kShuffled };
  TypeWalk type_walk = TypeWalk::kRanked;
  // Each computed X is passed through SpreadOverTiedTypes (tied_types.h): a job's time on GPU
  // types no job can tell apart (all of them, when agnostic) is split over them in proportion to
  // their GPUs, as an interior-point solver's optimum would rather than a simplex vertex's.
  // False (the default): X as the allocator returns it.
  bool spread_tied_types = false;
  // Rounds every job is taken to have received on every type when its counts start (at its
  // arrival, or at each computation of X with reset_counts_at_allocation), in the ranking's
  // X[j][t] / (rounds_on[j][t] / rounds_active[j]): Gavel's simulator starts each job's time
  // on every type at half a round (0.5), so a job never served ranks by its X rather than
  // first. Zero (the default): never served ranks first.
  double initial_rounds_received = 0;
  // Gavel's tie-break. Each job carries, per GPU type, a deficit: the rounds each earlier X gave
  // it there (X[j][t] times the rounds that X was in force) less the rounds it received there,
  // added up at every computation of X (with reset_counts_at_allocation only: the counts then
  // cover one X; otherwise deficits stay zero). Entries of equal priority rank by larger
  // deficit, then larger X, then job id, then type (Gavel's sort by (priority, deficit,
  // allocation), ties in arrival order), not by the type a job runs on. False (the default):
  // ties by larger X, the type the job runs on, job id, type.
  bool deficit_ties = false;
  // Gavel's lease lists past the entries X gives time. The walk goes level by level (each type
  // in the round's order; all types at once under kRanked), and after a level's entries with
  // X > 0 come, at priority zero, those of the jobs not yet assigned that X gives no time on
  // the level's types, by larger deficit (above), then job id, then type: GPUs a type's
  // X-entries leave go to them before the next type's X-entries are walked, in place of the
  // work-conserving pass. At a round boundary a job with no row in X (arrived since the last
  // computation) met there takes its gang's GPUs of that type for the round without running on
  // them (Gavel's simulator counts its slot and dispatches no workers). False (the default):
  // X-entries only, then the work-conserving pass.
  bool zero_entries = false;
};

// The order in which a round of `options.type_walk` walks `types` GPU types: type indices,
// first walked first (the identity but for kShuffled). `round_index`: the round's position on
// the grid from time zero. Deterministic (its own generator, not the policy RNG).
std::vector<int> RoundTypeOrder(RoundPolicyOptions::TypeWalk walk, int types, int64_t round_index);

// Gavel's round-based mechanism (OSDI'20, section 4) realising an allocation X (jobs x GPU
// types, see allocation.h) computed by `allocate` from the estimator's throughput matrix.
//
// - X is recomputed only when the set of active jobs (admitted, not finished: waiting or
//   running) or a job's matrix row (a GPU type it failed to start on) changes, and no sooner
//   than options.realloc_interval allows; an allocator error falls back to AllocateGreedy for
//   that allocation.
// - Rounds are the grid k x round from time zero. At each round's first cycle every active
//   job's `rounds_active` grows by one, and (job, type) pairs with X > 0 are ranked by
//   X[j][t] / (rounds_on[j][t] / rounds_active[j]) -- how far the time it received on t lags
//   what X gives it (never served: first) -- ties by larger X, then the type it already runs
//   on, then job id, then type. Jobs are assigned greedily in that order to a type with room
//   for their gang; GPUs still left go to the unassigned jobs least served so far (their
//   fastest type with room), so the mechanism is work-conserving. Each assigned job's
//   rounds_on grows by one. Running jobs not assigned, or assigned to another type, are
//   preempted; assigned waiting jobs are launched with the Placer restricted to their type.
// - Between round boundaries (arrivals, departures, suspensions) the round's assigned jobs
//   that could not start yet are launched where their GPUs have become free, and GPUs no
//   assigned job will use go to unassigned waiting jobs in the same order (unless
//   !options.backfill_between_rounds); those runs are not counted in rounds_on (they use
//   capacity the round would leave idle).
// - Decisions::wake_at is the next round boundary (none while no job is active).
//
// State kept across cycles (X, the active set, matrix rows, rounds_active / rounds_on, the
// round's assignment, the next boundary) is a function of the sequence of contexts Decide was
// called with: the same inputs give the same decisions. Explaining (ctx.explain) leaves it as it
// was. SaveState writes all of it as text (round_policy_state.cc) and RestoreState reads it back,
// so a restarted daemon, and the replay of its log, go on as an uninterrupted run (the same
// decisions; the preemptions of one cycle follow ctx.running, which a restarted scheduler
// orders by job id rather than by launch); a restored
// state made on a cluster with another number of GPU types is dropped at the first Decide.
// Admission is FeasibilityAdmit's. Not for concurrent use.
class RoundPolicy final : public SchedulingPolicy {
 public:
  RoundPolicy(RoundPolicyOptions options, Allocator allocate);

  std::string_view Name() const override { return options_.name; }
  const RoundPolicyOptions& options() const { return options_; }
  // Order(): the default, FIFO among waiting jobs (the round mechanism decides, not the queue
  // order).
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    return admit_.Admit(job, ctx);
  }
  Decisions Decide(const SchedulingContext& ctx) const override;
  std::string SaveState() const override;
  Status RestoreState(std::string_view state) override;

  // For tests: the current allocation's X for a job (empty if not active), and how many times
  // X was computed (posed: see State::problem).
  std::vector<double> AllocationOf(JobId job) const;
  int allocations_computed() const { return state_.allocations_computed; }

 private:
  struct JobRecord {
    JobId id;
    int gang = 0;                // spec.num_gpus
    std::vector<double> row;     // estimator's rates per type (type-blind if agnostic)
    size_t failed_types = 0;     // Job::failed_gpu_types.size() when `row` was computed
    int index = -1;              // row in the current allocation
    int rounds_active = 0;       // round boundaries seen while active
    std::vector<int> rounds_on;  // per type: rounds assigned there
    // Per type, for options.deficit_ties / zero_entries: the deficit (RoundPolicyOptions);
    // empty while every deficit is zero.
    std::vector<double> deficit;
    // What the allocation problem reads of the job, kept here (the job table's entries are far
    // apart in memory): its submit time and reference speed, and its estimates as they were
    // when last copied (CopyEstimates: at its arrival, and since for every job that ran, the
    // only ones whose estimates change). Not saved: a restored state copies them at its first
    // sync.
    Timestamp submit_time;
    double ref_iters_per_s = 0;
    Duration estimated_total{0};
    Duration estimated_remaining{0};
  };
  struct State {
    std::optional<ConsolidatedPlacements> placements;
    // The active jobs by id (the order of X's rows when X was computed), and where each is:
    // slot[id.index()] is its position in `jobs`, -1 for a job not active (ids past the end too).
    // `slot` is not saved: Sync rebuilds it.
    std::vector<JobRecord> jobs;
    std::vector<int> slot;
    Allocation x;
    Timestamp next_round = kTimeZero;
    std::vector<std::pair<JobId, int>> assigned;  // this round: (job, type), in launch order
    int allocations_computed = 0;
    // GPU types of the cluster the state was made on (rows' and X's width); -1 before the first
    // Decide.
    int num_types = -1;
    // For options.realloc_interval > 0: when X was last computed, and whether the active set
    // changed since.
    Timestamp last_allocation = kTimeZero;
    bool allocation_stale = false;
    // For options.coalesce_above_jobs > 0: the jobs changed (arrived, left, a row changed) since
    // the last computation.
    int64_t changes_since_allocation = 0;
    // Whether `jobs` was compared with a context's active set since the state was made or
    // restored (not saved: a restored state compares at its first cycle), and the size of the
    // job table then: jobs added to the table since are the only ones that can have become
    // active.
    bool synced = false;
    size_t jobs_seen = 0;
    // The jobs that ran since the last sync (running then, or launched since): the only ones
    // that can have ended, or failed to launch on a type, but for waiting jobs cancelled. Not
    // saved.
    std::vector<JobId> watch;
    // The revision of ctx.running_changes at the last sync, if the context had one: the jobs
    // that joined or left ctx.running since are those of `watch` that can have changed (a job
    // that stays running changes in nothing a sync reads), so a sync that the log still knows
    // reads only them. Not saved.
    std::optional<uint64_t> running_revision;
    // Assign's ranking table, a cache of the (job, type) pairs the current X gives time on a
    // type the job can run on (x > 0, row > 0): the pairs of position i in `jobs` are
    // table[table_begin[i] .. table_begin[i + 1]), each with its x and the rounds received there
    // as the ranking counts them (rounds_on + options.initial_rounds_received). Empty
    // table_begin: to be built (a new X or a changed row clear it; a sync removes the pairs of
    // the jobs that left and gives arrivals, with no row in X yet, none); a counted assignment
    // updates its pair. Not saved.
    struct RankedPair {
      double x;
      double on;
      int type;
    };
    std::vector<RankedPair> table;
    std::vector<int> table_begin;
    // The problem of the last computation of X, and whether X is yet to be solved from it:
    // the allocator runs when X is first read (a round, a backfill between rounds, SaveState,
    // AllocationOf), so an X that a later change replaces before anything reads it is never
    // solved. The allocator answers from the problem (and max-min from the bases of the solves
    // before it, which an X never solved is not among), so X is the same whenever it runs.
    // Not saved (SaveState solves first).
    AllocationProblem problem;
    bool solve_pending = false;
    // Whether `problem` holds only its capacities yet: its per-job vectors are filled from the
    // records when first read (FillProblem), and before anything it reads of them changes (a
    // record's estimates, the active set or a row, but for a change that poses a new problem
    // at once), so that an arrival cycle whose problem the next change replaces copies no row.
    // `posed_at`: the time it was posed (its elapsed_s). Not saved (SaveState solves first).
    bool fill_pending = false;
    Timestamp posed_at = kTimeZero;
  };

  // What a cycle reads of its running jobs (ctx.running), walked at most once a cycle and only
  // by the cycles that need it (a round boundary, a backfill, a computation of X: ReadRunning):
  // per entry of ctx.running, the GPU type its placement's first part is on (-1 with no GPUs),
  // its GPUs, and RunningType; the GPUs the jobs with a GPU gang hold per type by their gangs.
  // `read`: whether this cycle filled it.
  struct RunningJobs {
    bool read = false;
    std::vector<int> placed_type;
    std::vector<int> placed_gpus;
    std::vector<int> running_type;
    std::vector<int> held_by_gpu_jobs;
  };

  // What ReadRunning reads of a running job's entry in the job table, kept between cycles by
  // job id: the type of its placement's first part (-1 with no GPUs), its GPUs, RunningType and
  // its gang. An entry changes only as its job joins or leaves ctx.running or is asked to stop,
  // which ctx.running_changes logs, so only the jobs logged since the last read are read again
  // (every one where the context has no log or its log no longer knows that read's revision):
  // the entries are far apart in memory, and thousands of running jobs are read at every cycle
  // that backfills. A cache of the job table, not state: not saved, not kept by explaining.
  struct RunningEntry {
    bool known = false;
    int placed_type = -1;
    int placed_gpus = 0;
    int running_type = -1;
    int gang = 0;
  };
  struct RunningEntries {
    std::vector<RunningEntry> by_id;
    std::optional<uint64_t> revision;  // of ctx.running_changes at the last read
    std::vector<JobId> changed;        // working storage
  };

  // An entry of Assign's walk: a (job, type) pair and what ranks it.
  struct RankedEntry {
    int walk;  // the type's place in the round's type order (0 for every type when kRanked)
    double priority;
    double x;
    bool here;
    JobId id;
    int type;
    int slot;  // the job's position in state_.jobs
  };
  // Working storage of one Decide, kept between calls only for its capacity, so that a cycle
  // does not allocate it anew: every use overwrites what it reads. Not state (not saved, not
  // kept by explaining).
  struct Buffers {
    RunningJobs running;
    std::vector<int> running_on;
    std::vector<char> is_running;
    std::vector<int> assigned_type;
    std::vector<char> assigned_by_id;  // all zero between uses
    std::vector<int> candidates;
    std::vector<char> chosen;
    std::vector<RankedEntry> head;
    std::vector<JobId> changed;  // SyncJobs: the watched jobs to read
    ClusterState scratch;
  };

  Decisions DecideAndUpdate(const SchedulingContext& ctx) const;
  // The record of an active job, or nullptr.
  JobRecord* Find(JobId id) const;
  // Fills buffers_.running from ctx.running, unless this cycle did already; returns it.
  const RunningJobs& ReadRunning(const SchedulingContext& ctx) const;
  // Marks the entries of running_entries_ the jobs logged since its last read may have changed
  // as unknown (all of them when the log cannot tell), and sizes it for ctx.jobs.
  void ForgetChangedRunningEntries(const SchedulingContext& ctx) const;
  // The running jobs with a GPU gang, counted without reading the job table: those with a
  // record. Every running job with GPUs was launched by this policy while it had a record (or
  // was running at the first sync, which makes one), and a record goes only once its job ended.
  // Call before SyncJobs changes the records, after the first sync.
  size_t RunningGpuJobs(const SchedulingContext& ctx) const;
  // The jobs of state_.watch a sync must read: those that joined or left ctx.running since the
  // last sync where ctx.running_changes still knows its revision, else all of them.
  std::span<const JobId> WatchedJobsToRead(const SchedulingContext& ctx) const;
  // Brings the active set and rows up to date; returns the jobs that changed (arrived, left, or
  // a row changed): X is stale when any did.
  size_t SyncJobs(const SchedulingContext& ctx) const;
  // The first sync of a fresh or restored state: compares `jobs` with the whole active set.
  size_t SyncAll(const SchedulingContext& ctx) const;
  // Whether a stale X is to be recomputed this cycle (options.realloc_interval,
  // options.coalesce_above_jobs).
  bool AllocationDue(const SchedulingContext& ctx) const;
  // Copies into `record` what ComputeAllocation reads of `job`; SameEstimates: whether the copy
  // would change nothing.
  static void CopyEstimates(const Job& job, JobRecord& record);
  static bool SameEstimates(const Job& job, const JobRecord& record);
  // Recomputes a record's row when the job failed on another type since; true if it did.
  bool RefreshRow(const SchedulingContext& ctx, const Job& job, JobRecord& record) const;
  // Poses the allocation problem of the active set now (filled by FillProblem, X solved by
  // SolvePending).
  void ComputeAllocation(const SchedulingContext& ctx) const;
  // Fills a posed problem's per-job vectors from the records, if it is yet to be filled.
  void FillProblem() const;
  // Whether every change of the active set or of a row poses a new problem in the same cycle
  // (no realloc_interval, no deficits read from the X replaced, no coalescing possible at this
  // cycle's active set): then a problem not filled when such a change comes is replaced unread,
  // and need not be filled first.
  bool ReplacedOnChange(const SchedulingContext& ctx) const;
  // Solves a posed problem into state_.x, if one is pending.
  void SolvePending() const;
  // Builds state_.table from X, the rows and the counts.
  void BuildTable(int types) const;
  // Assigns the jobs at `candidates` (positions in state_.jobs) to types with room (`room`, GPUs
  // per type), appending to state_.assigned, in the ranking order described above.
  // `running_on`: per position, the type the job runs on (RunningType). `count_rounds`:
  // boundary assignment.
  void Assign(const SchedulingContext& ctx, const std::vector<int>& candidates,
              const std::vector<int>& running_on, std::vector<int>& room, bool count_rounds) const;
  // Work conservation's order: the candidates not chosen that have a row in X, as (fraction of
  // their active rounds they were assigned, id, position), unsorted.
  std::vector<std::tuple<double, JobId, int>> UnassignedByTimeReceived(
      const std::vector<int>& candidates, const std::vector<char>& chosen) const;
  // The type of `order` with the job's highest rate among those with room for its gang; -1 if
  // none (ties go to the earlier type in `order`).
  static int FastestTypeWithRoom(const JobRecord& record, const std::vector<int>& order,
                                 const std::vector<int>& room);
  // Assign's walk under options.deficit_ties or options.zero_entries (the same contract, the
  // lists as those options describe).
  void AssignByLists(const SchedulingContext& ctx, const std::vector<int>& candidates,
                     const std::vector<int>& running_on, std::vector<int>& room,
                     bool count_rounds) const;

  RoundPolicyOptions options_;
  Allocator allocate_;
  // Whether Decide is explaining: its solves are tentative (AllocationProblem::tentative).
  mutable bool explaining_ = false;
  FeasibilityAdmit admit_;
  mutable State state_;
  mutable Buffers buffers_;
  mutable RunningEntries running_entries_;
};

}  // namespace dlsched::hetero
