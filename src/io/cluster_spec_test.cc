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

// `spec` is refused as InvalidArgument, naming `want` and the expected form `form`.
void ExpectShorthandError(const std::string& spec, const std::string& want,
                          const std::string& form) {
  SCOPED_TRACE(spec);
  Result<Cluster> c = ParseClusterSpec(spec, "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(form), std::string::npos) << c.status().message();
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
  for (const auto& [spec, want] : cases) ExpectShorthandError(spec, want, "NODESxGPUSxTYPE");
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

TEST(ClusterShorthandTest, HostSuffixesCpuOnlyNodesAndPerGpuDefaults) {
  Result<Cluster> c = ParseClusterSpec("2x8xV100:96c:1024g+1xcpu:64c:256g+per-gpu:12c:96g", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->num_nodes(), 3);
  EXPECT_EQ(c->num_racks(), 2);
  const NodeSpec& gpu_node = c->node(NodeId(1));
  EXPECT_EQ(gpu_node.cpus, 96);
  EXPECT_EQ(gpu_node.memory_mib, 1024 * 1024);
  EXPECT_EQ(gpu_node.gpus.size(), 8u);
  const NodeSpec& cpu_node = c->node(NodeId(2));
  EXPECT_EQ(cpu_node.name, "n0002");
  EXPECT_TRUE(cpu_node.gpus.empty());
  EXPECT_EQ(cpu_node.cpus, 64);
  EXPECT_EQ(cpu_node.memory_mib, 256 * 1024);
  EXPECT_EQ(cpu_node.labels, (Labels{{"rack", "r001"}}));  // no gpu label on a CPU-only node
  EXPECT_EQ(c->host_defaults(), (HostDefaults{12, 96 * 1024}));
  EXPECT_EQ(c->total_cpus(), 2 * 96 + 64);
  EXPECT_EQ(c->Describe(),
            "2x8xV100:96c:1024g+1xcpu:64c:256g+per-gpu:12c:96g (16 GPUs, 3 nodes, 2 racks, 256 "
            "CPUs, 2304 GiB host memory)");

  struct Case {
    const char* spec;
    int cpus;
    int64_t memory_mib;
    int gpus;
  };
  const Case cases[] = {{"cpu:8c", 8, 0, 0},
                        {"8xA100:32c", 32, 0, 8},
                        {"4xT4:512m", 0, 512, 4},
                        {"2x4xT4: 16c : 1g ", 16, 1024, 8},
                        {"3xcpu:4c:100m", 4, 100, 0}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.spec);
    Result<Cluster> one = ParseClusterSpec(k.spec, "");
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(one->node(NodeId(0)).cpus, k.cpus);
    EXPECT_EQ(one->node(NodeId(0)).memory_mib, k.memory_mib);
    EXPECT_EQ(one->total_gpus(), k.gpus);
    EXPECT_EQ(one->host_defaults(), HostDefaults{});
  }
  // What Describe writes reads back as the same cluster.
  Result<Cluster> again = ParseClusterSpec("3xcpu:4c:100m+2x4xT4:16c+per-gpu:2c", "");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  const std::string described = again->Describe();
  EXPECT_EQ(described,
            "3xcpu:4c:100m+2x4xT4:16c+per-gpu:2c (8 GPUs, 5 nodes, 2 racks, 44 CPUs, "
            "300 MiB host memory)");
  Result<Cluster> reread = ParseClusterSpec(described.substr(0, described.find(' ')), "");
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(reread->Describe(), described);
}

TEST(ClusterShorthandTest, BadHostTermsNameTheTerm) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"4x8xV100:96x", "term '4x8xV100:96x' in '4x8xV100:96x': bad suffix '96x'"},
      {"4x8xV100:", "bad suffix ''"},
      {"4x8xV100:c", "bad suffix 'c': CPU cores must be in [1, 1000000]"},
      {"4x8xV100:96c:64c", "CPUs given twice"},
      {"4x8xV100:1g:2m", "memory given twice"},
      {"4x8xV100:0c", "bad suffix '0c'"},
      {"4x8xV100:1000001c", "CPU cores must be in [1, 1000000]"},
      {"4x8xV100:1099511627777g", "memory must be in [1, 1099511627776] GiB"},
      {"4x8xV100:-4g", "bad suffix '-4g'"},
      {"4xcpu", "CPU-only nodes must state their CPUs"},
      {"4xcpu:256g", "CPU-only nodes must state their CPUs"},
      {"0xcpu:8c", "NODES must be"},
      {"4xCPU:8c", "CPU-only nodes are spelt 'cpu'"},
      {"2x8xcpu:8c", "TYPE 'cpu' is reserved"},
      {"1x8xV100+per-gpu:1c+per-gpu:2c", "term 'per-gpu:2c'"},
      {"1x8xV100+per-gpu", "per-gpu needs CPUs or memory"},
      {"1x8xV100+per-gpu:1025c", "CPU cores must be in [1, 1024] per GPU"},
      {"1x8xV100+per-gpu:1048577g", "memory must be in [1, 1048576] GiB per GPU"},
  };
  for (const auto& [spec, want] : cases) ExpectShorthandError(spec, want, "NODESxcpu");
  Result<Cluster> no_nodes = ParseClusterSpec("per-gpu:12c", "");
  ASSERT_FALSE(no_nodes.ok());
  EXPECT_NE(no_nodes.status().message().find("'per-gpu:12c' has no nodes"), std::string::npos)
      << no_nodes.status().message();
}

// Defaults a node could never give all its GPUs are refused; nodes that state nothing do not
// limit them.
TEST(ClusterShorthandTest, PerGpuDefaultsMustFitTheNodesThatStateHostResources) {
  Result<Cluster> cpus = ParseClusterSpec("1x8xV100:96c+1x8xV100:64c+per-gpu:12c", "");
  ASSERT_FALSE(cpus.ok());
  EXPECT_NE(
      cpus.status().message().find(
          "per-gpu defaults: 12 CPUs per GPU ask 96 of node 'n0001' for its 8 GPUs; it has 64"),
      std::string::npos)
      << cpus.status().message();
  Result<Cluster> memory = ParseClusterSpec("1x8xV100:64g+per-gpu:16g", "");
  ASSERT_FALSE(memory.ok());
  EXPECT_NE(memory.status().message().find("ask 131072 MiB of node 'n0000'"), std::string::npos)
      << memory.status().message();
  EXPECT_TRUE(ParseClusterSpec("1x8xV100:96c:1024g+per-gpu:12c:128g", "").ok());
  EXPECT_TRUE(ParseClusterSpec("1x8xV100+per-gpu:12c:96g", "").ok());
  // A CPU-only node has no GPUs to take defaults for.
  EXPECT_TRUE(ParseClusterSpec("1x8xV100+1xcpu:4c:1g+per-gpu:12c:96g", "").ok());
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

TEST(ClusterJsonTest, CpuOnlyNodesAndPerGpuDefaults) {
  Result<Cluster> c = ParseClusterJson(R"({
    "cpus_per_gpu": 12, "memory_mib_per_gpu": 98304,
    "racks": [{"nodes": [{"name": "g", "gpus": 8, "cpus": 96, "memory_mib": 1048576},
                         {"name": "c", "count": 2, "gpus": 0, "cpus": 64, "memory_mib": 262144,
                          "labels": {"pool": "cpu"}}]}]})",
                                       "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->host_defaults(), (HostDefaults{12, 98304}));
  EXPECT_EQ(c->total_gpus(), 8);
  const NodeSpec& cpu = NodeNamed(*c, "c-1");
  EXPECT_TRUE(cpu.gpus.empty());
  EXPECT_EQ(cpu.cpus, 64);
  EXPECT_EQ(cpu.memory_mib, 262144);
  EXPECT_EQ(cpu.labels, (Labels{{"pool", "cpu"}, {"rack", "r000"}}));
  EXPECT_EQ(c->Describe(),
            "1x8xV100:96c:1024g+2xcpu:64c:256g+per-gpu:12c:96g (8 GPUs, 3 nodes, 1 racks, 224 "
            "CPUs, 1536 GiB host memory)");
}

TEST(ClusterJsonTest, ErrorsNameTheElement) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "invalid JSON"},
      {"[]", "want a JSON object"},
      {R"({"racks": []})", "racks: want a non-empty array"},
      {R"({"racks": [{"nodes": [{"gpus": 8}]}], "extra": 1})", "unknown key 'extra'"},
      {R"({"racks": [{"nodes": [{"gpus": 65}]}]})", "racks[0].nodes[0].gpus: want an integer"},
      {R"({"racks": [{"nodes": [{"gpus": 0}]}]})",
       "racks[0].nodes[0].cpus: a CPU-only node (gpus 0) must state its CPUs"},
      {R"({"racks": [{"nodes": [{"gpus": 0, "cpus": 8, "gpu_type": "T4"}]}]})",
       "racks[0].nodes[0].gpu_type: a CPU-only node (gpus 0) has no GPUs"},
      {R"({"racks": [{"nodes": [{"gpus": 0, "cpus": 8, "nvlink_groups": 1}]}]})",
       "racks[0].nodes[0].nvlink_groups: a CPU-only node"},
      {R"({"racks": [{"nodes": [{"gpus": 8, "cpus": -1}]}]})", "racks[0].nodes[0].cpus: want"},
      {R"({"racks": [{"nodes": [{"gpus": 8}]}], "cpus_per_gpu": 1025})",
       "cpus_per_gpu: want an integer in [0, 1024]"},
      {R"({"racks": [{"nodes": [{"gpus": 8}]}], "memory_mib_per_gpu": "8g"})",
       "memory_mib_per_gpu: want an integer"},
      {R"({"racks": [{"nodes": [{"name": "a", "gpus": 8, "cpus": 64}]}], "cpus_per_gpu": 12})",
       "cpus_per_gpu/memory_mib_per_gpu: 12 CPUs per GPU ask 96 of node 'a'"},
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
