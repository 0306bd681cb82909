// The Scheduler's online services and the lending of their idle GPUs (docs/architecture.md):
// member functions of Scheduler, declared in dlsched/runtime/scheduler.h.

#include <algorithm>
#include <bit>

#include "dlsched/policy/placement.h"
#include "dlsched/runtime/scheduler.h"

namespace dlsched {
namespace {

// The GPUs of `placement` that `keep(node, gpus)` keeps, as a placement (no host resources).
template <typename Keep>
Placement Select(const Placement& placement, const Keep& keep) {
  Placement selected;
  for (const NodeGpus& part : placement.parts) {
    const GpuMask gpus = keep(part.node, part.gpus);
    if (gpus != 0) selected.parts.push_back({part.node, gpus});
  }
  return selected;
}

// As Select, but each part keeps all its CPUs and memory: a job's host resources are its own
// whoever lends it GPUs (a service lends GPUs only).
template <typename Keep>
Placement SelectWithHost(const Placement& placement, const Keep& keep) {
  Placement selected;
  for (const NodeGpus& part : placement.parts) {
    const GpuMask gpus = keep(part.node, part.gpus);
    if (gpus != 0 || part.cpus != 0 || part.memory_mib != 0) {
      selected.parts.push_back({part.node, gpus, part.cpus, part.memory_mib});
    }
  }
  return selected;
}

// The lowest `count` GPUs of `gpus`.
GpuMask LowestOf(GpuMask gpus, int count) {
  GpuMask picked = 0;
  for (; count > 0 && gpus != 0; --count) {
    const GpuMask lowest = gpus & -gpus;
    picked |= lowest;
    gpus &= ~lowest;
  }
  return picked;
}

}  // namespace

void Scheduler::PlaceServices(Timestamp now, CycleResult& result) {
  const SchedulingContext ctx = Context(now);
  const Placer placer(ctx, {}, {});
  // Services never take lent GPUs: those belong to other services.
  ClusterState available = state_;
  available.Allocate(Select(AllGpus(), [&](NodeId node, GpuMask) {
    return state_.free_mask(node) & lent_mask_[node.index()];
  }));
  bool making_room = false;  // one service at a time preempts training jobs, in order
  std::vector<JobId> still_waiting;
  for (JobId id : waiting_services_) {
    Job& service = jobs_.at(id);
    if (auto placement = placer.Find(JobView(service, now), available)) {
      available.Allocate(*placement);
      StartService(service, std::move(*placement), now);
      result.launches.push_back(id);
      continue;
    }
    still_waiting.push_back(id);
    if (!making_room) {
      making_room = MakeRoomFor(service, placer, available, now, result);
      if (!making_room) {
        service.reason = "service waiting for " + std::to_string(service.spec.num_gpus) +
                         " GPUs: other services hold the rest";
      }
    } else {
      service.reason = "service waiting behind an earlier service";
    }
  }
  waiting_services_ = std::move(still_waiting);
}

void Scheduler::StartService(Job& service, Placement placement, Timestamp now) {
  state_.Allocate(placement);
  service.state = JobState::kRunning;
  service.placement = std::move(placement);
  service.segment_start = now;
  if (service.first_start == kTimeNever) service.first_start = now;
  service.reason.clear();
  running_services_.push_back(service.id);
  executor_->Launch(service, service.placement, now);
}

bool Scheduler::MakeRoomFor(Job& service, const Placer& placer, ClusterState& available,
                            Timestamp now, CycleResult& result) {
  const JobView view(service, now);
  // Jobs asked to stop already give their own GPUs back; the rest are candidates.
  ClusterState what_if = available;
  std::vector<std::pair<int64_t, JobId>> candidates;  // (rank, id), lowest rank first below
  for (JobId id : running_) {
    const Job& job = jobs_.at(id);
    if (job.preempt_requested) {
      what_if.Release(OwnGpus(job.placement));
    } else {
      candidates.emplace_back(policy_->Order().Rank(JobView(job, now)), id);
    }
  }
  std::ranges::sort(candidates, std::greater<>());
  std::optional<Placement> placement = placer.Find(view, what_if);
  size_t victims = 0;
  while (!placement && victims < candidates.size()) {
    what_if.Release(OwnGpus(jobs_.at(candidates[victims++].second).placement));
    placement = placer.Find(view, what_if);
  }
  if (!placement) return false;
  for (size_t i = 0; i < victims; ++i) {
    Job& victim = jobs_.at(candidates[i].second);
    MarkStopping(victim);
    executor_->Preempt(victim, now);
    result.preemptions.push_back({victim.id, /*migration=*/false, /*for_service=*/true});
    ++service_yields_;
  }
  // Hold the free part of its future placement (GPUs, CPUs and memory), so training jobs do not
  // take it meanwhile.
  service_hold_ = {};
  for (const NodeGpus& part : placement->parts) {
    const NodeGpus free_now{part.node, part.gpus & available.free_mask(part.node),
                            std::min(part.cpus, available.free_cpus(part.node)),
                            std::min(part.memory_mib, available.free_memory_mib(part.node))};
    if (free_now.gpus != 0 || free_now.cpus != 0 || free_now.memory_mib != 0) {
      service_hold_.parts.push_back(free_now);
    }
  }
  available.Allocate(service_hold_);
  state_.Allocate(service_hold_);
  service.reason = "service waiting for training jobs to give back GPUs";
  return true;
}

void Scheduler::SyncServiceLoans(Timestamp now, CycleResult& result) {
  shortfall_gpu_time_ += (now - shortfall_since_) * shortfall_gpus_;
  shortfall_since_ = now;
  shortfall_gpus_ = 0;
  for (JobId id : running_services_) {
    Job& service = jobs_.at(id);
    const int idle =
        service.spec.num_gpus - service.spec.service->NeedAt(now, service.spec.num_gpus);
    const int lent = CountLent(service.placement);
    if (idle > lent) Lend(service, idle - lent);
    if (idle < lent) {
      TakeBack(service, lent - idle, result, now);
      shortfall_gpus_ += std::max(CountLent(service.placement) - idle, 0);
    }
  }
}

void Scheduler::Lend(Job& service, int gpus) {
  // Its highest GPUs first, so a partly lent service keeps its lowest ones together.
  Placement lend;
  for (auto part = service.placement.parts.rbegin(); part != service.placement.parts.rend();
       ++part) {
    if (gpus == 0) break;
    GpuMask own = part->gpus & ~lent_mask_[part->node.index()];
    GpuMask picked = 0;
    for (; gpus > 0 && own != 0; --gpus) {
      const GpuMask highest = GpuMask{1} << (std::bit_width(own) - 1);
      picked |= highest;
      own &= ~highest;
    }
    if (picked != 0) lend.parts.insert(lend.parts.begin(), {part->node, picked});
  }
  for (const NodeGpus& part : lend.parts) lent_mask_[part.node.index()] |= part.gpus;
  state_.Release(lend);
  since_last_cycle_.departures = true;  // GPUs came free, as when a job leaves
}

void Scheduler::TakeBack(Job& service, int gpus, CycleResult& result, Timestamp now) {
  // Lent GPUs still free come back at once.
  Placement back;
  for (const NodeGpus& part : service.placement.parts) {
    const GpuMask free_lent =
        part.gpus & lent_mask_[part.node.index()] & state_.free_mask(part.node);
    const GpuMask picked = LowestOf(free_lent, gpus);
    if (picked == 0) continue;
    back.parts.push_back({part.node, picked});
    gpus -= CountGpus(picked);
  }
  for (const NodeGpus& part : back.parts) lent_mask_[part.node.index()] &= ~part.gpus;
  state_.Allocate(back);
  if (gpus <= 0) return;
  // The rest: its borrowers yield, the latest started first (the least work lost); those already
  // stopping count too. Their GPUs come back at a later cycle, once free.
  const Placement lent = LentGpus(service.placement);
  std::vector<std::pair<Timestamp, JobId>> borrowers;
  for (JobId id : running_) {
    const Job& job = jobs_.at(id);
    if (job.loaned_gpus > 0 && Overlap(job.placement, lent) > 0) {
      borrowers.emplace_back(job.segment_start, id);
    }
  }
  std::ranges::sort(borrowers, std::greater<>());
  std::ranges::stable_partition(
      borrowers, [&](const auto& b) { return jobs_.at(b.second).preempt_requested; });
  for (const auto& [started, id] : borrowers) {
    if (gpus <= 0) break;
    Job& borrower = jobs_.at(id);
    gpus -= Overlap(borrower.placement, lent);
    if (borrower.preempt_requested) continue;
    MarkStopping(borrower);
    executor_->Preempt(borrower, now);
    result.preemptions.push_back({id, /*migration=*/false, /*for_service=*/true});
    ++service_yields_;
  }
}

void Scheduler::StopService(Job& service, Timestamp now) {
  // Book the shortfall so far; the next cycle recounts it without this service.
  shortfall_gpu_time_ += (now - shortfall_since_) * shortfall_gpus_;
  shortfall_since_ = now;
  shortfall_gpus_ = 0;
  state_.Release(OwnGpus(service.placement));
  // Its lent GPUs stay where they are: free, or their borrowers' own from now on.
  bool had_borrowers = false;
  for (const NodeGpus& part : service.placement.parts) {
    GpuMask& lent = lent_mask_[part.node.index()];
    if ((lent & part.gpus & ~state_.free_mask(part.node)) != 0) had_borrowers = true;
    lent &= ~part.gpus;
  }
  if (had_borrowers) {
    for (JobId id : running_) {
      Job& job = jobs_.at(id);
      if (job.loaned_gpus > 0) SettleLoan(job, now);
    }
  }
  std::erase(running_services_, service.id);
}

Placement Scheduler::OwnGpus(const Placement& placement) const {
  return SelectWithHost(
      placement, [&](NodeId node, GpuMask gpus) { return gpus & ~lent_mask_[node.index()]; });
}

Placement Scheduler::LentGpus(const Placement& placement) const {
  return Select(placement,
                [&](NodeId node, GpuMask gpus) { return gpus & lent_mask_[node.index()]; });
}

Placement Scheduler::AllGpus() const {
  Placement all;
  for (int n = 0; n < cluster_->num_nodes(); ++n) {
    const NodeId node(static_cast<uint32_t>(n));
    all.parts.push_back({node, LowestGpus(static_cast<int>(cluster_->node(node).gpus.size()))});
  }
  return all;
}

int Scheduler::CountLent(const Placement& placement) const {
  int lent = 0;
  for (const NodeGpus& part : placement.parts) {
    lent += CountGpus(part.gpus & lent_mask_[part.node.index()]);
  }
  return lent;
}

int Scheduler::Overlap(const Placement& a, const Placement& b) {
  int shared = 0;
  for (const NodeGpus& x : a.parts) {
    for (const NodeGpus& y : b.parts) {
      if (x.node == y.node) shared += CountGpus(x.gpus & y.gpus);
    }
  }
  return shared;
}

void Scheduler::SettleLoan(Job& job, Timestamp now) {
  lent_gpu_time_ += (now - job.loan_since) * job.loaned_gpus;
  job.loan_since = now;
  job.loaned_gpus = CountLent(job.placement);
}

Duration Scheduler::lent_gpu_time(Timestamp now) const {
  Duration total = lent_gpu_time_;
  for (JobId id : running_) {
    const Job& job = jobs_.at(id);
    total += (now - job.loan_since) * job.loaned_gpus;
  }
  return total;
}

bool Scheduler::CanKeepGpus(const JobSpec& spec, const Placement& placement,
                            ShareMode share) const {
  if (share != ShareMode::kExclusive) {
    if (spec.is_service() || placement.parts.size() != 1 || placement.num_gpus() != 1) {
      return false;
    }
    const NodeGpus& part = placement.parts.front();
    return state_.CanShare(part.node, std::countr_zero(part.gpus)) &&
           state_.HasHostRoom(part.node, {part.cpus, part.memory_mib});
  }
  if (state_.IsFree(placement)) return true;
  // Lent GPUs may be kept; CPUs and memory are never lent.
  for (const NodeGpus& part : placement.parts) {
    if (!state_.HasHostRoom(part.node, {part.cpus, part.memory_mib})) return false;
  }
  const Placement taken =
      Select(placement, [&](NodeId node, GpuMask gpus) { return gpus & ~state_.free_mask(node); });
  if (CountLent(taken) > 0) return false;  // lent and borrowed already
  int held_by_services = 0;
  for (JobId id : running_services_) held_by_services += Overlap(jobs_.at(id).placement, taken);
  // A service shares with training jobs that borrowed from it, and the reverse.
  return held_by_services == (spec.is_service() ? 0 : taken.num_gpus());
}

void Scheduler::AdoptRunning(Job& job) {
  if (job.share != ShareMode::kExclusive) {
    const NodeGpus& part = job.placement.parts.front();
    state_.AllocateShared(part.node, std::countr_zero(part.gpus), {part.cpus, part.memory_mib});
    shared_gpus_.Add(part.node, std::countr_zero(part.gpus), job.id);
    AddRunning(job.id);
    running_by_rank_.InsertAtNextRefresh(job.id);
    return;
  }
  const Placement taken = Select(
      job.placement, [&](NodeId node, GpuMask gpus) { return gpus & ~state_.free_mask(node); });
  state_.Allocate(SelectWithHost(
      job.placement, [&](NodeId node, GpuMask gpus) { return gpus & state_.free_mask(node); }));
  for (const NodeGpus& part : taken.parts) lent_mask_[part.node.index()] |= part.gpus;
  if (job.spec.is_service()) {
    running_services_.push_back(job.id);
  } else {
    AddRunning(job.id);
    running_by_rank_.InsertAtNextRefresh(job.id);  // ranks are compared at the next cycle's time
  }
  if (taken.empty()) return;
  // Loans persisted while lent: recount the borrowers' (this job, or a service's borrowers).
  for (JobId id : running_) {
    Job& borrower = jobs_.at(id);
    borrower.loaned_gpus = CountLent(borrower.placement);
    borrower.loan_since = borrower.segment_start;
  }
}

Timestamp Scheduler::NextLoadChange(Timestamp now) const {
  Timestamp next = kTimeNever;
  for (JobId id : running_services_) {
    next = std::min(next, jobs_.at(id).spec.service->NextChangeAfter(now));
  }
  return next;
}

}  // namespace dlsched
