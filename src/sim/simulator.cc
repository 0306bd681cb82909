#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <queue>
#include <vector>

#include "dlsched/runtime/executor.h"
#include "dlsched/runtime/scheduler.h"
#include "dlsched/sharing/interference.h"

namespace dlsched::sim {
namespace {

enum class SimEventKind : uint8_t { kFinish, kKilled, kSuspend, kLaunchFailed, kOom, kWake };

struct SimEvent {
  Timestamp time;
  uint64_t seq;
  SimEventKind kind;
  JobId job;
  uint32_t generation;  // stale when it differs from the job's current generation
  double iterations;    // kSuspend: progress saved; kOom: the memory demanded, MiB

  bool operator>(const SimEvent& other) const {
    return time != other.time ? time > other.time : seq > other.seq;
  }
};

class EventQueue {
 public:
  void Push(Timestamp time, SimEventKind kind, JobId job = JobId(), uint32_t generation = 0,
            double iterations = 0) {
    heap_.push_back(SimEvent{time, next_seq_++, kind, job, generation, iterations});
    std::ranges::push_heap(heap_, std::greater<>());
  }
  bool empty() const { return heap_.empty(); }
  const SimEvent& top() const { return heap_.front(); }
  SimEvent Pop() {
    std::ranges::pop_heap(heap_, std::greater<>());
    SimEvent e = heap_.back();
    heap_.pop_back();
    return e;
  }
  // Drops the events `stale` says will be ignored (superseded finishes, outdated wake-ups) once
  // the queue has doubled since it was last cleaned: preemptions leave a far-future finish behind
  // for every run segment, and each pop pays for the size of the heap. Events keep their
  // (time, seq) order, so the run does not change.
  template <typename Stale>
  void Clean(const Stale& stale) {
    if (heap_.size() <= 2 * cleaned_size_ + 1024) return;
    std::erase_if(heap_, stale);
    std::ranges::make_heap(heap_, std::greater<>());
    cleaned_size_ = heap_.size();
  }

 private:
  std::vector<SimEvent> heap_;  // a min-heap by (time, seq)
  size_t cleaned_size_ = 0;
  uint64_t next_seq_ = 0;
};

// The ground truth of a job's progress; only the SimExecutor sees it. Progress at time t of the
// current segment: iterations_done + max(0, t - progress_start) x iters_per_s (a change of rate
// banks the progress so far and moves progress_start to the change).
struct TrueProgress {
  double iterations_done = 0;
  double iters_per_s = 0;
  double solo_iters_per_s = 0;  // alone on its placement; iters_per_s = this x speed
  double speed = 1.0;           // fraction of solo speed its GPU's sharers leave it
  double min_speed = 1.0;       // the lowest `speed` it ever ran at
  Timestamp launched_at;        // the current segment's launch (its demand pattern's zero)
  Timestamp segment_begin;      // progress_start of the segment before any rate change
  double segment_begin_iterations = 0;
  Timestamp progress_start;  // when the current segment starts making progress
  Timestamp finish_at = kTimeNever;
  uint32_t generation = 0;
  double total_iterations = 0;  // JobSpec::iterations
  int num_gpus = 0;
  int shared_gpu = -1;  // index into SimExecutor::sharers_ while it shares a GPU
  bool in_use = false;  // it holds GPUs and counts in the usage figures
  bool has_run = false;
};

// What sharing did over a run, from the executor's ground truth.
struct SharingTally {
  double mem_mib_s = 0;  // integral of the running jobs' mean memory demand
  double sm_s = 0;       // integral of the running jobs' SM use (mean SM x speed), GPUs
  double shared_gpu_s = 0;
  int oom_restarts = 0;
  double oom_lost_gpu_s = 0;
};

// Runs jobs in virtual time at the speed of the ground-truth model and reports back through the
// event queue, with checkpoint and restore costs. Jobs sharing a GPU run at their solo speed
// times the interference of the others (packed) or 1/n of it (time-sliced); each change of a
// GPU's sharers re-times all of them and looks for an out-of-memory in the next oom_window.
class SimExecutor final : public Executor {
 public:
  SimExecutor(const Cluster& cluster, const ThroughputModel& truth, const SimOptions& options,
              SharingWorld* sharing, EventQueue& events)
      : cluster_(cluster),
        truth_(truth),
        options_(options),
        sharing_(sharing),
        events_(events),
        sharers_(static_cast<size_t>(cluster.total_gpus())) {}

  void Reserve(size_t n) { progress_.reserve(n); }
  void AddJob() { progress_.emplace_back(); }
  uint32_t generation(JobId id) const { return progress_[id.index()].generation; }
  const SharingTally& tally() const { return tally_; }
  double min_speed(JobId id) const { return progress_[id.index()].min_speed; }

  void Launch(const Job& job, const Placement& placement, Timestamp now) override {
    TrueProgress& p = progress_[job.id.index()];
    ++p.generation;
    // A service's work is its lifetime: wall time on any GPUs.
    p.solo_iters_per_s = job.spec.is_service()
                             ? job.spec.ref_iters_per_s
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

  void Preempt(const Job& job, Timestamp now) override {
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

  void Kill(const Job& job, Timestamp now) override {
    TrueProgress& p = progress_[job.id.index()];
    ++p.generation;
    p.finish_at = kTimeNever;
    events_.Push(now, SimEventKind::kKilled, job.id, p.generation);
    Leave(job, now);
  }

  // A finish the scheduler accepted: the job leaves its GPU, and events still pending for the
  // run (an out-of-memory kill due later) are stale.
  void Finished(const Job& job, Timestamp now) {
    ++progress_[job.id.index()].generation;
    Leave(job, now);
  }

  // An out-of-memory kill at `now`: the job loses its progress since its last periodic
  // checkpoint (every options.checkpoint_every of progress time) and leaves its GPU; its history
  // learns the demand that killed it.
  void OutOfMemory(const Job& job, Timestamp now) {
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

  // Integrates the usage figures up to `now`.
  void Account(Timestamp now) {
    const double dt = ToSeconds(now - accounted_at_);
    if (dt > 0) {
      tally_.mem_mib_s += dt * mem_in_use_mib_;
      tally_.sm_s += dt * sm_in_use_;
      tally_.shared_gpu_s += dt * shared_gpus_;
    }
    accounted_at_ = now;
  }

 private:
  struct Sharers {
    NodeId node;
    ShareMode mode = ShareMode::kPacked;
    std::vector<JobId> jobs;
  };

  // Banks the progress up to `now` at the current rate.
  static void Bank(TrueProgress& p, Timestamp now) {
    if (now <= p.progress_start) return;
    p.iterations_done += ToSeconds(now - p.progress_start) * p.iters_per_s;
    p.progress_start = now;
  }

  // Runs the job at `speed` of its solo rate from `now`, with a fresh finish event.
  void Retime(JobId id, TrueProgress& p, double speed, Timestamp now) {
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

  // Re-times every job sharing `gpu` after a change, and schedules the first out-of-memory kill
  // the next oom_window holds (a later change re-times them all, so a stale kill is ignored).
  void Regroup(int gpu_index, Timestamp now) {
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

  // The job stops using its GPU(s): usage figures, and its sharers re-timed.
  void Leave(const Job& job, Timestamp now) {
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

  // Adds (sign +1) or removes (-1) the job's demand from the usage figures.
  void AddUse(JobId id, TrueProgress& p, int sign) {
    p.in_use = sign > 0;
    if (sharing_ == nullptr) return;
    const sharing::DemandProfile& profile = sharing_->Demand(id).profile();
    mem_in_use_mib_ += sign * static_cast<double>(profile.mean_memory_mib) * p.num_gpus;
    sm_in_use_ += sign * profile.mean_sm * p.speed * p.num_gpus;
  }

  const Cluster& cluster_;
  const ThroughputModel& truth_;
  const SimOptions& options_;
  SharingWorld* sharing_;  // nullptr: no sharing figures, shared launches run as exclusive
  EventQueue& events_;
  std::vector<TrueProgress> progress_;
  std::vector<Sharers> sharers_;                   // per GPU of the cluster: the jobs sharing it
  std::vector<sharing::SharedJobDemand> demands_;  // Regroup's scratch
  SharingTally tally_;
  Timestamp accounted_at_ = kTimeZero;
  double mem_in_use_mib_ = 0;
  double sm_in_use_ = 0;
  int shared_gpus_ = 0;  // GPUs with two jobs or more
};
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

JobSpec WithRuntimeEstimate(JobSpec spec, size_t index, const SimOptions& options) {
  if (spec.runtime_estimate || options.estimate_error <= 0) return spec;
  // One generator per job, so a job's estimate does not depend on the policy or on other jobs.
  Rng rng(options.seed ^ (0x9E3779B97F4A7C15ull * (index + 1)));
  const double factor = rng.LogNormal(0.0, options.estimate_error);
  spec.runtime_estimate = Seconds(ToSeconds(spec.ideal_duration()) * factor);
  return spec;
}

// Integrates allocated GPU-time per GPU type over [t = 0, last completion]: the allocation after
// an instant's cycle holds until the next instant.
class TypeUsageMeter {
 public:
  explicit TypeUsageMeter(const Cluster& cluster)
      : cluster_(cluster), allocated_(cluster.num_gpu_types(), 0), gpu_s_(allocated_.size(), 0) {}

  // After the cycle at `now`; `completed`: a job completed at `now`.
  void Observe(Timestamp now, const ClusterState& state, bool completed) {
    const double dt = ToSeconds(now - last_);
    for (size_t t = 0; t < allocated_.size(); ++t) {
      gpu_s_[t] += dt * allocated_[t];
      const GpuTypeId type(static_cast<uint32_t>(t));
      allocated_[t] = cluster_.gpus_of_type(type) - state.free_of_type(type);
    }
    last_ = now;
    if (completed) at_last_completion_ = gpu_s_;
  }

  std::vector<GpuTypeUsage> Usage() const {
    std::vector<GpuTypeUsage> usage;
    for (size_t t = 0; t < allocated_.size(); ++t) {
      const GpuTypeId type(static_cast<uint32_t>(t));
      usage.push_back({cluster_.gpu_type_name(type), cluster_.gpus_of_type(type),
                       at_last_completion_.empty() ? 0.0 : at_last_completion_[t]});
    }
    return usage;
  }

 private:
  const Cluster& cluster_;
  Timestamp last_ = kTimeZero;
  std::vector<int> allocated_;  // per type, since `last_`
  std::vector<double> gpu_s_;
  std::vector<double> at_last_completion_;
};

// Samples why waiting jobs wait: each sample's explanation counts until the next sample. A
// sample costs a walk of the whole queue, so with more than kJobsPerInterval jobs waiting the
// next one comes proportionally later: a run with a queue of 30,000 (fifo on Philly) would
// otherwise spend most of its time explaining, and jobs behind such a queue wait far longer
// than the stretched interval anyway.
class PendingSampler {
  static constexpr size_t kJobsPerInterval = 2000;

 public:
  PendingSampler(Duration every, size_t jobs) : every_(every) {
    if (every_ > Duration::zero()) by_job_.resize(jobs);
  }

  void MaybeSample(Timestamp now, Scheduler& scheduler) {
    if (every_ <= Duration::zero() || now < next_) return;
    Account(now);
    last_.clear();
    const size_t waiting = scheduler.queue().size();
    if (waiting > 0) {
      for (const PendingReason& p : scheduler.ExplainPending(now, /*with_text=*/false)) {
        last_.emplace_back(p.job, p.cause);
      }
    }
    next_ = now + every_ * static_cast<int64_t>(std::max<size_t>(1, waiting / kJobsPerInterval));
  }

  // Counts the last sample up to the end of the run and hands the per-job totals to `jobs`.
  void Finish(Timestamp end, std::vector<JobRecord>& jobs) {
    if (every_ <= Duration::zero()) return;
    Account(end);
    for (size_t i = 0; i < jobs.size() && i < by_job_.size(); ++i) {
      jobs[i].pending_s_by_cause = by_job_[i];
    }
  }

 private:
  void Account(Timestamp now) {
    const double dt = ToSeconds(now - sampled_at_);
    for (const auto& [job, cause] : last_) {
      if (job.index() < by_job_.size()) by_job_[job.index()][static_cast<size_t>(cause)] += dt;
    }
    sampled_at_ = now;
  }

  Duration every_;
  Timestamp next_ = kTimeZero;
  Timestamp sampled_at_ = kTimeZero;
  std::vector<std::pair<JobId, PendingCause>> last_;
  std::vector<std::array<double, kNumPendingCauses>> by_job_;
};

// With services running: whether every training job is done (services alone would keep the
// run going for their whole lifetime). False without services, whose runs end with the events.
bool TrainingDone(const Scheduler& scheduler) {
  return (!scheduler.running_services().empty() || !scheduler.waiting_services().empty()) &&
         scheduler.pending() == 0 && scheduler.queue().empty() && scheduler.running().empty();
}

RunResult CollectResult(const Scheduler& scheduler, std::vector<TimeSample> series,
                        std::string policy, Timestamp end) {
  RunResult run;
  run.policy = std::move(policy);
  run.total_gpus = scheduler.cluster().total_gpus();
  run.series = std::move(series);
  run.jobs.reserve(scheduler.jobs().size());
  for (const Job& job : scheduler.jobs().all()) {
    if (job.spec.is_service()) {
      ++run.services.services;
      run.services.reserved_gpus += job.spec.num_gpus;
      continue;
    }
    JobRecord& r = run.jobs.emplace_back();
    r.id = job.id;
    r.name = job.spec.name;
    r.user = job.spec.user;
    r.queue = job.spec.queue;
    r.num_gpus = job.spec.num_gpus;
    r.final_state = job.state;
    r.submit_time = job.spec.submit_time;
    r.first_start = job.first_start;
    r.finish_time = IsTerminal(job.state) ? job.finish_time : kTimeNever;
    r.ideal_duration = job.spec.ideal_duration();
    r.run_time = job.run_time;
    r.preemptions = job.preemptions;
    r.reason = job.reason;
    r.deadline = job.spec.deadline;
    r.qos = job.spec.qos;
  }
  run.services.lent_gpu_s = ToSeconds(scheduler.lent_gpu_time(end));
  run.services.yields = scheduler.service_yields();
  run.services.shortfall_gpu_s = ToSeconds(scheduler.service_shortfall_gpu_time());
  return run;
}

SharingSummary SummarizeSharing(const Scheduler& scheduler, SimExecutor& executor, Timestamp end) {
  executor.Account(end);
  const SharingTally& tally = executor.tally();
  const Cluster& cluster = scheduler.cluster();
  double memory_mib = 0;
  for (const NodeSpec& node : cluster.nodes()) {
    for (const GpuSpec& gpu : node.gpus) memory_mib += static_cast<double>(gpu.memory_mib);
  }
  const double span_s = ToSeconds(end - kTimeZero);
  SharingSummary summary;
  if (span_s > 0 && memory_mib > 0) {
    summary.gpu_mem_utilization = tally.mem_mib_s / (memory_mib * span_s);
    summary.gpu_sm_utilization = tally.sm_s / (cluster.total_gpus() * span_s);
  }
  summary.oom_restarts = tally.oom_restarts;
  summary.oom_lost_gpu_s = tally.oom_lost_gpu_s;
  summary.shared_gpu_s = tally.shared_gpu_s;
  std::vector<double> slowdowns;
  for (const Job& job : scheduler.jobs().all()) {
    summary.migrations += job.migrations;
    const double min_speed = executor.min_speed(job.id);
    if (min_speed < 1.0) slowdowns.push_back(sharing::SlowdownOf(min_speed));
  }
  std::ranges::sort(slowdowns);
  summary.jobs_shared = static_cast<int>(slowdowns.size());
  if (!slowdowns.empty()) {
    summary.max_slowdown = slowdowns.back();
    summary.p95_slowdown = slowdowns[(slowdowns.size() * 95 + 99) / 100 - 1];
  }
  return summary;
}

}  // namespace

RunResult Simulate(const SimInputs& inputs, std::unique_ptr<SchedulingPolicy> policy,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string policy_name(policy->Name());
  EventQueue events;
  SimExecutor executor(inputs.cluster, inputs.truth, options, inputs.sharing, events);
  Scheduler scheduler(inputs.cluster, std::move(policy), executor, inputs.estimator, options.seed);
  scheduler.set_lend_idle_service_gpus(options.lend_service_gpus);
  scheduler.set_sharing_view(inputs.sharing);
  const std::vector<JobSpec>& jobs = inputs.workload.jobs;
  scheduler.ReserveJobs(jobs.size());
  executor.Reserve(jobs.size());

  std::vector<TimeSample> series;
  TypeUsageMeter type_usage(inputs.cluster);
  PendingSampler pending(options.explain_every, jobs.size());
  size_t next_arrival = 0;
  size_t jobs_done = 0;
  Timestamp last_instant = kTimeZero;
  Timestamp pending_wake = kTimeNever;
  auto last_report = wall_start;
  uint64_t steps = 0;

  while (true) {
    const Timestamp next_event = events.empty() ? kTimeNever : events.top().time;
    const Timestamp next_submit =
        next_arrival < jobs.size() ? jobs[next_arrival].submit_time : kTimeNever;
    const Timestamp now = std::min(next_event, next_submit);
    if (now == kTimeNever || now > options.stop_at) break;
    if (next_arrival == jobs.size() && TrainingDone(scheduler)) break;  // services only
    last_instant = now;

    bool act = false;
    bool completed = false;
    while (!events.empty() && events.top().time == now) {
      const SimEvent e = events.Pop();
      if (e.kind == SimEventKind::kWake) {
        act = act || e.time == pending_wake;
        continue;
      }
      if (e.generation != executor.generation(e.job)) continue;  // superseded
      const Job& job = scheduler.jobs().at(e.job);
      if (e.kind == SimEventKind::kOom) executor.OutOfMemory(job, now);
      const Status status = scheduler.Handle(ToSchedulerEvent(e, inputs.cluster, job), now);
      DS_CHECK(status.ok()) << "simulator event rejected: " << status.ToString();
      if (e.kind == SimEventKind::kFinish) executor.Finished(job, now);
      const JobState state = job.state;
      if (IsTerminal(state)) ++jobs_done;
      completed = completed || state == JobState::kSucceeded;
      act = true;
    }
    while (next_arrival < jobs.size() && jobs[next_arrival].submit_time == now) {
      Result<JobId> id =
          scheduler.Submit(WithRuntimeEstimate(jobs[next_arrival], next_arrival, options), now);
      DS_CHECK(id.ok()) << "workload job " << next_arrival << ": " << id.status().ToString();
      executor.AddJob();
      ++next_arrival;
      act = true;
    }
    if (!act) continue;

    const CycleResult cycle = scheduler.RunCycle(now);
    DS_CHECK(cycle.refused == 0) << policy_name << " made decisions the scheduler refused";
    jobs_done += cycle.rejected();
    if (cycle.wake_at != pending_wake) {
      pending_wake = cycle.wake_at;
      if (pending_wake != kTimeNever) events.Push(pending_wake, SimEventKind::kWake);
    }
    events.Clean([&](const SimEvent& e) {
      return e.kind == SimEventKind::kWake ? e.time != pending_wake
                                           : e.generation != executor.generation(e.job);
    });

    type_usage.Observe(now, scheduler.state(), completed);
    pending.MaybeSample(now, scheduler);
    const TimeSample sample{now, scheduler.state().allocated_total(),
                            static_cast<int>(scheduler.queue().size()),
                            static_cast<int>(scheduler.running().size())};
    if (series.empty() || series.back().gpus_allocated != sample.gpus_allocated ||
        series.back().queue_length != sample.queue_length ||
        series.back().running_jobs != sample.running_jobs) {
      series.push_back(sample);
    }

    if (options.on_progress && (++steps & 1023) == 0) {
      const auto wall_now = std::chrono::steady_clock::now();
      if (wall_now - last_report >= options.progress_every) {
        last_report = wall_now;
        options.on_progress({jobs.size(), jobs_done, now,
                             std::chrono::duration<double>(wall_now - wall_start).count()});
      }
    }
  }

  RunResult run = CollectResult(scheduler, std::move(series), policy_name, last_instant);
  if (inputs.sharing != nullptr) run.sharing = SummarizeSharing(scheduler, executor, last_instant);
  run.type_usage = type_usage.Usage();
  const Timestamp end = run.series.empty() ? kTimeZero : run.series.back().time;
  pending.Finish(last_instant, run.jobs);
  if (scheduler.queue().size() > 0) {
    // Say why each job still waiting did not start (the run was cut short, or it starved).
    for (const PendingReason& p : scheduler.ExplainPending(end)) {
      run.jobs[p.job.index()].reason = p.reason;
    }
  }
  ComputeSummary(run);
  run.summary.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace dlsched::sim
