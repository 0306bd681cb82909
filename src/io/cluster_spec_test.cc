#include "io/cluster_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dlsched {
namespace {

namespace fs = std::filesystem;

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR "../shared/traces"
#endif

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("dlsched_cluster_" + std::string(info->test_suite_name()) +
                                         "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& content) const {
    const fs::path file = path_ / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

const NodeSpec& NodeNamed(const Cluster& cluster, const std::string& name) {
  for (const NodeSpec& node : cluster.nodes()) {
    if (node.name == name) return node;
  }
  ADD_FAILURE() << "no node " << name;
  static const NodeSpec kNone;
  return kNone;
}

TEST(ClusterShorthandTest, BuildsNodesRacksAndLabels) {
  Result<Cluster> c = ParseClusterSpec("10x8xV100", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 10);
  EXPECT_EQ(c->total_gpus(), 80);
  EXPECT_EQ(c->num_racks(), 2);  // 8 + 2
  const NodeSpec& first = c->node(NodeId(0));
  EXPECT_EQ(first.name, "n0000");
  EXPECT_EQ(c->rack_name(first.rack), "r000");
  ASSERT_EQ(first.gpus.size(), 8u);
  for (const GpuSpec& gpu : first.gpus) {
    EXPECT_EQ(c->gpu_type_name(gpu.type), "V100");
    EXPECT_EQ(gpu.memory_mib, 32768);
    EXPECT_EQ(gpu.interconnect_group, 0);
  }
  EXPECT_EQ(first.labels.at("gpu"), "V100");
  EXPECT_EQ(first.labels.at("rack"), "r000");
  const NodeSpec& ninth = c->node(NodeId(8));
  EXPECT_EQ(ninth.name, "n0008");
  EXPECT_EQ(c->rack_name(ninth.rack), "r001");
  EXPECT_EQ(c->Describe(), "10x8xV100 (80 GPUs, 10 nodes, 2 racks)");
}

TEST(ClusterShorthandTest, EachTermStartsANewRack) {
  Result<Cluster> c = ParseClusterSpec("9x4xK80+9x4xP100+ 9x4xV100 ", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 27);
  EXPECT_EQ(c->num_racks(), 6);
  EXPECT_EQ(c->num_gpu_types(), 3);
  const NodeSpec& p100 = c->node(NodeId(9));
  EXPECT_EQ(p100.name, "n0009");
  EXPECT_EQ(c->rack_name(p100.rack), "r002");
  EXPECT_EQ(c->gpu_type_name(p100.gpus[0].type), "P100");
  EXPECT_EQ(p100.gpus[0].memory_mib, 16384);
  EXPECT_EQ(c->node(NodeId(0)).gpus[0].memory_mib, 12288);
  EXPECT_EQ(c->Describe(), "9x4xK80+9x4xP100+9x4xV100 (108 GPUs, 27 nodes, 6 racks)");
}

// The last case: 15625 x 64 is the most GPUs a cluster may have; one more is refused, not built.
TEST(ClusterShorthandTest, BadTermsNameTheTermAndTheForm) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"64x8", "'64x8'"},
      {"0x8xV100", "'0x8xV100'"},
      {"4x0xV100", "GPUS"},
      {"4x65xV100", "GPUS"},
      {"4x8x", "TYPE"},
      {"4x8xV100+", "''"},
      {"ax8xV100", "NODES"},
      {"4x8xV 100", "TYPE"},
      {"4x8xV100+2x2", "'2x2'"},
      {"65xV100", "GPUS"},
      {"4x8x100", "TYPE"},
      {"xV100", "GPUS"},
      {"15625x64xV100+1x1xT4", "more than 1000000 GPUs"},
  };
  for (const auto& [spec, want] : cases) {
    SCOPED_TRACE(spec);
    Result<Cluster> c = ParseClusterSpec(spec, "");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("NODESxGPUSxTYPE"), std::string::npos);
  }
  EXPECT_FALSE(ParseClusterSpec("", "").ok());
}

TEST(ClusterShorthandTest, GpusByTypeIsOneNode) {
  struct Case {
    const char* spec;
    int nodes;
    int gpus;
    const char* type;
  };
  const Case cases[] = {{"8xV100", 1, 8, "V100"},
                        {"4xRTX6000", 1, 4, "RTX6000"},
                        {"2x8xRTX6000", 2, 16, "RTX6000"},
                        {"8xA100+2x4xT4", 3, 16, "A100"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    Result<Cluster> cluster = ParseClusterSpec(c.spec, "");
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    EXPECT_EQ(cluster->num_nodes(), c.nodes);
    EXPECT_EQ(cluster->total_gpus(), c.gpus);
    EXPECT_EQ(cluster->gpu_type_name(cluster->node(NodeId(0)).gpus[0].type), c.type);
  }
}

TEST(ClusterSpecTest, AKnownTypeInAnotherCaseIsRefused) {
  Result<Cluster> shorthand = ParseClusterSpec("16x8xv100", "");
  ASSERT_FALSE(shorthand.ok());
  EXPECT_EQ(shorthand.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shorthand.status().message().find("GPU type 'v100' is spelt 'V100'"), std::string::npos)
      << shorthand.status().message();
  Result<Cluster> json =
      ParseClusterJson(R"({"racks": [{"nodes": [{"gpus": 8, "gpu_type": "a100"}]}]})", "c.json");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("racks[0].nodes[0].gpu_type: GPU type 'a100' is spelt "
                                         "'A100'"),
            std::string::npos)
      << json.status().message();
}

TEST(ClusterSpecTest, DescribesTypesWithoutThroughputData) {
  EXPECT_EQ(KnownGpuTypes(),
            (std::vector<std::string>{"A100", "H100", "H200", "K80", "P100", "T4", "V100"}));
  Result<Cluster> known = ParseClusterSpec("2x8xV100+1x4xK80", "");
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(DescribeUnknownGpuTypes(*known), "");
  Result<Cluster> typo = ParseClusterSpec("2x8xV1000+1x4xMI250", "");
  ASSERT_TRUE(typo.ok()) << typo.status().ToString();
  EXPECT_EQ(DescribeUnknownGpuTypes(*typo),
            "GPU type 'V1000' has no throughput data (known: A100, H100, H200, K80, P100, T4, "
            "V100); did you mean V100?; GPU type 'MI250' has no throughput data (known: A100, "
            "H100, H200, K80, P100, T4, V100)");
}

// Building a cluster is linear in its size (node names, racks and label classes are indexed):
// 100,000 nodes in 12,500 racks were quadratic before, minutes instead of a fraction of a second.
TEST(ClusterShorthandTest, LargeClustersBuild) {
  Result<Cluster> c = ParseClusterSpec("100000x8xV100", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 100000);
  EXPECT_EQ(c->num_racks(), 12500);
  EXPECT_EQ(c->num_label_classes(), 12500);
  EXPECT_EQ(c->node(NodeId(99999)).name, "n99999");
  EXPECT_EQ(c->rack_name(c->node(NodeId(99999)).rack), "r12499");
}

TEST(DefaultGpuMemoryTest, Table) {
  EXPECT_EQ(DefaultGpuMemoryMib("V100"), 32768);
  EXPECT_EQ(DefaultGpuMemoryMib("a100"), 81920);
  EXPECT_EQ(DefaultGpuMemoryMib("H100"), 81920);
  EXPECT_EQ(DefaultGpuMemoryMib("K80"), 12288);
  EXPECT_EQ(DefaultGpuMemoryMib("T4"), 16384);
  EXPECT_EQ(DefaultGpuMemoryMib("MI250"), 16384);
}

void ExpectPhillyShape(const Cluster& c) {
  EXPECT_EQ(c.num_racks(), 11);
  EXPECT_EQ(c.num_nodes(), 352);
  EXPECT_EQ(c.total_gpus(), 352 * 8);
  EXPECT_EQ(c.rack_name(RackId(0)), "6214e9");
  const NodeSpec& first = c.node(NodeId(0));
  EXPECT_EQ(first.labels.at("vc"), "6214e9");
  EXPECT_EQ(first.labels.at("rack"), "6214e9");
  EXPECT_EQ(first.labels.at("gpu"), "V100");
  const NodeSpec& second_vc = c.node(NodeId(64));
  EXPECT_EQ(second_vc.labels.at("vc"), "7f04ca");
  EXPECT_EQ(second_vc.name, "n0064");
}

TEST(PhillyPresetTest, BuiltInSizesWithoutTraces) {
  TempDir empty;
  Result<Cluster> c = ParseClusterSpec("philly", empty.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectPhillyShape(*c);
  Result<Cluster> no_dir = ParseClusterSpec("philly", "");
  ASSERT_TRUE(no_dir.ok());
  EXPECT_EQ(no_dir->Describe(), c->Describe());
}

TEST(PhillyPresetTest, ReadsTheHeliosVcFile) {
  const std::string traces = DLSCHED_TRACES_DIR;
  if (!fs::exists(traces + "/helios/philly_vc.csv")) {
    GTEST_SKIP() << "traces not found at " << traces;
  }
  Result<Cluster> c = ParseClusterSpec("philly", traces);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectPhillyShape(*c);
}

TEST(PhillyPresetTest, UsesAndChecksAGivenVcFile) {
  TempDir dir;
  dir.Write("helios/philly_vc.csv", "vc,node num\naaaaaa,2\nbbbbbb,1\n");
  Result<Cluster> c = PhillyCluster(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 3);
  EXPECT_EQ(c->rack_name(c->node(NodeId(2)).rack), "bbbbbb");

  const std::string bad = dir.Write("helios/philly_vc.csv", "vc,node num\naaaaaa,two\n");
  c = PhillyCluster(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind(bad + ":2: bad node count 'two'", 0), 0u)
      << c.status().message();
}

constexpr char kJson[] = R"({
  "description": "two racks",
  "racks": [
    {"name": "fast",
     "nodes": [{"name": "a", "count": 2, "gpus": 8, "gpu_type": "A100", "nvlink_groups": 2,
                "cpus": 96, "memory_mib": 1048576, "labels": {"zone": "z1", "rack": "custom"}}]},
    {"nodes": [{"gpus": 4, "gpu_type": "T4", "gpu_memory_mib": 15000},
               {"name": "solo", "gpus": 1}]}
  ]
})";

TEST(ClusterJsonTest, ParsesTheDocumentedFormat) {
  TempDir dir;
  const std::string path = dir.Write("cluster.json", kJson);
  Result<Cluster> c = ParseClusterSpec(path, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_nodes(), 4);
  EXPECT_EQ(c->num_racks(), 2);
  EXPECT_EQ(c->total_gpus(), 8 + 8 + 4 + 1);

  const NodeSpec& a1 = NodeNamed(*c, "a-1");
  EXPECT_EQ(c->rack_name(a1.rack), "fast");
  EXPECT_EQ(a1.cpus, 96);
  EXPECT_EQ(a1.memory_mib, 1048576);
  EXPECT_EQ(a1.gpus[0].memory_mib, 81920);
  EXPECT_EQ(a1.gpus[3].interconnect_group, 0);
  EXPECT_EQ(a1.gpus[4].interconnect_group, 1);
  EXPECT_EQ(a1.labels.at("zone"), "z1");
  EXPECT_EQ(a1.labels.at("rack"), "custom");  // explicit labels win
  EXPECT_EQ(a1.labels.at("gpu"), "A100");

  const NodeSpec& t4 = NodeNamed(*c, "n0002");  // unnamed: the cluster-wide position
  EXPECT_EQ(c->rack_name(t4.rack), "r001");
  EXPECT_EQ(t4.gpus[0].memory_mib, 15000);
  EXPECT_EQ(t4.labels.at("rack"), "r001");
  const NodeSpec& solo = NodeNamed(*c, "solo");
  EXPECT_EQ(c->gpu_type_name(solo.gpus[0].type), "V100");
}

TEST(ClusterJsonTest, ErrorsNameTheElement) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "invalid JSON"},
      {"[]", "want a JSON object"},
      {R"({"racks": []})", "racks: want a non-empty array"},
      {R"({"racks": [{"nodes": [{"gpus": 8}]}], "extra": 1})", "unknown key 'extra'"},
      {R"({"racks": [{"nodes": [{"gpus": 0}]}]})", "racks[0].nodes[0].gpus: want an integer"},
      {R"({"racks": [{"nodes": [{"gpus": "8"}]}]})", "racks[0].nodes[0].gpus"},
      {R"({"racks": [{"nodes": [{"count": 2}]}]})", "racks[0].nodes[0].gpus: required"},
      {R"({"racks": [{"nodes": [{"gpus": 6, "nvlink_groups": 4}]}]})", "do not divide"},
      {R"({"racks": [{"nodes": [{"gpus": 8, "gpus_type": "A100"}]}]})",
       "racks[0].nodes[0]: unknown key 'gpus_type'"},
      {R"({"racks": [{"nodes": [{"gpus": 8, "labels": {"k": 1}}]}]})", "labels.k"},
      {R"({"racks": [{"nodes": []}]})", "racks[0].nodes: want a non-empty array"},
      {R"({"racks": [{"name": "x", "nodes": [{"gpus": 1}]}, {"name": "x", "nodes": [{"gpus": 1}]}]})",
       "duplicate rack name 'x'"},
      {R"({"racks": [{"nodes": [{"name": "a", "gpus": 1}, {"name": "a", "gpus": 1}]}]})",
       "duplicate node name 'a'"},
      {R"({"racks": [{"nodes": [{"count": 15625, "gpus": 64}, {"gpus": 1}]}]})",
       "racks[0].nodes[1]: the cluster would have more than 1000000 GPUs"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    Result<Cluster> c = ParseClusterJson(text, "c.json");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().message().rfind("c.json: ", 0), 0u) << c.status().message();
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
  }
  Result<Cluster> missing = ParseClusterSpec("/nonexistent/dir/c.json", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dlsched
