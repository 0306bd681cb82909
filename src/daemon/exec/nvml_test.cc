#include "daemon/exec/nvml.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "support/test_files.h"

namespace dlsched::daemon {
namespace {

TEST(NvmlTest, ShortTypeNames) {
  struct Case {
    std::string nvml;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"NVIDIA A100-SXM4-80GB", "A100"},
      {"Tesla V100-SXM2-32GB", "V100"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA H100 80GB HBM3", "H100"},
      {"Tesla K80", "K80"},
      {"", "GPU"},
  };
  for (const Case& c : cases) EXPECT_EQ(ShortGpuTypeName(c.nvml), c.want) << c.nvml;
}

TEST(NvmlTest, DiscoveryEitherFindsGpusOrSaysWhyNot) {
  Result<Cluster> cluster = DiscoverNvidiaGpus();
  if (cluster.ok()) {
    EXPECT_EQ(cluster->num_nodes(), 1);
    EXPECT_GT(cluster->total_gpus(), 0);
  } else {
    EXPECT_EQ(cluster.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(cluster.status().message().find("--gpus"), std::string::npos);
  }
}

TEST(NvmlTest, SysfsNamesOfBusIds) {
  EXPECT_EQ(SysfsPciName("00000000:3B:00.0").value(), "0000:3b:00.0");
  EXPECT_EQ(SysfsPciName("00000001:3B:00.0").value(), "0001:3b:00.0");
  EXPECT_EQ(SysfsPciName("0001:af:1f.7").value(), "0001:af:1f.7");
  for (const char* bad : {"", "3B:00.0", "00010000:3B:00.0", "0000:3B:00", "0000:3B:00.0/..",
                          "0000:3B:0x.0", "../../../etc/passwd"}) {
    const Result<std::string> name = SysfsPciName(bad);
    ASSERT_FALSE(name.ok()) << bad;
    EXPECT_EQ(name.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(name.status().message().find("bad PCI bus id"), std::string::npos);
  }
}

// A sysfs tree and a fake NVML state file of the test's own.
class GpuTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::FreshTestDir("dlsched_gpu_topology");
    setenv("DLSCHED_FAKE_NVML_STATE", (dir_ / "state").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("DLSCHED_FAKE_NVML_STATE");
    std::filesystem::remove_all(dir_);
  }
  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::trunc) << text;
  }
  void WriteLocalCpus(const std::string& device, const std::string& list) {
    Write(dir_ / "sys/bus/pci/devices" / device / "local_cpulist", list);
  }
  std::string sysfs() const { return (dir_ / "sys").string(); }

  std::filesystem::path dir_;
};

TEST_F(GpuTopologyTest, LocalCpuListsAreReadAndCheckedNamingTheFile) {
  WriteLocalCpus("0000:3b:00.0", "0-3,8-11\n");
  EXPECT_EQ(LocalCpusOfPciDevice(sysfs(), "00000000:3B:00.0").value(),
            (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));

  const Result<std::vector<int>> missing = LocalCpusOfPciDevice(sysfs(), "0000:5e:00.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("0000:5e:00.0/local_cpulist"), std::string::npos);

  WriteLocalCpus("0000:5e:00.0", "0-3,x\n");
  const Result<std::vector<int>> bad = LocalCpusOfPciDevice(sysfs(), "0000:5e:00.0");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("0000:5e:00.0/local_cpulist: bad CPU list"),
            std::string::npos);

  WriteLocalCpus("0000:5e:00.0", std::string(5000, '1'));
  const Result<std::vector<int>> huge = LocalCpusOfPciDevice(sysfs(), "0000:5e:00.0");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("over 4 KiB"), std::string::npos);

  WriteLocalCpus("0000:5e:00.0", "0-99999\n");
  EXPECT_FALSE(LocalCpusOfPciDevice(sysfs(), "0000:5e:00.0").ok());
}

// Sysfs first, NVML's affinity where sysfs has no list, unknown where neither knows.
TEST_F(GpuTopologyTest, EachGpusCoresComeFromSysfsElseNvml) {
  Write(dir_ / "state",
        "gpu 81920 0 0 NVIDIA H100\n"
        "gpu 81920 0 0 NVIDIA H100\n"
        "gpu 81920 0 0 NVIDIA H100\n"
        "busid 0 00000000:3B:00.0\n"
        "affinity 0 9 10\n"  // sysfs wins
        "busid 1 00000000:5E:00.0\n"
        "affinity 1 4 5 6 7 70\n");
  WriteLocalCpus("0000:3b:00.0", "0-3\n");
  Result<GpuTopology> topology = DiscoverGpuTopology(DLSCHED_FAKE_NVML, sysfs());
  ASSERT_TRUE(topology.ok()) << topology.status().message();
  ASSERT_EQ(topology->cores.size(), 3u);
  EXPECT_EQ(topology->cores[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(topology->cores[1], (std::vector<int>{4, 5, 6, 7, 70}));
  EXPECT_TRUE(topology->cores[2].empty());
  EXPECT_TRUE(topology->known());
  EXPECT_EQ(topology->description.substr(0, 48),
            "GPU 0: cores 0-3 (sysfs), GPU 1: cores 4-7,70 (N");
  EXPECT_NE(topology->description.find("GPU 2: unknown (NVML nvmlDeviceGetPciInfo failed"),
            std::string::npos)
      << topology->description;

  Write(dir_ / "state", "gpu 81920 0 0 NVIDIA H100\n");
  topology = DiscoverGpuTopology(DLSCHED_FAKE_NVML, sysfs());
  ASSERT_TRUE(topology.ok());
  EXPECT_FALSE(topology->known());

  std::filesystem::remove(dir_ / "state");
  topology = DiscoverGpuTopology(DLSCHED_FAKE_NVML, sysfs());
  ASSERT_FALSE(topology.ok());
  EXPECT_EQ(topology.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace dlsched::daemon
