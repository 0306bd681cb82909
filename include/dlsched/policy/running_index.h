#pragma once

#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"
#include "dlsched/policy/plugin.h"
#include "dlsched/policy/rank_order.h"

namespace dlsched {

// The running jobs in a policy's rank order (its RankOrder), kept across cycles so a victim
// search walks them from the lowest rank up without a scan of every running job. Valid for
// orders among running jobs that change only at the times the order's NextRankChange
// announces, and in between move as its RankDrift says (every shipped queue sort: see
// QueueSortPlugin); the index re-keys a job when its time comes. It stores each job's key as
// Rank - drift x now, which is constant in between, so ordering compares stored integers and
// calls no policy code. Debug builds check after each Refresh that this order is the rank
// order (CheckOrder).
//
// Only victims — jobs that may be preempted now — are kept in rank order. Guarded jobs (a
// minimum run time, a spent preemption budget: the order's VictimFrom says until when, as a
// job is filed) wait in the order of the time they become victims and join the rank order
// then, so a victim search never walks a job it could not take. Nor does it walk a victim
// already asked to stop (Job::preempt_requested: Stopping): under a long queue each cycle asks
// for several, and while their checkpoints run they would pile up where searches begin.
//
// Where the order's by_tenant() (a policy with tenant quotas), the victims are filed by tenant
// too (victims_by_tenant), so that a search can leave out the tenants whose guarantee shields
// all their jobs without walking them.
//
// GPU sharing: a victim is *dead* while it holds a GPU in a shared mode (Job::share) together
// with a running job that is not a victim (guarded, asked to stop, or never a victim). A victim
// search releases only victims, so it never releases that co-holder, and the GPU stays held
// whatever the search releases: releasing a dead victim frees no GPU (its holder count and its
// CPUs and host memory aside). Dead victims are filed apart (dead_victims(), TenantVictims::dead)
// so that a search that can do without them does not step through them; a victim becomes dead
// or alive again as its co-holders come, go, turn victims or are asked to stop. Only co-holders
// filed here count (a job InsertAtNextRefresh holds back joins at the next Refresh), so a victim
// is never taken for dead wrongly.
// Owned by the Scheduler; single-threaded.
class RunningIndex {
 public:
  // `jobs` resolves ids; `order` ranks and guards jobs. Both must outlive the index.
  RunningIndex(const JobTable& jobs, const RankOrder& order);
  // Not copyable: it keeps each job's position in its own containers (moves keep them valid).
  RunningIndex(const RunningIndex&) = delete;
  RunningIndex& operator=(const RunningIndex&) = delete;
  RunningIndex(RunningIndex&&) = default;
  RunningIndex& operator=(RunningIndex&&) = default;

  // Adds a job that has just started running at `now`. Call Refresh(now) first.
  void Insert(JobId id, Timestamp now);
  // Adds a running job at the next Refresh (when the time to compare ranks at is known).
  void InsertAtNextRefresh(JobId id) { deferred_.push_back(id); }
  // Removes a job that stopped running. Safe at any time: it compares nothing.
  void Erase(JobId id);
  // The running job was asked to stop (Job::preempt_requested is set): it leaves the victims
  // until Erase, and joins them no more when re-keyed. A guarded job stays guarded (guarded()
  // lists it until its time comes). Safe at any time: it compares nothing.
  void Stopping(JobId id);
  // Re-keys every job whose rank may have changed by `now`, and moves the guarded jobs whose
  // time has come to the victims. Call before reading or inserting.
  void Refresh(Timestamp now);

  // The earliest announced rank change among running jobs (kTimeNever if none). The times
  // guarded jobs become victims are not included (see guarded()).
  Timestamp next_change() const;

  // Running jobs that may be preempted now and are not dead, by stored key, highest rank first:
  // iterate in reverse for the lowest first. Compare them with KeyAt, not the stored keys.
  const std::set<RankKey>& victims() const { return victims_; }
  // The dead victims (see the class comment), in the same order; every victim is in exactly one
  // of victims() and dead_victims(), and merging the two by stored key gives all victims in rank
  // order. A dead victim holds one GPU.
  const std::set<RankKey>& dead_victims() const { return dead_victims_; }
  // One tenant's victims (JobSpec::queue as the job was filed), by the same stored keys as
  // victims(): those not dead, the dead ones, and how many of them use no GPU (none is dead).
  struct TenantVictims {
    std::set<RankKey> victims;
    std::set<RankKey> dead;
    size_t cpu_jobs = 0;
    bool empty() const { return victims.empty() && dead.empty(); }
  };
  using TenantVictimsMap = std::map<std::string, TenantVictims, std::less<>>;
  // victims() split by tenant, where the order's by_tenant() (else empty). A tenant once filed
  // stays (maybe with no victims), so pointers to the entries stay valid.
  const TenantVictimsMap& victims_by_tenant() const { return victims_by_tenant_; }
  // Guarded jobs that become victims later in their run, as (when, job), earliest first.
  const std::set<std::pair<Timestamp, JobId>>& guarded() const { return guarded_; }
  // A running job's key as the policy would give it at `now` (not before the last Refresh or
  // Insert, nor past the next announced change).
  RankKey KeyAt(JobId id, Timestamp now) const {
    RankKey key = stored_[id.index()];
    key.rank += drift_[id.index()] * now.time_since_epoch().count();
    return key;
  }
  size_t size() const {
    return victims_.size() + dead_victims_.size() + guarded_.size() + never_victims_ +
           stopping_victims_;
  }

  // Whether the index agrees with its RankOrder at `now` (not before the last Refresh, nor past
  // the next announced change): every filed job's KeyAt is the key the order gives it, the
  // victims' keys at `now` ascend strictly in the index's order (a rank change the order did
  // not announce, or jobs of different drifts that interleave, break it), and
  // victims_by_tenant() files each victim, and only them, under its tenant, and a victim is
  // filed dead exactly when a job filed as no victim holds its shared GPU (as the job table's
  // placements say). O(running jobs), and it calls the order for each: Refresh runs it in debug
  // builds only; tests call it directly.
  Status CheckOrder(Timestamp now) const;

 private:
  struct Due {
    Timestamp at;
    JobId job;
    bool operator>(const Due& other) const {
      return at != other.at ? at > other.at : job > other.job;
    }
  };
  // kStoppingVictim: a victim asked to stop (Stopping), in no set.
  enum Where : uint8_t { kOutside, kVictim, kGuarded, kNeverVictim, kStoppingVictim };

  // A GPU held in a shared mode by filed jobs: its holders and how many of them are no victim.
  struct SharedGpu {
    std::vector<JobId> holders;
    int not_victims = 0;
  };
  static constexpr size_t kNotShared = static_cast<size_t>(-1);
  // The slot of the GPU `job` holds in a shared mode (a shared job holds one), or kNotShared.
  static size_t SharedSlotOf(const Job& job);

  void Grow(JobId id);
  // Takes a job out of whichever set holds it, and off its shared GPU.
  void Take(JobId id);
  // Files the victim at index `i` (where_ kVictim) in the victims, or the dead ones while a
  // co-holder is no victim, and with a tenant index under its tenant.
  void FileVictim(size_t i, const JobSpec& spec);
  // Takes the victim at index `i` out of the victims and, with a tenant index, its tenant's.
  void EraseVictim(size_t i);
  // Moves the victim at index `i` between the victims and the dead ones.
  void SetDead(size_t i, bool dead);
  // The job at index `i`, holding shared GPU `gpu`, turned no victim (`sign` 1: filed guarded,
  // never a victim or asked to stop) or stopped being one (-1: taken out); the GPU's victims
  // die with its first such holder and come back to life when its last one goes.
  void CountNotVictim(size_t i, SharedGpu& gpu, int sign);
  // CheckOrder's part for the dead victims and the shared GPUs' holders.
  Status CheckDead() const;

  const JobTable* jobs_;
  const RankOrder* order_;
  std::set<RankKey> victims_;
  std::set<RankKey> dead_victims_;
  std::set<std::pair<Timestamp, JobId>> guarded_;
  size_t never_victims_ = 0;
  size_t stopping_victims_ = 0;
  // Per job:
  std::vector<Where> where_;     // which set holds it
  std::vector<RankKey> stored_;  // its key less drift x (time it was filed)
  std::vector<int64_t> drift_;   // its RankDrift
  // Where victims_ (or dead_victims_, where dead_) or guarded_ holds it, so a stop, a re-key or
  // a suspension erases without a search (only the one its where_ names is set).
  std::vector<std::set<RankKey>::iterator> in_victims_;
  std::vector<uint8_t> dead_;        // a victim: whether filed dead
  std::vector<size_t> shared_slot_;  // the slot of the GPU it holds shared, or kNotShared
  std::vector<std::set<std::pair<Timestamp, JobId>>::iterator> in_guarded_;
  std::vector<Timestamp> due_at_;  // its pending re-key time
  // by_tenant only: where it is filed in victims_by_tenant_ while a victim.
  struct InTenant {
    TenantVictims* tenant = nullptr;  // nullptr: not filed
    std::set<RankKey>::iterator at;
    bool cpu = false;  // counted in TenantVictims::cpu_jobs
  };
  std::vector<InTenant> in_tenant_;
  TenantVictimsMap victims_by_tenant_;
  // The GPUs filed jobs hold in a shared mode, by slot: node index x kMaxGpusPerNode + GPU.
  std::vector<SharedGpu> shared_gpus_;
  // Lazily deleted; next_change() drops stale tops, which changes no observable state.
  mutable std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  std::vector<JobId> deferred_;  // InsertAtNextRefresh
  std::vector<JobId> refile_;    // Refresh's scratch, kept to reuse its memory
};

}  // namespace dlsched
