// `serve --executor slurm` under a sharing profile on nodes that declare no shard GRES: refused
// at start, saying what to configure (issue 18, item 10). Slurm is a fake `scontrol` on the PATH
// (the discovery is all that runs), so this runs everywhere; test/slurm has the real cluster's
// shards.

#include <cstdlib>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

class SlurmShardsTest : public DaemonIntegrationTest {};

TEST_F(SlurmShardsTest, ASharingProfileIsRefusedOnNodesWithoutShards) {
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  // `scontrol show node -o`: two GPU nodes of partition p, only node2 with shards.
  std::ofstream(bin / "scontrol")
      << "#!/bin/sh\n"
         "echo 'NodeName=node1 CPUTot=8 Gres=gpu:v100:4 NodeAddr=127.0.0.1 State=IDLE "
         "Partitions=p'\n"
         "echo 'NodeName=node2 CPUTot=8 Gres=gpu:t4:2,shard:t4:4 NodeAddr=127.0.0.1 State=IDLE "
         "Partitions=p'\n";
  fs::permissions(bin / "scontrol", fs::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  const RunResult refused =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--executor", "slurm", "--slurm-partition", "p",
               "--workdir", (dir_ / "work").string(), "--profile", "greedy-share"});
  setenv("PATH", path.c_str(), 1);

  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.err.find("dlsched serve: --executor slurm: profile 'greedy-share' shares GPUs "
                             "(up to 2 jobs on one), which dlsched does through Slurm's shard "
                             "GRES, one shard per job; the Slurm nodes node1 (4 GPUs: shard:8 or "
                             "more) declare no shard GRES. Add GresTypes=gpu,shard"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("or run a non-sharing profile"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("node2"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace dlsched::integration
