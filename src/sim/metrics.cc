#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <vector>

namespace dlsched::sim {
namespace {

// Sums in index order, so the result depends only on the input, never on scheduling of work.
double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// part / whole, or 0 when whole is 0.
double Share(int part, int whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// The time integral (value x seconds) over [begin, end] of the step function that `series`
// describes: sample i holds `value(sample i)` from its time until the next sample's, the last
// one until `end`; before the first sample the value is 0.
template <typename ValueFn>
double IntegrateSteps(const std::vector<TimeSample>& series, Timestamp begin, Timestamp end,
                      ValueFn value) {
  double total = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    const Timestamp from = std::max(series[i].time, begin);
    const Timestamp to = i + 1 < series.size() ? std::min(series[i + 1].time, end) : end;
    if (to > from) total += static_cast<double>(value(series[i])) * ToSeconds(to - from);
  }
  return total;
}

// Job-seconds spent in the system within [begin, end], from the jobs alone: a job that was not
// rejected is present from its submission until it finished (or until `end`). Stands in for the
// series' queue + running count when the run recorded no series.
double JobSecondsInSystem(const std::vector<JobRecord>& jobs, Timestamp begin, Timestamp end) {
  double total = 0;
  for (const JobRecord& job : jobs) {
    if (job.final_state == JobState::kRejected) continue;
    const Timestamp from = std::max(job.submit_time, begin);
    const Timestamp to = std::min(job.finish_time, end);
    if (to > from) total += ToSeconds(to - from);
  }
  return total;
}

}  // namespace

double NearestRankPercentile(std::span<const double> sorted, double percent) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  // percent x n is exact for integral percents, so e.g. p95 of 20 values is rank 19, not 20.
  const double rank = std::ceil(percent * n / 100.0);
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, n)) - 1;
  return sorted[index];
}

namespace {

// Tenant shares, per-type utilisation and the sampled waiting causes.
void SummarizeSharesAndWaits(const RunResult& run, RunSummary& s) {
  std::map<std::string, double> gpu_s_by_tenant;
  double gpu_s = 0;
  for (const JobRecord& job : run.jobs) {
    const double used = ToSeconds(job.run_time) * job.num_gpus;
    gpu_s_by_tenant[job.queue] += used;
    gpu_s += used;
    for (int c = 0; c < kNumPendingCauses; ++c) {
      s.pending_s_by_cause[c] += job.pending_s_by_cause[c];
    }
  }
  for (const auto& [tenant, used] : gpu_s_by_tenant) {
    s.tenant_share.emplace_back(tenant, gpu_s > 0 ? used / gpu_s : 0.0);
  }
  s.fragmentation_blocked_s =
      s.pending_s_by_cause[static_cast<size_t>(PendingCause::kFragmentation)] +
      s.pending_s_by_cause[static_cast<size_t>(PendingCause::kConsolidation)];
  for (const GpuTypeUsage& usage : run.type_usage) {
    const double capacity = usage.gpus * s.makespan_s;
    s.gpu_type_utilization.emplace_back(
        usage.type, capacity > 0 ? std::min(1.0, usage.allocated_gpu_s / capacity) : 0.0);
  }
  if (run.host_blocked_gpu_s) {
    const double capacity = run.total_gpus * s.makespan_s;
    s.host_blocked_gpu_share = capacity > 0 ? *run.host_blocked_gpu_s / capacity : 0.0;
  }
}

}  // namespace

void ComputeSummary(RunResult& run) {
  RunSummary s;
  s.wall_s = run.summary.wall_s;
  s.jobs = static_cast<int>(run.jobs.size());
  s.cpu_jobs = static_cast<int>(
      std::ranges::count_if(run.jobs, [](const JobRecord& job) { return job.num_gpus == 0; }));

  std::vector<double> jcts;
  std::vector<double> queue_delays;
  Timestamp first_submit = kTimeNever;
  Timestamp last_finish = kTimeNever;
  for (const JobRecord& job : run.jobs) {
    first_submit = std::min(first_submit, job.submit_time);
    s.preemptions += job.preemptions;
    if (job.first_start != kTimeNever) queue_delays.push_back(ToSeconds(job.first_queue_delay()));
    if (job.completed()) {
      ++s.completed;
      jcts.push_back(ToSeconds(job.jct()));
      last_finish =
          last_finish == kTimeNever ? job.finish_time : std::max(last_finish, job.finish_time);
    } else if (job.final_state == JobState::kRejected) {
      ++s.rejected;
    } else {
      ++s.unfinished;
    }
  }

  s.avg_jct_s = Mean(jcts);
  s.avg_queue_s = Mean(queue_delays);
  std::vector<double> sorted_jcts = jcts;
  std::sort(sorted_jcts.begin(), sorted_jcts.end());
  s.p50_jct_s = NearestRankPercentile(sorted_jcts, 50);
  s.p95_jct_s = NearestRankPercentile(sorted_jcts, 95);
  s.p99_jct_s = NearestRankPercentile(sorted_jcts, 99);

  // The window [first_submit, last_finish]; empty when nothing completed.
  const bool has_window = s.completed > 0 && last_finish > first_submit;
  if (has_window) s.makespan_s = ToSeconds(last_finish - first_submit);

  double jobs_in_system_avg = 1;
  if (has_window) {
    if (run.total_gpus > 0) {
      double gpu_seconds = 0;
      if (!run.series.empty()) {
        gpu_seconds = IntegrateSteps(run.series, first_submit, last_finish,
                                     [](const TimeSample& t) { return t.gpus_allocated; });
      } else {
        for (const JobRecord& job : run.jobs) {
          gpu_seconds += ToSeconds(job.run_time) * job.num_gpus;
        }
      }
      s.gpu_utilization =
          std::min(1.0, gpu_seconds / (static_cast<double>(run.total_gpus) * s.makespan_s));
    }
    const double job_seconds =
        run.series.empty()
            ? JobSecondsInSystem(run.jobs, first_submit, last_finish)
            : IntegrateSteps(run.series, first_submit, last_finish,
                             [](const TimeSample& t) { return t.queue_length + t.running_jobs; });
    jobs_in_system_avg = std::max(1.0, job_seconds / s.makespan_s);
  }

  std::vector<double> slowdowns;
  std::vector<double> ftfs;
  for (const JobRecord& job : run.jobs) {
    if (!job.completed() || job.ideal_duration <= Duration::zero()) continue;
    const double slowdown = ToSeconds(job.jct()) / ToSeconds(job.ideal_duration);
    slowdowns.push_back(slowdown);
    ftfs.push_back(slowdown / jobs_in_system_avg);
  }
  s.avg_slowdown = Mean(slowdowns);
  std::sort(slowdowns.begin(), slowdowns.end());
  s.p95_slowdown = NearestRankPercentile(slowdowns, 95);
  s.avg_ftf = Mean(ftfs);
  s.max_ftf = ftfs.empty() ? 0 : *std::max_element(ftfs.begin(), ftfs.end());

  // QoS: met / with a deadline, overall and for the strict and soft classes.
  int met = 0;
  int strict_jobs = 0;
  int strict_met = 0;
  int soft_jobs = 0;
  int soft_met = 0;
  std::vector<double> best_effort_jcts;
  for (const JobRecord& job : run.jobs) {
    if (job.qos == QosClass::kBestEffort && job.completed()) {
      best_effort_jcts.push_back(ToSeconds(job.jct()));
    }
    if (!job.deadline) continue;
    const int hit = job.met_deadline() ? 1 : 0;
    ++s.qos_jobs;
    met += hit;
    if (job.qos == QosClass::kStrict) {
      ++strict_jobs;
      strict_met += hit;
    } else if (job.qos == QosClass::kSoft) {
      ++soft_jobs;
      soft_met += hit;
    }
  }
  s.qos_met_rate = Share(met, s.qos_jobs);
  s.qos_met_rate_strict = Share(strict_met, strict_jobs);
  s.qos_met_rate_soft = Share(soft_met, soft_jobs);
  s.best_effort_avg_jct_s = Mean(best_effort_jcts);

  SummarizeSharesAndWaits(run, s);
  run.summary = s;
}

CycleTimes SummarizeCycleTimes(std::vector<float>& seconds) {
  CycleTimes times;
  times.cycles = static_cast<int64_t>(seconds.size());
  if (seconds.empty()) return times;
  // Nearest rank: the ceil(q n)-th smallest, 1-based.
  const auto rank = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(seconds.size())));
    const auto nth = seconds.begin() + static_cast<std::ptrdiff_t>(std::max<size_t>(k, 1) - 1);
    std::nth_element(seconds.begin(), nth, seconds.end());
    return static_cast<double>(*nth);
  };
  times.p50_s = rank(0.5);
  times.p99_s = rank(0.99);
  times.max_s = *std::max_element(seconds.begin(), seconds.end());
  return times;
}

}  // namespace dlsched::sim
