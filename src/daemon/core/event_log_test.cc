#include "daemon/core/event_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/profile.h"
#include "support/builders.h"

namespace dlsched::daemon {
namespace {

TEST(EventLogTest, ReportsReadBackAsTheSameEvents) {
  const JobId job(7);
  const std::vector<Event> events = {
      JobFinished{job, JobState::kSucceeded, "exit code 0"},
      JobFinished{job, JobState::kFailed, "could not be started 3 times; last: spawn: x: y"},
      JobFinished{job, JobState::kKilled, ""},
      JobSuspended{job, 0},
      JobSuspended{job, 1234.5678901234567},
      JobSuspended{job, 1.0 / 3},
      JobLaunchFailed{job, "process lost while the daemon was down (no exit status)"},
      JobLaunchFailed{job, "out of GPU memory: held 5000 MiB", false, /*out_of_memory=*/true},
      JobCancelRequested{job},
  };
  for (const Event& event : events) {
    const std::string detail = EventDetail(event);
    SCOPED_TRACE(std::string(EventKind(event)) + " " + detail);
    Result<Event> back = ParseEvent(EventKind(event), job, detail);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->index(), event.index());
    EXPECT_EQ(EventDetail(*back), detail);
    if (const auto* s = std::get_if<JobSuspended>(&event)) {
      EXPECT_EQ(std::get<JobSuspended>(*back).iterations_done, s->iterations_done);  // exact
    }
    if (const auto* f = std::get_if<JobLaunchFailed>(&event)) {
      EXPECT_EQ(std::get<JobLaunchFailed>(*back).out_of_memory, f->out_of_memory);
    }
  }
  EXPECT_EQ(EventDetail(JobSuspended{job, 100}), "iterations_done=100");
}

TEST(EventLogTest, RefusesMalformedReports) {
  struct Case {
    std::string kind;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"finished", "exit code 0"},
      {"finished", "running: x"},
      {"finished", "rejected: x"},
      {"suspended", "iterations=3"},
      {"suspended", "iterations_done=x"},
      {"suspended", "iterations_done=inf"},
      {"launch", "n0000:0"},
      {"restart", "3 jobs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kind + " " + c.detail);
    EXPECT_EQ(ParseEvent(c.kind, JobId(1), c.detail).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(EventLogTest, TheClusterReadsBackWithTheSameIds) {
  Cluster cluster = testing::MakeCluster("2x4xV100+1x8xA100");
  // A mixed node, as NVML may find: GPU types, memory and groups per GPU, labels, CPUs.
  const GpuTypeId t4 = cluster.InternGpuType("T4");
  const RackId rack = cluster.InternRack("lab");
  NodeSpec mixed{"box",           rack, {{t4, 16384, 0}, {GpuTypeId(0), 32768, 1}},
                 {{"zone", "a"}}, 48,   262144};
  ASSERT_TRUE(cluster.AddNode(mixed).ok());

  Result<Cluster> back = ParseClusterLogJson(ClusterLogJson(cluster));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ClusterLogJson(*back), ClusterLogJson(cluster));
  EXPECT_EQ(back->Describe(), cluster.Describe());
  ASSERT_EQ(back->num_nodes(), cluster.num_nodes());
  const NodeSpec& node = back->node(NodeId(3));
  EXPECT_EQ(node.name, "box");
  EXPECT_EQ(back->rack_name(node.rack), "lab");
  EXPECT_EQ(node.cpus, 48);
  EXPECT_EQ(node.memory_mib, 262144);
  EXPECT_EQ(node.labels.at("zone"), "a");
  ASSERT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(back->gpu_type_name(node.gpus[0].type), "T4");
  EXPECT_EQ(node.gpus[1].memory_mib, 32768);
  EXPECT_EQ(node.gpus[1].interconnect_group, 1);

  for (const char* bad : {R"({"gpu_types": ["V100"], "racks": ["r"], "nodes": [
                             {"name": "a", "rack": 1, "labels": {}, "cpus": 0,
                              "memory_mib": 0, "gpus": []}]})",
                          R"({"gpu_types": ["V100"], "racks": ["r"], "nodes": [
                             {"name": "a", "rack": 0, "labels": {}, "cpus": 0,
                              "memory_mib": 0, "gpus": [[3, 1, 0]]}]})",
                          R"({"racks": []})"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ParseClusterLogJson(nlohmann::json::parse(bad)).status().code(),
              StatusCode::kInvalidArgument);
  }
}

TEST(EventLogTest, TheStartRecordHoldsWhatAFreshSchedulerNeeds) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  // Every kind of profile: a pipeline, a round-based one, sharing over a base.
  for (const char* name : {"tiresias", "hetero-las", "greedy-share"}) {
    SCOPED_TRACE(name);
    Result<PolicyProfile> profile = LoadPolicyProfile(name);
    ASSERT_TRUE(profile.ok());
    Result<StartRecord> record = ParseStartDetail(
        StartDetail(*profile, cluster, 42, 10, 3, "round 7\nx 1", "/var/lib/profiles.json"));
    ASSERT_TRUE(record.ok()) << record.status().ToString();
    EXPECT_EQ(PolicyProfileToJson(record->profile), PolicyProfileToJson(*profile));
    EXPECT_EQ(record->profile.kind.index(), profile->kind.index());
    EXPECT_EQ(ClusterLogJson(record->cluster), ClusterLogJson(cluster));
    EXPECT_EQ(record->seed, 42u);
    EXPECT_EQ(record->jobs, 10);
    EXPECT_EQ(record->running, 3);
    EXPECT_EQ(record->policy_state, "round 7\nx 1");
    EXPECT_EQ(record->predictor, "/var/lib/profiles.json");
  }
  // A start record of an older version: no policy state, no predictor.
  nlohmann::json old = nlohmann::json::parse(
      StartDetail(*LoadPolicyProfile("fifo"), cluster, 1, 0, 0, "ignored", "ignored"));
  old.erase("policy_state");
  old.erase("predictor");
  Result<StartRecord> record = ParseStartDetail(old.dump());
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->policy_state, "");
  EXPECT_EQ(record->predictor, "");
  for (const char* bad : {"", "3 jobs, 1 running", R"({"seed": 1, "jobs": 0, "running": 0})"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ParseStartDetail(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace dlsched::daemon
