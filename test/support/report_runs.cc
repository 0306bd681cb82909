#include "support/report_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/model/job.h"

namespace dlsched::testing {

using sim::ComputeSummary;
using sim::JobRecord;
using sim::RunResult;

RunResult SyntheticRun(std::string policy, int num_jobs, uint64_t seed, double wait_scale) {
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  const auto next = [&state] {  // uniform in [0, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  RunResult run;
  run.policy = std::move(policy);
  run.total_gpus = 64;
  run.summary.wall_s = 0.25;
  double submit = 0;
  struct Event {
    double t;
    int gpus;
    int queue;
    int running;
  };
  std::vector<Event> events;
  for (int i = 0; i < num_jobs; ++i) {
    JobRecord r;
    r.id = JobId(static_cast<uint32_t>(i));
    r.name = "job-" + std::to_string(i);
    r.user = "u" + std::to_string(i % 7);
    r.queue = i % 3 == 0 ? "prod" : "dev";
    r.num_gpus = 1 << static_cast<int>(next() * 4);
    r.submit_time = AtSeconds(submit);
    const double ideal = 60 * std::exp(next() * 8);  // 1 min .. ~50 h
    r.ideal_duration = Seconds(ideal);
    if (i == num_jobs - 1) {
      r.final_state = JobState::kQueued;
      r.reason = "waiting for 8 GPUs";
    } else if (i % 10 == 9) {
      r.final_state = JobState::kRejected;
      r.reason = "needs 128 GPUs";
    } else {
      const double wait = wait_scale * 600 * next() * next();
      const double run_s = ideal * (1 + next());
      r.final_state = JobState::kSucceeded;
      r.first_start = AtSeconds(submit + wait);
      r.finish_time = AtSeconds(submit + wait + run_s);
      r.run_time = Seconds(run_s);
      r.preemptions = next() < 0.1 ? 1 : 0;
      events.push_back({submit + wait, r.num_gpus, -1, 1});
      events.push_back({submit + wait + run_s, -r.num_gpus, 0, -1});
    }
    if (r.final_state != JobState::kRejected) events.push_back({submit, 0, 1, 0});
    run.jobs.push_back(r);
    submit += 300 * next();
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  int gpus = 0, queue = 0, running = 0;
  for (const Event& e : events) {
    gpus += e.gpus;
    queue += e.queue;
    running += e.running;
    run.series.push_back(
        {AtSeconds(e.t), std::min(gpus, run.total_gpus), std::max(queue, 0), running});
  }
  ComputeSummary(run);
  return run;
}

RunResult Finished(std::string policy, const std::vector<double>& jct_s) {
  RunResult run;
  run.policy = std::move(policy);
  run.total_gpus = 8;
  for (size_t i = 0; i < jct_s.size(); ++i) {
    JobRecord r;
    r.id = JobId(static_cast<uint32_t>(i));
    r.num_gpus = 1;
    r.submit_time = AtSeconds(0);
    if (jct_s[i] < 0) {
      r.final_state = JobState::kRejected;
    } else {
      r.final_state = JobState::kSucceeded;
      r.first_start = AtSeconds(0);
      r.finish_time = AtSeconds(jct_s[i]);
      r.run_time = Seconds(jct_s[i]);
    }
    run.jobs.push_back(r);
  }
  ComputeSummary(run);
  return run;
}

RunResult WithDeadlines(RunResult run) {
  for (size_t i = 0; i < run.jobs.size(); i += 3) {
    JobRecord& job = run.jobs[i];
    job.qos = i % 2 == 0 ? QosClass::kStrict : QosClass::kSoft;
    job.deadline = job.completed() && i % 2 == 0 ? job.finish_time : job.submit_time;
  }
  ComputeSummary(run);
  return run;
}

}  // namespace dlsched::testing
