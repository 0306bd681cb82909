// `--gpus auto` and the GPU monitor on machines without a GPU: the daemon loads the fake NVML of
// test/fake_nvml/ (`--nvml-library`), whose GPUs and per-process usage this test writes.
#include <stdlib.h>

#include <fstream>

#include "integration/fake_nvml_harness.h"

namespace dlsched::integration {
namespace {

class GpuMonitorIntegrationTest : public FakeNvmlIntegrationTest {
 protected:
  // `dlsched serve --gpus auto` over the fake NVML, with `extra` flags.
  void StartAutoDaemon(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--gpus", "auto", "--nvml-library", DLSCHED_FAKE_NVML};
    args.insert(args.end(), extra.begin(), extra.end());
    StartServe(args);
  }

  json GpuUsage(int64_t id) { return Job(id)["gpu_usage"]; }
  // The latest observed memory of the job; -1 before any observation.
  int64_t ObservedMib(int64_t id) {
    const json usage = GpuUsage(id);
    return usage.is_object() ? usage.value("memory_mib", int64_t{-1}) : -1;
  }

  std::string Metrics() {
    auto res = client_->Get("/metrics");
    return res ? res->body : "";
  }

  int64_t StoredSamples(int64_t job) {
    const std::vector<std::string> rows =
        StoredRows("SELECT COUNT(*) FROM gpu_samples WHERE job = " + std::to_string(job));
    return rows.size() == 1 ? std::stoll(rows[0]) : -1;
  }
};

TEST_F(GpuMonitorIntegrationTest, GpusAutoSchedulesTheGpusNvmlReports) {
  WriteNvmlState(
      "gpu 40960 0 0 NVIDIA A100-SXM4-40GB\n"
      "gpu 40960 0 0 NVIDIA A100-SXM4-40GB\n");
  StartAutoDaemon({"--monitor-period", "0"});
  const json nodes = Get("/v1/nodes").second;
  EXPECT_EQ(nodes["gpus_total"], 2) << nodes.dump();
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("A100"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  auto [status, job] = Submit(Script("echo $CUDA_VISIBLE_DEVICES > visible; sleep 30", 2));
  ASSERT_EQ(status, 201);
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(dir_ / "visible") == "0,1\n"; }))
      << ReadTextFile(dir_ / "visible");
  // Three GPUs is more than NVML reported.
  EXPECT_EQ(Submit(Script("true", 3)).first, 400);
}

TEST_F(GpuMonitorIntegrationTest, WithoutNvmlGpusAutoFailsSayingWhatToDo) {
  // The fake's "driver not loaded": no state file.
  const RunResult run =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--gpus", "auto", "--nvml-library",
               DLSCHED_FAKE_NVML, "--workdir", (dir_ / "work").string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("nvmlInit failed"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--gpus 1x8xV100"), std::string::npos) << run.err;
}

TEST_F(GpuMonitorIntegrationTest, MonitorAttributesProcessesToJobsAndKeepsThemAcrossARestart) {
  WriteNvmlState("gpu 40960 0 0 NVIDIA A100-SXM4-40GB\ngpu 40960 0 0 NVIDIA A100-SXM4-40GB\n");
  StartAutoDaemon({"--monitor-period", "0.05"});
  // The job's shell is a descendant of the process the executor started: in its process group.
  auto [status, job] = Submit(Script("echo $$ > shell.pid; sleep 60", 1));
  ASSERT_EQ(status, 201);
  const int64_t id = job["id"];
  ASSERT_TRUE(WaitForState(id, "running"));
  ASSERT_TRUE(Eventually([&] { return !ReadTextFile(dir_ / "shell.pid").empty(); }));
  const std::string shell_pid = std::to_string(std::stoi(ReadTextFile(dir_ / "shell.pid")));
  EXPECT_TRUE(GpuUsage(id).is_null()) << "observed before any process used a GPU";

  // The job on GPU 0 (60% busy); on GPU 1 a process of no job (this test), which is ignored.
  auto state = [&](int64_t job_mib) {
    return "gpu 40960 60 20 NVIDIA A100-SXM4-40GB\ngpu 40960 90 50 NVIDIA A100-SXM4-40GB\n"
           "process 0 " +
           shell_pid + " " + std::to_string(job_mib) +
           "\n"
           "process 1 " +
           std::to_string(getpid()) + " 9000\n";
  };
  WriteNvmlState(state(3000));
  ASSERT_TRUE(Eventually([&] { return ObservedMib(id) == 3000; })) << GpuUsage(id).dump();
  WriteNvmlState(state(5000));
  ASSERT_TRUE(Eventually([&] { return ObservedMib(id) == 5000; }));
  WriteNvmlState(state(1000));
  ASSERT_TRUE(Eventually([&] { return ObservedMib(id) == 1000; }));
  const json usage = GpuUsage(id);
  EXPECT_EQ(usage["peak_memory_mib"], 5000) << usage.dump();
  EXPECT_DOUBLE_EQ(usage["utilization"].get<double>(), 0.6);
  EXPECT_GE(usage["samples"].get<int64_t>(), 3);
  EXPECT_TRUE(usage["sampled_at"].is_string());

  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find("dlsched_job_gpu_memory_bytes{job=\"" + std::to_string(id) + "\"} " +
                         std::to_string(int64_t{1000} << 20)),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("dlsched_job_gpu_memory_peak_bytes{job=\"" + std::to_string(id) + "\"} " +
                         std::to_string(int64_t{5000} << 20)),
            std::string::npos);
  EXPECT_NE(metrics.find("dlsched_gpu_memory_used_bytes{gpu=\"1\"} " +
                         std::to_string(int64_t{9000} << 20)),
            std::string::npos);
  EXPECT_NE(metrics.find("dlsched_gpu_utilization_ratio{gpu=\"1\"} 0.9"), std::string::npos);

  // kill -9, then a daemon without a monitor: what was observed comes back from the store.
  Kill9();
  const int64_t stored = StoredSamples(id);
  EXPECT_GE(stored, 3);
  StartAutoDaemon({"--monitor-period", "0"});
  ASSERT_TRUE(WaitForState(id, "running"));  // re-adopted
  const json restored = GpuUsage(id);
  EXPECT_EQ(restored["samples"], stored) << restored.dump();
  EXPECT_EQ(restored["peak_memory_mib"], 5000);
  EXPECT_EQ(restored["memory_mib"], 1000);

  // With the monitor again, the re-adopted job's process group is still the job's.
  Kill9();
  StartAutoDaemon({"--monitor-period", "0.05"});
  ASSERT_TRUE(WaitForState(id, "running"));
  WriteNvmlState(state(2000));
  ASSERT_TRUE(Eventually([&] { return ObservedMib(id) == 2000; })) << GpuUsage(id).dump();
  const json resumed = GpuUsage(id);
  EXPECT_GT(resumed["samples"].get<int64_t>(), stored);
  EXPECT_EQ(resumed["peak_memory_mib"], 5000);
}

TEST_F(GpuMonitorIntegrationTest, AMonitorWithoutNvmlOrTooFastIsRefusedAtStart) {
  const RunResult fast =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--gpus", "1x2xV100", "--monitor-period", "0.01",
               "--workdir", (dir_ / "work").string()});
  EXPECT_EQ(fast.code, 2);
  EXPECT_NE(fast.err.find("at least 0.05"), std::string::npos) << fast.err;

  const RunResult run = Dlsched(
      {"serve", "--listen", "127.0.0.1:0", "--gpus", "1x2xV100", "--monitor-period", "1",
       "--nvml-library", "/nonexistent/libnvidia-ml.so.1", "--workdir", (dir_ / "work").string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("--monitor-period 0"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace dlsched::integration
