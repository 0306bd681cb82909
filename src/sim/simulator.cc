#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/runtime/executor.h"
#include "dlsched/runtime/scheduler.h"
#include "dlsched/sharing/interference.h"
#include "sim/event_queue.h"
#include "sim/meters.h"
#include "sim/sim_executor.h"

namespace dlsched::sim {
namespace {

// The oracle: every job's true run time on its reference placement. It lives here, beside the
// truth, and only --oracle reaches it.
class OracleRuntimeEstimator final : public RuntimeEstimator {
 public:
  std::string_view Name() const override { return "oracle"; }
  Duration EstimateTotal(const JobSpec& spec, Timestamp) override { return spec.ideal_duration(); }
  void Observe(const JobSpec&, Duration, Timestamp) override {}
};

std::unique_ptr<RuntimeEstimator> MakeRuntimeEstimator(RuntimeEstimates estimates) {
  switch (estimates) {
    case RuntimeEstimates::kStated:
      return std::make_unique<StatedRuntimeEstimator>();
    case RuntimeEstimates::kOracle:
      return std::make_unique<OracleRuntimeEstimator>();
    case RuntimeEstimates::kHistory:
      break;
  }
  return std::make_unique<HistoryRuntimeEstimator>();
}

JobSpec WithRuntimeEstimate(JobSpec spec, size_t index, const SimOptions& options) {
  if (spec.runtime_estimate || options.estimate_error <= 0) return spec;
  // One generator per job, so a job's estimate does not depend on the policy or on other jobs.
  Rng rng(options.seed ^ (0x9E3779B97F4A7C15ull * (index + 1)));
  const double factor = rng.LogNormal(0.0, options.estimate_error);
  spec.runtime_estimate = Seconds(ToSeconds(spec.ideal_duration()) * factor);
  return spec;
}

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

std::string_view RuntimeEstimatesName(RuntimeEstimates estimates) {
  switch (estimates) {
    case RuntimeEstimates::kStated:
      return "stated";
    case RuntimeEstimates::kOracle:
      return "oracle";
    case RuntimeEstimates::kHistory:
      break;
  }
  return "history";
}

RunResult Simulate(const SimInputs& inputs, std::unique_ptr<SchedulingPolicy> policy,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string policy_name(policy->Name());
  EventQueue events;
  SimExecutor executor(inputs.cluster, inputs.truth, options, inputs.sharing, events);
  Scheduler scheduler(inputs.cluster, std::move(policy), executor, inputs.estimator, options.seed);
  scheduler.set_lend_idle_service_gpus(options.lend_service_gpus);
  scheduler.set_sharing_view(inputs.sharing != nullptr ? &inputs.sharing->knowledge() : nullptr);
  const std::unique_ptr<RuntimeEstimator> runtime_estimator =
      MakeRuntimeEstimator(options.runtime_estimates);
  scheduler.set_runtime_estimator(runtime_estimator.get());
  const std::vector<JobSpec>& jobs = inputs.workload.jobs;
  scheduler.ReserveJobs(jobs.size());
  executor.Reserve(jobs.size());

  std::vector<TimeSample> series;
  TypeUsageMeter type_usage(inputs.cluster);
  HostBlockedMeter host_blocked(inputs.cluster);
  PendingSampler pending(options.explain_every, jobs.size());
  size_t next_arrival = 0;
  size_t jobs_done = 0;
  Timestamp last_instant = kTimeZero;
  Timestamp pending_wake = kTimeNever;
  auto last_report = wall_start;
  uint64_t steps = 0;
  std::vector<float> cycle_seconds;  // wall time of each scheduling cycle

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

    const auto cycle_start = std::chrono::steady_clock::now();
    const CycleResult cycle = scheduler.RunCycle(now);
    cycle_seconds.push_back(
        std::chrono::duration<float>(std::chrono::steady_clock::now() - cycle_start).count());
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
    host_blocked.Observe(now, scheduler, completed);
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
  run.runtime_estimator = RuntimeEstimatesName(options.runtime_estimates);
  run.speed_estimator = inputs.speed_estimator;
  run.oracle = options.runtime_estimates == RuntimeEstimates::kOracle;
  if (inputs.sharing != nullptr) run.sharing = SummarizeSharing(scheduler, executor, last_instant);
  run.type_usage = type_usage.Usage();
  if (host_blocked.active()) run.host_blocked_gpu_s = host_blocked.blocked_gpu_s();
  const Timestamp end = run.series.empty() ? kTimeZero : run.series.back().time;
  pending.Finish(last_instant, run.jobs);
  if (scheduler.queue().size() > 0) {
    // Say why each job still waiting did not start (the run was cut short, or it starved).
    for (const PendingReason& p : scheduler.ExplainPending(end)) {
      run.jobs[p.job.index()].reason = p.reason;
    }
  }
  ComputeSummary(run);
  run.summary.cycle_times = SummarizeCycleTimes(cycle_seconds);
  run.summary.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace dlsched::sim
