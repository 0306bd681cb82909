#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/report.h"
#include "support/report_runs.h"

namespace dlsched::sim {
namespace {

using testing::SyntheticRun;
using testing::WithDeadlines;

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
  EXPECT_FALSE(doc.contains("host_allocation"));  // the jobs' own requests
  JsonMeta cpu_aware = meta;
  cpu_aware.host_allocation = "cpu-aware";
  EXPECT_EQ(nlohmann::ordered_json::parse(RunsToJson(runs, cpu_aware))["host_allocation"],
            "cpu-aware");
  ASSERT_EQ(doc["runs"].size(), 2u);
  const std::vector<std::string> want_keys = {"policy",
                                              "oracle",
                                              "runtime_estimator",
                                              "speed_estimator",
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
  EXPECT_EQ(run0["oracle"], false);
  EXPECT_EQ(run0["runtime_estimator"], "history");
  EXPECT_EQ(run0["jobs"], 40);
  EXPECT_EQ(run0["completed"], runs[0].summary.completed);
  EXPECT_DOUBLE_EQ(run0["avg_jct_s"].get<double>(), runs[0].summary.avg_jct_s);
  EXPECT_DOUBLE_EQ(run0["wall_s"].get<double>(), 0.25);
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

TEST(RunsToJsonTest, EmptyRunsIsAnEmptyArrayAndBadUtf8IsReplaced) {
  RunResult run;
  run.policy = "bad\xff";
  ComputeSummary(run);
  const std::string json = RunsToJson({run}, JsonMeta{});
  ASSERT_TRUE(nlohmann::json::accept(json)) << json;
  EXPECT_EQ(nlohmann::json::parse(RunsToJson({}, JsonMeta{}))["runs"], nlohmann::json::array());
}

TEST(RunsToJsonTest, CycleTimesOnlyOnRequest) {
  RunResult run = SyntheticRun("fifo", 20, 1, 1);
  run.summary.cycle_times = {12, 0.001, 0.004, 0.005};
  const nlohmann::ordered_json plain = nlohmann::ordered_json::parse(RunsToJson({run}, {}));
  for (const char* key : {"cycles", "cycle_p50_s", "cycle_p99_s", "cycle_max_s"}) {
    EXPECT_FALSE(plain["runs"][0].contains(key)) << key;
  }
  const nlohmann::ordered_json timed = nlohmann::ordered_json::parse(RunsToJson({run}, {}, true));
  const auto& r = timed["runs"][0];
  std::vector<std::string> keys;
  for (const auto& [key, value] : r.items()) keys.push_back(key);
  const auto wall = std::find(keys.begin(), keys.end(), "wall_s");
  ASSERT_NE(wall, keys.end());
  EXPECT_EQ(std::vector<std::string>(wall + 1, wall + 5),
            (std::vector<std::string>{"cycles", "cycle_p50_s", "cycle_p99_s", "cycle_max_s"}));
  EXPECT_EQ(r["cycles"], 12);
  EXPECT_DOUBLE_EQ(r["cycle_p99_s"].get<double>(), 0.004);
}

}  // namespace
}  // namespace dlsched::sim
