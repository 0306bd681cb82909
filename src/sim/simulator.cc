#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <queue>
#include <vector>

#include "dlsched/runtime/executor.h"
#include "dlsched/runtime/scheduler.h"

namespace dlsched::sim {
namespace {

enum class SimEventKind : uint8_t { kFinish, kKilled, kSuspend, kLaunchFailed, kWake };

struct SimEvent {
  Timestamp time;
  uint64_t seq;
  SimEventKind kind;
  JobId job;
  uint32_t generation;  // stale when it differs from the job's current generation
  double iterations;    // kSuspend: progress saved

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

// The ground truth of a job's progress; only the SimExecutor sees it.
struct TrueProgress {
  double iterations_done = 0;
  double iters_per_s = 0;
  Timestamp progress_start;  // when the current segment starts making progress
  Timestamp finish_at = kTimeNever;
  uint32_t generation = 0;
  bool has_run = false;
};

// Runs jobs in virtual time at the speed of the ground-truth model and reports back through the
// event queue, with checkpoint and restore costs.
class SimExecutor final : public Executor {
 public:
  SimExecutor(const Cluster& cluster, const ThroughputModel& truth, const SimOptions& options,
              EventQueue& events)
      : cluster_(cluster), truth_(truth), options_(options), events_(events) {}

  void Reserve(size_t n) { progress_.reserve(n); }
  void AddJob() { progress_.emplace_back(); }
  uint32_t generation(JobId id) const { return progress_[id.index()].generation; }

  void Launch(const Job& job, const Placement& placement, Timestamp now) override {
    TrueProgress& p = progress_[job.id.index()];
    ++p.generation;
    // A service's work is its lifetime: wall time on any GPUs.
    p.iters_per_s = job.spec.is_service() ? job.spec.ref_iters_per_s
                                          : truth_.ItersPerSecond(job.spec, cluster_, placement);
    if (!(p.iters_per_s > 0)) {
      events_.Push(now, SimEventKind::kLaunchFailed, job.id, p.generation);
      return;
    }
    p.progress_start = now + (p.has_run ? options_.restore_delay : Duration(0));
    p.has_run = true;
    const double left_s = (job.spec.iterations - p.iterations_done) / p.iters_per_s;
    // At least one microsecond, so a finish never lands in the cycle that launched it.
    p.finish_at = p.progress_start + std::max(Duration(1), Seconds(left_s));
    events_.Push(p.finish_at, SimEventKind::kFinish, job.id, p.generation);
  }

  void Preempt(const Job& job, Timestamp now) override {
    TrueProgress& p = progress_[job.id.index()];
    const Timestamp suspended_at = now + options_.checkpoint_delay;
    if (p.finish_at <= suspended_at) return;  // it ends before the checkpoint would
    const double ran_s = std::max(0.0, ToSeconds(now - p.progress_start));
    p.iterations_done = std::min(job.spec.iterations, p.iterations_done + ran_s * p.iters_per_s);
    p.finish_at = kTimeNever;
    ++p.generation;
    events_.Push(suspended_at, SimEventKind::kSuspend, job.id, p.generation, p.iterations_done);
  }

  void Kill(const Job& job, Timestamp now) override {
    TrueProgress& p = progress_[job.id.index()];
    ++p.generation;
    p.finish_at = kTimeNever;
    events_.Push(now, SimEventKind::kKilled, job.id, p.generation);
  }

 private:
  const Cluster& cluster_;
  const ThroughputModel& truth_;
  const SimOptions& options_;
  EventQueue& events_;
  std::vector<TrueProgress> progress_;
};

Event ToSchedulerEvent(const SimEvent& e) {
  switch (e.kind) {
    case SimEventKind::kFinish:
      return JobFinished{e.job, JobState::kSucceeded, ""};
    case SimEventKind::kKilled:
      return JobFinished{e.job, JobState::kKilled, "killed"};
    case SimEventKind::kSuspend:
      return JobSuspended{e.job, e.iterations};
    case SimEventKind::kLaunchFailed:
      return JobLaunchFailed{e.job, "the ground truth gives it no throughput there", true};
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

}  // namespace

RunResult Simulate(const SimInputs& inputs, std::unique_ptr<SchedulingPolicy> policy,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string policy_name(policy->Name());
  EventQueue events;
  SimExecutor executor(inputs.cluster, inputs.truth, options, events);
  Scheduler scheduler(inputs.cluster, std::move(policy), executor, inputs.estimator, options.seed);
  scheduler.set_lend_idle_service_gpus(options.lend_service_gpus);
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
      const Status status = scheduler.Handle(ToSchedulerEvent(e), now);
      DS_CHECK(status.ok()) << "simulator event rejected: " << status.ToString();
      const JobState state = scheduler.jobs().at(e.job).state;
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
    jobs_done += cycle.rejected;
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
