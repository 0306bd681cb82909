#include "sim/sim_executor.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched::sim {

void SimExecutor::Launch(const Job& job, const Placement& placement, Timestamp now) {
  TrueProgress& p = progress_[job.id.index()];
  ++p.generation;
  // A service's work is its lifetime: wall time on any GPUs.
  p.solo_iters_per_s = job.spec.is_service() ? job.spec.ref_iters_per_s
                                             : truth_.ItersPerSecond(job.spec, cluster_, placement);
  if (!(p.solo_iters_per_s > 0)) {
    events_.Push(now, SimEventKind::kLaunchFailed, job.id, p.generation);
    return;
  }
  p.total_iterations = job.spec.iterations;
  p.num_gpus = job.spec.num_gpus;
  p.launched_at = now;
  p.progress_start = now + (p.has_run ? options_.restore_delay : Duration(0));
  p.segment_begin = p.progress_start;
  p.segment_begin_iterations = p.iterations_done;
  p.has_run = true;
  p.speed = 1.0;
  Account(now);
  if (job.share != ShareMode::kExclusive && sharing_ != nullptr) {
    const NodeGpus& part = placement.parts.front();
    p.shared_gpu = cluster_.first_gpu(part.node) + std::countr_zero(part.gpus);
    Sharers& gpu = sharers_[static_cast<size_t>(p.shared_gpu)];
    if (gpu.jobs.empty()) {
      gpu.node = part.node;
      gpu.mode = job.share;
    }
    gpu.jobs.push_back(job.id);
    if (gpu.jobs.size() == 2) ++shared_gpus_;
    AddUse(job.id, p, +1);
    Regroup(p.shared_gpu, now);
    return;
  }
  AddUse(job.id, p, +1);
  Retime(job.id, p, 1.0, now);
}

void SimExecutor::Preempt(const Job& job, Timestamp now) {
  TrueProgress& p = progress_[job.id.index()];
  const Timestamp suspended_at = now + options_.checkpoint_delay;
  if (p.finish_at <= suspended_at) return;  // it ends before the checkpoint would
  Bank(p, now);
  p.iterations_done = std::min(job.spec.iterations, p.iterations_done);
  p.finish_at = kTimeNever;
  ++p.generation;
  events_.Push(suspended_at, SimEventKind::kSuspend, job.id, p.generation, p.iterations_done);
  Leave(job, now);  // it computes no more; its checkpoint ends its share of the GPU
}

void SimExecutor::Kill(const Job& job, Timestamp now) {
  TrueProgress& p = progress_[job.id.index()];
  ++p.generation;
  p.finish_at = kTimeNever;
  events_.Push(now, SimEventKind::kKilled, job.id, p.generation);
  Leave(job, now);
}

void SimExecutor::Finished(const Job& job, Timestamp now) {
  ++progress_[job.id.index()].generation;
  Leave(job, now);
}

void SimExecutor::OutOfMemory(const Job& job, Timestamp now) {
  TrueProgress& p = progress_[job.id.index()];
  Bank(p, now);
  const Duration ran = std::max(Duration(0), now - p.segment_begin);
  const Duration saved = options_.checkpoint_every > Duration(0)
                             ? ran / options_.checkpoint_every * options_.checkpoint_every
                             : Duration(0);
  const double progressed = p.iterations_done - p.segment_begin_iterations;
  const double kept = ran > Duration(0) ? progressed * (ToSeconds(saved) / ToSeconds(ran)) : 0.0;
  tally_.oom_lost_gpu_s +=
      (progressed - kept) / std::max(p.solo_iters_per_s, 1e-12) * job.spec.num_gpus;
  p.iterations_done = p.segment_begin_iterations + kept;
  p.finish_at = kTimeNever;
  ++p.generation;
  ++tally_.oom_restarts;
  // What the GPU's monitoring saw when it ran out: every holder's demand at that instant.
  for (JobId holder : sharers_[static_cast<size_t>(p.shared_gpu)].jobs) {
    sharing_->ObserveSample(
        holder, sharing_->Demand(holder).At(now - progress_[holder.index()].launched_at));
  }
  Leave(job, now);
}

void SimExecutor::Account(Timestamp now) {
  const double dt = ToSeconds(now - accounted_at_);
  if (dt > 0) {
    tally_.mem_mib_s += dt * mem_in_use_mib_;
    tally_.sm_s += dt * sm_in_use_;
    tally_.shared_gpu_s += dt * shared_gpus_;
  }
  accounted_at_ = now;
}

void SimExecutor::Bank(TrueProgress& p, Timestamp now) {
  if (now <= p.progress_start) return;
  p.iterations_done += ToSeconds(now - p.progress_start) * p.iters_per_s;
  p.progress_start = now;
}

void SimExecutor::Retime(JobId id, TrueProgress& p, double speed, Timestamp now) {
  Bank(p, now);
  if (sharing_ != nullptr && p.in_use) {
    sm_in_use_ += (speed - p.speed) * sharing_->Demand(id).profile().mean_sm * p.num_gpus;
  }
  p.speed = speed;
  p.min_speed = std::min(p.min_speed, speed);
  p.iters_per_s = p.solo_iters_per_s * speed;
  ++p.generation;
  const double left_s = std::max(0.0, p.total_iterations - p.iterations_done) / p.iters_per_s;
  // At least one microsecond, so a finish never lands in the cycle that launched it.
  p.finish_at = p.progress_start + std::max(Duration(1), Seconds(left_s));
  events_.Push(p.finish_at, SimEventKind::kFinish, id, p.generation);
}

void SimExecutor::Regroup(int gpu_index, Timestamp now) {
  Sharers& gpu = sharers_[static_cast<size_t>(gpu_index)];
  const size_t n = gpu.jobs.size();
  const GpuSpec& spec =
      cluster_.node(gpu.node).gpus[static_cast<size_t>(gpu_index - cluster_.first_gpu(gpu.node))];
  for (JobId id : gpu.jobs) {
    double speed = 1.0;
    if (n > 1) {
      speed = gpu.mode == ShareMode::kTimeSliced
                  ? (1.0 - options_.time_slice_overhead) / static_cast<double>(n)
                  : sharing_->PackedSpeed(id, gpu.jobs, spec.type);
    }
    Retime(id, progress_[id.index()], speed, now);
  }
  if (n < 2 || gpu.mode == ShareMode::kTimeSliced || options_.oom_window <= Duration(0)) return;
  demands_.clear();
  for (JobId id : gpu.jobs) {
    demands_.push_back({&sharing_->Demand(id), progress_[id.index()].launched_at});
  }
  const std::optional<sharing::Oom> oom =
      sharing::FindOom(demands_, spec.memory_mib, now, now + options_.oom_window);
  if (!oom) return;
  const JobId victim = gpu.jobs[oom->victim];
  events_.Push(oom->at, SimEventKind::kOom, victim, progress_[victim.index()].generation,
               static_cast<double>(oom->total_memory_mib));
}

void SimExecutor::Leave(const Job& job, Timestamp now) {
  TrueProgress& p = progress_[job.id.index()];
  if (!p.in_use) return;
  Account(now);
  AddUse(job.id, p, -1);
  if (p.shared_gpu < 0) return;
  const int gpu_index = p.shared_gpu;
  p.shared_gpu = -1;
  std::vector<JobId>& jobs = sharers_[static_cast<size_t>(gpu_index)].jobs;
  std::erase(jobs, job.id);
  if (jobs.size() == 1) --shared_gpus_;
  Regroup(gpu_index, now);
}

void SimExecutor::AddUse(JobId id, TrueProgress& p, int sign) {
  p.in_use = sign > 0;
  if (sharing_ == nullptr) return;
  const sharing::DemandProfile& profile = sharing_->Demand(id).profile();
  mem_in_use_mib_ += sign * static_cast<double>(profile.mean_memory_mib) * p.num_gpus;
  sm_in_use_ += sign * profile.mean_sm * p.speed * p.num_gpus;
}

Event ToSchedulerEvent(const SimEvent& e, const Cluster& cluster, const Job& job) {
  switch (e.kind) {
    case SimEventKind::kFinish:
      return JobFinished{e.job, JobState::kSucceeded, ""};
    case SimEventKind::kKilled:
      return JobFinished{e.job, JobState::kKilled, "killed"};
    case SimEventKind::kSuspend:
      return JobSuspended{e.job, e.iterations};
    case SimEventKind::kLaunchFailed:
      return JobLaunchFailed{e.job, "the ground truth gives it no throughput there", true};
    case SimEventKind::kOom: {
      const NodeGpus& part = job.placement.parts.front();
      const int64_t capacity =
          cluster.node(part.node).gpus[static_cast<size_t>(std::countr_zero(part.gpus))].memory_mib;
      return JobLaunchFailed{e.job,
                             "out of GPU memory: its GPU's sharers demanded " +
                                 std::to_string(static_cast<int64_t>(e.iterations)) + " of " +
                                 std::to_string(capacity) + " MiB",
                             /*never_started=*/false, /*out_of_memory=*/true};
    }
    case SimEventKind::kWake:
      break;
  }
  DS_CHECK(false) << "a wake-up is not a scheduler event";
  return JobCancelRequested{};
}

}  // namespace dlsched::sim
