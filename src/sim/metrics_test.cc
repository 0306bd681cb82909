#include "sim/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dlsched::sim {
namespace {

// A job record from seconds; `start_s` / `finish_s` < 0 mean "never".
JobRecord MakeRecord(uint32_t id, JobState state, double submit_s, double start_s, double finish_s,
                     double ideal_s = 0, int num_gpus = 1) {
  JobRecord r;
  r.id = JobId(id);
  r.name = "job" + std::to_string(id);
  r.num_gpus = num_gpus;
  r.final_state = state;
  r.submit_time = AtSeconds(submit_s);
  if (start_s >= 0) r.first_start = AtSeconds(start_s);
  if (finish_s >= 0) r.finish_time = AtSeconds(finish_s);
  r.ideal_duration = Seconds(ideal_s);
  if (start_s >= 0 && finish_s >= 0) r.run_time = Seconds(finish_s - start_s);
  return r;
}

TimeSample Sample(double t_s, int gpus, int queue, int running) {
  return TimeSample{AtSeconds(t_s), gpus, queue, running};
}

TEST(NearestRankPercentileTest, Table) {
  const std::vector<double> twenty = [] {
    std::vector<double> v;
    for (int i = 1; i <= 20; ++i) v.push_back(i);
    return v;
  }();
  struct Case {
    std::string name;
    std::vector<double> sorted;
    double percent;
    double want;
  };
  const std::vector<Case> cases = {
      {"empty", {}, 50, 0},
      {"single", {7}, 99, 7},
      {"p50 of four is the 2nd", {1, 2, 3, 4}, 50, 2},
      {"p0 clamps to the min", {1, 2, 3, 4}, 0, 1},
      {"p100 is the max", {1, 2, 3, 4}, 100, 4},
      {"p95 of 20 is the 19th", twenty, 95, 19},
      {"p99 of 20 is the 20th", twenty, 99, 20},
      {"p50 of 20 is the 10th", twenty, 50, 10},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(NearestRankPercentile(c.sorted, c.percent), c.want);
  }
}

TEST(ComputeSummaryTest, EmptyRunIsAllZeroAndKeepsWallTime) {
  RunResult run;
  run.policy = "fifo";
  run.total_gpus = 8;
  run.summary.wall_s = 1.5;
  run.summary.avg_jct_s = 99;  // stale figures are overwritten
  ComputeSummary(run);
  const RunSummary& s = run.summary;
  EXPECT_EQ(s.jobs, 0);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.avg_jct_s, 0);
  EXPECT_EQ(s.p99_jct_s, 0);
  EXPECT_EQ(s.makespan_s, 0);
  EXPECT_EQ(s.gpu_utilization, 0);
  EXPECT_EQ(s.avg_ftf, 0);
  EXPECT_EQ(s.wall_s, 1.5);
}

TEST(ComputeSummaryTest, JctPercentilesAndMakespan) {
  RunResult run;
  run.total_gpus = 20;
  // Job i (1..20) is submitted at 10 s, starts at once and completes after i seconds.
  for (uint32_t i = 1; i <= 20; ++i) {
    run.jobs.push_back(MakeRecord(i, JobState::kSucceeded, 10, 10, 10 + i));
  }
  ComputeSummary(run);
  const RunSummary& s = run.summary;
  EXPECT_EQ(s.jobs, 20);
  EXPECT_EQ(s.completed, 20);
  EXPECT_DOUBLE_EQ(s.avg_jct_s, 10.5);
  EXPECT_DOUBLE_EQ(s.p50_jct_s, 10);
  EXPECT_DOUBLE_EQ(s.p95_jct_s, 19);
  EXPECT_DOUBLE_EQ(s.p99_jct_s, 20);
  EXPECT_DOUBLE_EQ(s.avg_queue_s, 0);
  EXPECT_DOUBLE_EQ(s.makespan_s, 20);  // from the first submission (10 s) to 30 s
}

TEST(ComputeSummaryTest, CountsRejectedAndUnfinished) {
  RunResult run;
  run.total_gpus = 4;
  run.jobs = {
      MakeRecord(0, JobState::kSucceeded, 0, 5, 15),
      MakeRecord(1, JobState::kRejected, 2, -1, -1),
      MakeRecord(2, JobState::kQueued, 3, -1, -1),
      MakeRecord(3, JobState::kRunning, 4, 20, -1),  // started, still running
      MakeRecord(4, JobState::kFailed, 1, 2, -1),
  };
  run.jobs[0].preemptions = 2;
  run.jobs[3].preemptions = 1;
  ComputeSummary(run);
  const RunSummary& s = run.summary;
  EXPECT_EQ(s.jobs, 5);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.rejected, 1);
  EXPECT_EQ(s.unfinished, 3);
  EXPECT_EQ(s.preemptions, 3);
  EXPECT_DOUBLE_EQ(s.avg_jct_s, 15);
  // Started jobs: 0 (5 s), 3 (16 s), 4 (1 s).
  EXPECT_DOUBLE_EQ(s.avg_queue_s, 22.0 / 3);
  // First submission (0 s) to the only completion (15 s); unfinished jobs do not extend it.
  EXPECT_DOUBLE_EQ(s.makespan_s, 15);
}

TEST(ComputeSummaryTest, UtilizationIntegratesTheSeriesAsSteps) {
  struct Case {
    std::string name;
    std::vector<TimeSample> series;
    double want;
  };
  // Two jobs on a 4-GPU cluster; the window is [0, 100].
  const std::vector<Case> cases = {
      {"two steps", {Sample(0, 2, 0, 1), Sample(50, 4, 0, 2)}, (2 * 50 + 4 * 50) / 400.0},
      {"last sample holds to the end", {Sample(0, 4, 0, 2)}, 1.0},
      {"nothing before the first sample", {Sample(25, 4, 0, 2)}, 0.75},
      {"samples after the window are ignored",
       {Sample(0, 2, 0, 1), Sample(100, 4, 0, 1), Sample(150, 0, 0, 0)},
       0.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RunResult run;
    run.total_gpus = 4;
    run.jobs = {MakeRecord(0, JobState::kSucceeded, 0, 0, 100),
                MakeRecord(1, JobState::kSucceeded, 0, 50, 100)};
    run.series = c.series;
    ComputeSummary(run);
    EXPECT_DOUBLE_EQ(run.summary.gpu_utilization, c.want);
  }
}

TEST(ComputeSummaryTest, UtilizationFallsBackToJobRunTimeWithoutSeries) {
  RunResult run;
  run.total_gpus = 4;
  run.jobs = {MakeRecord(0, JobState::kSucceeded, 0, 0, 100, 0, 2),    // 200 GPU-s
              MakeRecord(1, JobState::kSucceeded, 0, 50, 100, 0, 1)};  // 50 GPU-s
  ComputeSummary(run);
  EXPECT_DOUBLE_EQ(run.summary.gpu_utilization, 250.0 / 400.0);

  run.total_gpus = 0;  // no cluster, no share
  ComputeSummary(run);
  EXPECT_EQ(run.summary.gpu_utilization, 0);
}

TEST(ComputeSummaryTest, SlowdownAndFinishTimeFairness) {
  RunResult run;
  run.total_gpus = 2;
  run.jobs = {
      MakeRecord(0, JobState::kSucceeded, 0, 0, 20, /*ideal_s=*/10),    // slowdown 2
      MakeRecord(1, JobState::kSucceeded, 0, 20, 100, /*ideal_s=*/20),  // slowdown 5
      MakeRecord(2, JobState::kSucceeded, 0, 0, 10, /*ideal_s=*/0),     // no ideal: skipped
  };
  // queue + running: 3 for 20 s, then 1 for 80 s -> N_avg = (60 + 80) / 100 = 1.4.
  run.series = {Sample(0, 2, 1, 2), Sample(20, 1, 0, 1)};
  ComputeSummary(run);
  const RunSummary& s = run.summary;
  EXPECT_DOUBLE_EQ(s.avg_slowdown, 3.5);
  EXPECT_DOUBLE_EQ(s.p95_slowdown, 5);
  EXPECT_DOUBLE_EQ(s.avg_ftf, (2 / 1.4 + 5 / 1.4) / 2);
  EXPECT_DOUBLE_EQ(s.max_ftf, 5 / 1.4);
}

TEST(ComputeSummaryTest, FtfGuardsAgainstFewerThanOneJobInTheSystem) {
  RunResult run;
  run.total_gpus = 1;
  run.jobs = {MakeRecord(0, JobState::kSucceeded, 0, 0, 30, /*ideal_s=*/10)};
  run.series = {Sample(0, 1, 0, 0)};  // a series that (wrongly) shows an empty system
  ComputeSummary(run);
  EXPECT_DOUBLE_EQ(run.summary.avg_ftf, 3);
  EXPECT_DOUBLE_EQ(run.summary.max_ftf, 3);
}

TEST(ComputeSummaryTest, FtfUsesJobIntervalsWithoutSeries) {
  RunResult run;
  run.total_gpus = 1;
  // Both in the system over [0, 50], then only job 1 until 100: N_avg = 150 / 100 = 1.5.
  run.jobs = {MakeRecord(0, JobState::kSucceeded, 0, 0, 50, /*ideal_s=*/50),
              MakeRecord(1, JobState::kSucceeded, 0, 50, 100, /*ideal_s=*/50),
              MakeRecord(2, JobState::kRejected, 0, -1, -1)};
  ComputeSummary(run);
  EXPECT_DOUBLE_EQ(run.summary.avg_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(run.summary.max_ftf, 2 / 1.5);
}

// A record with a QoS target: `deadline_s` < 0 means none.
JobRecord WithQos(JobRecord r, QosClass qos, double deadline_s) {
  r.qos = qos;
  if (deadline_s >= 0) r.deadline = AtSeconds(deadline_s);
  return r;
}

TEST(ComputeSummaryTest, QosMetRatesPerClassAndBestEffortJct) {
  RunResult run;
  run.total_gpus = 8;
  run.jobs = {
      // strict: met (on the deadline exactly), missed (late), rejected, unfinished.
      WithQos(MakeRecord(0, JobState::kSucceeded, 0, 0, 100), QosClass::kStrict, 100),
      WithQos(MakeRecord(1, JobState::kSucceeded, 0, 10, 150), QosClass::kStrict, 120),
      WithQos(MakeRecord(2, JobState::kRejected, 5, -1, -1), QosClass::kStrict, 500),
      WithQos(MakeRecord(3, JobState::kRunning, 5, 6, -1), QosClass::kStrict, 500),
      // soft: one met, one missed.
      WithQos(MakeRecord(4, JobState::kSucceeded, 0, 0, 50), QosClass::kSoft, 60),
      WithQos(MakeRecord(5, JobState::kSucceeded, 0, 0, 90), QosClass::kSoft, 60),
      // best-effort: no deadline; JCTs 40 and 80; one still queued.
      WithQos(MakeRecord(6, JobState::kSucceeded, 10, 20, 50), QosClass::kBestEffort, -1),
      WithQos(MakeRecord(7, JobState::kSucceeded, 20, 20, 100), QosClass::kBestEffort, -1),
      WithQos(MakeRecord(8, JobState::kQueued, 20, -1, -1), QosClass::kBestEffort, -1),
      // a best-effort job with a deadline counts overall, in no class rate; met.
      WithQos(MakeRecord(9, JobState::kSucceeded, 0, 0, 30), QosClass::kBestEffort, 30),
  };
  ComputeSummary(run);
  const RunSummary& s = run.summary;
  EXPECT_EQ(s.qos_jobs, 7);
  EXPECT_DOUBLE_EQ(s.qos_met_rate, 3.0 / 7);
  EXPECT_DOUBLE_EQ(s.qos_met_rate_strict, 1.0 / 4);
  EXPECT_DOUBLE_EQ(s.qos_met_rate_soft, 1.0 / 2);
  EXPECT_DOUBLE_EQ(s.best_effort_avg_jct_s, (40.0 + 80.0 + 30.0) / 3);
  EXPECT_TRUE(run.jobs[0].met_deadline());
  EXPECT_FALSE(run.jobs[1].met_deadline());
  EXPECT_FALSE(run.jobs[6].met_deadline());  // no deadline
}

TEST(ComputeSummaryTest, NoDeadlinesGiveZeroQosFigures) {
  RunResult run;
  run.jobs = {MakeRecord(0, JobState::kSucceeded, 0, 0, 10),
              WithQos(MakeRecord(1, JobState::kSucceeded, 0, 0, 30), QosClass::kStrict, -1)};
  ComputeSummary(run);
  EXPECT_EQ(run.summary.qos_jobs, 0);
  EXPECT_EQ(run.summary.qos_met_rate, 0);
  EXPECT_EQ(run.summary.qos_met_rate_strict, 0);
  EXPECT_EQ(run.summary.qos_met_rate_soft, 0);
  EXPECT_DOUBLE_EQ(run.summary.best_effort_avg_jct_s, 10);  // every job is best-effort by default
}

TEST(SummarizeCycleTimesTest, CountAndNearestRankPercentiles) {
  std::vector<float> none;
  const CycleTimes empty = SummarizeCycleTimes(none);
  EXPECT_EQ(empty.cycles, 0);
  EXPECT_EQ(empty.max_s, 0);
  // 1..200 ms, shuffled: p50 is the 100th smallest, p99 the 198th.
  std::vector<float> seconds;
  for (int i = 200; i >= 1; --i) seconds.push_back(i % 2 == 0 ? i * 1e-3f : (201 - i) * 1e-3f);
  std::vector<float> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const CycleTimes t = SummarizeCycleTimes(seconds);
  EXPECT_EQ(t.cycles, 200);
  EXPECT_DOUBLE_EQ(t.p50_s, sorted[99]);
  EXPECT_DOUBLE_EQ(t.p99_s, sorted[197]);
  EXPECT_DOUBLE_EQ(t.max_s, sorted[199]);
  std::vector<float> one = {0.5f};
  const CycleTimes single = SummarizeCycleTimes(one);
  EXPECT_EQ(single.cycles, 1);
  EXPECT_DOUBLE_EQ(single.p50_s, 0.5);
  EXPECT_DOUBLE_EQ(single.p99_s, 0.5);
}

}  // namespace
}  // namespace dlsched::sim
