#include "daemon/exec/slurm_parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlsched::daemon {
namespace {

using ::testing::ElementsAre;

// Real `scontrol show node -o` lines of Slurm 22.05 (the test cluster of scripts/slurm), plus a
// drained node with a reason and shards, a node without GPUs and one in another partition.
constexpr std::string_view kNodes =
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=4.41 "
    "AvailableFeatures=rack=r1,ib ActiveFeatures=rack=r1,ib Gres=gpu:v100:4 NodeAddr=127.0.0.1 "
    "NodeHostName=localhost Port=33960 Version=22.05.8 OS=Linux 6.18.44-fc-v782 #1 SMP "
    "PREEMPT_DYNAMIC @0  RealMemory=4096 AllocMem=0 FreeMem=21990 Sockets=8 Boards=1 State=IDLE "
    "ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=dlsched  "
    "BootTime=2026-11-29T08:06:18 SlurmdStartTime=2026-11-29T11:19:42 CfgTRES=cpu=8,mem=4G,"
    "billing=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s\n"
    "NodeName=node3 CoresPerSocket=1 CPUTot=8 AvailableFeatures=rack=r2 "
    "Gres=gpu:t4:2(S:0-1),shard:t4:4(S:0-1) "
    "NodeAddr=10.0.0.3 NodeHostName=gpu3 State=MIXED+DRAIN Partitions=dlsched,other "
    "RealMemory=1000 Reason=disk failing [root@2026-11-29T11:00:00]\n"
    "NodeName=cpu1 CPUTot=64 AvailableFeatures=(null) Gres=(null) NodeAddr=cpu1 State=IDLE "
    "Partitions=dlsched\n"
    "NodeName=node9 CPUTot=8 Gres=gpu:a100:8 State=IDLE Partitions=other\n";

TEST(SlurmParseTest, ScontrolRecordsKeepValuesWithSpaces) {
  const std::vector<SlurmRecord> records = ParseScontrolRecords(kNodes);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].at("OS"), "Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0");
  EXPECT_EQ(records[0].at("AvailableFeatures"), "rack=r1,ib");
  EXPECT_EQ(records[0].at("CfgTRES"), "cpu=8,mem=4G,billing=8");
  EXPECT_EQ(records[0].at("AllocTRES"), "");
  EXPECT_EQ(records[1].at("Reason"), "disk failing [root@2026-11-29T11:00:00]");
}

TEST(SlurmParseTest, Gres) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<SlurmGres> want;
    bool ok = true;
  };
  const std::vector<Case> cases = {
      {"typed", "gpu:v100:4", {{"gpu", "v100", 4}}},
      {"untyped", "gpu:2", {{"gpu", "", 2}}},
      {"socket suffix with a comma", "gpu:t4:2(S:0-1,3),nic:1", {{"gpu", "t4", 2}, {"nic", "", 1}}},
      {"two types", "gpu:a100:2,gpu:v100:2", {{"gpu", "a100", 2}, {"gpu", "v100", 2}}},
      {"no_consume", "gpu:a100:no_consume:4", {{"gpu", "a100", 4}}},
      {"none", "(null)", {}},
      {"empty", "", {}},
      {"no count", "gpu", {}, false},
      {"bad count", "gpu:v100:x", {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::vector<SlurmGres>> got = ParseGres(c.text);
    ASSERT_EQ(got.ok(), c.ok) << got.status().ToString();
    if (c.ok) {
      EXPECT_EQ(*got, c.want);
    }
  }
}

TEST(SlurmParseTest, NodeStates) {
  struct Case {
    std::string state;
    NodeHealth want;
  };
  const std::vector<Case> cases = {
      {"IDLE", NodeHealth::kUp},
      {"MIXED", NodeHealth::kUp},
      {"ALLOCATED+COMPLETING", NodeHealth::kUp},
      {"IDLE+CLOUD", NodeHealth::kUp},
      {"MIXED+NOT_RESPONDING", NodeHealth::kUnreachable},
      {"UNKNOWN", NodeHealth::kUnreachable},
      {"IDLE+MAINT", NodeHealth::kUnreachable},
      {"DOWN+NOT_RESPONDING", NodeHealth::kOut},
      {"DOWN", NodeHealth::kOut},
      {"IDLE+DRAIN", NodeHealth::kOut},
      {"MIXED+DRAIN", NodeHealth::kOut},
      {"IDLE+POWERED_DOWN", NodeHealth::kOut},
      {"FUTURE", NodeHealth::kOut},
      {"SOMETHING_NEW", NodeHealth::kUnreachable},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.state);
    EXPECT_EQ(ClassifyNodeState(c.state), c.want);
  }
}

TEST(SlurmParseTest, NodesAndTheClusterOfAPartition) {
  Result<std::vector<SlurmNode>> nodes = ParseNodes(kNodes);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 4u);
  const SlurmNode& n3 = (*nodes)[1];
  EXPECT_EQ(n3.name, "node3");
  EXPECT_EQ(n3.addr, "10.0.0.3");
  EXPECT_EQ(n3.state, "MIXED+DRAIN");
  EXPECT_THAT(n3.partitions, ElementsAre("dlsched", "other"));
  EXPECT_EQ(n3.cpus, 8);
  EXPECT_EQ(n3.memory_mib, 1000);

  Result<SlurmCluster> built = BuildSlurmCluster(*nodes, "dlsched");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Cluster& cluster = built->cluster;
  ASSERT_EQ(cluster.num_nodes(), 2);  // cpu1 has no GPU, node9 is elsewhere
  EXPECT_EQ(cluster.node(NodeId(0)).name, "node1");
  EXPECT_EQ(cluster.node(NodeId(0)).gpus.size(), 4u);
  EXPECT_EQ(cluster.gpu_type_name(cluster.node_gpu_type(NodeId(0))), "V100");
  EXPECT_EQ(cluster.gpu_type_name(cluster.node_gpu_type(NodeId(1))), "T4");
  EXPECT_EQ(cluster.node(NodeId(0)).labels,
            (Labels{{"gpu", "V100"}, {"ib", "true"}, {"rack", "r1"}}));
  EXPECT_EQ(cluster.node(NodeId(1)).labels, (Labels{{"gpu", "T4"}, {"rack", "r2"}}));
  EXPECT_EQ(cluster.num_racks(), 2);
  EXPECT_EQ(cluster.node(NodeId(0)).memory_mib, 4096);
  ASSERT_EQ(built->sites.size(), 2u);
  EXPECT_EQ(built->sites[1].name, "node3");
  EXPECT_EQ(built->sites[1].addr, "10.0.0.3");
  EXPECT_THAT(built->sites[1].gres_types, ElementsAre("t4", "t4"));
  // Shards are no GPUs, only counted.
  EXPECT_EQ(built->sites[0].shards, 0);
  EXPECT_EQ(built->sites[1].shards, 4);
  EXPECT_EQ(built->sites[1].state, "MIXED+DRAIN");
  EXPECT_EQ(built->sites[1].reason, "disk failing [root@2026-11-29T11:00:00]");

  EXPECT_EQ(BuildSlurmCluster(*nodes, "nope").status().code(), StatusCode::kFailedPrecondition);
}

TEST(SlurmParseTest, ASharingProfileNeedsShardsForItsJobsPerGpuOnEveryNode) {
  std::vector<SlurmNodeSite> sites = {{"node1", "a", {"v100", "v100"}},
                                      {"node3", "b", {"t4", "t4"}}};
  sites[0].shards = 4;
  sites[1].shards = 4;
  EXPECT_TRUE(CheckSlurmShards(sites, 2, "greedy-share").ok());
  // Three jobs on a GPU need 6 shards on two GPUs.
  const Status few = CheckSlurmShards(sites, 3, "s");
  EXPECT_EQ(few.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(few.message(), ::testing::HasSubstr("node1 declares shard:4 for 2 GPUs, node3"));
  sites[1].shards = 0;
  const Status none = CheckSlurmShards(sites, 2, "greedy-share");
  EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.message(),
            "profile 'greedy-share' shares GPUs (up to 2 jobs on one), which dlsched does through "
            "Slurm's shard GRES, one shard per job; the Slurm nodes node3 (2 GPUs: shard:4 or "
            "more) declare no shard GRES. Add GresTypes=gpu,shard and Gres=gpu:...,shard:N (N = "
            "GPUs x 2) to the nodes in slurm.conf, and Name=shard Count=2 File=<the GPU's device> "
            "per GPU in gres.conf, or run a non-sharing profile");
}

TEST(SlurmParseTest, MalformedNodes) {
  EXPECT_EQ(ParseNodes("Arch=x86_64 State=IDLE\n").status().code(), StatusCode::kInvalidArgument);
  const Result<std::vector<SlurmNode>> bad = ParseNodes("NodeName=n1 Gres=gpu:v100:x\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("node n1"));
  EXPECT_TRUE(ParseNodes("").ok());
}

TEST(SlurmParseTest, DefaultPartition) {
  EXPECT_EQ(DefaultPartition("PartitionName=a Default=NO Nodes=x\n"
                             "PartitionName=dlsched AllowGroups=ALL Default=YES Nodes=node[1-3]\n")
                .value(),
            "dlsched");
  EXPECT_EQ(DefaultPartition("PartitionName=a Default=NO\n").status().code(),
            StatusCode::kNotFound);
}

TEST(SlurmParseTest, Squeue) {
  const std::vector<SlurmQueueEntry> entries = ParseSqueue(
      "1|COMPLETED|None|dlsched-3|dlsched:/tmp/a b|c\n"
      "2|FAILED|NonZeroExitCode|x|y|(null)\n"
      "7+0|PENDING|Resources|dlsched-4|dlsched:/w/jobs/4\n"
      "7+1|RUNNING|None|dlsched-4|dlsched:/w/jobs/4\n"
      "8_3|RUNNING|None|array|(null)\n"
      "garbage\n"
      "|RUNNING|None|n|c\n"
      "\n");
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].job_id, "1");
  EXPECT_EQ(entries[0].name, "dlsched-3");
  EXPECT_EQ(entries[0].comment, "dlsched:/tmp/a b|c");  // the comment keeps its '|'
  EXPECT_EQ(entries[1].name, "x");  // a user's name with '|' shifts into the comment: not ours
  EXPECT_EQ(entries[2].job_id, "7");
  EXPECT_EQ(entries[2].component, 0);
  EXPECT_EQ(entries[2].reason, "Resources");
  EXPECT_EQ(entries[3].component, 1);
  EXPECT_EQ(entries[3].state, "RUNNING");
  EXPECT_EQ(entries[4].job_id, "8");
  EXPECT_EQ(entries[4].comment, "");
}

TEST(SlurmParseTest, JobStatesExitCodesAndSbatch) {
  EXPECT_TRUE(IsTerminalJobState("COMPLETED"));
  EXPECT_TRUE(IsTerminalJobState("CANCELLED by 0"));
  EXPECT_TRUE(IsTerminalJobState("NODE_FAIL"));
  EXPECT_FALSE(IsTerminalJobState("COMPLETING"));
  EXPECT_FALSE(IsTerminalJobState("RUNNING"));
  EXPECT_FALSE(IsTerminalJobState("PENDING"));

  EXPECT_EQ(ParseExitCode("0:0"), 0);
  EXPECT_EQ(ParseExitCode("3:0"), 3);
  EXPECT_EQ(ParseExitCode("0:15"), 143);
  EXPECT_EQ(ParseExitCode("x:0"), std::nullopt);
  EXPECT_EQ(ParseExitCode("3"), std::nullopt);

  EXPECT_EQ(ParseSbatchJobId("42\n").value(), "42");
  EXPECT_EQ(ParseSbatchJobId("42;cluster\n").value(), "42");
  EXPECT_EQ(ParseSbatchJobId("Submitted batch job 42").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseSbatchJobId("").ok());
}

}  // namespace
}  // namespace dlsched::daemon
