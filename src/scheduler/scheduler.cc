#include "dlsched/runtime/scheduler.h"

#include <algorithm>
#include <bit>

#include "dlsched/common/overloaded.h"
#include "dlsched/policy/placement.h"

namespace dlsched {
namespace {

Status UnknownJob(JobId id) { return NotFound("no job " + std::to_string(id.value())); }

Status WrongState(const Job& job, std::string_view event) {
  return FailedPrecondition(std::string(event) + " for job " + std::to_string(job.id.value()) +
                            " in state " + std::string(JobStateName(job.state)));
}

// The GPUs of `placement` that `keep(node, gpus)` keeps, as a placement.
template <typename Keep>
Placement Select(const Placement& placement, const Keep& keep) {
  Placement selected;
  for (const NodeGpus& part : placement.parts) {
    const GpuMask gpus = keep(part.node, part.gpus);
    if (gpus != 0) selected.parts.push_back({part.node, gpus});
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

Scheduler::Scheduler(const Cluster& cluster, std::unique_ptr<SchedulingPolicy> policy,
                     Executor& executor, const ThroughputModel& estimator, uint64_t seed)
    : cluster_(&cluster),
      policy_(std::move(policy)),
      executor_(&executor),
      estimator_(&estimator),
      rng_(seed),
      state_(cluster),
      queue_(
          jobs_, [p = policy_.get()](const JobView& job) { return p->Rank(job); },
          policy_->WalksByTenant()),
      running_by_rank_(jobs_, policy_.get()),
      lent_mask_(static_cast<size_t>(cluster.num_nodes()), 0) {}

void Scheduler::ReserveJobs(size_t n) {
  jobs_.Reserve(n);
  running_pos_.reserve(n);
}

Result<JobId> Scheduler::Submit(JobSpec spec, Timestamp now) {
  DS_RETURN_IF_ERROR(ValidateJobSpec(spec));
  const JobId id = jobs_.Add(std::move(spec));
  Job& job = jobs_.at(id);
  job.state = JobState::kPending;
  job.queued_since = now;
  running_pos_.push_back(-1);
  pending_.push_back(id);
  return id;
}

SchedulingContext Scheduler::Context(Timestamp now) {
  running_by_rank_.Refresh(now);
  SchedulingContext ctx{now,      *cluster_,        state_,      jobs_, queue_,
                        running_, running_by_rank_, *estimator_, rng_};
  ctx.trigger = since_last_cycle_;
  ctx.trigger.timer = now >= wake_at_;
  ctx.sharing = sharing_;
  return ctx;
}

void Scheduler::Enqueue(Job& job, JobState state, Timestamp now) {
  job.state = state;
  job.queued_since = now;
  job.preempt_requested = false;
  job.migrating = false;
  job.estimated_total = job.spec.runtime_estimate.value_or(job.spec.ideal_duration());
  const double left = std::clamp(1.0 - job.iterations_done / job.spec.iterations, 0.0, 1.0);
  job.estimated_remaining =
      Duration(static_cast<int64_t>(static_cast<double>(job.estimated_total.count()) * left));
  if (job.spec.is_service()) {
    waiting_services_.insert(std::ranges::upper_bound(waiting_services_, job.id), job.id);
  } else {
    queue_.Insert(job.id);
  }
}

void Scheduler::Dequeue(const Job& job) {
  if (job.spec.is_service()) {
    std::erase(waiting_services_, job.id);
  } else {
    queue_.Erase(job.id);
  }
}

void Scheduler::Admit(Timestamp now, CycleResult& result) {
  const SchedulingContext ctx = Context(now);
  for (JobId id : pending_) {
    Job& job = jobs_.at(id);
    Fit fit = policy_->Admit(JobView(job, now), ctx);
    if (fit.ok) {
      Enqueue(job, JobState::kQueued, now);
      result.admissions.push_back(id);
    } else {
      job.state = JobState::kRejected;
      job.reason = std::move(fit.reason);
      job.finish_time = now;
      result.rejections.push_back({id, job.reason});
    }
  }
  pending_.clear();
}

CycleResult Scheduler::RunCycle(Timestamp now) {
  CycleResult result;
  if (!pending_.empty()) {
    since_last_cycle_.arrivals = true;
    Admit(now, result);
  }
  if (!service_hold_.empty()) {  // a service's room is re-planned each cycle
    state_.Release(service_hold_);
    service_hold_ = {};
  }
  if (!waiting_services_.empty()) PlaceServices(now, result);
  if (!running_services_.empty() && lend_idle_service_gpus_) SyncServiceLoans(now, result);
  Decisions decisions = policy_->Decide(Context(now));
  for (RejectDecision& reject : decisions.rejections) {
    Job& job = jobs_.at(reject.job);
    if (!IsWaiting(job.state)) {
      ++result.refused;
      continue;
    }
    queue_.Erase(job.id);
    job.state = JobState::kRejected;
    job.reason = std::move(reject.reason);
    job.finish_time = now;
    result.rejections.push_back({job.id, job.reason});
  }
  for (const PreemptDecision& preempt : decisions.preemptions) {
    Job& job = jobs_.at(preempt.job);
    if (job.state != JobState::kRunning || job.preempt_requested || job.spec.is_service()) {
      ++result.refused;
      continue;
    }
    job.preempt_requested = true;
    job.migrating = preempt.migration;
    executor_->Preempt(job, now);
    result.preemptions.push_back({job.id, preempt.migration, /*for_service=*/false});
  }
  for (const LaunchDecision& launch : decisions.launches) {
    if (Apply(launch, now)) {
      result.launches.push_back(launch.job);
    } else {
      ++result.refused;
    }
  }
  // A wake-up asked for earlier and not yet due stands: a cycle that skipped work (see
  // CycleTrigger) may not have re-derived it.
  wake_at_ = wake_at_ > now ? std::min(wake_at_, decisions.wake_at) : decisions.wake_at;
  if (lend_idle_service_gpus_) wake_at_ = std::min(wake_at_, NextLoadChange(now));
  result.wake_at = wake_at_;
  since_last_cycle_ = {false, false, false, false};
  return result;
}

Status Scheduler::SetNodeOnline(NodeId node, bool online) {
  if (!node.valid() || node.index() >= static_cast<size_t>(cluster_->num_nodes())) {
    return NotFound("no node " + std::to_string(node.value()));
  }
  if (!online) {
    state_.SetOffline(node);
  } else if (state_.offline(node)) {
    state_.SetOnline(node);
    since_last_cycle_.departures = true;  // capacity came back, as when a job leaves
  }
  return Status::Ok();
}

bool Scheduler::Apply(const LaunchDecision& launch, Timestamp now) {
  if (!jobs_.contains(launch.job)) return false;
  Job& job = jobs_.at(launch.job);
  if (!IsWaiting(job.state) || job.spec.is_service() ||
      launch.placement.num_gpus() != job.spec.num_gpus) {
    return false;
  }
  // Assume: the GPUs are the job's from now on.
  if (launch.share == ShareMode::kExclusive) {
    if (!state_.IsFree(launch.placement)) return false;
    state_.Allocate(launch.placement);
  } else {
    // One part with one GPU of a real node: CanShare does not check its arguments.
    if (job.spec.num_gpus != 1 || launch.placement.parts.size() != 1) return false;
    const NodeGpus& part = launch.placement.parts.front();
    if (!part.node.valid() || part.node.index() >= static_cast<size_t>(cluster_->num_nodes())) {
      return false;
    }
    const int gpu = std::countr_zero(part.gpus);
    if (!state_.CanShare(part.node, gpu)) return false;
    state_.AllocateShared(part.node, gpu);
  }
  queue_.Erase(job.id);
  job.state = JobState::kRunning;
  job.placement = launch.placement;
  job.share = launch.share;
  job.segment_start = now;
  if (job.first_start == kTimeNever) job.first_start = now;
  job.reason.clear();
  job.loaned_gpus = CountLent(job.placement);
  job.loan_since = now;
  AddRunning(job.id);
  running_by_rank_.Insert(job.id, now);
  executor_->Launch(job, job.placement, now);
  return true;
}

std::vector<PendingReason> Scheduler::ExplainPending(Timestamp now, bool with_text) {
  Rng scratch_rng = rng_;  // explaining must not change the decisions that follow
  running_by_rank_.Refresh(now);
  SchedulingContext ctx{now,      *cluster_,        state_,      jobs_,      queue_,
                        running_, running_by_rank_, *estimator_, scratch_rng};
  ctx.explain = true;
  ctx.explain_text = with_text;
  ctx.sharing = sharing_;
  return policy_->Decide(ctx).pending_reasons;
}

Status Scheduler::Handle(const Event& event, Timestamp now) {
  return std::visit(Overloaded{
                        [&](const JobFinished& e) { return OnFinished(e, now); },
                        [&](const JobSuspended& e) { return OnSuspended(e, now); },
                        [&](const JobLaunchFailed& e) { return OnLaunchFailed(e, now); },
                        [&](const JobCancelRequested& e) { return OnCancel(e, now); },
                    },
                    event);
}

void Scheduler::StopRunning(Job& job, Timestamp now) {
  const Duration segment = now - job.segment_start;
  job.run_time += segment;
  job.attained_gpu_time += segment * job.spec.num_gpus;
  job.last_segment = segment;
  if (job.spec.is_service()) {
    StopService(job, now);
  } else {
    state_.Release(job.placement);
    job.placement = {};
    job.share = ShareMode::kExclusive;
    SettleLoan(job, now);  // no GPUs: no loans
    RemoveRunning(job.id);
  }
  job.placement = {};
}

Status Scheduler::OnFinished(const JobFinished& e, Timestamp now) {
  if (!jobs_.contains(e.job)) return UnknownJob(e.job);
  Job& job = jobs_.at(e.job);
  if (job.state != JobState::kRunning) return WrongState(job, "finish");
  if (!IsTerminal(e.final_state)) {
    return InvalidArgument("a finished job must end succeeded, failed or killed");
  }
  StopRunning(job, now);
  since_last_cycle_.departures = true;
  job.state = e.final_state;
  job.finish_time = now;
  job.preempt_requested = false;
  job.migrating = false;
  if (e.final_state == JobState::kSucceeded) job.iterations_done = job.spec.iterations;
  job.reason = e.detail;
  return Status::Ok();
}

Status Scheduler::OnSuspended(const JobSuspended& e, Timestamp now) {
  if (!jobs_.contains(e.job)) return UnknownJob(e.job);
  Job& job = jobs_.at(e.job);
  if (job.state != JobState::kRunning) return WrongState(job, "suspend");
  StopRunning(job, now);
  since_last_cycle_.suspensions = true;
  job.iterations_done = std::max(job.iterations_done, e.iterations_done);
  if (job.migrating) {
    ++job.migrations;
  } else {
    ++job.preemptions;
  }
  Enqueue(job, JobState::kSuspended, now);
  return Status::Ok();
}

Status Scheduler::OnLaunchFailed(const JobLaunchFailed& e, Timestamp now) {
  if (!jobs_.contains(e.job)) return UnknownJob(e.job);
  Job& job = jobs_.at(e.job);
  if (job.state != JobState::kRunning) return WrongState(job, "launch failure");
  std::string where;
  if (e.never_started) {
    // A gang never mixes GPU types, so its first node names the type it failed on.
    const GpuTypeId type = cluster_->node_gpu_type(job.placement.parts.front().node);
    if (std::ranges::find(job.failed_gpu_types, type) == job.failed_gpu_types.end()) {
      job.failed_gpu_types.push_back(type);
    }
    where = " on " + std::string(cluster_->gpu_type_name(type));
  }
  StopRunning(job, now);  // forget the assumed allocation
  since_last_cycle_.departures = true;
  if (e.out_of_memory) job.last_oom = now;
  const std::string reason = "launch failed" + where + ": " + e.reason;
  if (!CanRunOnSomeGpuType(job)) {
    job.state = JobState::kFailed;
    job.finish_time = now;
    job.reason = reason + "; no GPU type it could use is left";
    return Status::Ok();
  }
  Enqueue(job, job.iterations_done > 0 ? JobState::kSuspended : JobState::kQueued, now);
  job.reason = reason;
  return Status::Ok();
}

bool Scheduler::CanRunOnSomeGpuType(const Job& job) const {
  const auto untried = [&](GpuTypeId type) {
    return std::ranges::find(job.failed_gpu_types, type) == job.failed_gpu_types.end();
  };
  if (!job.spec.gpu_type.empty()) {
    const GpuTypeId required = cluster_->FindGpuType(job.spec.gpu_type);
    return !required.valid() || untried(required);
  }
  for (int t = 0; t < cluster_->num_gpu_types(); ++t) {
    if (untried(GpuTypeId(static_cast<uint32_t>(t)))) return true;
  }
  return false;
}

Status Scheduler::OnCancel(const JobCancelRequested& e, Timestamp now) {
  if (!jobs_.contains(e.job)) return UnknownJob(e.job);
  Job& job = jobs_.at(e.job);
  if (IsTerminal(job.state)) return WrongState(job, "cancel");
  if (job.state == JobState::kRunning) {
    executor_->Kill(job, now);  // JobFinished(kKilled) follows
    return Status::Ok();
  }
  if (IsWaiting(job.state)) Dequeue(job);
  if (job.state == JobState::kPending) std::erase(pending_, job.id);
  since_last_cycle_.departures = true;
  job.state = JobState::kKilled;
  job.finish_time = now;
  job.reason = "cancelled";
  return Status::Ok();
}

void Scheduler::AddRunning(JobId id) {
  running_pos_[id.index()] = static_cast<int32_t>(running_.size());
  running_.push_back(id);
}

void Scheduler::RemoveRunning(JobId id) {
  const int32_t pos = running_pos_[id.index()];
  DS_CHECK(pos >= 0) << "job " << id << " is not running";
  const JobId last = running_.back();
  running_[pos] = last;
  running_pos_[last.index()] = pos;
  running_.pop_back();
  running_pos_[id.index()] = -1;
  running_by_rank_.Erase(id);
}

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
      candidates.emplace_back(policy_->Rank(JobView(job, now)), id);
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
    victim.preempt_requested = true;
    executor_->Preempt(victim, now);
    result.preemptions.push_back({victim.id, /*migration=*/false, /*for_service=*/true});
    ++service_yields_;
  }
  // Hold the free part of its future placement, so training jobs do not take it meanwhile.
  service_hold_ = Select(
      *placement, [&](NodeId node, GpuMask gpus) { return gpus & available.free_mask(node); });
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
    borrower.preempt_requested = true;
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
  return Select(placement,
                [&](NodeId node, GpuMask gpus) { return gpus & ~lent_mask_[node.index()]; });
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

bool Scheduler::CanKeepGpus(const JobSpec& spec, const Placement& placement) const {
  if (state_.IsFree(placement)) return true;
  const Placement taken =
      Select(placement, [&](NodeId node, GpuMask gpus) { return gpus & ~state_.free_mask(node); });
  if (CountLent(taken) > 0) return false;  // lent and borrowed already
  int held_by_services = 0;
  for (JobId id : running_services_) held_by_services += Overlap(jobs_.at(id).placement, taken);
  // A service shares with training jobs that borrowed from it, and the reverse.
  return held_by_services == (spec.is_service() ? 0 : taken.num_gpus());
}

void Scheduler::AdoptRunning(Job& job) {
  const Placement taken = Select(
      job.placement, [&](NodeId node, GpuMask gpus) { return gpus & ~state_.free_mask(node); });
  state_.Allocate(Select(job.placement,
                         [&](NodeId node, GpuMask gpus) { return gpus & state_.free_mask(node); }));
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

Result<JobId> Scheduler::Restore(RestoredJob r) {
  DS_RETURN_IF_ERROR(ValidateJobSpec(r.spec));
  if (r.state == JobState::kRunning) {
    if (r.placement.num_gpus() != r.spec.num_gpus) {
      return InvalidArgument("running job's placement has " +
                             std::to_string(r.placement.num_gpus()) + " GPUs, its spec " +
                             std::to_string(r.spec.num_gpus));
    }
    for (const NodeGpus& part : r.placement.parts) {
      if (!part.node.valid() || part.node.index() >= static_cast<size_t>(cluster_->num_nodes())) {
        return InvalidArgument("running job's placement names a node the cluster lacks");
      }
      const size_t gpus = cluster_->node(part.node).gpus.size();
      if (gpus < static_cast<size_t>(kMaxGpusPerNode) && (part.gpus >> gpus) != 0) {
        return InvalidArgument("running job's placement names GPUs the cluster lacks");
      }
    }
    if (!CanKeepGpus(r.spec, r.placement)) {
      return FailedPrecondition("running job's GPUs are already taken");
    }
  } else if (!r.placement.empty()) {
    return InvalidArgument("only a running job holds GPUs");
  }
  const JobId id = jobs_.Add(std::move(r.spec));
  running_pos_.push_back(-1);
  Job& job = jobs_.at(id);
  job.first_start = r.first_start;
  job.finish_time = r.finish_time;
  job.run_time = r.run_time;
  job.attained_gpu_time = r.attained_gpu_time;
  job.iterations_done = r.iterations_done;
  job.preemptions = r.preemptions;
  job.reason = std::move(r.reason);
  job.queued_since = r.queued_since;
  job.state = r.state;
  switch (r.state) {
    case JobState::kPending:
      pending_.push_back(id);
      break;
    case JobState::kQueued:
    case JobState::kSuspended:
      Enqueue(job, r.state, r.queued_since);
      break;
    case JobState::kRunning:
      Enqueue(job, JobState::kQueued, r.queued_since);  // sets the estimates...
      Dequeue(job);                                     // ...but a running job is not waiting
      job.state = JobState::kRunning;
      job.placement = std::move(r.placement);
      job.segment_start = r.segment_start;
      AdoptRunning(job);
      break;
    default:  // terminal: history only
      break;
  }
  since_last_cycle_ = CycleTrigger{};  // all causes: the next cycle looks at everything
  return id;
}

}  // namespace dlsched
