#include "daemon/exec/gpu_monitor.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "daemon/exec/nvml.h"
#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

// Each test gets a state file for the fake NVML (test/fake_nvml/fake_nvml.cc), named by the
// variable it reads.
class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::FreshTestDir("dlsched_fake_nvml");
    state_ = dir_ / "state";
    setenv("DLSCHED_FAKE_NVML_STATE", state_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("DLSCHED_FAKE_NVML_STATE");
    std::filesystem::remove_all(dir_);
  }
  void WriteState(const std::string& text) {
    std::ofstream file(state_, std::ios::trunc);
    file << text;
  }

  std::filesystem::path dir_;
  std::filesystem::path state_;
};

TEST_F(FakeNvmlTest, DiscoversTheGpusTheFakeDeclares) {
  WriteState(
      "gpu 81920 0 0 NVIDIA H100 80GB HBM3\n"
      "gpu 81920 0 0 NVIDIA H100 80GB HBM3  # second\n");
  Result<Cluster> cluster = DiscoverNvidiaGpus(DLSCHED_FAKE_NVML);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  ASSERT_EQ(cluster->num_nodes(), 1);
  EXPECT_EQ(cluster->total_gpus(), 2);
  const NodeSpec& node = cluster->node(NodeId(0));
  EXPECT_EQ(cluster->gpu_type_name(node.gpus[0].type), "H100");
  EXPECT_EQ(node.gpus[1].memory_mib, 81920);
}

TEST_F(FakeNvmlTest, NoGpuOrNoDriverIsUnavailableSayingWhy) {
  WriteState("# no GPU\n");
  Result<Cluster> none = DiscoverNvidiaGpus(DLSCHED_FAKE_NVML);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("no GPU"), std::string::npos);

  std::filesystem::remove(state_);  // the fake's "driver not loaded"
  Result<Cluster> no_driver = DiscoverNvidiaGpus(DLSCHED_FAKE_NVML);
  ASSERT_FALSE(no_driver.ok());
  EXPECT_NE(no_driver.status().message().find("nvmlInit failed"), std::string::npos)
      << no_driver.status().message();

  Result<Cluster> no_library = DiscoverNvidiaGpus("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(no_library.ok());
  EXPECT_NE(no_library.status().message().find("--gpus 1x8xV100"), std::string::npos);
}

TEST_F(FakeNvmlTest, TheLibraryComesFromTheEnvironmentWhenNoneIsNamed) {
  WriteState("gpu 16384 0 0 Tesla V100-SXM2-16GB\n");
  setenv("DLSCHED_NVML_LIBRARY", DLSCHED_FAKE_NVML, 1);
  EXPECT_EQ(DefaultNvmlLibrary(), DLSCHED_FAKE_NVML);
  Result<Cluster> cluster = DiscoverNvidiaGpus();
  unsetenv("DLSCHED_NVML_LIBRARY");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->gpu_type_name(cluster->node(NodeId(0)).gpus[0].type), "V100");
  EXPECT_EQ(DefaultNvmlLibrary(), "libnvidia-ml.so.1");
}

TEST_F(FakeNvmlTest, MonitorSamplesMemoryUtilisationAndProcessesLive) {
  WriteState(
      "gpu 40960 75 30 NVIDIA A100-SXM4-40GB\n"
      "gpu 40960 0 0 NVIDIA A100-SXM4-40GB\n"
      "process 0 4242 1000\n"
      "process 0 4343 2500\n");
  Result<std::unique_ptr<NvmlGpuMonitor>> monitor = NvmlGpuMonitor::Open(DLSCHED_FAKE_NVML);
  ASSERT_TRUE(monitor.ok()) << monitor.status().ToString();
  Result<GpuSample> first = (*monitor)->Sample();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->devices.size(), 2u);
  const GpuDeviceSample& d0 = first->devices[0];
  EXPECT_EQ(d0.index, 0);
  EXPECT_EQ(d0.memory_total_mib, 40960);
  EXPECT_EQ(d0.memory_used_mib, 3500);
  EXPECT_DOUBLE_EQ(d0.utilization, 0.75);
  EXPECT_DOUBLE_EQ(d0.memory_utilization, 0.30);
  ASSERT_EQ(d0.processes.size(), 2u);
  EXPECT_EQ(d0.processes[0].pid, 4242);
  EXPECT_EQ(d0.processes[0].used_mib, 1000);
  EXPECT_EQ(d0.processes[1].used_mib, 2500);
  EXPECT_TRUE(first->devices[1].processes.empty());

  // More processes than the first buffer holds (8), on the other GPU, between two samples.
  std::string state = "gpu 40960 10 0 NVIDIA A100\ngpu 40960 20 0 NVIDIA A100\n";
  for (int p = 0; p < 20; ++p) {
    state += "process 1 " + std::to_string(1000 + p) + " " + std::to_string(100 + p) + "\n";
  }
  WriteState(state);
  Result<GpuSample> second = (*monitor)->Sample();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->devices[0].processes.empty());
  ASSERT_EQ(second->devices[1].processes.size(), 20u);
  EXPECT_EQ(second->devices[1].processes[19].pid, 1019);
  EXPECT_EQ(second->devices[1].processes[19].used_mib, 119);
  EXPECT_EQ(second->devices[1].memory_used_mib, 20 * 100 + 190);

  WriteState("gpu 40960 0 0 broken\nprocess 7 1 1\n");  // a process on a GPU that is not there
  EXPECT_FALSE((*monitor)->Sample().ok());
}

}  // namespace
}  // namespace dlsched::daemon
