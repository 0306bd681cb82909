#include "dlsched/model/cluster.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace dlsched {
namespace {

TEST(LabelsTest, ParseAndFormatRoundTrip) {
  Result<Labels> labels = ParseLabels(" rack=r3; nvlink=true ,zone= b ");
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(*labels, (Labels{{"nvlink", "true"}, {"rack", "r3"}, {"zone", "b"}}));
  EXPECT_EQ(FormatLabels(*labels), "nvlink=true;rack=r3;zone=b");
  EXPECT_TRUE(ParseLabels("")->empty());
}

TEST(LabelsTest, ParseNamesWhatIsWrong) {
  const struct {
    const char* text;
    const char* error;
  } kCases[] = {
      {"rack", "label 'rack': want key=value"},
      {"=r3", "label '=r3': empty key"},
      {"a=1;a=2", "label key 'a' given twice"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.text);
    Result<Labels> labels = ParseLabels(c.text);
    ASSERT_FALSE(labels.ok());
    EXPECT_EQ(labels.status().message(), c.error);
  }
}

TEST(LabelsTest, SelectorMatchesWhenEveryPairIsPresent) {
  const Labels node = {{"gpu", "V100"}, {"nvlink", "true"}, {"rack", "r1"}};
  EXPECT_TRUE(MatchesSelector(node, {}));
  EXPECT_TRUE(MatchesSelector(node, {{"nvlink", "true"}, {"rack", "r1"}}));
  EXPECT_FALSE(MatchesSelector(node, {{"nvlink", "false"}}));
  EXPECT_FALSE(MatchesSelector(node, {{"zone", "b"}}));
  EXPECT_EQ(CountMatches(node, {{"nvlink", "true"}, {"rack", "r2"}, {"gpu", "V100"}}), 2);
}

TEST(ClusterLabelClassTest, NodesWithTheSameTypeAndLabelsShareAClass) {
  // Racks of two nodes; node 1 carries an extra label.
  const Cluster cluster = testing::MakeCluster("4x4xV100+2x8xK80", 2, {"", "ib=hdr"});
  // Classes: r0 plain (node 0), r0 ib (node 1), r1 (nodes 2-3), r2 K80 (nodes 4-5).
  ASSERT_EQ(cluster.num_label_classes(), 4);
  EXPECT_EQ(cluster.node_label_class(NodeId(2)), cluster.node_label_class(NodeId(3)));
  EXPECT_NE(cluster.node_label_class(NodeId(0)), cluster.node_label_class(NodeId(1)));
  const LabelClassId k80 = cluster.node_label_class(NodeId(4));
  EXPECT_EQ(cluster.label_class_gpus(k80), 16);
  EXPECT_EQ(cluster.gpu_type_name(cluster.label_class_gpu_type(k80)), "K80");
  // AddNode adds the gpu and rack labels.
  EXPECT_EQ(cluster.label_class_labels(k80), (Labels{{"gpu", "K80"}, {"rack", "r2"}}));
}

// Describe writes the cluster shorthand; host resources appear only where nodes state them.
TEST(ClusterDescribeTest, GroupsNodesAndStatesHostResourcesOnlyWhenGiven) {
  Cluster cluster;
  const GpuTypeId v100 = cluster.InternGpuType("V100");
  const RackId rack = cluster.InternRack("r0");
  const auto add = [&](std::string name, int gpus, int cpus, int64_t memory_mib) {
    NodeSpec node;
    node.name = std::move(name);
    node.rack = rack;
    node.gpus.assign(static_cast<size_t>(gpus), GpuSpec{v100, 32768, 0});
    node.cpus = cpus;
    node.memory_mib = memory_mib;
    ASSERT_TRUE(cluster.AddNode(std::move(node)).ok());
  };
  add("a", 8, 0, 0);
  add("b", 8, 0, 0);
  EXPECT_EQ(cluster.Describe(), "2x8xV100 (16 GPUs, 2 nodes, 1 racks)");
  add("c", 8, 96, 0);
  add("d", 0, 32, 1536);
  cluster.set_host_defaults({4, 0});
  EXPECT_EQ(cluster.Describe(),
            "2x8xV100+1x8xV100:96c+1xcpu:32c:1536m+per-gpu:4c (24 GPUs, 4 nodes, 1 racks, 128 "
            "CPUs, 1536 MiB host memory)");
}

}  // namespace
}  // namespace dlsched
