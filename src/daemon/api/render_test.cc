#include "daemon/api/render.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

std::shared_ptr<const NodeHoldings> Holdings(std::vector<std::vector<GpuHolding>> gpus,
                                             std::vector<bool> offline = {},
                                             std::vector<NodeHoldings::HostHeld> host_held = {}) {
  return std::make_shared<const NodeHoldings>(
      NodeHoldings{std::move(gpus), std::move(offline), std::move(host_held)});
}

JobRecord Running() {
  Result<JobRequest> request = ParseJobRequest(
      R"({"command": ["train"], "gpus": 2, "name": "r", "iterations": 100})", "ann");
  DS_CHECK(request.ok());
  request->spec.submit_time = AtSeconds(1000);
  JobRecord r;
  r.id = JobId(4);
  r.request = std::make_shared<const JobRequest>(*request);
  r.state = JobState::kRunning;
  r.placement_text = "n0:0,1";
  r.segment_start = AtSeconds(1010);
  r.first_start = AtSeconds(1010);
  r.pid = 77;
  return r;
}

TEST(RenderTest, RunningJobWithProgressAndEta) {
  const JobRecord r = Running();
  const json j = JobJson(r, AtSeconds(1030), Progress{25, 0});
  EXPECT_EQ(j["id"], 4);
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["user"], "ann");
  EXPECT_EQ(j["placement"], "n0:0,1");
  EXPECT_EQ(j["pid"], 77);
  EXPECT_DOUBLE_EQ(j["run_time_s"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(j["attained_gpu_s"].get<double>(), 40);
  EXPECT_EQ(j["submit_time"], "1970-01-01T00:16:40Z");
  EXPECT_TRUE(j["finish_time"].is_null());
  EXPECT_DOUBLE_EQ(j["progress"]["fraction"].get<double>(), 0.25);
  // 20 s for a quarter: 60 s to go.
  EXPECT_EQ(j["progress"]["eta"], FormatTime(AtSeconds(1090)));
  EXPECT_EQ(j["progress"]["eta_basis"], "observed");
  EXPECT_EQ(j["spec"]["command"], json::array({"train"}));
  EXPECT_EQ(j["kind"], "training");
  EXPECT_FALSE(j.contains("pending_reason"));
}

TEST(RenderTest, TimelineListsTheJobsEventsOldestFirst) {
  JobRecord r = Running();
  EXPECT_EQ(JobTimelineJson(r), json::array());
  r.timeline = std::make_shared<const std::vector<JobTimelineEvent>>(
      std::vector<JobTimelineEvent>{{AtSeconds(1000), "submit", ""},
                                    {AtSeconds(1001), "launch", "n0:0,1"},
                                    {AtSeconds(1005), "preempt", "migration"}});
  const json t = JobTimelineJson(r);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], json({{"at", FormatTime(AtSeconds(1000))}, {"kind", "submit"}, {"detail", ""}}));
  EXPECT_EQ(t[1]["detail"], "n0:0,1");
  EXPECT_EQ(t[2]["kind"], "preempt");
  EXPECT_EQ(t[2]["detail"], "migration");
}

TEST(RenderTest, AServiceShowsItsKindAndLoad) {
  JobRecord r = Running();
  Result<JobRequest> request = ParseJobRequest(
      R"({"command": ["serve"], "gpus": 4, "kind": "service", "service_load": "0:1;28800:4"})",
      "ann");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  r.request = std::make_shared<const JobRequest>(*request);
  const json j = JobJson(r, AtSeconds(1030), std::nullopt);
  EXPECT_EQ(j["kind"], "service");
  EXPECT_EQ(j["spec"]["service_load"], "0:1;28800:4");
}

TEST(RenderTest, APredictionGivesTheEtaAndShowsItsCorrection) {
  // 100 iterations of the job's own; its runtime estimate (JobSpec work) is the default.
  const JobRecord r = Running();
  const double work = r.request->spec.iterations;
  // The corrector found it runs at 1.5x its prediction of 2x its estimate's speed.
  const JobPrediction prediction{3.0, 1.5};
  const json j = JobJson(r, AtSeconds(1030), Progress{25, 0}, nullptr, &prediction);
  const json& p = j["progress"];
  EXPECT_EQ(p["eta_basis"], "predictor");
  EXPECT_DOUBLE_EQ(p["correction"].get<double>(), 1.5);
  // 3 s of work per second is 3 x 100 / work iterations per second.
  EXPECT_DOUBLE_EQ(p["predicted_iters_per_s"].get<double>(), 300 / work);
  // Three quarters of the work left at 3 s of work per second.
  EXPECT_EQ(p["eta"], FormatTime(AtSeconds(1030) + Seconds(0.75 * work / 3)));

  // Without a prediction, or once the job no longer runs: today's rule, nothing predicted.
  const json plain = JobJson(r, AtSeconds(1030), Progress{25, 0});
  EXPECT_EQ(plain["progress"]["eta_basis"], "observed");
  EXPECT_TRUE(plain["progress"]["correction"].is_null());
  EXPECT_TRUE(plain["progress"]["predicted_iters_per_s"].is_null());
  JobRecord ended = r;
  ended.state = JobState::kSucceeded;
  const json done = JobJson(ended, AtSeconds(1030), Progress{100, 0}, nullptr, &prediction);
  EXPECT_TRUE(done["progress"]["eta"].is_null());
  EXPECT_TRUE(done["progress"]["eta_basis"].is_null());
  EXPECT_TRUE(done["progress"]["correction"].is_null());
}

TEST(RenderTest, TheEstimatedEndIsTheEta) {
  const JobRecord r = Running();
  const JobPrediction prediction{3.0, 1.5};
  for (const JobPrediction* p : {static_cast<const JobPrediction*>(nullptr), &prediction}) {
    const std::optional<Timestamp> end = EstimatedEnd(r, AtSeconds(1030), Progress{25, 0}, p);
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(FormatTime(*end),
              JobJson(r, AtSeconds(1030), Progress{25, 0}, nullptr, p)["progress"]["eta"]);
  }
  EXPECT_FALSE(EstimatedEnd(r, AtSeconds(1030), std::nullopt, &prediction).has_value());
  EXPECT_FALSE(EstimatedEnd(r, AtSeconds(1030), Progress{0, 0}, nullptr).has_value());
}

TEST(RenderTest, StartEstimatesCountTheGpusRunningJobsFreeForEachJobAndThoseAhead) {
  // 1 GPU free now; running jobs end at 100 s (2 GPUs, listed last: ends are sorted), 50 s (1).
  const std::vector<std::pair<Timestamp, int>> ends = {{AtSeconds(100), 2}, {AtSeconds(50), 1}};
  // 2 GPUs: free at the first end (1 + 1). 1 more: 3 needed, 4 free at 100 s. Then 2 more: 5
  // needed, never. Then 1: never, behind it.
  const std::vector<std::optional<Timestamp>> starts = EstimateStarts({2, 1, 2, 1}, 1, ends);
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(starts[0], AtSeconds(50));
  EXPECT_EQ(starts[1], AtSeconds(100));
  EXPECT_FALSE(starts[2].has_value());
  EXPECT_FALSE(starts[3].has_value());
  // Enough free already: no earlier than the first end (the job waits for something that ends).
  EXPECT_EQ(EstimateStarts({1}, 4, ends)[0], AtSeconds(50));
  // Nothing estimated to end: unknown, however much is free.
  EXPECT_FALSE(EstimateStarts({1}, 4, {})[0].has_value());
}

TEST(RenderTest, WaitingJobCarriesItsReason) {
  JobRecord r = Running();
  r.state = JobState::kQueued;
  r.queued_since = AtSeconds(1000);
  const PendingReason why{r.id, "waiting for 2 GPUs (0 free)", PendingCause::kGpusBusy};
  const json j = JobJson(r, AtSeconds(1030), std::nullopt, &why);
  EXPECT_EQ(j["pending_reason"], "waiting for 2 GPUs (0 free)");
  EXPECT_EQ(j["pending_cause"], "gpus-busy");
  EXPECT_TRUE(j["placement"].is_null());
  EXPECT_TRUE(j["pid"].is_null());
  EXPECT_TRUE(j["progress"].is_null());
  EXPECT_EQ(j["queued_since"], FormatTime(AtSeconds(1000)));
  EXPECT_FALSE(JobJson(r, AtSeconds(1030)).contains("pending_cause"));
}

TEST(RenderTest, QueueEntriesCarryReasonAndCause) {
  JobRecord a = Running();
  a.state = JobState::kQueued;
  JobRecord b = a;
  b.id = JobId(5);
  b.state = JobState::kSuspended;
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  Snapshot s;
  s.cluster = &cluster;
  s.profile = "priority-quota";
  s.jobs_by_state[static_cast<size_t>(JobState::kQueued)] = 1;
  s.jobs_by_state[static_cast<size_t>(JobState::kSuspended)] = 1;
  QueueEntry waits_for_gpus{3, &b, "", PendingCause::kOther};
  waits_for_gpus.estimated_start = AtSeconds(20);
  const json q = QueueJson(
      {{1, &a, "tenant 'x' holds 4 GPUs; its cap is 4", PendingCause::kQuota}, waits_for_gpus},
      AtSeconds(10), s);
  EXPECT_TRUE(q["jobs"][0]["estimated_start"].is_null());
  EXPECT_EQ(q["jobs"][1]["estimated_start"], FormatTime(AtSeconds(20)));
  EXPECT_EQ(q["length"], 2);
  EXPECT_EQ(q["policy"], "priority-quota");
  ASSERT_EQ(q["jobs"].size(), 2u);
  struct Case {
    int position;
    int id;
    const char* state;
    const char* reason;
    const char* cause;
  };
  const Case cases[] = {{1, 4, "queued", "tenant 'x' holds 4 GPUs; its cap is 4", "quota"},
                        {3, 5, "suspended", "", "other"}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE(i);
    const json& e = q["jobs"][i];
    EXPECT_EQ(e["position"], cases[i].position);
    EXPECT_EQ(e["id"], cases[i].id);
    EXPECT_EQ(e["state"], cases[i].state);
    EXPECT_EQ(e["reason"], cases[i].reason);
    EXPECT_EQ(e["cause"], cases[i].cause);
  }
}

TEST(RenderTest, ErrorsNameTheFieldAndMapToHttp) {
  const json e = ErrorJson(InvalidArgument("gpus: must be at least 1, got 0"));
  EXPECT_EQ(e["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(e["error"]["field"], "gpus");
  EXPECT_FALSE(ErrorJson(InvalidArgument("Not a field: x"))["error"].contains("field"));
  EXPECT_FALSE(ErrorJson(NotFound("gpus: x"))["error"].contains("field"));
  struct Case {
    StatusCode code;
    int http;
  };
  for (const Case& c : std::vector<Case>{{StatusCode::kInvalidArgument, 400},
                                         {StatusCode::kNotFound, 404},
                                         {StatusCode::kFailedPrecondition, 409},
                                         {StatusCode::kResourceExhausted, 429},
                                         {StatusCode::kUnavailable, 503},
                                         {StatusCode::kIoError, 500}}) {
    EXPECT_EQ(HttpStatus(c.code), c.http) << StatusCodeName(c.code);
  }
}

TEST(RenderTest, Metrics) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  Snapshot s;
  s.cluster = &cluster;
  s.nodes = Holdings({{{{JobId(4)}, {}}, {{JobId(4)}, {}}, {}, {}}});
  s.gpus_allocated = 2;
  s.jobs_by_state[static_cast<size_t>(JobState::kRunning)] = 1;
  s.jobs_by_state[static_cast<size_t>(JobState::kQueued)] = 3;
  s.metrics.RecordCycle(0.0003);
  s.metrics.submissions = 4;
  s.metrics.host_memory_kills = 2;
  s.host_enforcement = "cgroup-v1";
  const std::string text = MetricsText(s, AtSeconds(10), 1 << 20);
  for (const char* line :
       {"dlsched_host_memory_kills_total 2\n", "dlsched_host_enforcement{mode=\"cgroup-v1\"} 1\n",
        "dlsched_queue_length 3\n", "dlsched_running_jobs 1\n", "dlsched_gpus_allocated 2\n",
        "dlsched_submissions_total 4\n",
        "dlsched_scheduling_cycle_seconds_bucket{le=\"0.00025\"} 0\n",
        "dlsched_scheduling_cycle_seconds_bucket{le=\"0.0005\"} 1\n",
        "dlsched_scheduling_cycle_seconds_bucket{le=\"+Inf\"} 1\n",
        "dlsched_scheduling_cycle_seconds_count 1\n",
        "dlsched_scheduling_cycle_max_seconds 0.0003\n",
        "# TYPE dlsched_scheduling_cycle_seconds histogram\n",
        "process_resident_memory_bytes 1048576\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

TEST(RenderTest, NodesAndJobsShowCpusAndHostMemory) {
  Cluster cluster;
  NodeSpec node;
  node.name = "n0";
  node.rack = cluster.InternRack("r0");
  node.gpus = {{cluster.InternGpuType("V100"), 16384, 0}};
  node.cpus = 16;
  node.memory_mib = 65536;
  ASSERT_TRUE(cluster.AddNode(node).ok());
  Snapshot s;
  s.cluster = &cluster;
  s.nodes = Holdings({{{}}}, {false}, {{6, 4096}});
  s.host_enforcement = "affinity";
  const json nodes = NodesJson(s, Principal{"root", Role::kAdmin});
  EXPECT_EQ(nodes["host_enforcement"], "affinity");
  EXPECT_EQ(nodes["nodes"][0]["cpus"], 16);
  EXPECT_EQ(nodes["nodes"][0]["cpus_allocated"], 6);
  EXPECT_EQ(nodes["nodes"][0]["memory_mib"], 65536);
  EXPECT_EQ(nodes["nodes"][0]["memory_mib_allocated"], 4096);
  Result<JobRequest> request = ParseJobRequest(
      R"({"command": ["x"], "gpus": 0, "cpus": 6, "host_memory_mib": 4096})", "ann");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  JobRecord record;
  record.id = JobId(0);
  record.request = std::make_shared<const JobRequest>(*request);
  const json job = JobJson(record, AtSeconds(0), std::nullopt, nullptr, nullptr);
  EXPECT_EQ(job["gpus"], 0);
  EXPECT_EQ(job["cpus"], 6);
  EXPECT_EQ(job["host_memory_mib"], 4096);
}

// Services' GPUs are listed and counted like training jobs'; a user sees the ids of their own
// jobs only.
TEST(RenderTest, NodesShowServicesAndHideOtherUsersJobs) {
  const Cluster cluster = testing::MakeCluster("2x2xV100");
  Snapshot s;
  s.cluster = &cluster;
  auto add = [&s](const std::string& user, const std::string& extra) {
    Result<JobRequest> request =
        ParseJobRequest(R"({"command": ["x"], "gpus": 1)" + extra + "}", user);
    DS_CHECK(request.ok()) << request.status().ToString();
    auto r = std::make_shared<JobRecord>();
    r->id = JobId(static_cast<uint32_t>(s.jobs.size()));
    r->request = std::make_shared<const JobRequest>(*request);
    r->state = JobState::kRunning;
    s.jobs.Set(r);
  };
  add("ann", "");                                               // job 0
  add("bob", R"(, "kind": "service", "service_load": "0:1")");  // job 1
  s.jobs.Seal();
  s.nodes = Holdings({{{{JobId(0)}, {}}, {{JobId(1)}, {}}}, {{}, {{JobId(0)}, {}}}});
  s.gpus_allocated = 2;  // the scheduler's count may lag (a service's held room); not shown

  const json admin = NodesJson(s, Principal{"root", Role::kAdmin});
  EXPECT_EQ(admin["gpus_total"], 4);
  EXPECT_EQ(admin["gpus_allocated"], 3);
  EXPECT_EQ(admin["nodes"][0]["gpus_allocated"], 2);
  EXPECT_EQ(admin["nodes"][1]["gpus_allocated"], 1);
  const json& n0 = admin["nodes"][0]["gpus"];
  EXPECT_EQ(n0[0]["job"], 0);
  EXPECT_EQ(n0[0]["holder"], "training");
  EXPECT_EQ(n0[1]["job"], 1);
  EXPECT_EQ(n0[1]["holder"], "service");
  const json& free_gpu = admin["nodes"][1]["gpus"][0];
  EXPECT_FALSE(free_gpu["allocated"].get<bool>());
  EXPECT_TRUE(free_gpu["job"].is_null());
  EXPECT_TRUE(free_gpu["holder"].is_null());

  const json ann = NodesJson(s, Principal{"ann", Role::kUser});
  EXPECT_EQ(ann["gpus_allocated"], 3);
  EXPECT_EQ(ann["nodes"][0]["gpus"][0]["job"], 0);
  const json& bobs = ann["nodes"][0]["gpus"][1];
  EXPECT_TRUE(bobs["allocated"].get<bool>());
  EXPECT_TRUE(bobs["job"].is_null());
  EXPECT_EQ(bobs["holder"], "other");
  EXPECT_EQ(ann.dump().find("\"job\":1"), std::string::npos) << ann.dump();
}

// Each GPU's state: free, allocated, shared by several jobs, lent by a service, or offline with
// its node; the jobs a viewer may see; the monitor's sample of it.
TEST(RenderTest, NodesShowEachGpusStateHoldersAndDevice) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  Snapshot s;
  s.cluster = &cluster;
  for (const char* user : {"ann", "bob", "ann"}) {
    const std::string extra =
        s.jobs.size() == 2 ? R"(, "kind": "service", "service_load": "0:1")" : "";
    Result<JobRequest> request =
        ParseJobRequest(R"({"command": ["x"], "gpus": 1)" + extra + "}", user);
    DS_CHECK(request.ok()) << request.status().ToString();
    auto r = std::make_shared<JobRecord>();
    r->id = JobId(static_cast<uint32_t>(s.jobs.size()));
    r->request = std::make_shared<const JobRequest>(*request);
    r->state = JobState::kRunning;
    s.jobs.Set(std::move(r));
  }
  s.jobs.Seal();
  // GPU 0: jobs 0 and 1 share it; 1: job 0 alone; 2: service 2's, lent and free; 3: free.
  const std::vector<std::vector<GpuHolding>> gpus = {
      {{{JobId(0), JobId(1)}, {}}, {{JobId(0)}, {}}, {{}, JobId(2)}, {}}};
  s.nodes = Holdings(gpus, {false});
  GpuSample sample;
  sample.devices = {{0, 3000, 16384, 0.5, 0.25, {}}, {1, 1000, 16384, 0.125, 0.0, {}}};
  s.gpu_devices = std::make_shared<const GpuSample>(sample);

  const json admin = NodesJson(s, Principal{"root", Role::kAdmin});
  const json& g = admin["nodes"][0]["gpus"];
  EXPECT_FALSE(admin["nodes"][0]["offline"].get<bool>());
  EXPECT_EQ(g[0]["state"], "shared");
  EXPECT_EQ(g[0]["holders"], 2);
  EXPECT_EQ(g[0]["jobs"], json::array({0, 1}));
  EXPECT_EQ(g[0]["job"], 0);
  EXPECT_EQ(g[0]["device"]["memory_used_mib"], 3000);
  EXPECT_EQ(g[0]["device"]["memory_total_mib"], 16384);
  EXPECT_EQ(g[0]["device"]["utilization"], 0.5);
  EXPECT_EQ(g[1]["state"], "allocated");
  EXPECT_EQ(g[1]["jobs"], json::array({0}));
  EXPECT_EQ(g[2]["state"], "lent");
  EXPECT_EQ(g[2]["lent_by"], 2);
  EXPECT_FALSE(g[2]["allocated"].get<bool>());
  EXPECT_TRUE(g[2]["device"].is_null());  // the sample has no device 2
  EXPECT_EQ(g[3]["state"], "free");
  EXPECT_EQ(g[3]["jobs"], json::array());
  EXPECT_EQ(admin["gpus_allocated"], 2);  // a shared GPU counts once

  // Bob sees that ann's job shares his GPU, not which one, and nothing of ann's service.
  const json bob = NodesJson(s, Principal{"bob", Role::kUser});
  const json& b = bob["nodes"][0]["gpus"];
  EXPECT_EQ(b[0]["state"], "shared");
  EXPECT_EQ(b[0]["holders"], 2);
  EXPECT_EQ(b[0]["jobs"], json::array({1}));
  EXPECT_EQ(b[0]["holder"], "other");
  EXPECT_TRUE(b[0]["job"].is_null());
  EXPECT_EQ(b[2]["state"], "lent");
  EXPECT_TRUE(b[2]["lent_by"].is_null());

  // An offline node's GPUs are offline, its jobs still listed.
  s.nodes = Holdings(gpus, {true});
  const json down = NodesJson(s, Principal{"root", Role::kAdmin});
  EXPECT_TRUE(down["nodes"][0]["offline"].get<bool>());
  for (const json& gpu : down["nodes"][0]["gpus"]) EXPECT_EQ(gpu["state"], "offline");
  EXPECT_EQ(down["nodes"][0]["gpus"][1]["jobs"], json::array({0}));
}

}  // namespace
}  // namespace dlsched::daemon
