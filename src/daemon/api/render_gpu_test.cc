#include "daemon/api/render_gpu.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

std::shared_ptr<const JobRecord> Record(uint32_t id, JobState state) {
  Result<JobRequest> request = ParseJobRequest(R"({"command": ["train"]})", "ann");
  DS_CHECK(request.ok());
  auto r = std::make_shared<JobRecord>();
  r->id = JobId(id);
  r->request = std::make_shared<const JobRequest>(*request);
  r->state = state;
  return r;
}

TEST(RenderGpuTest, UsageJsonIsNullUntilObserved) {
  EXPECT_TRUE(GpuUsageJson(nullptr).is_null());
  const JobGpuUsage usage{1000, 5000, 0.25, 7, AtSeconds(1000)};
  const nlohmann::json j = GpuUsageJson(&usage);
  EXPECT_EQ(j["memory_mib"], 1000);
  EXPECT_EQ(j["peak_memory_mib"], 5000);
  EXPECT_EQ(j["utilization"], 0.25);
  EXPECT_EQ(j["samples"], 7);
  EXPECT_EQ(j["sampled_at"], FormatTime(AtSeconds(1000)));
  EXPECT_EQ(j["recent"], nlohmann::json::array());
}

TEST(RenderGpuTest, UsageJsonListsTheRecentObservationsOldestFirst) {
  JobGpuUsage usage{1500, 2000, 0.5, 9, AtSeconds(20)};
  usage.recent = std::make_shared<const std::vector<GpuUsagePoint>>(
      std::vector<GpuUsagePoint>{{AtSeconds(10), 2000, 0.25}, {AtSeconds(20), 1500, 0.5}});
  const nlohmann::json recent = GpuUsageJson(&usage)["recent"];
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0]["at"], FormatTime(AtSeconds(10)));
  EXPECT_EQ(recent[0]["memory_mib"], 2000);
  EXPECT_EQ(recent[0]["utilization"], 0.25);
  EXPECT_EQ(recent[1]["memory_mib"], 1500);
}

// The monitor's devices are the GPUs of a one-node cluster; several nodes have none each.
TEST(RenderGpuTest, DeviceJsonOnAOneNodeClusterOnly) {
  const Cluster one = testing::MakeCluster("1x2xV100");
  Snapshot s;
  s.cluster = &one;
  EXPECT_TRUE(GpuDeviceJson(s, 0, 0).is_null());  // no sample yet
  GpuSample sample;
  sample.devices = {{0, 1024, 16384, 0.75, 0.25, {}}};
  s.gpu_devices = std::make_shared<const GpuSample>(sample);
  const nlohmann::json d = GpuDeviceJson(s, 0, 0);
  EXPECT_EQ(d["memory_used_mib"], 1024);
  EXPECT_EQ(d["memory_total_mib"], 16384);
  EXPECT_EQ(d["utilization"], 0.75);
  EXPECT_EQ(d["memory_utilization"], 0.25);
  EXPECT_TRUE(GpuDeviceJson(s, 0, 1).is_null());  // NVML reported no device 1
  const Cluster two = testing::MakeCluster("2x2xV100");
  s.cluster = &two;
  EXPECT_TRUE(GpuDeviceJson(s, 0, 0).is_null());
}

TEST(RenderGpuTest, MetricsOfTheDevicesAndTheRunningJobsOnly) {
  Snapshot s;
  EXPECT_EQ(GpuMetricsText(s), "");  // no sample yet
  s.jobs.Set(Record(0, JobState::kRunning));
  s.jobs.Set(Record(1, JobState::kSucceeded));
  s.jobs.Seal();
  s.gpu_usage = std::make_shared<const std::map<JobId, JobGpuUsage>>(std::map<JobId, JobGpuUsage>{
      {JobId(0), {1000, 5000, 0.5, 3, AtSeconds(1)}}, {JobId(1), {9, 9, 0.1, 1, AtSeconds(1)}}});
  GpuSample sample;
  sample.devices = {{0, 1024, 40960, 0.75, 0.1, {}}};
  s.gpu_devices = std::make_shared<const GpuSample>(sample);
  const std::string text = GpuMetricsText(s);
  for (const char* line : {
           "dlsched_gpu_memory_used_bytes{gpu=\"0\"} 1073741824\n",
           "dlsched_gpu_memory_total_bytes{gpu=\"0\"} 42949672960\n",
           "dlsched_gpu_utilization_ratio{gpu=\"0\"} 0.75\n",
           "dlsched_job_gpu_memory_bytes{job=\"0\"} 1048576000\n",
           "dlsched_job_gpu_memory_peak_bytes{job=\"0\"} 5242880000\n",
           "dlsched_job_gpu_utilization_ratio{job=\"0\"} 0.5\n",
           "# TYPE dlsched_job_gpu_memory_bytes gauge\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  EXPECT_EQ(text.find("job=\"1\""), std::string::npos) << "an ended job has no series";
}

}  // namespace
}  // namespace dlsched::daemon
