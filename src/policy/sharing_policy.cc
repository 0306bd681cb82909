#include "policy/sharing_policy.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "dlsched/sharing/packing.h"
#include "policy/open_shared_gpus.h"

namespace dlsched {
namespace {

// Time-sliced and naive packing ignore interference: every pair runs as if alone.
class NoInterference final : public sharing::InterferenceModel {
 public:
  double PairSpeed(const sharing::SharingJob&, const sharing::SharingJob&) const override {
    return 1.0;
  }
};

// A shared GPU a job joined this cycle.
struct SharedGpu {
  NodeId node;
  int gpu = 0;
  // The running holders (ascending by id), then the jobs placed on it this cycle.
  std::vector<JobId> holders;
};

bool Contains(const std::vector<JobId>& sorted, JobId id) {
  return std::ranges::binary_search(sorted, id);
}

// The items' jobs, ascending, into `ids` (its buffer reused).
void SortedIds(const auto& items, std::vector<JobId>& ids) {
  ids.clear();
  for (const auto& item : items) ids.push_back(item.job);
  std::ranges::sort(ids);
}

class SharingPolicy final : public SchedulingPolicy {
 public:
  SharingPolicy(SharingPolicyConfig config, std::unique_ptr<SchedulingPolicy> base)
      : config_(std::move(config)),
        base_(std::move(base)),
        open_index_({config_.max_jobs_per_gpu, config_.memory_percentile,
                     config_.mode == ShareMode::kTimeSliced}) {}

  std::string_view Name() const override { return config_.name; }
  const RankOrder& Order() const override { return base_->Order(); }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    return base_->Admit(job, ctx);
  }
  // The decorator's own decisions are a function of the context; the base may keep state.
  std::string SaveState() const override { return base_->SaveState(); }
  Status RestoreState(std::string_view state) override { return base_->RestoreState(state); }

  Decisions Decide(const SchedulingContext& ctx) const override {
    Decisions decisions = base_->Decide(ctx);
    if (ctx.sharing == nullptr || ctx.explain) return decisions;
    const size_t base_launches = decisions.launches.size();
    ShareBaseLaunches(ctx, decisions);
    // Shared GPUs and waiting jobs change with arrivals, departures, suspensions and launches,
    // and residences end on timers: another cycle finds nothing new.
    const CycleTrigger& t = ctx.trigger;
    if (!t.arrivals && !t.departures && !t.suspensions && !t.timer && decisions.empty()) {
      return decisions;
    }
    // Candidates join only open shared GPUs (Candidates syncs them first and looks for none while
    // no GPU is open); the interference migration reads the copies of those they joined (every
    // other GPU holds its running jobs only).
    const std::vector<JobId>& candidates = Candidates(ctx, decisions);
    // Observed demand changes only when a run segment ends; GPUs free up for jobs to move to
    // only when nothing waits (every waiting job is launched this cycle).
    const bool may_migrate = config_.migrate && (t.departures || t.suspensions ||
                                                 ctx.queue.size() <= decisions.launches.size());
    if (candidates.empty() && !may_migrate) return decisions;
    DS_CHECK(ctx.shared_gpus != nullptr) << "a context with a SharingView names the shared GPUs";
    const std::span<const SharedGpu> packed = PlaceCandidates(ctx, candidates, decisions);
    if (may_migrate) Migrate(ctx, packed, base_launches, decisions);
    return decisions;
  }

 private:
  const sharing::InterferenceModel* ModelFor(const SchedulingContext& ctx, GpuTypeId type) const {
    const sharing::InterferenceModel* model = ctx.sharing->Interference(type);
    if (model == nullptr) return nullptr;
    return config_.interference_aware && config_.mode == ShareMode::kPacked ? model
                                                                            : &no_interference_;
  }

  // The base's single-GPU launches hold their GPUs in the shared mode, so others may join later.
  void ShareBaseLaunches(const SchedulingContext& ctx, Decisions& decisions) const {
    for (LaunchDecision& launch : decisions.launches) {
      if (ctx.jobs.at(launch.job).spec.num_gpus != 1) continue;
      const NodeGpus& part = launch.placement.parts.front();
      const GpuTypeId type =
          ctx.cluster.node(part.node).gpus[static_cast<size_t>(std::countr_zero(part.gpus))].type;
      if (ctx.sharing->Interference(type) != nullptr) launch.share = config_.mode;
    }
  }

  // Up to max_candidates single-GPU waiting jobs the base did not start, in queue order, without
  // selectors or preferences (the packer places by GPU type only), and not killed out of memory
  // within min_residence. The first ones, as many GPUs as the base's preemptions free, are left
  // to the base: those preemptions are likely for them.
  // At the first one found it brings open_index_ up to date (PlaceCandidates reads it), and
  // while no GPU is open (k = 1 included) it returns none: none could join one.
  // The result is candidates_, valid until the next call.
  const std::vector<JobId>& Candidates(const SchedulingContext& ctx,
                                       const Decisions& decisions) const {
    std::vector<JobId>& candidates = candidates_;
    candidates.clear();
    const auto singles = ctx.queue.by_gang_order().find(1);
    if (singles == ctx.queue.by_gang_order().end() || config_.max_jobs_per_gpu == 1) {
      return candidates;  // k = 1: none is open
    }
    // The base's launches, marked by job index (the table's) with this call's stamp: O(1) per
    // look.
    ++launch_stamp_;
    if (launched_at_.size() < ctx.jobs.size()) launched_at_.resize(ctx.jobs.size(), 0);
    for (const LaunchDecision& launch : decisions.launches) {
      launched_at_[launch.job.index()] = launch_stamp_;
    }
    const auto launched = [&](JobId id) { return launched_at_[id.index()] == launch_stamp_; };
    int left_to_base = 0;
    for (const PreemptDecision& p : decisions.preemptions) {
      left_to_base += ctx.jobs.at(p.job).spec.num_gpus;
    }
    for (const RankKey& key : singles->second) {
      if (static_cast<int>(candidates.size()) >= config_.max_candidates) break;
      if (launched(key.id)) continue;
      if (left_to_base > 0) {
        --left_to_base;
        continue;
      }
      const Job& job = ctx.jobs.at(key.id);
      if (!job.spec.selector.empty() || !job.spec.preferences.empty()) continue;
      // After an out-of-memory kill, a GPU of its own for min_residence (no kill loops).
      if (job.last_oom != kTimeNever && ctx.now - job.last_oom < config_.min_residence) continue;
      if (candidates.empty() && !SyncOpenGpus(ctx)) return candidates;
      candidates.push_back(key.id);
    }
    return candidates;
  }

  // Brings open_index_ up to date; whether any shared GPU is open.
  bool SyncOpenGpus(const SchedulingContext& ctx) const {
    DS_CHECK(ctx.shared_gpus != nullptr) << "a context with a SharingView names the shared GPUs";
    open_index_.Sync(ctx.cluster, ctx.state, ctx.jobs, *ctx.shared_gpus, *ctx.sharing);
    return !open_index_.groups().empty();
  }

  static bool MayRunOn(const Job& job, GpuTypeId type, const Cluster& cluster) {
    if (!job.spec.gpu_type.empty() && cluster.FindGpuType(job.spec.gpu_type) != type) return false;
    return std::ranges::find(job.failed_gpu_types, type) == job.failed_gpu_types.end();
  }

  // Packs candidates beside the jobs on open shared GPUs (OpenSharedGpus, as Candidates synced it,
  // less those of the base's preemptions: their holders are leaving, and the base counts on the
  // GPU), one GPU type and one sharing group at a time, ascending. Returns the GPUs jobs joined,
  // by node and GPU, with the jobs placed on them: a view of joined_gpus_, valid until the next
  // call.
  std::span<const SharedGpu> PlaceCandidates(const SchedulingContext& ctx,
                                             const std::vector<JobId>& candidates,
                                             Decisions& decisions) const {
    joined_count_ = 0;
    if (candidates.empty()) return {};
    // The open GPUs of the base's preempted jobs, ascending by cluster GPU index.
    std::vector<uint32_t>& excluded = excluded_;
    excluded.clear();
    for (const PreemptDecision& p : decisions.preemptions) {
      const Job& job = ctx.jobs.at(p.job);
      if (job.state != JobState::kRunning || job.share == ShareMode::kExclusive) continue;
      const NodeGpus& part = job.placement.parts.front();
      excluded.push_back(
          static_cast<uint32_t>(ctx.cluster.first_gpu(part.node) + std::countr_zero(part.gpus)));
    }
    std::ranges::sort(excluded);
    excluded.erase(std::ranges::unique(excluded).begin(), excluded.end());
    std::vector<char>& placed = placed_;  // bytes: read per candidate per group
    placed.assign(candidates.size(), 0);
    figures_.resize(candidates.size());
    ctx.sharing->FiguresOf(candidates, config_.memory_percentile, figures_);
    for (const auto& [key, group] : open_index_.groups()) {
      const GpuTypeId type(key.first);
      const sharing::InterferenceModel* model = ModelFor(ctx, type);
      if (model == nullptr) continue;
      PlaceInGroup(ctx, candidates, group, type, *model, key.second, placed, decisions);
    }
    std::vector<SharedGpu>& gpus = joined_gpus_;
    std::sort(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(joined_count_),
              [](const SharedGpu& a, const SharedGpu& b) {
                return a.node != b.node ? a.node < b.node : a.gpu < b.gpu;
              });
    return std::span<const SharedGpu>(gpus.data(), joined_count_);
  }

  bool Excluded(uint32_t gpu) const {
    return !excluded_.empty() && std::ranges::binary_search(excluded_, gpu);
  }

  // The holders of a GPU a job joins this cycle: its copy among joined_gpus_, made at the first
  // join with its running holders.
  std::vector<JobId>& Joined(const SchedulingContext& ctx, NodeId node, int gpu) const {
    for (size_t i = 0; i < joined_count_; ++i) {
      if (joined_gpus_[i].node == node && joined_gpus_[i].gpu == gpu) {
        return joined_gpus_[i].holders;
      }
    }
    if (joined_count_ == joined_gpus_.size()) joined_gpus_.emplace_back();
    SharedGpu& joined = joined_gpus_[joined_count_++];
    joined.node = node;
    joined.gpu = gpu;
    joined.holders.clear();  // one or two ids: no call to copy them
    for (JobId id : ctx.shared_gpus->holders(node, gpu)) joined.holders.push_back(id);
    return joined.holders;
  }

  // PlaceCandidates for the open GPUs of `type` in `group` (`open`) and the candidates of that
  // group.
  void PlaceInGroup(const SchedulingContext& ctx, const std::vector<JobId>& candidates,
                    const OpenSharedGpus::Group& open, GpuTypeId type,
                    const sharing::InterferenceModel& model, uint64_t group,
                    std::vector<char>& placed, Decisions& decisions) const {
    // The group's first GPU gives the memory the packer plans with.
    int64_t capacity = -1;
    open_index_.ForEachGpu(open, [&](uint32_t g) {
      if (Excluded(g)) return true;
      capacity = open_index_.gpu(g).memory_mib;
      return false;
    });
    if (capacity < 0) return;
    // (index into candidates, the memory it packs as)
    std::vector<std::pair<size_t, int64_t>>& offered = offered_;
    offered.clear();
    int64_t least_mib = capacity;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (placed[c] || !MayRunOn(ctx.jobs.at(candidates[c]), type, ctx.cluster)) continue;
      if (figures_[c].group != group) continue;
      const int64_t demand_mib = figures_[c].memory_demand_mib;
      if (demand_mib > capacity) continue;  // it could not run here even alone
      const int64_t pack_mib = PackMemoryMib(demand_mib);
      least_mib = std::min(least_mib, pack_mib);
      offered.emplace_back(c, pack_mib);
    }
    if (offered.empty()) return;
    // The packers join a job to a GPU only where its demand fits the memory the GPU's holders
    // leave free, so a GPU without room for the least demanding candidate would take none: it
    // is left out (its slot with it), which changes no placement and spares the packers work
    // per open GPU at every cycle. The others are read off the index by their holders' demand,
    // then taken in (node, GPU) order.
    size_t all_jobs = offered.size() + open.holders;
    for (const uint32_t g : excluded_) {
      if (open.bits[g / 64] >> (g % 64) & 1) all_jobs -= open_index_.gpu(g).holders.size();
    }
    std::vector<sharing::PackJob>& jobs = pack_jobs_;
    std::vector<uint32_t>& kept = kept_;  // cluster GPU index per packer slot
    jobs.clear();
    kept.clear();
    open_index_.ForEachGpu(open, [&](uint32_t g) {
      if (capacity - open_index_.used_mib(g) < least_mib || Excluded(g)) return true;
      for (const sharing::PackJob& holder : open_index_.gpu(g).holders) {
        jobs.push_back(holder);
        jobs.back().pinned_gpu = static_cast<int>(kept.size());
      }
      kept.push_back(g);
      return true;
    });
    if (kept.empty()) return;
    const size_t first_candidate = jobs.size();
    for (const auto& [c, pack_mib] : offered) {
      jobs.push_back({figures_[c].features, pack_mib, /*pinned_gpu=*/-1});
    }
    sharing::PackOptions options;
    options.gpu_memory_mib = capacity;
    options.max_jobs_per_gpu = config_.max_jobs_per_gpu;
    options.max_slowdown = config_.interference_aware ? config_.max_slowdown : 1.0;
    options.max_gpus = static_cast<int>(kept.size());
    // The local search's rounds as for every open GPU's holders (its default counts its input).
    options.max_rounds = static_cast<int>(std::bit_width(all_jobs));
    std::vector<int>& gpu_of = pack_gpu_of_;
    const Status packed = config_.packer == SharingPolicyConfig::Packer::kHeuristic
                              ? sharing::HeuristicPlace(jobs, model, options, pack_scratch_, gpu_of)
                              : sharing::GreedyPlace(jobs, model, options, pack_scratch_, gpu_of);
    if (!packed.ok()) return;  // a pinned slot the world changed under; try next cycle
    for (size_t o = 0; o < offered.size(); ++o) {
      const int slot = gpu_of[first_candidate + o];
      if (slot < 0) continue;
      const OpenSharedGpus::Gpu& gpu = open_index_.gpu(kept[static_cast<size_t>(slot)]);
      const JobId id = candidates[offered[o].first];
      // A GPU's second holder needs host CPUs and memory of its own on the node too.
      const NodeGpus part =
          ctx.state.Part(gpu.node, GpuMask{1} << gpu.gpu,
                         EffectiveHostRequest(ctx.jobs.at(id).spec, ctx.cluster.host_defaults()));
      if (!HostRoomLeft(ctx, decisions, part)) continue;
      decisions.launches.push_back({id, Placement{{part}}, config_.mode});
      Joined(ctx, gpu.node, gpu.gpu).push_back(id);
      placed[offered[o].first] = 1;
    }
  }

  // Whether the part's node still has its CPUs and memory free after the cycle's launches so far.
  static bool HostRoomLeft(const SchedulingContext& ctx, const Decisions& decisions,
                           const NodeGpus& part) {
    if (part.cpus == 0 && part.memory_mib == 0) return true;
    HostRequest need{part.cpus, part.memory_mib};
    for (const LaunchDecision& launch : decisions.launches) {
      for (const NodeGpus& p : launch.placement.parts) {
        if (p.node != part.node) continue;
        need.cpus += p.cpus;
        need.memory_mib += p.memory_mib;
      }
    }
    return ctx.state.HasHostRoom(part.node, need);
  }

  // The memory the packer sees a job demand (PackJob::memory_mib) whose MemoryDemandMib at the
  // percentile is `demand_mib`. Time-sliced GPUs swap the others' memory out between turns, so
  // there only each job's own demand must fit (checked before packing): it packs as 0 MiB.
  int64_t PackMemoryMib(int64_t demand_mib) const {
    return config_.mode == ShareMode::kTimeSliced ? 0 : demand_mib;
  }

  // Each holder's predicted slowdown on a GPU of `type`, in holder order. The result views
  // slowdowns_, valid until the next call.
  std::span<const double> PredictedSlowdowns(const SchedulingContext& ctx, GpuTypeId type,
                                             std::span<const JobId> holders) const {
    const size_t n = holders.size();
    slowdowns_.assign(n, 1.0);
    if (n < 2) return slowdowns_;
    if (config_.mode == ShareMode::kTimeSliced) {
      std::ranges::fill(slowdowns_, static_cast<double>(n));
      return slowdowns_;
    }
    group_.clear();
    for (JobId id : holders) group_.push_back(ctx.sharing->Features(id));
    speeds_.resize(n);
    sharing::GroupSpeeds(*ctx.sharing->Interference(type), group_, speeds_);
    for (size_t i = 0; i < n; ++i) slowdowns_[i] = sharing::SlowdownOf(speeds_[i]);
    return slowdowns_;
  }

  // Whether the job may migrate now: only a running one (a holder the packer placed this cycle
  // still waits). With `check_residence`, one that may once its minimum residence on its GPU
  // ends asks for a cycle then.
  bool MayMigrate(const SchedulingContext& ctx, JobId id, const std::vector<JobId>& preempted,
                  bool check_residence, Decisions& decisions) const {
    const Job& job = ctx.jobs.at(id);
    if (job.state != JobState::kRunning) return false;
    if (job.preempt_requested || Contains(preempted, id)) return false;
    if (job.migrations >= config_.max_migrations_per_job) return false;
    const Timestamp settled = job.segment_start + config_.min_residence;
    if (!check_residence || ctx.now >= settled) return true;
    decisions.wake_at = std::min(decisions.wake_at, settled);
    return false;
  }

  // Dynamic adjustment (see the header): out of GPUs whose observed demand no longer fits, and
  // off shared GPUs onto free ones once nothing waits. `open`: the GPUs jobs joined this cycle,
  // with them (every other shared GPU holds its running jobs only), as PlaceCandidates left them.
  void Migrate(const SchedulingContext& ctx, std::span<const SharedGpu> open, size_t base_launches,
               Decisions& decisions) const {
    std::vector<JobId>& preempted = preempted_;
    SortedIds(decisions.preemptions, preempted);
    const auto migrate = [&](JobId id, std::string reason) {
      decisions.preemptions.push_back({id, std::move(reason), /*migration=*/true});
    };
    // Memory: the running holders' demand at the percentile, as observed now, over the GPU's
    // memory; the largest of them that may migrate moves. A GPU with one running holder cannot
    // be over: alone it is never counted, and a job placed beside it this cycle fit with it (the
    // packers join a GPU only where the demands, these same ones, fit its memory).
    // Since the last check, if no demand changed, each GPU's holders are some of those it had
    // then, demanding no more, unless a job joined it: only the GPUs that check found over and
    // those joined since may be over now, and only they are checked again (in (node, GPU) order,
    // as the full check visits them, so the same decisions).
    std::vector<JobId>& moving = moving_;
    moving.clear();
    const std::optional<uint64_t> demand_revision = ctx.sharing->DemandRevision();
    if (config_.mode == ShareMode::kPacked) {
      std::vector<std::pair<NodeId, int>>& now_over = over_gpus_scratch_;
      now_over.clear();
      const auto check = [&](NodeId node, int gpu, std::span<const JobId> running) {
        const int64_t memory_mib = ctx.cluster.node(node).gpus[static_cast<size_t>(gpu)].memory_mib;
        int64_t demand = 0;
        for (JobId id : running) {
          demand += ctx.sharing->MemoryDemandMib(id, config_.memory_percentile);
        }
        if (demand <= memory_mib) return;
        now_over.emplace_back(node, gpu);
        JobId largest;
        int64_t largest_mib = -1;
        for (JobId id : running) {
          const int64_t mib = ctx.sharing->MemoryDemandMib(id, config_.memory_percentile);
          if (mib > largest_mib && MayMigrate(ctx, id, preempted, false, decisions)) {
            largest_mib = mib;
            largest = id;
          }
        }
        if (!largest.valid()) return;
        migrate(largest, "migrating: its GPU's jobs now demand " + std::to_string(demand) + " of " +
                             std::to_string(memory_mib) + " MiB");
        moving.push_back(largest);
      };
      std::vector<std::pair<NodeId, int>>& recheck = recheck_gpus_;
      const bool since_last = demand_revision.has_value() && memory_checked_at_.has_value() &&
                              memory_checked_at_->first == *demand_revision &&
                              ctx.shared_gpus->JoinedSince(memory_checked_at_->second, recheck);
      if (since_last) {
        recheck.insert(recheck.end(), over_gpus_.begin(), over_gpus_.end());
        std::ranges::sort(recheck);
        recheck.erase(std::ranges::unique(recheck).begin(), recheck.end());
        for (const auto& [node, gpu] : recheck) {
          const std::span<const JobId> running = ctx.shared_gpus->holders(node, gpu);
          if (running.size() >= 2) check(node, gpu, running);  // as ForEach(kBySeveral) visits
        }
      } else {
        ctx.shared_gpus->ForEach(SharedGpus::Held::kBySeveral, check);
      }
      over_gpus_.swap(now_over);
      memory_checked_at_ = demand_revision.has_value()
                               ? std::optional<std::pair<uint64_t, uint64_t>>(
                                     std::pair(*demand_revision, ctx.shared_gpus->join_revision()))
                               : std::nullopt;
    }
    std::ranges::sort(moving);
    // Interference: once nothing waits, the most slowed jobs move to the GPUs left free.
    // Nothing waits once the base and the packer launched every waiting job.
    if (ctx.queue.size() > decisions.launches.size()) return;
    int free_gpus = ctx.state.free_total();
    for (size_t i = 0; i < base_launches; ++i) {
      free_gpus -= decisions.launches[i].placement.num_gpus();
    }
    std::vector<std::pair<double, JobId>>& slowed = slowed_;
    slowed.clear();
    const auto visit = [&](NodeId node, int gpu, std::span<const JobId> holders) {
      const GpuTypeId type = ctx.cluster.node(node).gpus[static_cast<size_t>(gpu)].type;
      const std::span<const double> slowdowns = PredictedSlowdowns(ctx, type, holders);
      size_t worst = holders.size();
      for (size_t i = 0; i < holders.size(); ++i) {
        if (slowdowns[i] < config_.min_slowdown_to_migrate) continue;
        if (Contains(moving, holders[i]) ||
            !MayMigrate(ctx, holders[i], preempted, true, decisions)) {
          continue;
        }
        if (worst == holders.size() || slowdowns[i] > slowdowns[worst]) worst = i;
      }
      if (worst < holders.size()) slowed.emplace_back(slowdowns[worst], holders[worst]);
    };
    // open is a subsequence of the shared GPUs, in the same order; its holders include the jobs
    // placed on it this cycle, and the other GPUs' are those the index lists.
    const auto before = [](const SharedGpu& g, NodeId node, int gpu) {
      return g.node != node ? g.node < node : g.gpu < gpu;
    };
    size_t next_open = 0;
    // A GPU the index lists, with the holders of its open copy where it has one.
    const auto visit_listed = [&](NodeId node, int gpu, std::span<const JobId> running) {
      if (next_open < open.size() && open[next_open].node == node && open[next_open].gpu == gpu) {
        visit(node, gpu, open[next_open++].holders);
      } else {
        visit(node, gpu, running);
      }
    };
    if (config_.min_slowdown_to_migrate > 1.0) {
      // A job alone on its GPU is predicted a slowdown of 1, below the threshold: only GPUs with
      // two or more holders are visited, those of the index held by several and the open ones a
      // job joined this cycle. `slowed` is sorted below by a total order and MayMigrate's wake-up
      // is a minimum, so the order of visits does not matter.
      const auto visit_open_joined_until = [&](const auto& stop) {
        for (; next_open < open.size() && !stop(open[next_open]); ++next_open) {
          const SharedGpu& g = open[next_open];
          if (g.holders.size() >= 2) visit(g.node, g.gpu, g.holders);
        }
      };
      ctx.shared_gpus->ForEach(
          SharedGpus::Held::kBySeveral, [&](NodeId node, int gpu, std::span<const JobId> running) {
            visit_open_joined_until([&](const SharedGpu& g) { return !before(g, node, gpu); });
            visit_listed(node, gpu, running);
          });
      visit_open_joined_until([](const SharedGpu&) { return false; });
    } else {
      ctx.shared_gpus->ForEach(visit_listed);
    }
    std::ranges::sort(slowed, [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [slowdown, id] : slowed) {
      if (free_gpus <= 0) break;
      migrate(id, "migrating to a free GPU: slowed " + std::to_string(slowdown).substr(0, 4) +
                      "x by its GPU's other jobs");
      --free_gpus;
    }
  }

  SharingPolicyConfig config_;
  std::unique_ptr<SchedulingPolicy> base_;
  NoInterference no_interference_;
  // The open shared GPUs, brought up to date at each cycle that places candidates.
  mutable OpenSharedGpus open_index_;
  // Buffers kept between cycles (Decide runs on one thread at a time): the packers' and their
  // answer, and PredictedSlowdowns'; Candidates', PlaceCandidates' and PlaceInGroup's (the GPUs
  // jobs joined among them), Migrate's.
  mutable std::vector<JobId> candidates_;
  mutable std::vector<uint64_t> launched_at_;  // per job index: the stamp of its launch
  mutable uint64_t launch_stamp_ = 0;
  mutable std::vector<JobId> preempted_;
  mutable std::vector<char> placed_;
  mutable std::vector<SharingFigures> figures_;  // per candidate, as PlaceCandidates read them
  mutable std::vector<uint32_t> excluded_;
  mutable std::vector<std::pair<size_t, int64_t>> offered_;
  mutable std::vector<sharing::PackJob> pack_jobs_;
  mutable std::vector<uint32_t> kept_;
  mutable std::vector<JobId> moving_;
  mutable std::vector<std::pair<double, JobId>> slowed_;
  mutable std::vector<SharedGpu> joined_gpus_;  // [0, joined_count_) this cycle's
  mutable size_t joined_count_ = 0;
  mutable sharing::PackScratch pack_scratch_;
  mutable std::vector<int> pack_gpu_of_;
  mutable std::vector<double> slowdowns_;
  mutable std::vector<sharing::SharingJob> group_;
  mutable std::vector<double> speeds_;
  // The demand and join revisions (SharingView::DemandRevision, SharedGpus::join_revision) at
  // Migrate's last memory check (nullopt where the view keeps no demand revision), and the GPUs
  // that check found over, in (node, GPU) order; the next check's list is built in the second,
  // the GPUs it looks at in the third.
  mutable std::optional<std::pair<uint64_t, uint64_t>> memory_checked_at_;
  mutable std::vector<std::pair<NodeId, int>> over_gpus_;
  mutable std::vector<std::pair<NodeId, int>> over_gpus_scratch_;
  mutable std::vector<std::pair<NodeId, int>> recheck_gpus_;
};

}  // namespace

Status ValidateSharingPolicyConfig(const SharingPolicyConfig& c) {
  const auto bad = [&](const std::string& what) {
    return InvalidArgument("sharing policy '" + c.name + "': " + what);
  };
  if (c.mode == ShareMode::kExclusive) return bad("mode must be packed or time-sliced");
  if (c.max_jobs_per_gpu < 1) return bad("max_jobs_per_gpu must be >= 1");
  if (!(c.memory_percentile >= 0 && c.memory_percentile <= 100)) {
    return bad("memory_percentile must be in [0, 100]");
  }
  if (!(c.max_slowdown >= 1)) return bad("max_slowdown must be >= 1");
  if (c.max_candidates < 1) return bad("max_candidates must be >= 1");
  if (c.max_migrations_per_job < 0) return bad("migration.max_per_job must be >= 0");
  if (c.min_residence < Duration(0)) return bad("migration.min_residence_s must be >= 0");
  if (!(c.min_slowdown_to_migrate >= 1)) return bad("migration.min_slowdown must be >= 1");
  return Status::Ok();
}

std::unique_ptr<SchedulingPolicy> MakeSharingPolicy(SharingPolicyConfig config,
                                                    std::unique_ptr<SchedulingPolicy> base) {
  DS_CHECK(base != nullptr) << "a sharing policy needs a base policy";
  return std::make_unique<SharingPolicy>(std::move(config), std::move(base));
}

}  // namespace dlsched
