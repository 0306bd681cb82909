#include "daemon/exec/nvml.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dlsched::daemon
