// Out of GPU memory, live (daemon/core/oom_watchdog.h): real job processes, the fake NVML of
// test/fake_nvml/ for the GPU monitor the watchdog reads.
#include <stdlib.h>

#include <fstream>

#include "integration/fake_nvml_harness.h"

namespace dlsched::integration {
namespace {

class OomIntegrationTest : public FakeNvmlIntegrationTest {
 protected:
  // The pids a job's runs appended to `file`, one a line.
  std::vector<std::string> Pids(const std::string& file) {
    std::vector<std::string> pids;
    std::istringstream in(ReadTextFile(dir_ / file));
    for (std::string line; std::getline(in, line);) pids.push_back(line);
    return pids;
  }

  // The details of the logged events of `kind` about `job`, in order.
  std::vector<std::string> StoredEvents(const std::string& kind, int64_t job) {
    return StoredRows("SELECT detail FROM events WHERE kind = '" + kind +
                      "' AND job = " + std::to_string(job) + " ORDER BY seq");
  }

  std::string Metrics() {
    auto res = client_->Get("/metrics");
    return res ? res->body : "";
  }
};

TEST_F(OomIntegrationTest, AJobOverItsLimitIsRequeuedOutOfMemoryWhileItsPartnerRuns) {
  const std::string gpus =
      "gpu 40960 50 10 NVIDIA A100-SXM4-40GB\n"
      "gpu 40960 50 10 NVIDIA A100-SXM4-40GB\n";
  WriteNvmlState(gpus);
  StartServe({"--gpus", "auto", "--nvml-library", DLSCHED_FAKE_NVML, "--monitor-period", "0.05"});
  json greedy = Script("echo $$ >> greedy.pids; sleep 60");
  greedy["memory_mib"] = 1000;
  json partner = Script("echo $$ >> partner.pids; sleep 60");
  partner["memory_mib"] = 1000;
  const int64_t g = Submit(greedy).second["id"];
  const int64_t p = Submit(partner).second["id"];
  ASSERT_TRUE(WaitForState(g, "running"));
  ASSERT_TRUE(WaitForState(p, "running"));
  ASSERT_TRUE(Eventually([&] { return Pids("greedy.pids").size() == 1; }));
  ASSERT_TRUE(Eventually([&] { return Pids("partner.pids").size() == 1; }));
  const std::string first = Pids("greedy.pids")[0];
  const std::string partner_pid = Pids("partner.pids")[0];

  // Within its limit plus the slack (256 MiB): left alone.
  WriteNvmlState(gpus + "process 0 " + first + " 1200\nprocess 1 " + partner_pid + " 900\n");
  ASSERT_TRUE(Eventually([&] {
    const json usage = Job(g)["gpu_usage"];
    return usage.is_object() && usage.value("memory_mib", 0) == 1200;
  }));
  std::this_thread::sleep_for(milliseconds(300));  // 6 samples
  EXPECT_EQ(Job(g)["oom_restarts"], 0);
  EXPECT_EQ(Pids("greedy.pids").size(), 1u);

  // Over it: stopped (SIGTERM), requeued as out of memory, and started again.
  WriteNvmlState(gpus + "process 0 " + first + " 5000\nprocess 1 " + partner_pid + " 900\n");
  ASSERT_TRUE(Eventually([&] { return Job(g)["oom_restarts"] == 1; })) << Job(g).dump();
  ASSERT_TRUE(Eventually([&] { return Pids("greedy.pids").size() == 2; }));
  ASSERT_TRUE(WaitForState(g, "running"));
  const std::vector<std::string> failed = StoredEvents("launch_failed", g);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_TRUE(failed[0].starts_with("out of GPU memory: held 5000 MiB")) << failed[0];
  EXPECT_NE(failed[0].find("1000 MiB limit"), std::string::npos) << failed[0];
  EXPECT_TRUE(StoredEvents("finished", g).empty());
  EXPECT_NE(Metrics().find("dlsched_oom_restarts_total 1\n"), std::string::npos) << Metrics();
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("out of GPU memory"), std::string::npos);

  // Its partner ran on throughout, untouched.
  const json kept = Job(p);
  EXPECT_EQ(kept["state"], "running");
  EXPECT_EQ(kept["oom_restarts"], 0);
  EXPECT_EQ(kept["preemptions"], 0);
  EXPECT_EQ(Pids("partner.pids"), std::vector<std::string>{partner_pid});
  // The new run is not the old one's: the old pid's usage is no one's now.
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(Job(g)["oom_restarts"], 1);
}

// A job printing `message` on stderr and exiting 1 on its first `oom_runs` runs, then exiting
// with `last_exit` (its runs counted in a file of this test's directory).
json OomThenExit(const std::string& message, int oom_runs, int last_exit) {
  return {{"script",
           "n=$(( $(cat runs 2>/dev/null || echo 0) + 1 )); echo $n > runs; "
           "if [ $n -le " +
               std::to_string(oom_runs) + " ]; then echo '" + message + "' >&2; exit 1; fi; exit " +
               std::to_string(last_exit)},
          {"gpus", 1}};
}

TEST_F(OomIntegrationTest, AJobExitingWithCudaOutOfMemoryIsRequeuedNotFailed) {
  StartDaemon();
  json job =
      OomThenExit("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", 2, 0);
  job["workdir"] = dir_.string();
  const int64_t id = Submit(job).second["id"];
  ASSERT_TRUE(WaitForState(id, "succeeded")) << Job(id).dump();
  EXPECT_EQ(ReadTextFile(dir_ / "runs"), "3\n");
  const json record = Job(id);
  EXPECT_EQ(record["oom_restarts"], 2) << record.dump();
  const std::vector<std::string> failed = StoredEvents("launch_failed", id);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0],
            "out of GPU memory: it exited with exit code 1, its log reporting \"CUDA out of "
            "memory\"");
  EXPECT_EQ(StoredEvents("finished", id), std::vector<std::string>{"succeeded: exit code 0"});
}

TEST_F(OomIntegrationTest, AnotherFailureAfterAnOutOfMemoryRestartIsAFailure) {
  StartDaemon();
  // The second run's log still holds the first run's message: only its own part is read.
  json job = OomThenExit("CUDA_ERROR_OUT_OF_MEMORY", 1, 3);
  job["workdir"] = dir_.string();
  const int64_t id = Submit(job).second["id"];
  ASSERT_TRUE(WaitForState(id, "failed")) << Job(id).dump();
  EXPECT_EQ(Job(id)["oom_restarts"], 1);
  EXPECT_EQ(StoredEvents("finished", id), std::vector<std::string>{"failed: exit code 3"});
}

TEST_F(OomIntegrationTest, AJobOutOfMemoryEveryTimeFailsAfterFiveInARow) {
  StartDaemon();
  json job = OomThenExit("RuntimeError: CUDA error: out of memory", 100, 0);
  job["workdir"] = dir_.string();
  const int64_t id = Submit(job).second["id"];
  ASSERT_TRUE(WaitForState(id, "failed")) << Job(id).dump();
  EXPECT_EQ(ReadTextFile(dir_ / "runs"), "5\n");
  const json record = Job(id);
  EXPECT_EQ(record["oom_restarts"], 4);
  EXPECT_NE(record["reason"].get<std::string>().find("5 times in a row, not restarted"),
            std::string::npos)
      << record.dump();
}

// Under greedy-share two single-GPU jobs with small memory requests share the one GPU; the one
// whose observed usage goes over its request (its DLSCHED_GPU_MEMORY_LIMIT_MIB) plus the slack
// for --oom-samples samples in a row is requeued out of memory, its partner running on.
TEST_F(OomIntegrationTest, AJobSharingAGpuOverItsLimitIsRequeuedWhileItsPartnerRunsOn) {
  const std::string gpu = "gpu 40960 30 10 NVIDIA A100-SXM4-40GB\n";
  WriteNvmlState(gpu);
  StartServe({"--gpus", "auto", "--nvml-library", DLSCHED_FAKE_NVML, "--monitor-period", "0.05",
              "--profile", "greedy-share", "--oom-slack-mib", "100", "--oom-samples", "3"});
  json greedy = Script(
      "echo $$ >> greedy.pids; echo \"$CUDA_VISIBLE_DEVICES $DLSCHED_GPU_MEMORY_LIMIT_MIB\" > "
      "greedy.env; sleep 60");
  greedy["memory_mib"] = 4096;
  json partner = Script("echo $$ >> partner.pids; sleep 60");
  partner["memory_mib"] = 4096;
  const int64_t g = Submit(greedy).second["id"];
  ASSERT_TRUE(WaitForState(g, "running"));
  const int64_t p = Submit(partner).second["id"];
  ASSERT_TRUE(WaitForState(p, "running")) << Job(p).dump();
  ASSERT_EQ(Job(g)["placement"], Job(p)["placement"]) << "they share the GPU";
  ASSERT_TRUE(Eventually([&] { return Pids("greedy.pids").size() == 1; }));
  ASSERT_TRUE(Eventually([&] { return Pids("partner.pids").size() == 1; }));
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(dir_ / "greedy.env") == "0 4096\n"; }));
  const std::string first = Pids("greedy.pids")[0];
  const std::string partner_pid = Pids("partner.pids")[0];
  const json partner_before = Job(p);

  // Over its limit, but within the slack: left alone.
  WriteNvmlState(gpu + "process 0 " + first + " 4150\nprocess 0 " + partner_pid + " 3000\n");
  ASSERT_TRUE(Eventually([&] {
    const json usage = Job(g)["gpu_usage"];
    return usage.is_object() && usage.value("memory_mib", 0) == 4150;
  }));
  std::this_thread::sleep_for(milliseconds(300));  // 6 samples
  EXPECT_EQ(Job(g)["oom_restarts"], 0);

  // Over the limit and the slack: requeued out of memory after 3 samples in a row.
  WriteNvmlState(gpu + "process 0 " + first + " 4300\nprocess 0 " + partner_pid + " 3000\n");
  ASSERT_TRUE(Eventually([&] {
    EXPECT_EQ(Job(p)["state"], "running");
    return Job(g)["oom_restarts"] == 1;
  })) << Job(g).dump();
  const std::vector<std::string> failed = StoredEvents("launch_failed", g);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_TRUE(failed[0].starts_with("out of GPU memory: held 4300 MiB")) << failed[0];
  EXPECT_NE(failed[0].find("4096 MiB limit"), std::string::npos) << failed[0];
  // Requeued, it waits: after an out-of-memory end the policy gives it a GPU of its own, and the
  // only one is its partner's.
  ASSERT_TRUE(WaitForState(g, "queued")) << Job(g).dump();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(Job(g)["state"], "queued");
  EXPECT_EQ(Pids("greedy.pids").size(), 1u);

  // The partner ran on throughout: the same process, never stopped.
  const json kept = Job(p);
  EXPECT_EQ(kept["state"], "running");
  EXPECT_EQ(kept["pid"], partner_before["pid"]);
  EXPECT_EQ(kept["oom_restarts"], 0);
  EXPECT_EQ(kept["preemptions"], 0);
  EXPECT_EQ(Pids("partner.pids"), std::vector<std::string>{partner_pid});
}

}  // namespace
}  // namespace dlsched::integration
