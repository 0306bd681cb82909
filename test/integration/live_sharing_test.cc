// Live GPU sharing (docs/sharing.md, "Running it live"): `dlsched serve --profile greedy-share`
// over the fake NVML of test/fake_nvml/, with real job processes. Two single-GPU jobs share the
// machine's one GPU, a kill -9 of the daemon while they share re-adopts both as shared, and the
// replay of the run (monitor samples included) decides exactly as the daemon did.
#include <stdlib.h>

#include <fstream>

#include "integration/fake_nvml_harness.h"

namespace dlsched::integration {
namespace {

// One A100 of 40 GiB.
constexpr const char* kGpu = "gpu 40960 30 10 NVIDIA A100-SXM4-40GB\n";
constexpr int64_t kGpuMib = 40960;

class LiveSharingIntegrationTest : public FakeNvmlIntegrationTest {
 protected:
  void SetUp() override {
    FakeNvmlIntegrationTest::SetUp();
    WriteNvmlState(kGpu);
  }

  // `dlsched serve --profile greedy-share --gpus auto` over the fake NVML, sampling it often.
  void StartSharingDaemon() {
    StartServe({"--gpus", "auto", "--nvml-library", DLSCHED_FAKE_NVML, "--monitor-period", "0.05",
                "--profile", "greedy-share"});
  }

  // A single-GPU job asking for `memory_mib` of GPU memory (so the policy knows it fits beside
  // another) that records its shell's pid and what dlsched told it, then runs until
  // <dir>/<name>.stop exists.
  std::pair<int, json> SubmitJob(const std::string& name, int64_t memory_mib) {
    json job = Script("echo $$ > " + name + ".pid; echo \"$CUDA_VISIBLE_DEVICES " +
                      "$DLSCHED_GPU_MEMORY_LIMIT_MIB\" > " + name + ".env; while [ ! -e " + name +
                      ".stop ]; do sleep 0.05; done");
    job["name"] = name;
    job["memory_mib"] = memory_mib;
    return Submit(job);
  }
  // "<CUDA_VISIBLE_DEVICES> <DLSCHED_GPU_MEMORY_LIMIT_MIB>" as the job `name` saw them.
  std::string SeenEnv(const std::string& name) {
    std::string text;
    Eventually([&] {
      text = ReadTextFile(dir_ / (name + ".env"));
      return !text.empty() && text.back() == '\n';
    });
    return text;
  }
  std::string ShellPid(const std::string& name) {
    std::string text;
    Eventually([&] {
      text = ReadTextFile(dir_ / (name + ".pid"));
      return !text.empty() && text.back() == '\n';
    });
    return text.empty() ? "" : text.substr(0, text.size() - 1);
  }
  void Finish(const std::string& name) { std::ofstream(dir_ / (name + ".stop")) << "\n"; }
  std::string StoredShare(int64_t id) {
    const std::vector<std::string> rows =
        StoredRows("SELECT share FROM jobs WHERE id = " + std::to_string(id));
    return rows.size() == 1 ? rows[0] : "?";
  }
  int64_t StoredGpuSampleEvents() {
    const std::vector<std::string> rows =
        StoredRows("SELECT COUNT(*) FROM events WHERE kind = 'gpu_sample'");
    return rows.size() == 1 ? std::stoll(rows[0]) : -1;
  }
};

TEST_F(LiveSharingIntegrationTest, TwoSingleGpuJobsShareTheGpuUnderGreedyShare) {
  StartSharingDaemon();
  const auto [status_a, a] = SubmitJob("a", 8192);
  ASSERT_EQ(status_a, 201) << a.dump();
  ASSERT_TRUE(WaitForState(a["id"], "running"));
  const auto [status_b, b] = SubmitJob("b", 8192);
  ASSERT_EQ(status_b, 201) << b.dump();
  ASSERT_TRUE(WaitForState(b["id"], "running")) << Job(b["id"]).dump();
  EXPECT_EQ(Job(a["id"])["state"], "running");
  EXPECT_EQ(Job(a["id"])["placement"], Job(b["id"])["placement"]);
  // The same device, each bounded by its memory request.
  EXPECT_EQ(SeenEnv("a"), "0 8192\n");
  EXPECT_EQ(SeenEnv("b"), "0 8192\n");
  EXPECT_EQ(StoredShare(a["id"]), "packed");
  EXPECT_EQ(StoredShare(b["id"]), "packed");
  // A third job finds no room: two jobs per GPU at most.
  const auto [status_c, c] = SubmitJob("c", 8192);
  ASSERT_EQ(status_c, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Job(c["id"])["state"], "queued");
  Finish("a");
  ASSERT_TRUE(WaitForState(a["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(c["id"], "running")) << "c joins b once a has left";
  EXPECT_EQ(Job(c["id"])["placement"], Job(b["id"])["placement"]);
}

// kill -9 of the daemon while two jobs share the GPU: the restarted daemon re-adopts both as
// sharing it, and the replay of both runs, the monitor's samples included, decides exactly as
// the daemon did.
TEST_F(LiveSharingIntegrationTest, KillNineMidShareReadoptsBothAndTheReplayIsIdentical) {
  StartSharingDaemon();
  const int64_t a = SubmitJob("a", 6144).second["id"];
  ASSERT_TRUE(WaitForState(a, "running"));
  const int64_t b = SubmitJob("b", 6144).second["id"];
  ASSERT_TRUE(WaitForState(b, "running"));
  // The monitor sees both jobs' processes on the GPU: their samples feed the knowledge.
  const std::string pid_a = ShellPid("a");
  const std::string pid_b = ShellPid("b");
  ASSERT_FALSE(pid_a.empty());
  ASSERT_FALSE(pid_b.empty());
  WriteNvmlState(std::string(kGpu) + "process 0 " + pid_a + " 5000\nprocess 0 " + pid_b +
                 " 4000\n");
  ASSERT_TRUE(Eventually([&] { return StoredGpuSampleEvents() >= 4; }));
  const json before_a = Job(a);
  const json before_b = Job(b);

  Kill9();
  StartSharingDaemon();
  ASSERT_TRUE(WaitForState(a, "running"));
  ASSERT_TRUE(WaitForState(b, "running"));
  EXPECT_EQ(Job(a)["pid"], before_a["pid"]) << "re-adopted, not restarted";
  EXPECT_EQ(Job(b)["pid"], before_b["pid"]);
  EXPECT_EQ(Job(a)["placement"], Job(b)["placement"]);
  EXPECT_EQ(StoredShare(a), "packed");
  EXPECT_EQ(StoredShare(b), "packed");
  // Still shared, so still full: a third job waits, and joins when one of them ends.
  const int64_t c = SubmitJob("c", 6144).second["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Job(c)["state"], "queued");
  Finish("a");
  ASSERT_TRUE(WaitForState(a, "succeeded"));
  ASSERT_TRUE(WaitForState(c, "running"));
  EXPECT_EQ(Job(c)["placement"], Job(b)["placement"]);
  const std::string pid_c = ShellPid("c");
  WriteNvmlState(std::string(kGpu) + "process 0 " + pid_b + " 4500\nprocess 0 " + pid_c +
                 " 3000\n");
  ASSERT_TRUE(Eventually([&] { return !Job(c)["gpu_usage"].is_null(); }));
  Finish("b");
  Finish("c");
  ASSERT_TRUE(WaitForState(b, "succeeded"));
  ASSERT_TRUE(WaitForState(c, "succeeded"));
  ASSERT_EQ(StopDaemon(), 0);

  const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("2 daemon runs (profile greedy-share)"), std::string::npos)
      << replay.out;
  EXPECT_NE(replay.out.find("decisions identical"), std::string::npos) << replay.out;
  EXPECT_EQ(replay.out.find("divergence"), std::string::npos) << replay.out;
}

// A job nobody described is taken to fill its GPU until the monitor has seen it; once seen
// small, a waiting job joins it (at the next cycle: here a submission's). The replay decides so
// only with the logged samples: without them it diverges.
TEST_F(LiveSharingIntegrationTest, ObservedDemandLetsAJobJoinAndTheReplayUsesTheSamples) {
  StartSharingDaemon();
  json undescribed = Script(
      "echo $$ > a.pid; echo \"$CUDA_VISIBLE_DEVICES $DLSCHED_GPU_MEMORY_LIMIT_MIB\" > a.env; "
      "while [ ! -e a.stop ]; do sleep 0.05; done");
  const int64_t a = Submit(undescribed).second["id"];
  ASSERT_TRUE(WaitForState(a, "running"));
  const int64_t b = SubmitJob("b", 8192).second["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(Job(b)["state"], "queued") << "a may fill the GPU, for all anyone knows";

  WriteNvmlState(std::string(kGpu) + "process 0 " + ShellPid("a") + " 2000\n");
  ASSERT_TRUE(Eventually([&] { return !Job(a)["gpu_usage"].is_null(); }));
  const int64_t c = SubmitJob("c", 8192).second["id"];  // an arrival: a cycle
  ASSERT_TRUE(WaitForState(b, "running")) << Job(b).dump();
  EXPECT_EQ(Job(b)["placement"], Job(a)["placement"]);
  EXPECT_EQ(Job(c)["state"], "queued");
  // Without a request, a alone on the GPU was bounded by the whole GPU; b by its request.
  EXPECT_EQ(SeenEnv("a"), "0 " + std::to_string(kGpuMib) + "\n");
  EXPECT_EQ(SeenEnv("b"), "0 8192\n");
  Finish("a");
  Finish("b");
  Finish("c");
  ASSERT_TRUE(WaitForState(c, "succeeded"));
  ASSERT_EQ(StopDaemon(), 0);

  const std::string db = (dir_ / "state.db").string();
  const RunResult replay = Dlsched({"simulate", "--replay", db});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("decisions identical"), std::string::npos) << replay.out;
  EXPECT_EQ(replay.out.find("divergence"), std::string::npos) << replay.out;
  Sql("DELETE FROM events WHERE kind = 'gpu_sample'");
  const RunResult blind = Dlsched({"simulate", "--replay", db});
  EXPECT_NE(blind.out.find("divergence"), std::string::npos) << blind.out;
}

TEST_F(LiveSharingIntegrationTest, MpsWithoutItsControlProgramIsRefusedAtStart) {
  // A PATH without the control program, also on a machine that has it.
  const std::string path = getenv("PATH") != nullptr ? getenv("PATH") : "";
  setenv("PATH", dir_.c_str(), 1);
  const RunResult run =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--gpus", "1x2xV100", "--profile",
               "greedy-share", "--share-enforcer", "mps", "--workdir", (dir_ / "work").string()});
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("nvidia-cuda-mps-control is not on PATH"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace dlsched::integration
