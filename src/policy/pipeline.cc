#include "dlsched/policy/pipeline.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_set>

#include "dlsched/policy/placement.h"
#include "dlsched/policy/running_index.h"

namespace dlsched {
namespace {

template <typename P>
Result<std::unique_ptr<P>> CreateAs(const PluginRegistry& registry, PluginPoint point,
                                    const PluginConfig& config) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Plugin> plugin,
                      registry.Create(point, config.name, config.args));
  // The registry files each plugin under the point its base class names, so this holds.
  return std::unique_ptr<P>(static_cast<P*>(plugin.release()));
}

template <typename P>
std::vector<const P*> PluginViews(const std::vector<std::unique_ptr<P>>& plugins) {
  std::vector<const P*> views;
  for (const auto& plugin : plugins) views.push_back(plugin.get());
  return views;
}

// The cluster's totals of the resources tenants' shares are measured on in a cycle: GPUs, and
// with the dominant share (PipelineConfig::ShareMeasure::kDominant) the CPU cores and host
// memory the cluster states (0: not stated, not measured).
struct ShareTotals {
  int64_t gpus = 0;
  int64_t cpus = 0;
  int64_t memory_mib = 0;
  bool host() const { return cpus > 0 || memory_mib > 0; }
};

// With quotas (or the fair tenant order): one tenant's resources held or promised in a cycle
// and its quota in those resources. A share s of the cluster is, in each measured resource,
// floor(s x total): a dominant share (DRF: the largest of the tenant's shares of the resources)
// is within s exactly when every resource is, so a quota on the dominant share is the same
// quota on every resource. The host resources are compared only where ShareTotals::host();
// elsewhere the tenant's use is its GPUs alone, as with ShareMeasure::kGpu.
struct TenantUse {
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;
  int held = 0;  // GPUs
  int64_t held_cpus = 0;
  int64_t held_memory_mib = 0;
  bool has_quota = false;
  int guaranteed = 0;  // GPUs (0 without a quota)
  int cap = 0;         // GPUs (has_quota only)
  // Host limits: kUnbounded for a resource not measured (and caps of max_share 1).
  int64_t guaranteed_cpus = kUnbounded;
  int64_t guaranteed_memory_mib = kUnbounded;
  int64_t cap_cpus = kUnbounded;
  int64_t cap_memory_mib = kUnbounded;

  // Adds (sign 1) or removes (-1) a job's GPUs and host resources.
  void Add(int gpus, const HostRequest& host, int sign) {
    held += sign * gpus;
    held_cpus += sign * host.cpus;
    held_memory_mib += sign * host.memory_mib;
  }
  // Whether it holds its guarantee or less with `gpus` and `host` more, in every resource.
  bool WithinGuaranteeWith(int gpus, const HostRequest& host, bool measure_host) const {
    return has_quota && held + gpus <= guaranteed &&
           (!measure_host || (held_cpus + host.cpus <= guaranteed_cpus &&
                              held_memory_mib + host.memory_mib <= guaranteed_memory_mib));
  }
  // Whether `gpus` and `host` more would take it past its cap in some resource.
  bool OverCapWith(int gpus, const HostRequest& host, bool measure_host) const {
    return has_quota && (held + gpus > cap ||
                         (measure_host && (held_cpus + host.cpus > cap_cpus ||
                                           held_memory_mib + host.memory_mib > cap_memory_mib)));
  }
  // Whether it would hold less than its guarantee in every resource without `gpus` and `host`
  // (its dominant share below the guaranteed share).
  bool BelowGuaranteeWithout(int gpus, const HostRequest& host, bool measure_host) const {
    return has_quota && held - gpus < guaranteed &&
           (!measure_host || (held_cpus - host.cpus < guaranteed_cpus &&
                              held_memory_mib - host.memory_mib < guaranteed_memory_mib));
  }
  // Whether BelowGuaranteeWithout(gpus, host, ...) may hold for some `host`: its GPU part.
  bool MayShield(int gpus) const { return has_quota && held - gpus < guaranteed; }
  // Whether BelowGuaranteeWithout holds for every job it runs, given whether some of them use
  // no GPU: they all run within its guarantee, which shields them from other tenants' jobs.
  bool ShieldsAll(bool has_cpu_jobs, bool measure_host) const {
    return BelowGuaranteeWithout(has_cpu_jobs ? 0 : 1, HostRequest{}, measure_host);
  }
  // Whether it holds more than its guarantee in some resource (a borrower; without a quota,
  // anything).
  bool Borrowing(bool measure_host) const {
    return held > guaranteed || (measure_host && (held_cpus > guaranteed_cpus ||
                                                  held_memory_mib > guaranteed_memory_mib));
  }
  // Its share of the cluster: of the GPUs, or its dominant share where the host is measured.
  double Share(const ShareTotals& totals) const {
    double share = totals.gpus > 0 ? static_cast<double>(held) / totals.gpus : 0;
    if (totals.cpus > 0) share = std::max(share, static_cast<double>(held_cpus) / totals.cpus);
    if (totals.memory_mib > 0) {
      share = std::max(share, static_cast<double>(held_memory_mib) / totals.memory_mib);
    }
    return share;
  }

  // The widest gang of this tenant that starting now keeps within its guarantee; negative
  // when none (no quota, or the guarantee is used up).
  int GuaranteeRoom() const {
    return has_quota ? guaranteed - held : std::numeric_limits<int>::min();
  }
  // The widest gang of this tenant that starting now keeps within its cap; negative when none.
  int CapRoom() const { return has_quota ? cap - held : std::numeric_limits<int>::max(); }
  // Any gang (an explaining walk meets the jobs over their cap too).
  int AnyRoom() const { return std::numeric_limits<int>::max(); }
};

// The policy order restricted to the jobs that fit their tenant's room when met (`room`:
// TenantUse::GuaranteeRoom or CapRoom): the waiting jobs of the tenants added from
// JobQueue::by_tenant_order, merged across tenants and gang sizes like GangWalk, visiting a gang
// of a tenant only while it fits the tenant's room. A gang that does not is parked; Unpark,
// after jobs were preempted (a tenant's room grows only then: launches shrink it), puts the
// parked gangs that fit again back in the merge after the last job met. So the walk meets the
// same jobs in the same order as a walk of the whole queue that passes over those that do not
// fit, at a cost bound by the jobs it meets, not by the queue.
//
// With `fair` (PipelineConfig::TenantOrder::kFair) the walk is DRF's progressive filling
// instead: each step meets the first job, in policy order, of the tenant whose share (of the
// GPUs, or its dominant share: TenantUse::Share) is the smallest at that step (ties: the
// policy order), so the tenants' shares rise together. O(tenants x gang sizes) a step.
class TenantWalk {
 public:
  using Room = int (TenantUse::*)() const;
  // One gang size of one tenant: its waiting jobs, from the next one to meet.
  struct Head {
    int tenant = 0;
    int gang = 0;
    const JobQueue::OrderIndex* index = nullptr;
    JobQueue::OrderIndex::const_iterator it;
  };
  // The walk's working memory, kept by its owner across walks so that a walk allocates nothing
  // once the buffers have grown (a cycle makes two walks).
  struct Buffers {
    std::vector<Head> heap;  // in the fair order, unordered
    std::vector<Head> parked;
  };
  // `tenants` (indexed by Add's tenant) is read at every step; it may grow meanwhile. `fair`
  // (nullptr: policy order) must outlive the walk; so must `buffers`, which the walk clears and
  // uses (one walk at a time).
  TenantWalk(const std::vector<TenantUse>& tenants, Room room, Buffers& buffers,
             const ShareTotals* fair = nullptr)
      : tenants_(&tenants), room_(room), fair_(fair), heap_(buffers.heap), parked_(buffers.parked) {
    heap_.clear();
    parked_.clear();
  }

  // Adds the waiting jobs of one gang size of tenant `tenant`; only before the first Next.
  void Add(int tenant, int gang, const JobQueue::OrderIndex& index) {
    if (index.empty()) return;
    Head head{tenant, gang, &index, index.begin()};
    if (Fits(head)) {
      heap_.push_back(head);
      if (fair_ == nullptr) std::push_heap(heap_.begin(), heap_.end(), Later{});
    } else {
      parked_.push_back(head);
    }
  }

  // The next job that fits its tenant's room, of a gang of at most `max_gang` GPUs (which must
  // not grow between calls, as for GangWalk).
  std::optional<RankKey> Next(int max_gang) {
    if (fair_ != nullptr) return NextFair(max_gang);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      Head& head = heap_.back();
      if (head.gang > max_gang) {  // for good
        heap_.pop_back();
        continue;
      }
      if (!Fits(head)) {
        parked_.push_back(head);
        heap_.pop_back();
        continue;
      }
      last_ = *head.it++;
      if (head.it == head.index->end()) {
        heap_.pop_back();
      } else {
        std::push_heap(heap_.begin(), heap_.end(), Later{});
      }
      return last_;
    }
    return std::nullopt;
  }

  // Resumes the parked gangs that fit their tenant's room again, after the last job met.
  // In the fair order, each resumes where it was parked (no walk of the whole queue to follow).
  void Unpark() {
    std::erase_if(parked_, [&](Head& head) {
      if (!Fits(head)) return false;
      if (fair_ == nullptr) {
        head.it = last_ ? head.index->upper_bound(*last_) : head.index->begin();
      }
      if (head.it != head.index->end()) {
        heap_.push_back(head);
        if (fair_ == nullptr) std::push_heap(heap_.begin(), heap_.end(), Later{});
      }
      return true;
    });
  }

 private:
  bool Fits(const Head& head) const { return head.gang <= ((*tenants_)[head.tenant].*room_)(); }
  // Next in the fair order: heap_ holds the heads unordered.
  std::optional<RankKey> NextFair(int max_gang) {
    std::erase_if(heap_, [&](const Head& head) {
      if (head.gang > max_gang) return true;  // for good
      if (Fits(head)) return false;
      parked_.push_back(head);
      return true;
    });
    if (heap_.empty()) return std::nullopt;
    size_t best = 0;
    double best_share = (*tenants_)[heap_[0].tenant].Share(*fair_);
    for (size_t i = 1; i < heap_.size(); ++i) {
      const double share = (*tenants_)[heap_[i].tenant].Share(*fair_);
      if (share < best_share || (share == best_share && *heap_[i].it < *heap_[best].it)) {
        best = i;
        best_share = share;
      }
    }
    Head& head = heap_[best];
    last_ = *head.it++;
    if (head.it == head.index->end()) heap_.erase(heap_.begin() + static_cast<ptrdiff_t>(best));
    return last_;
  }
  // Heap order: the head whose job comes first is on top.
  struct Later {
    bool operator()(const Head& a, const Head& b) const { return *b.it < *a.it; }
  };

  const std::vector<TenantUse>* tenants_;
  Room room_;
  const ShareTotals* fair_;
  std::vector<Head>& heap_;  // in the fair order, unordered
  std::vector<Head>& parked_;
  std::optional<RankKey> last_;
};

// A victim search's walk over some sets of victims (RunningIndex::victims_by_tenant, a tenant's
// victims and its dead ones; or RunningIndex::victims() and dead_victims(), as tenant 0),
// lowest rank first: the reverse walk of all victims restricted to those sets (each is ordered
// by the same stored keys, so merging them by key gives that order). O(sets added) a step; a
// search adds the few tenants whose jobs it may take.
class TenantVictimWalk {
 public:
  // Forgets the tenants added; keeps the buffer, so a cycle's searches allocate once.
  void Reset() { heads_.clear(); }
  void Add(int tenant, const std::set<RankKey>& victims) {
    if (!victims.empty()) heads_.push_back({tenant, victims.rbegin(), victims.rend()});
  }
  // Leaves the tenant's victims not met yet out of the walk.
  void Drop(int tenant) {
    std::erase_if(heads_, [&](const Head& head) { return head.tenant == tenant; });
  }
  // The next victim, lowest rank first, and its tenant.
  struct Step {
    JobId id;
    int tenant = 0;
  };
  std::optional<Step> Next() {
    if (heads_.empty()) return std::nullopt;
    size_t lowest = 0;  // the head of the lowest rank: the largest key
    for (size_t i = 1; i < heads_.size(); ++i) {
      if (*heads_[lowest].it < *heads_[i].it) lowest = i;
    }
    Head& head = heads_[lowest];
    const Step step{head.it->id, head.tenant};
    if (++head.it == head.end) heads_.erase(heads_.begin() + static_cast<ptrdiff_t>(lowest));
    return step;
  }

 private:
  struct Head {
    int tenant = 0;
    std::set<RankKey>::const_reverse_iterator it;
    std::set<RankKey>::const_reverse_iterator end;
  };
  std::vector<Head> heads_;
};

// The plugin pipeline of DESIGN.md: Admit -> QueueSort -> Filter/Score -> Preempt.
class PipelinePolicy final : public SchedulingPolicy {
 public:
  PipelinePolicy(PipelineConfig config, std::vector<std::unique_ptr<AdmitPlugin>> admit,
                 std::unique_ptr<QueueSortPlugin> sort,
                 std::vector<std::unique_ptr<FilterPlugin>> filters,
                 std::vector<std::unique_ptr<ScorePlugin>> scores,
                 std::vector<std::unique_ptr<PreemptPlugin>> preempt)
      : config_(std::move(config)),
        admit_(std::move(admit)),
        sort_(std::move(sort)),
        filters_(std::move(filters)),
        scores_(std::move(scores)),
        preempt_(std::move(preempt)),
        order_(sort_.get(), PluginViews(preempt_), TracksTenants()),
        filter_views_(PluginViews(filters_)) {
    for (size_t i = 0; i < scores_.size(); ++i) {
      score_views_.push_back({scores_[i].get(), config_.score[i].weight});
    }
  }

  std::string_view Name() const override { return config_.name; }
  // The queue sort's ranks, the preempt plugins' guards; the quota passes walk the tenants' own
  // indexes (WalkFitting).
  const RankOrder& Order() const override { return order_; }

  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    for (const auto& plugin : admit_) {
      Fit fit = plugin->Admit(job, ctx);
      if (!fit.ok) return fit;
    }
    return Fit::Yes();
  }

  Decisions Decide(const SchedulingContext& ctx) const override;

 private:
  enum class QuotaPass { kAll, kGuaranteed, kBorrowing };
  // One cycle's working state.
  struct Cycle {
    const SchedulingContext& ctx;
    const Placer& placer;
    // Free GPUs after this cycle's launches and reservations; a victim search releases its
    // candidates on it in a trial (ClusterState::BeginTrial) and rolls them back.
    ClusterState& scratch;
    Decisions decisions;
    std::vector<JobId> victims;  // chosen for preemption this cycle (few)
    std::vector<JobId> chosen;   // one search's victims, reused across attempts
    std::vector<Placer::Freed> freed;  // the victim walk's freed nodes since its last Find
    int preemption_attempts = 0;
    int walked = 0;  // jobs TryStart looked at before the current one (for explanations)
    // With quotas or the fair order: every tenant known to the policy (tenant_ids_), by index.
    std::vector<TenantUse> tenants;
    // What the tenants' shares are measured on in this cycle (TenantUse), and whether that
    // includes CPUs or host memory.
    ShareTotals totals;
    bool measure_host = false;
    QuotaPass quota_pass = QuotaPass::kAll;
    // Jobs the first pass started or found victims for; the second pass leaves them alone.
    std::unordered_set<JobId> handled;
    // Gang size of the smallest untyped job whose victim search failed this cycle. Jobs are
    // searched in rank order, so a later job outranks only a subset of those victims: one as
    // large would fail too (a typed one all the more).
    int smallest_failed_gang = std::numeric_limits<int>::max();
    // With quotas, by tenant index: the last failed victim search by rank (TryPreemptFor) and
    // by reclaim (TryReclaimFor) for a job of the tenant, valid while `epoch` is the cycle's.
    // Until a launch or a commit (which start a new epoch: only they change the free GPUs, the
    // victims chosen and the tenants' GPUs), a search for a later job of the same tenant at
    // least as wide (by rank: ranked at or below the failed one) would meet a subset of the
    // same candidates on the same free GPUs and fail too, with no other effect (its wake-ups
    // are at or after the failed search's), so KnownToFail spares the walk.
    struct FailedSearch {
      uint64_t epoch = 0;  // 0: none
      int gang = 0;
      RankKey key;  // of the job searched for (by rank only)
    };
    std::vector<FailedSearch> failed_by_rank;
    std::vector<FailedSearch> failed_reclaim;
    // The last failed search by rank whose walk met every victim ranked below its job, for a
    // job with GPUs: no tenant's guarantee shielded one, and no preempt plugin refused one; and
    // whose placement was refused for want of GPUs, not for the job's own reasons (a gang held
    // for consolidation, GPU types it failed on; with no filters, which judge each job). A
    // search for a job of any tenant, at least as wide and ranked at or below it, meets a subset
    // of those victims (the ones of its tenant's guarantee included) and fails too; a job whose
    // first preempt plugin refuses it every victim is left to its own search (its retry time).
    FailedSearch failed_unshielded;
    // Whether the last TryPreemptFor's walk met every victim as failed_unshielded says.
    bool last_search_unshielded = false;
    uint64_t epoch = 1;
    // The first-ranked (least) key GuardedRetry answered for in this cycle; nullopt: none yet.
    // After an answer for key k, every guarded job turning before the cycle's wake-up (which only
    // comes earlier within a cycle) has a key at most k, so a job whose key is at least k
    // outranks none of them and gets kTimeNever without a walk.
    std::optional<RankKey> guarded_retry_key;
    // With quotas: RunningIndex::victims_by_tenant by tenant index (nullptr: no victims), set
    // up by the cycle's first victim search (VictimsByTenant); and the searches' walk.
    std::vector<const RunningIndex::TenantVictims*> victims_by_tenant;
    bool victims_by_tenant_set = false;
    TenantVictimWalk victim_walk;
    // With quotas: the tenants with jobs waiting, by index, with their JobQueue::by_tenant_order
    // entry, set up by the cycle's first WalkTenants.
    std::vector<std::pair<int, const JobQueue::GangOrder*>> waiting_tenants;
    bool waiting_tenants_set = false;
  };
  enum class Search { kByRank, kReclaim };
  // Whether a victim search of this kind for the job is known to fail (Cycle::failed_by_rank,
  // Cycle::failed_unshielded).
  bool KnownToFail(Cycle& cycle, Search kind, const JobView& job) const;
  // Records a failed search; only for a job without type or labels, whose placement depends on
  // its gang alone (as Cycle::smallest_failed_gang).
  void RecordFailure(Cycle& cycle, Search kind, const JobView& job) const;

  // False once nothing more can start this cycle: no free GPU, no preemption attempt left, and
  // no CPU job with free CPUs to go to.
  bool MayStartMore(const Cycle& cycle) const {
    return cycle.scratch.free_total() > 0 || MaySearchVictims(cycle) ||
           CpuJobsMayStart(cycle.ctx, cycle.scratch);
  }
  // Whether CPU jobs (gang 0) wait and some node has a free CPU.
  static bool CpuJobsMayStart(const SchedulingContext& ctx, const ClusterState& state) {
    if (state.free_cpus_total() == 0) return false;
    const auto it = ctx.queue.by_gang_order().find(0);
    return it != ctx.queue.by_gang_order().end() && !it->second.empty();
  }
  // A victim search can only succeed where the last one failed if jobs arrived or left, or time
  // changed ranks or protections. Suspensions alone return GPUs already promised to the jobs
  // that asked for them and requeue jobs ranked below those, so they never make one succeed.
  bool VictimSearchMayHelp(const SchedulingContext& ctx) const {
    const CycleTrigger& t = ctx.trigger;
    return !preempt_.empty() && (t.arrivals || t.departures || t.timer);
  }
  bool MaySearchVictims(const Cycle& cycle) const {
    return cycle.preemption_attempts < config_.max_preemption_attempts &&
           VictimSearchMayHelp(cycle.ctx);
  }
  // The largest gang that could still start this cycle: on free GPUs, or by a victim search.
  int LargestUsefulGang(const Cycle& cycle) const;
  // The cycle's walks over waiting jobs: starving jobs first (longest waiting first), then the
  // policy order. WalkAll visits every job (strict head of line, explanations); WalkFitting,
  // for backfilling policies, visits only jobs whose gang could still start, so a full cluster
  // with a long queue of wide jobs costs O(gang sizes) per start, not O(queue).
  template <typename Starving>
  void WalkFitting(Cycle& cycle, const Starving& starving) const;
  template <typename Starving>
  void WalkAll(Cycle& cycle, const Starving& starving) const;
  // With quotas, the policy-order part of a quota pass over the tenants' own indexes
  // (TenantWalk): the jobs of a gang of at most max_gang() GPUs that fit their tenant's room
  // for the pass, in policy order, as a walk of the whole queue would meet them.
  template <typename Starving, typename MaxGang>
  void WalkTenants(Cycle& cycle, const Starving& starving, const MaxGang& max_gang) const;
  // The starvation guard: a job is starving when it waited past the limit and is guarded.
  bool WaitedPastLimit(const Job& job, Timestamp now) const {
    return config_.starvation_limit != Duration::max() &&
           now - job.queued_since >= config_.starvation_limit;
  }
  // Whether the longest-waiting job waited past the limit: else the starving walk would meet
  // no job, and is not even set up. O(gang sizes).
  bool AnyWaitedPastLimit(const SchedulingContext& ctx) const {
    return config_.starvation_limit != Duration::max() && !ctx.queue.empty() &&
           ctx.now - ctx.queue.oldest_wait() >= config_.starvation_limit;
  }
  bool IsGuarded(const Job& job) const {
    return !config_.starvation_guard_no_deadline_only || !job.spec.deadline;
  }
  // Tries to start the job; returns false when it is blocked.
  bool TryStart(Cycle& cycle, const JobView& job) const;
  // Whether the policy keeps the tenants' use in each cycle (cycle.tenants): with quotas, or
  // the fair tenant order.
  bool TracksTenants() const {
    return !config_.quotas.empty() || config_.tenant_order == PipelineConfig::TenantOrder::kFair;
  }
  bool FairOrder() const { return config_.tenant_order == PipelineConfig::TenantOrder::kFair; }
  // The CPUs and host memory the tenant's use counts for the job: none unless measured.
  static HostRequest HostOf(const Cycle& cycle, const Job& job) {
    return cycle.measure_host ? EffectiveHostRequest(job.spec, cycle.ctx.cluster.host_defaults())
                              : HostRequest{};
  }
  // Quotas: the tenant's quota (nullptr: none), and GPUs as a count of the cluster's.
  const PipelineConfig::Quota* QuotaOf(std::string_view tenant) const;
  int ShareToGpus(const SchedulingContext& ctx, double share) const {
    return static_cast<int>(share * ctx.cluster.total_gpus() + 1e-9);
  }
  // The tenant's index in cycle.tenants (and tenant_ids_), interning it (holding 0 GPUs) on
  // first sight.
  int TenantOf(Cycle& cycle, std::string_view tenant) const;
  // The job's tenant's index, from job_tenants_ once checked in this cycle: O(1).
  int TenantOf(Cycle& cycle, const Job& job) const {
    const size_t i = job.id.index();
    if (i < job_tenants_.size() && job_tenants_[i].checked_in == decide_count_) {
      return job_tenants_[i].tenant;
    }
    return CheckTenantOf(cycle, job);
  }
  // TenantOf for a job not checked in this cycle: checks (or fills) its job_tenants_ entry.
  int CheckTenantOf(Cycle& cycle, const Job& job) const;
  // A running job's tenant index as this cycle's CountTenantsGpus counted it (a running job's
  // tenant does not change while it runs): O(1), comparing no name, for the victim searches.
  int RunningTenantOf(JobId id) const {
    const Counted& entry = counted_[id.index()];
    DS_CHECK(entry.count == count_) << "job " << id << " was not counted running this cycle";
    return entry.tenant;
  }
  // Sets each tenant's held GPUs in cycle.tenants: the last cycle's count, updated by the jobs
  // that started or stopped since (see counted_). O(running jobs then and now), reading only
  // the records of the jobs that started.
  void CountTenantsGpus(Cycle& cycle) const;
  // A tenant's use with its quota (QuotaOf) in the cycle's measured resources, holding nothing.
  TenantUse UseOf(const Cycle& cycle, const PipelineConfig::Quota* quota) const;
  // Whether the job's tenant would exceed its max_share by starting it.
  bool OverQuota(Cycle& cycle, const JobView& job) const;
  // Whether the job's tenant holds less than its guarantee even with the job running.
  bool WithinGuarantee(Cycle& cycle, const JobView& job) const;
  // Starts a victim search: a trial on the cycle's scratch, nothing chosen. EndVictimSearch
  // rolls the trial back, so that the scratch is again the cycle's free GPUs.
  static void BeginVictimSearch(Cycle& cycle) {
    cycle.scratch.BeginTrial();
    cycle.chosen.clear();
  }
  static void EndVictimSearch(Cycle& cycle) { cycle.scratch.RollBackTrial(); }
  // Adds the nodes `placement` holds GPUs on to `freed`, once each, with their free GPUs in
  // `state` (before it is released there).
  static void NoteFreed(const ClusterState& state, const Placement& placement,
                        std::vector<Placer::Freed>& freed) {
    for (const NodeGpus& part : placement.parts) {
      if (part.gpus == 0) continue;
      if (std::ranges::none_of(freed, [&](const Placer::Freed& f) { return f.node == part.node; })) {
        freed.push_back({part.node, state.free_gpus(part.node)});
      }
    }
  }
  // A running job a victim search must pass over: already stopping, or chosen this cycle.
  static bool Unavailable(const Cycle& cycle, const Job& victim) {
    return victim.preempt_requested ||
           std::ranges::find(cycle.victims, victim.id) != cycle.victims.end();
  }
  // A CPU job preempts only CPU jobs: stopping GPU work to free its CPUs would idle GPUs.
  static bool MayFreeHostFor(const JobView& job, const Job& victim) {
    return job.num_gpus() > 0 || victim.spec.num_gpus == 0;
  }
  // Whether `victim` runs within its tenant's guarantee, which shields it from other tenants'
  // jobs. Counts the preemptions committed earlier this cycle, not the victims chosen earlier
  // in the same search.
  // `job_tenant`: TenantOf the job.
  bool GuaranteeProtects(Cycle& cycle, int job_tenant, const Job& victim) const;
  // With quotas: cycle.victims_by_tenant, set up on the first call in the cycle (the running
  // index does not change during a cycle).
  const std::vector<const RunningIndex::TenantVictims*>& VictimsByTenant(Cycle& cycle) const;
  // Reclaims GPUs for a job within its guarantee from borrowing tenants' jobs (any rank).
  bool TryReclaimFor(Cycle& cycle, const JobView& job) const;
  // Asks for the victims' preemption, reserves the free part of `placement` for `job`, and
  // moves the GPUs between tenants' counts.
  void CommitVictims(Cycle& cycle, const JobView& job, const Placement& placement,
                     const std::string& why) const;
  // Records why a job TryStart could not start is waiting (explain mode); `searched`: a victim
  // search ran for it and failed.
  void ExplainBlocked(Cycle& cycle, const JobView& job, bool searched) const;
  // The host request ExplainBlocked explains: a CPU job's, or any job's on a cluster that states
  // host resources; else none. Computed only where a text or a branch uses it (a GPU-only
  // replay explains millions of blocked gangs).
  static HostRequest ExplainedHost(const Cycle& cycle, const JobView& job) {
    return job.num_gpus() == 0 || cycle.scratch.tracks_host()
               ? EffectiveHostRequest(job.spec(), cycle.ctx.cluster.host_defaults())
               : HostRequest{};
  }
  // Whether the cycle's nodes limit the job's host request `host` (ExplainedHost).
  static bool HostLimited(const Cycle& cycle, const HostRequest& host) {
    return cycle.scratch.tracks_host() && (host.cpus > 0 || host.memory_mib > 0);
  }
  // "8 CPUs and 4096 MiB of host memory" (the parts the request states).
  static std::string HostNeedText(const HostRequest& host) {
    std::string text = std::to_string(host.cpus) + " CPU" + (host.cpus == 1 ? "" : "s");
    if (host.memory_mib > 0) {
      text += " and " + std::to_string(host.memory_mib) + " MiB of host memory";
    }
    return text;
  }
  // "4 GPUs", with " with <HostNeedText>" where the nodes limit the job's host request.
  static std::string GpuNeedText(const Cycle& cycle, const JobView& job) {
    const int gpus = job.num_gpus();
    const HostRequest host = ExplainedHost(cycle, job);
    return std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") +
           (HostLimited(cycle, host) ? " with " + HostNeedText(host) : "");
  }
  static std::string FreeText(const ClusterState& state) {
    return std::to_string(state.free_total()) + " free";
  }
  // Records a why-pending entry; `text()` builds its reason only when the context wants texts.
  template <typename Text>
  static void Explain(Cycle& cycle, JobId job, PendingCause cause, const Text& text) {
    cycle.decisions.pending_reasons.push_back(
        {job, cycle.ctx.explain_text ? text() : std::string(), cause});
  }
  // Looks for running jobs ranked below `job` whose GPUs would let it start; if found, asks for
  // their preemption and reserves the free part of the placement.
  bool TryPreemptFor(Cycle& cycle, const JobView& job) const;
  // Whether TryPreemptFor's walk for the job may leave the dead victims out
  // (RunningIndex::dead_victims: each frees no GPU) and still make the same Finds and meet the
  // same refusals and stops: its host request limits nothing (a dead victim's release frees
  // its CPUs and memory), and every preempt plugin accepts the job for every victim
  // (VictimBlind, not LowerRankOnly, accepting it in MayPreemptAny). A guarantee that shields a
  // dead victim is left for ShieldsDeadVictim.
  bool SkipsDeadVictims(const Cycle& cycle, const JobView& job) const;
  // After a walk without the dead victims failed: whether the whole walk would have passed over
  // one of them, ranked below the job (`mine`: its key), for a guarantee that shields it from the
  // job's tenant (`job_tenant`; -1: no quotas). O(tenants) plus the dead victims it meets
  // (none of a tenant whose guarantee shields no one-GPU job).
  bool ShieldsDeadVictim(Cycle& cycle, const JobView& job, const RankKey& mine,
                         int job_tenant) const;
  // Whether TryPreemptFor walks tenant `t`'s victims for a job of tenant `job_tenant`: its own,
  // or a tenant whose guarantee does not shield all its jobs.
  static bool WalksTenant(const Cycle& cycle, int t, int job_tenant,
                          const RunningIndex::TenantVictims& victims) {
    return t == job_tenant || !cycle.tenants[static_cast<size_t>(t)].ShieldsAll(
                                  victims.cpu_jobs > 0, cycle.measure_host);
  }
  // After a failed victim search for `job`: the earliest time a guarded job it outranks
  // becomes a victim, when that is before the cycle's wake-up; else kTimeNever.
  // The caller lowers the cycle's wake-up to the answer at once; then a job whose key is at
  // least that of one answered for earlier in the cycle gets kTimeNever in O(1)
  // (Cycle::guarded_retry_key).
  Timestamp GuardedRetry(Cycle& cycle, const JobView& job) const;
  void PlanWakeUp(const SchedulingContext& ctx, Decisions& decisions) const;
  // reject_late_strict: rejects the waiting strict jobs past their latest start.
  void RejectLateStrict(const SchedulingContext& ctx, Decisions& decisions) const;
  // Whether RejectLateStrict rejects this waiting job in this cycle (the walks skip it).
  bool IsRejectedAsLate(const JobView& job) const;
  // late_jobs_last: whether the policy-order walk leaves this job to WalkLate.
  bool IsDeferredAsLate(const JobView& job) const;
  // late_jobs_last: tries the late jobs, in latest-start order, after the policy-order walk.
  // Returns false when one blocks a policy without backfill.
  bool WalkLate(Cycle& cycle) const;
  // Asks every preempt plugin about the pair; on a no, lowers `retry_at` to when it may turn
  // into a yes.
  bool MayPreempt(const JobView& job, const JobView& victim, const SchedulingContext& ctx,
                  Timestamp& retry_at) const;

  PipelineConfig config_;
  std::vector<std::unique_ptr<AdmitPlugin>> admit_;
  std::unique_ptr<QueueSortPlugin> sort_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;
  std::vector<std::unique_ptr<ScorePlugin>> scores_;
  std::vector<std::unique_ptr<PreemptPlugin>> preempt_;
  RankOrder order_;  // of sort_ and preempt_
  std::vector<const FilterPlugin*> filter_views_;
  std::vector<WeightedScore> score_views_;
  // Cycle::scratch, kept between cycles so that copying the cluster state into it reuses its
  // buffers (a cycle is too short to pay for fresh ones). Decide runs on one thread at a time,
  // as the Scheduler calls it.
  mutable ClusterState scratch_;
  // WalkTenants' working memory, kept between walks for the same reason.
  mutable TenantWalk::Buffers tenant_walk_buffers_;
  // With quotas, kept between cycles too so that a cycle looks a job's tenant up without
  // hashing its name (the quota checks of victim searches meet hundreds of jobs, several times
  // a cycle): the tenants met so far, interned to indices, and by job (JobId::index), the index
  // of the job's tenant as last seen. An entry is trusted in a cycle only once checked against
  // the job's JobSpec::queue in that cycle, so it stays a cache, right for any job table.
  struct JobTenant {
    int tenant = -1;          // -1: not seen
    uint64_t checked_in = 0;  // the cycle (decide_count_) that last checked it
  };
  mutable std::map<std::string, int, std::less<>> tenant_ids_;
  mutable std::vector<const std::string*> tenant_names_;  // by index: keys of tenant_ids_
  mutable std::vector<const PipelineConfig::Quota*> tenant_quotas_;  // by index: QuotaOf
  mutable std::vector<JobTenant> job_tenants_;
  // The last count of the tenants' GPUs over the running jobs (CountTenantsGpus), by tenant
  // index; the running jobs (of which job table) it counted; and by job (JobId::index) the count
  // that last found the job running, with the tenant and GPUs it counted for it. A job counted
  // by the last count and running still holds the same: a running job's tenant and gang do not
  // change while it runs (as the queue's by-tenant index takes them to be frozen while it waits).
  struct Counted {
    uint64_t count = 0;  // 0: never
    int tenant = 0;
    int gpus = 0;
    HostRequest host;  // EffectiveHostRequest, whether measured or not
  };
  struct Held {
    int gpus = 0;
    int64_t cpus = 0;
    int64_t memory_mib = 0;
  };
  mutable const JobTable* counted_jobs_ = nullptr;
  mutable std::vector<JobId> counted_running_;
  mutable std::vector<Held> counted_held_;
  mutable std::vector<Counted> counted_;
  mutable uint64_t count_ = 0;
  mutable uint64_t decide_count_ = 0;
};

Decisions PipelinePolicy::Decide(const SchedulingContext& ctx) const {
  if (ctx.queue.empty()) return {};
  Decisions decisions;
  if (config_.reject_late_strict && !ctx.explain) RejectLateStrict(ctx, decisions);
  if (ctx.state.free_total() == 0 && !ctx.explain && !VictimSearchMayHelp(ctx) &&
      !CpuJobsMayStart(ctx, ctx.state)) {
    // Nothing can start; still plan the wake-up so time-driven rank changes are seen.
    PlanWakeUp(ctx, decisions);
    return decisions;
  }

  const Placer placer(ctx, filter_views_, score_views_, config_.placement);
  scratch_ = ctx.state;
  Cycle cycle{ctx, placer, scratch_, std::move(decisions)};
  // Explaining gives most waiting jobs a reason: grow the list once.
  if (ctx.explain) cycle.decisions.pending_reasons.reserve(ctx.queue.size());
  if (TracksTenants()) {
    DS_CHECK(ctx.queue.indexes_tenants()) << "a policy with quotas needs a queue by tenant";
    ++decide_count_;  // a new context: no job's tenant is checked in it yet
    cycle.totals.gpus = ctx.cluster.total_gpus();
    if (config_.share_measure == PipelineConfig::ShareMeasure::kDominant) {
      cycle.totals.cpus = ctx.cluster.total_cpus();
      cycle.totals.memory_mib = ctx.cluster.total_host_memory_mib();
    }
    cycle.measure_host = cycle.totals.host();
    cycle.tenants.reserve(tenant_quotas_.size());
    for (const PipelineConfig::Quota* quota : tenant_quotas_) {
      cycle.tenants.push_back(UseOf(cycle, quota));
    }
    CountTenantsGpus(cycle);
  }
  // Starvation guard: jobs that waited past the limit go first, longest-waiting first.
  auto starving = [&](const Job& job) { return WaitedPastLimit(job, ctx.now) && IsGuarded(job); };
  const auto walk = [&] {
    if (config_.backfill && !ctx.explain) {
      WalkFitting(cycle, starving);
    } else {
      WalkAll(cycle, starving);
    }
  };
  if (config_.quotas.empty()) {
    walk();
  } else {
    // Jobs within their tenant's guarantee first, then those that would borrow.
    cycle.quota_pass = QuotaPass::kGuaranteed;
    walk();
    cycle.quota_pass = QuotaPass::kBorrowing;
    walk();
  }
  PlanWakeUp(ctx, cycle.decisions);
  return std::move(cycle.decisions);
}

int PipelinePolicy::LargestUsefulGang(const Cycle& cycle) const {
  const int searchable = MaySearchVictims(cycle) ? cycle.smallest_failed_gang - 1 : 0;
  return std::max(cycle.scratch.free_total(), searchable);
}

template <typename Starving>
void PipelinePolicy::WalkFitting(Cycle& cycle, const Starving& starving) const {
  const SchedulingContext& ctx = cycle.ctx;
  if (AnyWaitedPastLimit(ctx)) {
    auto walk = ctx.queue.WalkByWait();
    while (auto entry = walk.Next(LargestUsefulGang(cycle))) {
      const Job& job = ctx.jobs.at(entry->second);
      if (!WaitedPastLimit(job, ctx.now)) break;  // the rest waited less
      if (IsGuarded(job)) TryStart(cycle, ctx.View(job.id));
    }
  }
  if (cycle.quota_pass == QuotaPass::kAll && !FairOrder()) {
    auto walk = ctx.queue.WalkInOrder();
    while (auto key = walk.Next(LargestUsefulGang(cycle))) {
      const JobView job = ctx.View(key->id);
      if (!starving(job.job()) && !IsDeferredAsLate(job)) TryStart(cycle, job);
    }
  } else {
    WalkTenants(cycle, starving, [&] { return LargestUsefulGang(cycle); });
  }
  if (config_.late_jobs_last) WalkLate(cycle);
}

template <typename Starving, typename MaxGang>
void PipelinePolicy::WalkTenants(Cycle& cycle, const Starving& starving,
                                 const MaxGang& max_gang) const {
  const SchedulingContext& ctx = cycle.ctx;
  // The first pass meets only the jobs within their guarantee, the second only those within
  // their cap: TryStart would pass over the others without effect (jobs over their cap wait;
  // the second pass also passes over the jobs the first handled, and those within their
  // guarantee). Victims may give their tenants room again (TenantWalk::Unpark).
  // Explaining, the second pass (in the fair order) meets the jobs over their cap too.
  const bool guaranteed = cycle.quota_pass == QuotaPass::kGuaranteed;
  TenantWalk walk(cycle.tenants,
                  guaranteed    ? &TenantUse::GuaranteeRoom
                  : ctx.explain ? &TenantUse::AnyRoom
                                : &TenantUse::CapRoom,
                  tenant_walk_buffers_, FairOrder() ? &cycle.totals : nullptr);
  if (!cycle.waiting_tenants_set) {  // the queue does not change during a cycle
    cycle.waiting_tenants_set = true;
    // Both maps are in name order: look the tenants up in one merged walk of the two.
    auto known = tenant_ids_.begin();
    for (const auto& [tenant, by_gang] : ctx.queue.by_tenant_order()) {
      if (std::ranges::all_of(by_gang, [](const auto& gang) { return gang.second.empty(); })) {
        continue;  // none of its jobs waits
      }
      while (known != tenant_ids_.end() && known->first < tenant) ++known;
      // (Interning a tenant does not move `known`: it inserts before it.)
      const int t = known != tenant_ids_.end() && known->first == tenant ? known->second
                                                                         : TenantOf(cycle, tenant);
      cycle.waiting_tenants.push_back({t, &by_gang});
    }
  }
  for (const auto& [t, by_gang] : cycle.waiting_tenants) {
    if (guaranteed && !cycle.tenants[t].has_quota) continue;  // never within a guarantee
    for (const auto& [gang, index] : *by_gang) walk.Add(t, gang, index);
  }
  while (auto key = walk.Next(max_gang())) {
    const JobView job = ctx.View(key->id);
    if (starving(job.job()) || IsDeferredAsLate(job)) continue;  // walked before or after
    const size_t victims = cycle.victims.size();
    TryStart(cycle, job);
    if (cycle.victims.size() != victims) walk.Unpark();
  }
}

template <typename Starving>
void PipelinePolicy::WalkAll(Cycle& cycle, const Starving& starving) const {
  const SchedulingContext& ctx = cycle.ctx;
  if (AnyWaitedPastLimit(ctx)) {
    auto walk = ctx.queue.WalkByWait();
    while (auto entry = walk.Next(kAnyGang)) {
      const Job& job = ctx.jobs.at(entry->second);
      if (!WaitedPastLimit(job, ctx.now) || !MayStartMore(cycle)) break;
      if (!IsGuarded(job)) continue;
      if (!TryStart(cycle, ctx.View(job.id)) && !config_.backfill) return;
    }
  }
  if ((cycle.quota_pass == QuotaPass::kGuaranteed || FairOrder()) && config_.backfill) {
    // Only the jobs within their guarantee take part in the first pass, and with backfill none
    // of them blocks the rest: meet those alone (TryStart passes over the others without effect
    // or explanation); the second pass meets every other job. The fair order is the tenants'.
    WalkTenants(cycle, starving, [] { return kAnyGang; });
    if (config_.late_jobs_last) WalkLate(cycle);
    return;
  }
  JobId blocked_head;
  auto walk = ctx.queue.WalkInOrder();
  while (auto key = walk.Next(kAnyGang)) {
    const JobId id = key->id;
    if (blocked_head.valid()) {  // only when explaining: say who holds the line
      Explain(cycle, id, PendingCause::kHeadOfLine, [&] {
        return "behind job " + std::to_string(blocked_head.value()) +
               " (head of line; this policy does not backfill)";
      });
      continue;
    }
    if (!ctx.explain && !MayStartMore(cycle)) return;
    const JobView job = ctx.View(id);
    if (starving(job.job()) || IsDeferredAsLate(job)) continue;  // walked before or after
    if (!TryStart(cycle, job) && !config_.backfill) {
      if (!ctx.explain) return;
      blocked_head = id;
    }
  }
  if (config_.late_jobs_last && !blocked_head.valid()) WalkLate(cycle);
}

bool PipelinePolicy::WalkLate(Cycle& cycle) const {
  const SchedulingContext& ctx = cycle.ctx;
  for (const auto& [latest_start, id] : ctx.queue.by_latest_start()) {
    if (latest_start >= ctx.now) break;  // the rest are not late
    if (!ctx.explain && !MayStartMore(cycle)) return true;
    if (!TryStart(cycle, ctx.View(id)) && !config_.backfill && !ctx.explain) return false;
  }
  return true;
}

bool PipelinePolicy::TryStart(Cycle& cycle, const JobView& job) const {
  if (!cycle.ctx.explain && IsRejectedAsLate(job)) return true;  // rejected: blocks nothing
  const Placer& placer = cycle.placer;
  if (cycle.quota_pass != QuotaPass::kAll) {
    if (!cycle.handled.empty() && cycle.handled.contains(job.id())) return true;
    if (WithinGuarantee(cycle, job) != (cycle.quota_pass == QuotaPass::kGuaranteed)) {
      return false;  // the other pass's job
    }
    if (cycle.quota_pass == QuotaPass::kGuaranteed) cycle.handled.insert(job.id());
  }
  ++cycle.walked;
  if (!config_.quotas.empty() && OverQuota(cycle, job)) {
    if (cycle.ctx.explain) {
      Explain(cycle, job.id(), PendingCause::kQuota, [&] {
        const TenantUse& use = cycle.tenants[TenantOf(cycle, job.job())];
        const std::string tenant = "tenant '" + job.spec().queue + "' holds ";
        if (use.held + job.num_gpus() > use.cap) {
          return tenant + std::to_string(use.held) + " GPUs; its cap is " + std::to_string(use.cap);
        }
        const HostRequest host = HostOf(cycle, job.job());
        if (use.held_cpus + host.cpus > use.cap_cpus) {
          return tenant + std::to_string(use.held_cpus) + " CPUs; its cap is " +
                 std::to_string(use.cap_cpus) + " (dominant share)";
        }
        return tenant + std::to_string(use.held_memory_mib) + " MiB of host memory; its cap is " +
               std::to_string(use.cap_memory_mib) + " (dominant share)";
      });
    }
    return false;
  }
  if (auto placement = placer.Find(job, cycle.scratch)) {
    cycle.scratch.Allocate(*placement);
    cycle.decisions.launches.push_back({job.id(), std::move(*placement)});
    if (TracksTenants()) {
      cycle.tenants[TenantOf(cycle, job.job())].Add(job.num_gpus(), HostOf(cycle, job.job()), 1);
      ++cycle.epoch;
    }
    return true;
  }
  const bool held_for_consolidation = placer.last_held_for_consolidation();
  // The failed-search memos reason from gang sizes alone: only a job whose host request limits
  // nothing may leave one (a job as wide would fail too, with or without a host request).
  const bool by_gang_alone = !placer.last_limited_by_host();
  const bool quotas = !config_.quotas.empty();
  bool searched = false;
  if (MaySearchVictims(cycle) && job.num_gpus() < cycle.smallest_failed_gang) {
    ++cycle.preemption_attempts;
    searched = true;
    const bool known_to_fail = quotas && KnownToFail(cycle, Search::kByRank, job);
    if (!known_to_fail && TryPreemptFor(cycle, job)) return false;  // starts once they stop
    if (quotas) {
      if (!known_to_fail && by_gang_alone) RecordFailure(cycle, Search::kByRank, job);
    } else if (job.spec().gpu_type.empty() && job.spec().selector.empty() && by_gang_alone) {
      // A later job as large would fail too, unless its type, labels or tenant differ.
      cycle.smallest_failed_gang = std::min(cycle.smallest_failed_gang, job.num_gpus());
    }
  }
  if (quotas && MaySearchVictims(cycle) && WithinGuarantee(cycle, job)) {
    ++cycle.preemption_attempts;
    if (!KnownToFail(cycle, Search::kReclaim, job)) {
      if (TryReclaimFor(cycle, job)) return false;
      if (by_gang_alone) RecordFailure(cycle, Search::kReclaim, job);
    }
  }
  if (cycle.ctx.explain) {
    if (held_for_consolidation) {
      Explain(cycle, job.id(), PendingCause::kConsolidation, [&] {
        return "waiting to be consolidated: " + std::to_string(job.num_gpus()) +
               " GPUs would fit only spread over nodes, which the estimator puts below " +
               std::to_string(static_cast<int>(config_.placement.min_spread_speed * 100)) +
               "% of its consolidated speed";
      });
    } else {
      ExplainBlocked(cycle, job, searched);
    }
  }
  return false;
}

void PipelinePolicy::ExplainBlocked(Cycle& cycle, const JobView& job, bool searched) const {
  const ClusterState& state = cycle.scratch;
  const int gpus = job.num_gpus();
  if (gpus == 0) {
    Explain(cycle, job.id(), PendingCause::kCpusBusy, [&] {
      int most = 0;
      state.ForEachNodeWithFreeCpus(
          [&](NodeId node) { most = std::max(most, state.free_cpus(node)); });
      return "CPU job waiting for " + HostNeedText(ExplainedHost(cycle, job)) + " on one node (" +
             std::to_string(state.free_cpus_total()) + " CPUs free, at most " +
             std::to_string(most) + " on a node)" +
             (searched ? "; the running jobs holding the rest rank above it or are protected" : "");
    });
    return;
  }
  if (gpus > state.free_total()) {
    if (searched) {
      Explain(cycle, job.id(), PendingCause::kLowerPriority, [&] {
        return "needs " + GpuNeedText(cycle, job) + " (" + FreeText(state) +
               "); the running jobs holding the rest rank above it or are protected (" +
               std::string(sort_->Name()) + " order)";
      });
      return;
    }
    Explain(cycle, job.id(), PendingCause::kGpusBusy, [&] {
      const int ahead = cycle.walked - 1;
      const HostRequest host = ExplainedHost(cycle, job);
      return "waiting for " + GpuNeedText(cycle, job) + (gpus > 1 ? " at once (gang)" : "") + " (" +
             FreeText(state) + ")" +
             (HostLimited(cycle, host) && state.free_cpus_total() >= host.cpus
                  ? "; CPUs free but no GPUs: " + std::to_string(state.free_cpus_total()) +
                        " CPUs free"
                  : "") +
             (ahead > 0 ? "; " + std::to_string(ahead) + " job(s) ahead of it in this order" : "");
    });
    return;
  }
  Placer::Refusal refused;
  const int eligible = cycle.placer.EligibleFree(job, state, &refused);
  if (gpus > eligible) {
    Explain(cycle, job.id(), PendingCause::kNoMatchingGpus, [&] {
      std::string wanted = job.spec().gpu_type;
      if (!job.spec().selector.empty()) {
        wanted += (wanted.empty() ? "" : " ") + std::string("on nodes labelled ") +
                  FormatLabels(job.spec().selector);
      }
      if (wanted.empty()) {
        wanted = refused.filter != nullptr ? "on nodes the profile's filters pass"
                                           : "of a type it can run on";
      }
      std::string text = "needs " + GpuNeedText(cycle, job) + " " + wanted + ": " +
                         std::to_string(eligible) + " free there (" + FreeText(state) +
                         " in total)";
      if (refused.filter != nullptr) {
        text += "; filter " + std::string(refused.filter->Name()) + " refuses nodes with " +
                std::to_string(refused.free) + " of them (" + refused.reason + ")";
      }
      return text;
    });
    return;
  }
  if (HostLimited(cycle, ExplainedHost(cycle, job))) {
    if (const int usable = cycle.placer.HostUsableFree(job, state); usable < gpus) {
      Explain(cycle, job.id(), PendingCause::kHostShort, [&] {
        return "needs " + GpuNeedText(cycle, job) + ": " + std::to_string(eligible) +
               " GPUs free, but their nodes lack the CPUs or memory for it (enough for " +
               std::to_string(usable) + ")";
      });
      return;
    }
  }
  Explain(cycle, job.id(), PendingCause::kFragmentation, [&] {
    return "fragmentation: " + std::to_string(eligible) + " usable GPUs free in total, but no " +
           "placement holds the gang of " + std::to_string(gpus);
  });
}

bool PipelinePolicy::TryPreemptFor(Cycle& cycle, const JobView& job) const {
  const SchedulingContext& ctx = cycle.ctx;
  BeginVictimSearch(cycle);
  ClusterState& what_if = cycle.scratch;
  std::vector<JobId>& chosen = cycle.chosen;
  Timestamp retry_at = kTimeNever;  // when a pair the guards refuse becomes fair game
  const RankKey mine = order_.KeyOf(job);
  const int job_tenant = config_.quotas.empty() ? -1 : TenantOf(cycle, job.job());
  const RunningIndex& running = ctx.running_by_rank;
  // Meets the candidates lowest rank first (`next()` -> the next one's id, or none left) until
  // their GPUs let the job start; returns that placement.
  // The first plugin asked refuses, with no retry time, every victim not of a lower rank: the
  // walk may stop at the first one (MayPreempt would refuse the rest one by one).
  const bool lower_rank_only = !preempt_.empty() && preempt_.front()->LowerRankOnly();
  // Nor when it refuses the job every victim: the first one it would be asked about ends the
  // walk, with that refusal's retry time.
  const Fit for_any = preempt_.empty() ? Fit::Yes() : preempt_.front()->MayPreemptAny(job, ctx);
  // A victim ranked below the job left out for this job's own reasons (a guarantee shielding
  // it from the job's tenant, a preempt plugin's refusal): the walk did not meet every victim.
  bool passed_over = false;
  cycle.last_search_unshielded = false;
  std::vector<Placer::Freed>& freed = cycle.freed;
  // Whether the walk's last Find held the gang for consolidation: only then can the next answer
  // come from the nodes freed since (Placer::FindAfterFreeing), so only then are they noted.
  bool answer_from_freed = false;
  const auto search = [&](auto next) -> std::optional<Placement> {
    answer_from_freed = false;
    freed.clear();
    while (const std::optional<JobId> id = next()) {
      const RankKey key = running.KeyAt(*id, ctx.now);
      if (!(mine < key)) break;                             // the rest rank at or above the job
      if (lower_rank_only && key.rank <= mine.rank) break;  // the rest are of its rank or above
      const JobView victim = ctx.View(*id);
      if (Unavailable(cycle, victim.job()) || !MayFreeHostFor(job, victim.job())) continue;
      if (job_tenant >= 0 && GuaranteeProtects(cycle, job_tenant, victim.job())) {
        passed_over = true;
        continue;
      }
      if (!for_any.ok) {
        retry_at = std::min(retry_at, for_any.retry_at);
        passed_over = true;
        return std::nullopt;
      }
      if (!MayPreempt(job, victim, ctx, retry_at)) {
        passed_over = true;
        continue;
      }
      const int free_before = what_if.free_total();
      if (answer_from_freed) NoteFreed(what_if, victim.job().placement, freed);
      what_if.Release(victim.job().placement);
      chosen.push_back(victim.id());
      // The last Find (TryStart's, or the walk's) failed on the same free GPUs when this
      // release freed none (a shared GPU's other holder stays) and the job's host request
      // limits nothing: it would fail again.
      if (what_if.free_total() == free_before && !cycle.placer.last_limited_by_host()) continue;
      std::optional<Placement> placement =
          answer_from_freed ? cycle.placer.FindAfterFreeing(job, what_if, freed)
                            : cycle.placer.Find(job, what_if);
      answer_from_freed = cycle.placer.last_held_for_consolidation();
      freed.clear();
      if (placement) return placement;
    }
    return std::nullopt;
  };
  // The walk over the victims, the dead ones (RunningIndex::dead_victims) with them or not.
  const auto walk = [&](bool with_dead) -> std::optional<Placement> {
    TenantVictimWalk& merge = cycle.victim_walk;
    const auto merged = [&]() -> std::optional<JobId> {
      if (auto step = merge.Next()) return step->id;
      return std::nullopt;
    };
    merge.Reset();
    if (job_tenant >= 0) {
      // Only the victims of the job's own tenant and of the tenants whose guarantee does not
      // shield all their jobs: GuaranteeProtects passes over the others' jobs one by one.
      const auto& by_tenant = VictimsByTenant(cycle);
      for (size_t t = 0; t < by_tenant.size(); ++t) {
        const RunningIndex::TenantVictims* victims = by_tenant[t];
        if (victims == nullptr) continue;
        if (WalksTenant(cycle, static_cast<int>(t), job_tenant, *victims)) {
          merge.Add(static_cast<int>(t), victims->victims);
          if (with_dead) merge.Add(static_cast<int>(t), victims->dead);
        } else {
          passed_over = true;
        }
      }
      return search(merged);
    }
    if (with_dead && !running.dead_victims().empty()) {
      merge.Add(0, running.victims());
      merge.Add(0, running.dead_victims());
      return search(merged);
    }
    auto it = running.victims().rbegin();
    return search([&]() -> std::optional<JobId> {
      if (it == running.victims().rend()) return std::nullopt;
      return (it++)->id;
    });
  };
  // A dead victim frees no GPU: where the walk may go without them (SkipsDeadVictims) it makes
  // the same Finds without them. Only its success walks again with them, for the victims the
  // whole walk chooses (it preempts every victim it released on the way), and only where the
  // whole walk would have met a dead victim before the last victim it released: the lowest
  // ranked dead victim walks before it.
  const bool skip_dead = !running.dead_victims().empty() && SkipsDeadVictims(cycle, job);
  std::optional<Placement> placement = walk(!skip_dead);
  if (placement && skip_dead &&
      running.KeyAt(chosen.back(), ctx.now) <
          running.KeyAt(running.dead_victims().rbegin()->id, ctx.now)) {
    EndVictimSearch(cycle);
    BeginVictimSearch(cycle);
    placement = walk(/*with_dead=*/true);
    DS_CHECK(placement) << "the victim search for job " << job.id()
                        << " failed with the dead victims where it succeeded without them";
  }
  EndVictimSearch(cycle);
  if (placement) {
    CommitVictims(cycle, job, *placement,
                  "preempted for job " + std::to_string(job.id().value()) + " (" +
                      std::string(sort_->Name()) + " order)");
    return true;
  }
  if (skip_dead && !passed_over) passed_over = ShieldsDeadVictim(cycle, job, mine, job_tenant);
  // The last Find saw every victim's GPUs released: unless it held the gang for consolidation,
  // which depends on the job, no placement of its width exists there for any job.
  cycle.last_search_unshielded = !passed_over && !cycle.placer.last_held_for_consolidation() &&
                                 job.job().failed_gpu_types.empty() && filters_.empty();
  // Guarded jobs may become victims later: look again then.
  retry_at = std::min(retry_at, GuardedRetry(cycle, job));
  cycle.decisions.wake_at = std::min(cycle.decisions.wake_at, retry_at);
  return false;
}

bool PipelinePolicy::SkipsDeadVictims(const Cycle& cycle, const JobView& job) const {
  // As Placer::last_limited_by_host would say after any Find for the job that reads its host
  // request (one on fewer free GPUs than its gang does not, and says false).
  if (HostLimited(cycle, ExplainedHost(cycle, job))) return false;
  return std::ranges::all_of(preempt_, [&](const std::unique_ptr<PreemptPlugin>& plugin) {
    return plugin->VictimBlind() && !plugin->LowerRankOnly() &&
           plugin->MayPreemptAny(job, cycle.ctx).ok;
  });
}

bool PipelinePolicy::ShieldsDeadVictim(Cycle& cycle, const JobView& job, const RankKey& mine,
                                       int job_tenant) const {
  if (job_tenant < 0) return false;  // no quotas, no guarantees
  const SchedulingContext& ctx = cycle.ctx;
  const auto& by_tenant = VictimsByTenant(cycle);
  for (size_t t = 0; t < by_tenant.size(); ++t) {
    const RunningIndex::TenantVictims* victims = by_tenant[t];
    if (victims == nullptr || static_cast<int>(t) == job_tenant ||
        !WalksTenant(cycle, static_cast<int>(t), job_tenant, *victims)) {
      continue;
    }
    // A dead victim holds one GPU: a tenant whose guarantee shields no such job shields none.
    if (!cycle.tenants[t].MayShield(1)) continue;
    for (auto it = victims->dead.rbegin(); it != victims->dead.rend(); ++it) {
      if (!(mine < ctx.running_by_rank.KeyAt(it->id, ctx.now))) break;
      const Job& victim = ctx.jobs.at(it->id);
      if (Unavailable(cycle, victim) || !MayFreeHostFor(job, victim)) continue;
      if (GuaranteeProtects(cycle, job_tenant, victim)) return true;
    }
  }
  return false;
}

void PipelinePolicy::CommitVictims(Cycle& cycle, const JobView& job, const Placement& placement,
                                   const std::string& why) const {
  const bool tenants = TracksTenants();
  for (JobId id : cycle.chosen) {
    cycle.victims.push_back(id);
    cycle.decisions.preemptions.push_back({id, why});
    if (tenants) {
      const Job& victim = cycle.ctx.jobs.at(id);
      cycle.tenants[RunningTenantOf(id)].Add(victim.spec.num_gpus, HostOf(cycle, victim), -1);
    }
  }
  if (tenants) {
    cycle.tenants[TenantOf(cycle, job.job())].Add(job.num_gpus(), HostOf(cycle, job.job()), 1);
    ++cycle.epoch;
  }
  // Hold the free part of the future placement (GPUs, CPUs and memory) so lower-ranked jobs do
  // not take it.
  Placement reserve;
  const ClusterState& scratch = cycle.scratch;
  for (const NodeGpus& part : placement.parts) {
    const NodeGpus free_now{part.node, part.gpus & scratch.free_mask(part.node),
                            std::min(part.cpus, scratch.free_cpus(part.node)),
                            std::min(part.memory_mib, scratch.free_memory_mib(part.node))};
    if (free_now.gpus != 0 || free_now.cpus != 0 || free_now.memory_mib != 0) {
      reserve.parts.push_back(free_now);
    }
  }
  cycle.scratch.Allocate(reserve);
  if (cycle.ctx.explain) {
    Explain(cycle, job.id(), PendingCause::kPreempting, [&] {
      return "waiting for " + std::to_string(cycle.chosen.size()) + " preempted job(s) to stop";
    });
  }
}

bool PipelinePolicy::KnownToFail(Cycle& cycle, Search kind, const JobView& job) const {
  const auto& memo = kind == Search::kByRank ? cycle.failed_by_rank : cycle.failed_reclaim;
  const size_t t = static_cast<size_t>(TenantOf(cycle, job.job()));
  if (kind == Search::kByRank) {
    const Cycle::FailedSearch& any = cycle.failed_unshielded;
    if (any.epoch == cycle.epoch && job.num_gpus() >= any.gang && !(order_.KeyOf(job) < any.key) &&
        (preempt_.empty() || preempt_.front()->MayPreemptAny(job, cycle.ctx).ok)) {
      return true;
    }
  }
  if (t >= memo.size()) return false;
  const Cycle::FailedSearch& failed = memo[t];
  return failed.epoch == cycle.epoch && job.num_gpus() >= failed.gang &&
         (kind == Search::kReclaim || !(order_.KeyOf(job) < failed.key));
}

void PipelinePolicy::RecordFailure(Cycle& cycle, Search kind, const JobView& job) const {
  if (!job.spec().gpu_type.empty() || !job.spec().selector.empty()) return;
  auto& memo = kind == Search::kByRank ? cycle.failed_by_rank : cycle.failed_reclaim;
  const size_t t = static_cast<size_t>(TenantOf(cycle, job.job()));
  if (t >= memo.size()) memo.resize(t + 1);
  memo[t] = {cycle.epoch, job.num_gpus(), kind == Search::kByRank ? order_.KeyOf(job) : RankKey{}};
  if (kind == Search::kByRank && cycle.last_search_unshielded && job.num_gpus() > 0) {
    cycle.failed_unshielded = memo[t];
  }
}

void PipelinePolicy::CountTenantsGpus(Cycle& cycle) const {
  const SchedulingContext& ctx = cycle.ctx;
  if (&ctx.jobs != counted_jobs_) {  // another job table: count afresh
    counted_jobs_ = &ctx.jobs;
    counted_running_.clear();
    counted_held_.clear();
    count_ += 2;  // no job was counted by the last count
  }
  const uint64_t last = count_++;
  const uint64_t now = count_;
  std::vector<Held>& held = counted_held_;
  const auto add = [&](const Counted& entry, int sign) {
    Held& tenant = held[static_cast<size_t>(entry.tenant)];
    tenant.gpus += sign * entry.gpus;
    tenant.cpus += sign * entry.host.cpus;
    tenant.memory_mib += sign * entry.host.memory_mib;
  };
  for (JobId id : ctx.running) {
    const size_t i = id.index();
    if (i >= counted_.size()) counted_.resize(std::max(i + 1, counted_.size() * 2));
    Counted& entry = counted_[i];
    if (entry.count == last) {  // counted before, and running still
      entry.count = now;
      continue;
    }
    const Job& job = ctx.jobs.at(id);
    entry = {now, TenantOf(cycle, job), job.spec.num_gpus,
             EffectiveHostRequest(job.spec, ctx.cluster.host_defaults())};
    if (static_cast<size_t>(entry.tenant) >= held.size()) held.resize(entry.tenant + 1);
    add(entry, 1);
  }
  for (JobId id : counted_running_) {  // counted before, stopped since
    const Counted& entry = counted_[id.index()];
    if (entry.count == last) add(entry, -1);
  }
  counted_running_.assign(ctx.running.begin(), ctx.running.end());
  for (size_t t = 0; t < held.size(); ++t) {
    TenantUse& use = cycle.tenants[t];
    use.held = held[t].gpus;
    use.held_cpus = held[t].cpus;
    use.held_memory_mib = held[t].memory_mib;
  }
}

const PipelineConfig::Quota* PipelinePolicy::QuotaOf(std::string_view tenant) const {
  if (auto it = config_.quotas.find(tenant); it != config_.quotas.end()) return &it->second;
  if (auto it = config_.quotas.find("*"); it != config_.quotas.end()) return &it->second;
  return nullptr;
}

TenantUse PipelinePolicy::UseOf(const Cycle& cycle, const PipelineConfig::Quota* quota) const {
  const ShareTotals& totals = cycle.totals;
  // A share of a measured host resource, in its units (floor, as ShareToGpus).
  const auto host_limit = [](double share, int64_t total) {
    return total > 0 ? static_cast<int64_t>(share * static_cast<double>(total) + 1e-9)
                     : TenantUse::kUnbounded;
  };
  TenantUse use;
  const double guaranteed = quota != nullptr ? quota->guaranteed_share : 0;
  use.guaranteed_cpus = host_limit(guaranteed, totals.cpus);
  use.guaranteed_memory_mib = host_limit(guaranteed, totals.memory_mib);
  if (quota != nullptr) {
    use.has_quota = true;
    use.guaranteed = ShareToGpus(cycle.ctx, quota->guaranteed_share);
    // A max_share of the whole cluster is no cap: a tenant holding every GPU may still preempt
    // its own lower-ranked jobs.
    if (quota->max_share >= 1) {
      use.cap = std::numeric_limits<int>::max();
    } else {
      use.cap = ShareToGpus(cycle.ctx, quota->max_share);
      use.cap_cpus = host_limit(quota->max_share, totals.cpus);
      use.cap_memory_mib = host_limit(quota->max_share, totals.memory_mib);
    }
  }
  return use;
}

int PipelinePolicy::TenantOf(Cycle& cycle, std::string_view tenant) const {
  auto it = tenant_ids_.find(tenant);
  if (it == tenant_ids_.end()) {
    it = tenant_ids_.emplace(std::string(tenant), static_cast<int>(tenant_names_.size())).first;
    tenant_names_.push_back(&it->first);
    tenant_quotas_.push_back(QuotaOf(tenant));
  }
  // Tenants interned since the cycle began join it here.
  while (cycle.tenants.size() < tenant_names_.size()) {
    cycle.tenants.push_back(UseOf(cycle, tenant_quotas_[cycle.tenants.size()]));
  }
  return it->second;
}

int PipelinePolicy::CheckTenantOf(Cycle& cycle, const Job& job) const {
  const size_t i = job.id.index();
  if (i >= job_tenants_.size()) job_tenants_.resize(std::max(i + 1, job_tenants_.size() * 2));
  JobTenant& entry = job_tenants_[i];
  if (entry.tenant < 0 || *tenant_names_[static_cast<size_t>(entry.tenant)] != job.spec.queue) {
    entry.tenant = TenantOf(cycle, job.spec.queue);
  }
  entry.checked_in = decide_count_;
  return entry.tenant;
}

bool PipelinePolicy::OverQuota(Cycle& cycle, const JobView& job) const {
  const TenantUse& tenant = cycle.tenants[TenantOf(cycle, job.job())];
  return tenant.OverCapWith(job.num_gpus(), HostOf(cycle, job.job()), cycle.measure_host);
}

bool PipelinePolicy::WithinGuarantee(Cycle& cycle, const JobView& job) const {
  const TenantUse& tenant = cycle.tenants[TenantOf(cycle, job.job())];
  return tenant.WithinGuaranteeWith(job.num_gpus(), HostOf(cycle, job.job()), cycle.measure_host);
}

bool PipelinePolicy::GuaranteeProtects(Cycle& cycle, int job_tenant, const Job& victim) const {
  const int t = RunningTenantOf(victim.id);
  if (t == job_tenant) return false;
  return cycle.tenants[t].BelowGuaranteeWithout(victim.spec.num_gpus, HostOf(cycle, victim),
                                                cycle.measure_host);
}

bool PipelinePolicy::TryReclaimFor(Cycle& cycle, const JobView& job) const {
  const SchedulingContext& ctx = cycle.ctx;
  // Victims come only from other tenants above their guarantee: without one, skip the search.
  const int mine = TenantOf(cycle, job.job());
  bool any_borrower = false;
  for (size_t t = 0; t < cycle.tenants.size() && !any_borrower; ++t) {
    any_borrower = static_cast<int>(t) != mine && cycle.tenants[t].Borrowing(cycle.measure_host);
  }
  if (!any_borrower) return false;
  BeginVictimSearch(cycle);
  ClusterState& what_if = cycle.scratch;
  std::vector<JobId>& chosen = cycle.chosen;
  // What each tenant would still hold after the victims chosen so far, by tenant index (every
  // running job's tenant is in cycle.tenants: CountTenantsGpus met it).
  const auto& by_tenant = VictimsByTenant(cycle);
  std::vector<TenantUse> left = cycle.tenants;
  // The victims of the other tenants that borrow, lowest rank first; a tenant leaves the walk
  // once the victims chosen leave it borrowing no more (its use only falls as they are chosen).
  TenantVictimWalk& walk = cycle.victim_walk;
  walk.Reset();
  for (size_t t = 0; t < by_tenant.size(); ++t) {
    if (by_tenant[t] != nullptr && static_cast<int>(t) != mine &&
        left[t].Borrowing(cycle.measure_host)) {
      walk.Add(static_cast<int>(t), by_tenant[t]->victims);
      walk.Add(static_cast<int>(t), by_tenant[t]->dead);
    }
  }
  while (const auto step = walk.Next()) {
    const Job& victim = ctx.jobs.at(step->id);
    if (Unavailable(cycle, victim) || !MayFreeHostFor(job, victim)) continue;
    const int t = step->tenant;
    DS_CHECK(t == RunningTenantOf(victim.id))
        << "job " << victim.id << " is filed under another tenant";
    TenantUse& tenant_left = left[static_cast<size_t>(t)];
    tenant_left.Add(victim.spec.num_gpus, HostOf(cycle, victim), -1);
    if (!tenant_left.Borrowing(cycle.measure_host)) walk.Drop(t);
    what_if.Release(victim.placement);
    chosen.push_back(victim.id);
    if (auto placement = cycle.placer.Find(job, what_if)) {
      EndVictimSearch(cycle);
      CommitVictims(cycle, job, *placement,
                    "reclaimed for job " + std::to_string(job.id().value()) + " of tenant '" +
                        job.spec().queue + "' (below its guaranteed share)");
      return true;
    }
  }
  EndVictimSearch(cycle);
  return false;
}

const std::vector<const RunningIndex::TenantVictims*>& PipelinePolicy::VictimsByTenant(
    Cycle& cycle) const {
  if (!cycle.victims_by_tenant_set) {
    cycle.victims_by_tenant_set = true;
    cycle.victims_by_tenant.assign(cycle.tenants.size(), nullptr);
    for (const auto& [tenant, victims] : cycle.ctx.running_by_rank.victims_by_tenant()) {
      if (victims.empty()) continue;
      // The tenant's index, without comparing its name: that of any of its jobs, as this
      // cycle's count of the running jobs found it (a running job's tenant does not change).
      const RankKey& any =
          victims.victims.empty() ? *victims.dead.begin() : *victims.victims.begin();
      const size_t t = static_cast<size_t>(RunningTenantOf(any.id));
      cycle.victims_by_tenant[t] = &victims;
    }
  }
  return cycle.victims_by_tenant;
}

Timestamp PipelinePolicy::GuardedRetry(Cycle& cycle, const JobView& job) const {
  const RankKey mine = order_.KeyOf(job);
  if (cycle.guarded_retry_key && !(mine < *cycle.guarded_retry_key)) return kTimeNever;
  cycle.guarded_retry_key = mine;  // the least so far (the check above)
  // Earliest first, so the first guarded job the job outranks gives the answer; none that turns
  // at or after the cycle's wake-up could bring it forward. PlanWakeUp wakes the cycle at the
  // running jobs' next rank change at the latest (a victim search implies a preempt plugin and
  // a waiting job), so that bounds the walk too.
  const RunningIndex& running = cycle.ctx.running_by_rank;
  const Timestamp until = std::min(cycle.decisions.wake_at, running.next_change());
  for (const auto& [at, id] : running.guarded()) {
    if (at >= until) break;
    if (mine < running.KeyAt(id, cycle.ctx.now)) return at;
  }
  return kTimeNever;
}

bool PipelinePolicy::MayPreempt(const JobView& job, const JobView& victim,
                                const SchedulingContext& ctx, Timestamp& retry_at) const {
  for (const auto& plugin : preempt_) {
    Fit fit = plugin->MayPreempt(job, victim, ctx);
    if (!fit.ok) {
      retry_at = std::min(retry_at, fit.retry_at);
      return false;
    }
  }
  return true;
}

void PipelinePolicy::RejectLateStrict(const SchedulingContext& ctx, Decisions& decisions) const {
  for (const auto& [latest_start, id] : ctx.queue.by_latest_start()) {
    if (latest_start >= ctx.now) break;
    const Job& job = ctx.jobs.at(id);
    if (job.spec.qos != QosClass::kStrict) continue;
    decisions.rejections.push_back(
        {id, "strict deadline can no longer be met: it needs an estimated " +
                 HumanDuration(job.estimated_remaining) + " more, and " +
                 HumanDuration(std::max(*job.spec.deadline - ctx.now, Duration(0))) + " is left"});
  }
}

bool PipelinePolicy::IsRejectedAsLate(const JobView& job) const {
  return config_.reject_late_strict && job.spec().qos == QosClass::kStrict &&
         JobQueue::LatestStart(job.job()) < job.now();
}

bool PipelinePolicy::IsDeferredAsLate(const JobView& job) const {
  return config_.late_jobs_last && JobQueue::LatestStart(job.job()) < job.now();
}

void PipelinePolicy::PlanWakeUp(const SchedulingContext& ctx, Decisions& decisions) const {
  Timestamp wake = decisions.wake_at;
  if (!preempt_.empty() && !ctx.queue.empty()) {
    // Running jobs' rank changes are tracked by the running index; jobs launched now join it
    // after this cycle.
    wake = std::min(wake, ctx.running_by_rank.next_change());
    for (const LaunchDecision& launch : decisions.launches) {
      wake = std::min(wake, order_.NextRankChange(ctx.View(launch.job), ctx.now));
    }
  }
  if (config_.starvation_limit != Duration::max() && !ctx.queue.empty()) {
    const Timestamp oldest = ctx.queue.oldest_wait();
    if (oldest + config_.starvation_limit > ctx.now) {
      wake = std::min(wake, oldest + config_.starvation_limit);
    }
  }
  decisions.wake_at = wake > ctx.now ? wake : kTimeNever;
}

}  // namespace

Result<std::unique_ptr<SchedulingPolicy>> BuildPipeline(const PipelineConfig& config,
                                                        const PluginRegistry& registry) {
  std::vector<std::unique_ptr<AdmitPlugin>> admit;
  for (const PluginConfig& c : config.admit) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<AdmitPlugin>(registry, PluginPoint::kAdmit, c));
    admit.push_back(std::move(p));
  }
  DS_ASSIGN_OR_RETURN(
      auto sort, CreateAs<QueueSortPlugin>(registry, PluginPoint::kQueueSort, config.queue_sort));
  std::vector<std::unique_ptr<FilterPlugin>> filters;
  for (const PluginConfig& c : config.filter) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<FilterPlugin>(registry, PluginPoint::kFilter, c));
    filters.push_back(std::move(p));
  }
  std::vector<std::unique_ptr<ScorePlugin>> scores;
  for (const PluginConfig& c : config.score) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<ScorePlugin>(registry, PluginPoint::kScore, c));
    scores.push_back(std::move(p));
  }
  std::vector<std::unique_ptr<PreemptPlugin>> preempt;
  for (const PluginConfig& c : config.preempt) {
    DS_ASSIGN_OR_RETURN(auto p, CreateAs<PreemptPlugin>(registry, PluginPoint::kPreempt, c));
    preempt.push_back(std::move(p));
  }
  if (config.max_preemption_attempts < 0) {
    return InvalidArgument("max_preemption_attempts must not be negative");
  }
  if (config.tenant_order == PipelineConfig::TenantOrder::kFair && !config.backfill) {
    return InvalidArgument("tenant_order \"fair\" needs backfill");
  }
  return std::unique_ptr<SchedulingPolicy>(
      std::make_unique<PipelinePolicy>(config, std::move(admit), std::move(sort),
                                       std::move(filters), std::move(scores), std::move(preempt)));
}

}  // namespace dlsched
