#include "daemon/api/dashboard.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

TEST(DashboardTest, PathsNameTheEmbeddedFiles) {
  struct Case {
    const char* path;
    const char* name;  // nullptr: none
  };
  const Case cases[] = {
      {"/", "index.html"},      {"/ui", "index.html"},          {"/ui/", "index.html"},
      {"/ui/app.js", "app.js"}, {"/ui/style.css", "style.css"}, {"/ui/missing.js", nullptr},
      {"/v1/queue", nullptr},   {"/index.html", nullptr}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    const WebAsset* asset = FindWebAsset(c.path);
    if (c.name == nullptr) {
      EXPECT_EQ(asset, nullptr);
    } else {
      ASSERT_NE(asset, nullptr);
      EXPECT_EQ(asset->name, c.name);
      EXPECT_FALSE(asset->bytes.empty());
    }
  }
}

TEST(DashboardTest, EveryFileHasAKnownTypeAndNamesNoOtherHost) {
  ASSERT_FALSE(WebAssets().empty());
  for (const WebAsset& asset : WebAssets()) {
    SCOPED_TRACE(asset.name);
    EXPECT_NE(WebContentType(asset.name), "application/octet-stream");
    // No CDN, font or script of another site: the only absolute URL is the SVG namespace,
    // a name that is never fetched.
    std::string_view rest = asset.bytes;
    for (size_t at = rest.find("://"); at != std::string_view::npos; at = rest.find("://")) {
      EXPECT_EQ(rest.substr(at, 19), "://www.w3.org/2000/") << rest.substr(at, 60);
      rest.remove_prefix(at + 3);
    }
  }
  EXPECT_EQ(WebContentType("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(WebContentType("app.js"), "text/javascript; charset=utf-8");
}

TEST(DashboardTest, HeadersAllowTheOwnOriginOnly) {
  std::map<std::string_view, std::string_view> headers;
  for (const auto& [name, value] : WebHeaders()) headers[name] = value;
  const std::string_view csp = headers["Content-Security-Policy"];
  EXPECT_NE(csp.find("default-src 'none'"), std::string_view::npos);
  EXPECT_NE(csp.find("connect-src 'self'"), std::string_view::npos);
  EXPECT_NE(csp.find("script-src 'self'"), std::string_view::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string_view::npos);
  EXPECT_EQ(headers["X-Content-Type-Options"], "nosniff");
}

TEST(DashboardTest, HistoryKeepsTheLatestSamples) {
  History history([] { return std::shared_ptr<const Snapshot>(); }, std::chrono::seconds(15), 3);
  for (int i = 0; i < 5; ++i) {
    history.Add({AtSeconds(i * 15), i, 0, 1, 2 * i, 8});
  }
  const std::vector<HistorySample> samples = history.Samples();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples.front().at, AtSeconds(30));
  EXPECT_EQ(samples.back().queued, 4);
  const json j = HistoryJson(history);
  EXPECT_DOUBLE_EQ(j["interval_s"].get<double>(), 15);
  EXPECT_EQ(j["capacity"], 3);
  ASSERT_EQ(j["samples"].size(), 3u);
  EXPECT_EQ(j["samples"][2], json({{"at", FormatTime(AtSeconds(60))},
                                   {"queue_length", 4},
                                   {"pending", 0},
                                   {"running", 1},
                                   {"gpus_allocated", 8},
                                   {"gpus_total", 8},
                                   {"gpu_utilization", nullptr}}));
}

TEST(DashboardTest, ASampleHasTheMonitorsMeanUtilisation) {
  const Cluster cluster = testing::MakeCluster("1x2xV100");
  Snapshot s;
  s.cluster = &cluster;
  EXPECT_FALSE(SampleOf(s, AtSeconds(1)).gpu_utilization.has_value());  // no monitor
  GpuSample sample;
  sample.devices = {{0, 0, 16384, 0.25, 0, {}}, {1, 0, 16384, 0.75, 0, {}}};
  s.gpu_devices = std::make_shared<const GpuSample>(sample);
  const HistorySample h = SampleOf(s, AtSeconds(1));
  ASSERT_TRUE(h.gpu_utilization.has_value());
  EXPECT_DOUBLE_EQ(*h.gpu_utilization, 0.5);
  History history([] { return std::shared_ptr<const Snapshot>(); });
  history.Add(h);
  EXPECT_EQ(HistoryJson(history)["samples"][0]["gpu_utilization"], 0.5);
}

TEST(DashboardTest, HistoryStartsWithASampleAndStops) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  auto s = std::make_shared<Snapshot>();
  s->cluster = &cluster;
  s->gpus_allocated = 3;
  s->jobs_by_state[static_cast<size_t>(JobState::kRunning)] = 2;
  History history([s] { return s; }, std::chrono::hours(1), 10);
  history.Start();
  // The first sample is taken by Start itself; the next would come an hour later.
  history.Stop();
  const std::vector<HistorySample> samples = history.Samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].running, 2);
  EXPECT_EQ(samples[0].gpus_allocated, 3);
  EXPECT_EQ(samples[0].gpus_total, 4);
}

std::shared_ptr<const JobRecord> Job(uint32_t id, const char* queue, int gpus, JobState state) {
  Result<JobRequest> request =
      ParseJobRequest(json({{"command", {"x"}}, {"gpus", gpus}, {"queue", queue}}).dump(), "ann");
  DS_CHECK(request.ok()) << request.status().ToString();
  auto r = std::make_shared<JobRecord>();
  r->id = JobId(id);
  r->request = std::make_shared<const JobRequest>(*request);
  r->state = state;
  return r;
}

TEST(DashboardTest, TenantsShowQuotaUseAndBorrowing) {
  const Cluster cluster = testing::MakeCluster("2x4xV100");
  Snapshot s;
  s.cluster = &cluster;
  s.profile = "p";
  s.jobs.Set(Job(0, "team-a", 4, JobState::kRunning));
  s.jobs.Set(Job(1, "team-a", 1, JobState::kQueued));
  s.jobs.Set(Job(2, "team-b", 2, JobState::kRunning));
  s.jobs.Set(Job(3, "team-b", 2, JobState::kSucceeded));  // history: not counted
  s.jobs.Set(Job(4, "", 1, JobState::kSuspended));
  const std::map<std::string, PipelineConfig::Quota, std::less<>> quotas = {
      {"team-a", {0.25, 1.0}}, {"team-q", {0.5, 0.5}}, {"*", {0.125, 0.5}}};
  const json t = TenantsJson(s, quotas);
  EXPECT_EQ(t["gpus_total"], 8);
  ASSERT_EQ(t["tenants"].size(), 4u);
  struct Case {
    const char* name;
    int guaranteed_gpus;
    int cap_gpus;
    int held;
    int borrowed;
    int running;
    int waiting;
  };
  const Case cases[] = {{"", 1, 4, 0, 0, 0, 1},
                        {"team-a", 2, 8, 4, 2, 1, 1},
                        {"team-b", 1, 4, 2, 1, 1, 0},
                        {"team-q", 4, 4, 0, 0, 0, 0}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.name);
    const json& x = t["tenants"][i];
    EXPECT_EQ(x["name"], c.name);
    EXPECT_EQ(x["guaranteed_gpus"], c.guaranteed_gpus);
    EXPECT_EQ(x["cap_gpus"], c.cap_gpus);
    EXPECT_EQ(x["gpus_held"], c.held);
    EXPECT_EQ(x["gpus_borrowed"], c.borrowed);
    EXPECT_EQ(x["jobs_running"], c.running);
    EXPECT_EQ(x["jobs_waiting"], c.waiting);
  }
  EXPECT_DOUBLE_EQ(t["tenants"][1]["guaranteed_share"].get<double>(), 0.25);
}

TEST(DashboardTest, TenantsWithoutQuotasHaveNone) {
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  Snapshot s;
  s.cluster = &cluster;
  s.jobs.Set(Job(0, "team-a", 2, JobState::kRunning));
  const json t = TenantsJson(s, {});
  ASSERT_EQ(t["tenants"].size(), 1u);
  EXPECT_TRUE(t["tenants"][0]["guaranteed_share"].is_null());
  EXPECT_TRUE(t["tenants"][0]["cap_gpus"].is_null());
  EXPECT_TRUE(t["tenants"][0]["gpus_borrowed"].is_null());
  EXPECT_EQ(t["tenants"][0]["gpus_held"], 2);
}

}  // namespace
}  // namespace dlsched::daemon
