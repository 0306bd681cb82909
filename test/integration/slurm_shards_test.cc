// `serve --executor slurm` under a sharing profile on nodes that declare no shard GRES: refused
// at start, saying what to configure (issue 18, item 10); the default profile runs there as its
// whole-GPU base instead, and says so. Slurm is a fake `scontrol` (and an idle `squeue`) on the
// PATH, so this runs everywhere; test/slurm has the real cluster's shards.

#include <cstdlib>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

class SlurmShardsTest : public DaemonIntegrationTest {
 protected:
  // Puts a fake Slurm first on this process's PATH (children inherit it until ~SlurmShardsTest):
  // `scontrol show node -o` lists two GPU nodes of partition p, only node2 with shards; `squeue`
  // lists no job.
  void FakeSlurm() {
    const fs::path bin = dir_ / "bin";
    fs::create_directories(bin);
    std::ofstream(bin / "scontrol")
        << "#!/bin/sh\n"
           "echo 'NodeName=node1 CPUTot=8 Gres=gpu:v100:4 NodeAddr=127.0.0.1 State=IDLE "
           "Partitions=p'\n"
           "echo 'NodeName=node2 CPUTot=8 Gres=gpu:t4:2,shard:t4:4 NodeAddr=127.0.0.1 State=IDLE "
           "Partitions=p'\n";
    std::ofstream(bin / "squeue") << "#!/bin/sh\nexit 0\n";
    for (const char* tool : {"scontrol", "squeue"}) {
      fs::permissions(bin / tool, fs::perms::owner_all);
    }
    setenv("PATH", (bin.string() + ":" + path_).c_str(), 1);
  }
  ~SlurmShardsTest() override { setenv("PATH", path_.c_str(), 1); }

  const std::string path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
};

TEST_F(SlurmShardsTest, ASharingProfileIsRefusedOnNodesWithoutShards) {
  FakeSlurm();
  const RunResult refused =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--executor", "slurm", "--slurm-partition", "p",
               "--workdir", (dir_ / "work").string(), "--profile", "greedy-share"});

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

TEST_F(SlurmShardsTest, TheDefaultProfileRunsAsItsWholeGpuBaseOnNodesWithoutShards) {
  FakeSlurm();
  StartServe({"--executor", "slurm", "--slurm-partition", "p"});
  const std::string log = ReadTextFile(dir_ / "daemon.err");
  EXPECT_NE(log.find("dlsched serve: warning: --executor slurm: the default profile 'dlsched' runs "
                     "without GPU sharing, as its base 'dlsched-base': profile 'dlsched' shares "
                     "GPUs"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("policy dlsched-base"), std::string::npos) << log;
  EXPECT_EQ(StopDaemon(), 0);
}

}  // namespace
}  // namespace dlsched::integration
