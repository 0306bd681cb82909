#include "sim/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace dlsched::sim {
namespace {

size_t CountOccurrences(const std::string& haystack, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

// A run of `num_jobs` synthetic jobs on `total_gpus` GPUs: deterministic pseudo-random submit
// times, sizes and waits (a fixed LCG seeded by `seed`), every 10th job rejected and the last
// one left queued, plus a series sampled at each start and finish.
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

TEST(FormatDurationTest, Table) {
  struct Case {
    double seconds;
    std::string want;
  };
  const std::vector<Case> cases = {
      {0, "0.0s"},      {12.34, "12.3s"}, {59.94, "59.9s"},      {59.96, "1.0m"},
      {2100, "35.0m"},  {3590, "59.8m"},  {3597, "1.0h"},        {4320, "1.2h"},
      {86000, "23.9h"}, {86220, "1.0d"},  {3.4 * 86400, "3.4d"}, {-90, "-1.5m"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.seconds);
    EXPECT_EQ(FormatDuration(c.seconds), c.want);
  }
}

TEST(ComparisonTableTest, OneRowPerRunAndBestLine) {
  std::vector<RunResult> runs = {SyntheticRun("fifo", 50, 1, 4), SyntheticRun("srtf", 50, 1, 1)};
  // Only runs that accounted for every job compete: srtf is faster but has an unfinished job.
  RunResult done = SyntheticRun("las", 50, 1, 2);
  done.jobs.pop_back();
  ComputeSummary(done);
  runs.push_back(done);
  std::ostringstream out;
  WriteComparisonTable(runs, out);
  const std::string text = out.str();
  std::istringstream lines(text);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u) << text;  // header, rule, 3 runs, best line
  EXPECT_EQ(rows[0].rfind("policy", 0), 0u);
  EXPECT_NE(rows[0].find("p99 JCT"), std::string::npos);
  EXPECT_NE(rows[0].find("wall s"), std::string::npos);
  EXPECT_EQ(rows[2].rfind("fifo", 0), 0u);
  EXPECT_EQ(rows[4].rfind("las", 0), 0u);
  // Right-aligned numbers end in the same column.
  EXPECT_EQ(rows[2].size(), rows[3].size());
  EXPECT_EQ(rows[5].rfind("Best avg JCT", 0), 0u);
  EXPECT_NE(rows[5].find(": las ("), std::string::npos) << rows[5];
}

// A run whose job i completed with JCT jct_s[i] seconds, or was rejected when jct_s[i] < 0.
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

std::string BestLine(const std::vector<RunResult>& runs) {
  std::ostringstream out;
  WriteComparisonTable(runs, out);
  std::string text = out.str();
  text.pop_back();  // the newline
  return text.substr(text.rfind('\n') + 1);
}

TEST(ComparisonTableTest, BestLineComparesOnlyRunsThatCompletedTheSameJobs) {
  struct Case {
    std::string name;
    std::vector<RunResult> runs;
    std::string want;
  };
  const Case cases[] = {
      {"a policy that rejects most jobs is left out, not crowned",
       {Finished("las", {600, 600, 600, 600}), Finished("qos", {60, -1, -1, -1}),
        Finished("fifo", {900, 900, 900, 900})},
       "Best avg JCT among runs that completed all 4 jobs: las (10.0m); left out: qos "
       "(completed 1 of 4)"},
      {"the same number of jobs but other jobs",
       {Finished("edf", {60, -1, 60}), Finished("qos", {-1, 30, 30})},
       "Best avg JCT among runs that completed the same 2 of 3 jobs: edf (1.0m); left out: qos "
       "(completed other jobs)"},
      {"runs within 1% are a tie",
       {Finished("las", {1000, 1000}), Finished("tiresias", {995, 995}),
        Finished("fifo", {2000, 2000})},
       "Best avg JCT among runs that completed all 2 jobs: no clear winner, tiresias (16.6m), "
       "las (16.7m) are within 1%"},
      {"just over 1% is a win",
       {Finished("las", {1000, 1000}), Finished("tiresias", {989, 989})},
       "Best avg JCT among runs that completed all 2 jobs: tiresias (16.5m)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(BestLine(c.runs), c.want);
  }
}

TEST(HtmlReportTest, HighlightsOnlyAClearWinner) {
  const auto highlighted = [](const std::vector<RunResult>& runs) {
    std::ostringstream out;
    EXPECT_TRUE(WriteHtmlReport(runs, {"t", "csv:x", "1x8xV100", 1}, out).ok());
    return out.str().find("<tr class=\"best\">") != std::string::npos;
  };
  EXPECT_TRUE(highlighted({Finished("las", {1000}), Finished("fifo", {2000})}));
  EXPECT_FALSE(highlighted({Finished("las", {1000}), Finished("tiresias", {999})}));
}

TEST(ComparisonTableTest, NoRunAccountsForEveryJob) {
  std::ostringstream out;
  WriteComparisonTable({SyntheticRun("fifo", 20, 1, 1)}, out);
  EXPECT_NE(out.str().find("Best avg JCT: none"), std::string::npos) << out.str();
}

TEST(RunsToJsonTest, HasTheContractKeysInOrderAndIsDeterministic) {
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 40, 1, 1),
                                       SyntheticRun("las", 40, 2, 1)};
  const JsonMeta meta{"philly:traces/philly.csv", "cluster.json", 42};
  const std::string json = RunsToJson(runs, meta);
  EXPECT_EQ(json, RunsToJson(runs, meta));
  ASSERT_TRUE(nlohmann::json::accept(json));
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(json);
  EXPECT_EQ(doc["trace"], "philly:traces/philly.csv");
  EXPECT_EQ(doc["cluster"], "cluster.json");
  EXPECT_EQ(doc["seed"], 42u);
  EXPECT_EQ(doc["dlsched_version"], std::string(kVersion));
  ASSERT_EQ(doc["runs"].size(), 2u);
  const std::vector<std::string> want_keys = {"policy",
                                              "jobs",
                                              "completed",
                                              "rejected",
                                              "unfinished",
                                              "avg_jct_s",
                                              "p50_jct_s",
                                              "p95_jct_s",
                                              "p99_jct_s",
                                              "avg_queue_s",
                                              "makespan_s",
                                              "gpu_utilization",
                                              "preemptions",
                                              "avg_slowdown",
                                              "p95_slowdown",
                                              "avg_ftf",
                                              "max_ftf",
                                              "fragmentation_blocked_s",
                                              "gpu_mem_utilization",
                                              "migrations",
                                              "oom_restarts",
                                              "sharing",
                                              "pending_s_by_cause",
                                              "tenant_share",
                                              "gpu_type_utilization",
                                              "wall_s"};
  const auto& run0 = doc["runs"][0];
  std::vector<std::string> keys;
  for (const auto& [key, value] : run0.items()) keys.push_back(key);
  EXPECT_EQ(keys, want_keys);
  EXPECT_EQ(run0["policy"], "fifo");
  EXPECT_EQ(run0["jobs"], 40);
  EXPECT_EQ(run0["completed"], runs[0].summary.completed);
  EXPECT_DOUBLE_EQ(run0["avg_jct_s"].get<double>(), runs[0].summary.avg_jct_s);
  EXPECT_DOUBLE_EQ(run0["wall_s"].get<double>(), 0.25);
}

// Gives every third job of `run` a deadline (strict, soft alternately) that the job meets when
// its index is even, then recomputes the summary.
RunResult WithDeadlines(RunResult run) {
  for (size_t i = 0; i < run.jobs.size(); i += 3) {
    JobRecord& job = run.jobs[i];
    job.qos = i % 2 == 0 ? QosClass::kStrict : QosClass::kSoft;
    job.deadline = job.completed() && i % 2 == 0 ? job.finish_time : job.submit_time;
  }
  ComputeSummary(run);
  return run;
}

TEST(RunsToJsonTest, QosKeysFollowOnlyWhenSomeRunHasDeadlines) {
  const std::vector<std::string> qos_keys = {"qos_jobs", "qos_met_rate", "qos_met_rate_strict",
                                             "qos_met_rate_soft", "best_effort_avg_jct_s"};
  const auto keys_of = [](const nlohmann::ordered_json& run) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : run.items()) keys.push_back(key);
    return keys;
  };
  // No deadline anywhere: exactly the classic keys.
  const auto plain =
      nlohmann::ordered_json::parse(RunsToJson({SyntheticRun("fifo", 30, 1, 1)}, JsonMeta{}));
  EXPECT_EQ(keys_of(plain["runs"][0]).back(), "wall_s");
  EXPECT_FALSE(plain["runs"][0].contains("qos_jobs"));

  // One run with deadlines: every run gets the QoS keys, after wall_s.
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 30, 1, 1),
                                       WithDeadlines(SyntheticRun("edf", 30, 1, 1))};
  const auto doc = nlohmann::ordered_json::parse(RunsToJson(runs, JsonMeta{}));
  for (size_t r = 0; r < runs.size(); ++r) {
    SCOPED_TRACE(runs[r].policy);
    const std::vector<std::string> keys = keys_of(doc["runs"][r]);
    ASSERT_GE(keys.size(), qos_keys.size() + 1);
    EXPECT_EQ(keys[keys.size() - qos_keys.size() - 1], "wall_s");
    EXPECT_EQ(std::vector<std::string>(keys.end() - qos_keys.size(), keys.end()), qos_keys);
  }
  const RunSummary& s = runs[1].summary;
  ASSERT_GT(s.qos_jobs, 0);
  EXPECT_EQ(doc["runs"][0]["qos_jobs"], 0);
  EXPECT_EQ(doc["runs"][1]["qos_jobs"], s.qos_jobs);
  EXPECT_DOUBLE_EQ(doc["runs"][1]["qos_met_rate"].get<double>(), s.qos_met_rate);
  EXPECT_DOUBLE_EQ(doc["runs"][1]["qos_met_rate_strict"].get<double>(), s.qos_met_rate_strict);
  EXPECT_DOUBLE_EQ(doc["runs"][1]["qos_met_rate_soft"].get<double>(), s.qos_met_rate_soft);
  EXPECT_DOUBLE_EQ(doc["runs"][1]["best_effort_avg_jct_s"].get<double>(), s.best_effort_avg_jct_s);
}

TEST(ComparisonTableTest, QosColumnOnlyWhenSomeRunHasDeadlines) {
  std::ostringstream plain;
  WriteComparisonTable({SyntheticRun("fifo", 30, 1, 1)}, plain);
  EXPECT_EQ(plain.str().find("qos met"), std::string::npos);

  const RunResult edf = WithDeadlines(SyntheticRun("edf", 30, 1, 1));
  std::ostringstream out;
  WriteComparisonTable({SyntheticRun("fifo", 30, 1, 1), edf}, out);
  std::istringstream lines(out.str());
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 5u) << out.str();
  const size_t column = rows[0].find("qos met");
  ASSERT_NE(column, std::string::npos) << rows[0];
  EXPECT_LT(column, rows[0].find("wall s"));
  // fifo had no deadlines: "-"; edf shows its rate as a percentage.
  const std::string want = fmt::format("{:.1f}%", 100 * edf.summary.qos_met_rate);
  EXPECT_NE(rows[3].find(want), std::string::npos) << rows[3];
  EXPECT_NE(rows[2].find(" - "), std::string::npos) << rows[2];

  std::ostringstream html;
  ASSERT_TRUE(WriteHtmlReport({edf}, ReportMeta{}, html).ok());
  EXPECT_NE(html.str().find("<th>qos met</th>"), std::string::npos);
}

TEST(RunsToJsonTest, EmptyRunsIsAnEmptyArrayAndBadUtf8IsReplaced) {
  RunResult run;
  run.policy = "bad\xff";
  ComputeSummary(run);
  const std::string json = RunsToJson({run}, JsonMeta{});
  ASSERT_TRUE(nlohmann::json::accept(json)) << json;
  EXPECT_EQ(nlohmann::json::parse(RunsToJson({}, JsonMeta{}))["runs"], nlohmann::json::array());
}

TEST(WriteJobsCsvTest, HeaderAndRows) {
  RunResult run;
  JobRecord done;
  done.id = JobId(3);
  done.name = "resnet, big";
  done.user = "alice";
  done.queue = "prod";
  done.num_gpus = 4;
  done.final_state = JobState::kSucceeded;
  done.submit_time = AtSeconds(10);
  done.first_start = AtSeconds(12.5);
  done.finish_time = AtSeconds(52.5);
  done.ideal_duration = Seconds(20);
  done.run_time = Seconds(40);
  done.preemptions = 1;
  done.pending_s_by_cause[static_cast<size_t>(PendingCause::kGpusBusy)] = 1;
  done.pending_s_by_cause[static_cast<size_t>(PendingCause::kFragmentation)] = 2;  // the largest
  JobRecord rejected;
  rejected.id = JobId(4);
  rejected.name = "j4";
  rejected.final_state = JobState::kRejected;
  rejected.submit_time = AtSeconds(11);
  rejected.reason = "asks \"8\" GPUs";
  run.jobs = {done, rejected};
  std::ostringstream out;
  ASSERT_TRUE(WriteJobsCsv(run, out).ok());
  EXPECT_EQ(out.str(),
            "job_id,name,user,queue,num_gpus,state,submit_s,start_s,finish_s,jct_s,queue_s,"
            "ideal_s,run_s,slowdown,preemptions,wait_cause,reason\n"
            "3,\"resnet, big\",alice,prod,4,succeeded,10.000,12.500,52.500,42.500,2.500,20.000,"
            "40.000,2.125,1,fragmentation,\n"
            "4,j4,,,0,rejected,11.000,,,,,0.000,0.000,,0,,\"asks \"\"8\"\" GPUs\"\n");
}

TEST(WriteJobsCsvTest, ReportsAFailedStream) {
  RunResult run = SyntheticRun("fifo", 5, 1, 1);
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteJobsCsv(run, out).code(), StatusCode::kIoError);
}

TEST(WriteHtmlReportTest, SelfContainedEscapedAndDeterministic) {
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 400, 1, 6),
                                       SyntheticRun("<b>las</b>", 400, 1, 2),
                                       SyntheticRun("srtf", 400, 1, 1)};
  const ReportMeta meta{"Compare & contrast", "synthetic:jobs=400", "64 x V100", 7};
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(runs, meta, out).ok());
  const std::string html = out.str();

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(CountOccurrences(html, "<svg"), 4u);  // JCT CDF, utilisation, queue, slowdown
  EXPECT_EQ(CountOccurrences(html, "</svg>"), 4u);
  // Nothing to fetch: "http" only in the SVG namespace declarations; no script.
  EXPECT_EQ(CountOccurrences(html, "http"),
            CountOccurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>las"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;las&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("Compare &amp; contrast"), std::string::npos);
  EXPECT_NE(html.find("synthetic:jobs=400"), std::string::npos);

  std::ostringstream again;
  ASSERT_TRUE(WriteHtmlReport(runs, meta, again).ok());
  EXPECT_EQ(html, again.str());

  // Keep a copy to look at by hand when asked to.
  if (const char* path = std::getenv("DLSCHED_REPORT_TEST_HTML")) {
    std::ofstream(path) << html;
  }
}

TEST(WriteHtmlReportTest, LinesAreThinnedToAFewHundredPoints) {
  // 5000 jobs -> ~10000 series samples and 4500 JCTs per run.
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 5000, 3, 1)};
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(runs, ReportMeta{}, out).ok());
  const std::string html = out.str();
  EXPECT_NE(html.find("dlsched simulation report"), std::string::npos);
  size_t polylines = 0;
  for (size_t pos = html.find("<polyline"); pos != std::string::npos;
       pos = html.find("<polyline", pos + 1)) {
    ++polylines;
    const size_t begin = html.find("points=\"", pos) + 8;
    const size_t end = html.find('"', begin);
    const size_t points = std::count(html.begin() + begin, html.begin() + end, ' ') + 1;
    EXPECT_LE(points, 2 * 601u);  // each kept point is two vertices when drawn as steps
  }
  EXPECT_EQ(polylines, 3u);
  EXPECT_LT(html.size(), 200u * 1024);
}

TEST(WriteHtmlReportTest, NoRunsStillRendersEveryPlot) {
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport({}, ReportMeta{}, out).ok());
  EXPECT_EQ(CountOccurrences(out.str(), "<svg"), 4u);
}

}  // namespace
}  // namespace dlsched::sim
