#include "dlsched/runtime/scheduler.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "dlsched/common/overloaded.h"
#include "dlsched/policy/placement.h"

namespace dlsched {
namespace {

Status UnknownJob(JobId id) { return NotFound("no job " + std::to_string(id.value())); }

Status WrongState(const Job& job, std::string_view event) {
  return FailedPrecondition(std::string(event) + " for job " + std::to_string(job.id.value()) +
                            " in state " + std::string(JobStateName(job.state)));
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
      queue_(jobs_, policy_->Order()),
      running_by_rank_(jobs_, policy_->Order()),
      runtime_estimator_(&stated_estimator_),
      shared_gpus_(cluster),
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
  ctx.shared_gpus = &shared_gpus_;
  ctx.running_changes = &running_changes_;
  return ctx;
}

void Scheduler::Enqueue(Job& job, JobState state, Timestamp now) {
  job.state = state;
  job.queued_since = now;
  job.preempt_requested = false;
  job.migrating = false;
  RefreshEstimates(job, now);
  if (job.spec.is_service()) {
    waiting_services_.insert(std::ranges::upper_bound(waiting_services_, job.id), job.id);
  } else {
    queue_.Insert(job.id);
  }
}

void Scheduler::RefreshEstimates(Job& job, Timestamp now) {
  const RuntimeEstimate estimate =
      EstimateRuntime(*runtime_estimator_, job.spec, job.iterations_done, now);
  job.estimated_total = estimate.total;
  job.estimated_remaining = estimate.remaining;
}

void Scheduler::set_runtime_estimator(RuntimeEstimator* estimator) {
  runtime_estimator_ = estimator != nullptr ? estimator : &stated_estimator_;
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
    RefreshEstimates(job, now);  // admission (deadline feasibility) reads them
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
    MarkStopping(job);
    job.migrating = preempt.migration;
    executor_->Preempt(job, now);
    result.preemptions.push_back({job.id, preempt.migration, /*for_service=*/false});
  }
  for (LaunchDecision& launch : decisions.launches) {
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
  shared_gpus_.NodeChanged(node);  // its shared GPUs take new holders only while it is online
  if (!online) {
    state_.SetOffline(node);
  } else if (state_.offline(node)) {
    state_.SetOnline(node);
    since_last_cycle_.departures = true;  // capacity came back, as when a job leaves
  }
  return Status::Ok();
}

bool Scheduler::Apply(LaunchDecision& launch, Timestamp now) {
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
    if (!state_.HasHostRoom(part.node, {part.cpus, part.memory_mib})) return false;
    state_.AllocateShared(part.node, gpu, {part.cpus, part.memory_mib});
    shared_gpus_.Add(part.node, gpu, job.id);
  }
  queue_.Erase(job.id);
  job.state = JobState::kRunning;
  job.placement = std::move(launch.placement);
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
  ctx.shared_gpus = &shared_gpus_;
  ctx.running_changes = &running_changes_;
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
    if (job.share != ShareMode::kExclusive) {
      const NodeGpus& part = job.placement.parts.front();
      shared_gpus_.Remove(part.node, std::countr_zero(part.gpus), job.id);
    }
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
  if (e.final_state == JobState::kSucceeded) {
    job.iterations_done = job.spec.iterations;
    runtime_estimator_->Observe(job.spec, job.run_time, now);
  }
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
  if (e.never_started && job.spec.num_gpus == 0) {
    // A CPU job has no GPU type to try next: it cannot run.
    StopRunning(job, now);
    since_last_cycle_.departures = true;
    job.state = JobState::kFailed;
    job.finish_time = now;
    job.reason = "launch failed: " + e.reason;
    return Status::Ok();
  }
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

void Scheduler::MarkStopping(Job& job) {
  job.preempt_requested = true;
  running_by_rank_.Stopping(job.id);
  shared_gpus_.Stopping(job);
  running_changes_.Record(job.id);
}

void Scheduler::AddRunning(JobId id) {
  running_pos_[id.index()] = static_cast<int32_t>(running_.size());
  running_.push_back(id);
  running_changes_.Record(id);
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
  running_changes_.Record(id);
}

void Scheduler::RestoreRunningOrder(std::span<const JobId> order) {
  std::vector<JobId> reordered;
  reordered.reserve(running_.size());
  constexpr int32_t kTaken = -2;
  for (JobId id : order) {
    if (id.index() < running_pos_.size() && running_pos_[id.index()] >= 0) {
      running_pos_[id.index()] = kTaken;
      reordered.push_back(id);
    }
  }
  for (JobId id : running_) {
    if (running_pos_[id.index()] != kTaken) reordered.push_back(id);
  }
  running_ = std::move(reordered);
  for (size_t i = 0; i < running_.size(); ++i) {
    running_pos_[running_[i].index()] = static_cast<int32_t>(i);
  }
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
    if (!CanKeepGpus(r.spec, r.placement, r.share)) {
      return FailedPrecondition("running job's GPUs are already taken");
    }
  } else if (!r.placement.empty() || r.share != ShareMode::kExclusive) {
    return InvalidArgument("only a running job holds GPUs");
  }
  const JobId id = jobs_.Add(std::move(r.spec));
  running_pos_.push_back(-1);
  Job& job = jobs_.at(id);
  job.lifecycle() = r.lifecycle();
  job.migrations = r.migrations;
  // Only a running job's segment goes on; the others start their next one afresh.
  if (r.state != JobState::kRunning) job.segment_start = Timestamp();
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
      job.share = r.share;
      AdoptRunning(job);
      break;
    default:  // terminal: history only, and what the run-time estimator learns from
      if (r.state == JobState::kSucceeded) {
        runtime_estimator_->Observe(job.spec, job.run_time, job.finish_time);
      }
      break;
  }
  since_last_cycle_ = CycleTrigger{};  // all causes: the next cycle looks at everything
  return id;
}

}  // namespace dlsched
