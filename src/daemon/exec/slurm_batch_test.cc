#include "daemon/exec/slurm_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace dlsched::daemon {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<SlurmNodeSite> Sites() {
  return {{"node1", "10.0.0.1", {"v100", "v100", "v100", "v100"}},
          {"node2", "10.0.0.2", {"v100", "v100", "v100", "v100"}},
          {"gpu-3", "10.0.0.3", {"", ""}}};
}

LaunchSpec Spec(Framework framework) {
  LaunchSpec spec;
  spec.job = JobId(12);
  spec.argv = {"python3", "train.py", "--lr", "0.1; rm -rf /"};
  spec.env = {"CUDA_VISIBLE_DEVICES=0,1", "DLSCHED_JOB_ID=12", "MASTER_ADDR=127.0.0.1",
              "MASTER_PORT=29501",        "PATH=/usr/bin",     "SBATCH_PARTITION=evil",
              "SLURM_CONF=/user/choice",  "WORLD_SIZE=1"};
  spec.workdir = "/home/ann/it's here";
  spec.job_dir = "/w/jobs/12";
  spec.framework = framework;
  spec.port = 29501;
  return spec;
}

Placement Parts(std::vector<NodeGpus> parts) { return Placement{std::move(parts)}; }

std::vector<std::string> From(const std::vector<std::string>& argv, const std::string& first) {
  const auto it = std::find(argv.begin(), argv.end(), first);
  return std::vector<std::string>(it, argv.end());
}

TEST(SlurmBatchTest, ASharedSegmentHoldsOneShardOfTheGpuDlschedChose) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub =
      BuildSlurmSubmission(Spec(Framework::kCustom), Parts({{NodeId(1), 0b0100}}), sites, "gpu",
                           /*shard=*/true);
  EXPECT_THAT(From(sub.argv, "--partition=gpu"),
              ElementsAre("--partition=gpu", "--nodes=1", "--nodelist=node2", "--ntasks-per-node=1",
                          "--gres=shard:1", "/w/jobs/12/slurm-batch.sh", "python3", "train.py",
                          "--lr", "0.1; rm -rf /"));
  EXPECT_THAT(sub.argv, Not(Contains(HasSubstr("--gres=gpu"))));
  // Pinned to GPU 2 whichever GPU's shard Slurm counts.
  EXPECT_THAT(sub.task_script, HasSubstr("'node2')\n    export CUDA_VISIBLE_DEVICES='2' "));
  // Without `shard` the same launch holds the whole GPU.
  EXPECT_THAT(
      BuildSlurmSubmission(Spec(Framework::kCustom), Parts({{NodeId(1), 0b0100}}), sites, "gpu")
          .argv,
      Contains("--gres=gpu:v100:1"));
}

TEST(SlurmBatchTest, OneComponentWhenEveryNodeHasTheSameGpuCount) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub = BuildSlurmSubmission(
      Spec(Framework::kPyTorch), Parts({{NodeId(0), 0b0011}, {NodeId(1), 0b1100}}), sites, "gpu");
  EXPECT_THAT(
      sub.argv,
      ElementsAre("sbatch", "--parsable", "--job-name=dlsched-12", "--comment=dlsched:/w/jobs/12",
                  "--no-requeue", "--chdir=/w/jobs/12", "--output=/w/jobs/12/stdout.log",
                  "--error=/w/jobs/12/stderr.log", "--open-mode=append", "--export=NONE",
                  "--partition=gpu", "--nodes=2", "--nodelist=node1,node2", "--ntasks-per-node=1",
                  "--gres=gpu:v100:2", "/w/jobs/12/slurm-batch.sh", "python3", "train.py", "--lr",
                  "0.1; rm -rf /"));
  EXPECT_FALSE(sub.command_in_batch_step);
  EXPECT_EQ(sub.batch_path, "/w/jobs/12/slurm-batch.sh");
  EXPECT_EQ(sub.task_path, "/w/jobs/12/slurm-task.sh");
  // The gang's environment, exported by the batch script (sbatch never sees it): pytorch's
  // world is the two nodes, rank 0 on the first; no variable that could change Slurm's steps.
  EXPECT_EQ(sub.batch_script,
            "#!/bin/sh\n"
            "# dlsched job 12: one run segment as a Slurm batch job (written by dlsched).\n"
            "# The shell outlives a preemption's SIGTERM (trap :) to record the exit status.\n"
            "trap : TERM INT HUP\n"
            "# The job's environment (sbatch ran with --export=NONE); every srun passes it on.\n"
            "export CUDA_VISIBLE_DEVICES='0,1'\n"
            "export DLSCHED_JOB_ID='12'\n"
            "export MASTER_ADDR='10.0.0.1'\n"
            "export MASTER_PORT='29501'\n"
            "export PATH='/usr/bin'\n"
            "export WORLD_SIZE='2'\n"
            "export SLURM_EXPORT_ENV=ALL\n"
            "srun --kill-on-bad-exit=1 '/w/jobs/12/slurm-task.sh' \"$@\"\n"
            "c=$?\n"
            "echo \"$c\" > '/w/jobs/12/exit'\n"
            "exit \"$c\"\n");
  EXPECT_EQ(sub.task_script,
            "#!/bin/sh\n"
            "# dlsched job 12: the per-node environment of one task, then the job's command "
            "(written by dlsched).\n"
            "case \"$SLURMD_NODENAME\" in\n"
            "  'node1')\n"
            "    export CUDA_VISIBLE_DEVICES='0,1' DLSCHED_NODE_RANK='0' "
            "DLSCHED_NODE_NUM_GPUS='2' RANK='0' NODE_RANK='0' LOCAL_RANK='0'\n"
            "    ;;\n"
            "  'node2')\n"
            "    export CUDA_VISIBLE_DEVICES='2,3' DLSCHED_NODE_RANK='1' "
            "DLSCHED_NODE_NUM_GPUS='2' RANK='1' NODE_RANK='1' LOCAL_RANK='0'\n"
            "    ;;\n"
            "  *)\n"
            "    echo \"dlsched: task on node '$SLURMD_NODENAME', which is not in its "
            "placement\" >&2\n"
            "    exit 125\n"
            "    ;;\n"
            "esac\n"
            "cd '/home/ann/it'\\''s here' || {\n"
            "  echo \"dlsched: cannot enter working directory \"'/home/ann/it'\\''s here' >&2\n"
            "  exit 126\n"
            "}\n"
            "exec \"$@\"\n");
}

TEST(SlurmBatchTest, UnequalCountsMakeAHeterogeneousJob) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub = BuildSlurmSubmission(
      Spec(Framework::kCustom), Parts({{NodeId(0), 0b0111}, {NodeId(1), 0b0001}}), sites, "gpu");
  EXPECT_THAT(
      From(sub.argv, "--partition=gpu"),
      ElementsAre("--partition=gpu", "--nodes=1", "--nodelist=node1", "--ntasks-per-node=1",
                  "--gres=gpu:v100:3", ":", "--partition=gpu", "--nodes=1", "--nodelist=node2",
                  "--ntasks-per-node=1", "--gres=gpu:v100:1", "/w/jobs/12/slurm-batch.sh",
                  "python3", "train.py", "--lr", "0.1; rm -rf /"));
  EXPECT_THAT(sub.batch_script,
              HasSubstr("\nsrun --kill-on-bad-exit=1 --het-group=0-1 '/w/jobs/12/slurm-task.sh'"));
  // custom: no framework variables; the request's own stay as they were.
  EXPECT_THAT(sub.batch_script, HasSubstr("\nexport WORLD_SIZE='1'\n"));
  EXPECT_THAT(sub.task_script, HasSubstr("export CUDA_VISIBLE_DEVICES='0,1,2' "
                                         "DLSCHED_NODE_RANK='0' DLSCHED_NODE_NUM_GPUS='3'\n"));
}

TEST(SlurmBatchTest, EachNodesCpusAndMemoryArePassed) {
  const std::vector<SlurmNodeSite> sites = Sites();
  SlurmSubmission sub = BuildSlurmSubmission(
      Spec(Framework::kCustom), Parts({{NodeId(0), 0b0011, 8, 4096}, {NodeId(1), 0b0011, 8, 4096}}),
      sites, "gpu");
  EXPECT_THAT(
      From(sub.argv, "--partition=gpu"),
      ElementsAre("--partition=gpu", "--nodes=2", "--nodelist=node1,node2", "--ntasks-per-node=1",
                  "--gres=gpu:v100:2", "--cpus-per-task=8", "--mem=4096M",
                  "/w/jobs/12/slurm-batch.sh", "python3", "train.py", "--lr", "0.1; rm -rf /"));
  // Unequal memory splits the job as unequal GPU counts do.
  sub = BuildSlurmSubmission(Spec(Framework::kCustom),
                             Parts({{NodeId(0), 0b0011, 8, 4096}, {NodeId(1), 0b0011, 8, 2048}}),
                             sites, "gpu");
  EXPECT_THAT(sub.argv, Contains(":"));
  EXPECT_THAT(sub.argv, Contains("--mem=2048M"));
  // A CPU job: no --gres at all.
  sub = BuildSlurmSubmission(Spec(Framework::kCustom), Parts({{NodeId(1), 0, 4, 0}}), sites, "gpu");
  EXPECT_THAT(From(sub.argv, "--partition=gpu"),
              ElementsAre("--partition=gpu", "--nodes=1", "--nodelist=node2", "--ntasks-per-node=1",
                          "--cpus-per-task=4", "/w/jobs/12/slurm-batch.sh", "python3", "train.py",
                          "--lr", "0.1; rm -rf /"));
}

TEST(SlurmBatchTest, OneNodeKeepsTheLoopbackMasterAndUntypedGres) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub =
      BuildSlurmSubmission(Spec(Framework::kPyTorch), Parts({{NodeId(2), 0b10}}), sites, "gpu");
  EXPECT_THAT(sub.argv, Contains("--gres=gpu:1"));
  EXPECT_THAT(sub.argv, Contains("--nodelist=gpu-3"));
  EXPECT_THAT(sub.batch_script, HasSubstr("\nexport MASTER_ADDR='127.0.0.1'\n"));
  EXPECT_THAT(sub.batch_script, HasSubstr("\nexport WORLD_SIZE='1'\n"));
  EXPECT_THAT(sub.task_script, HasSubstr("'gpu-3')\n    export CUDA_VISIBLE_DEVICES='1' "));
}

TEST(SlurmBatchTest, TensorflowGetsEveryNodeAsAWorker) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub = BuildSlurmSubmission(
      Spec(Framework::kTensorFlow), Parts({{NodeId(0), 0b1}, {NodeId(1), 0b1}}), sites, "gpu");
  EXPECT_THAT(sub.task_script,
              HasSubstr("TF_CONFIG='{\"cluster\":{\"worker\":[\"10.0.0.1:29501\","
                        "\"10.0.0.2:29501\"]},\"task\":{\"index\":1,\"type\":\"worker\"}}'"));
}

TEST(SlurmBatchTest, MpiRunsItsLauncherOnceInTheBatchStep) {
  const std::vector<SlurmNodeSite> sites = Sites();
  const SlurmSubmission sub = BuildSlurmSubmission(
      Spec(Framework::kMpi), Parts({{NodeId(0), 0b1111}, {NodeId(1), 0b1111}}), sites, "gpu");
  EXPECT_TRUE(sub.command_in_batch_step);
  EXPECT_THAT(sub.batch_script, HasSubstr("\n'/w/jobs/12/slurm-task.sh' \"$@\"\n"));
  EXPECT_THAT(sub.batch_script, Not(HasSubstr("\nsrun")));
  // An srun the launcher itself runs (Open MPI's, say) passes the job's environment on too.
  EXPECT_THAT(sub.batch_script, HasSubstr("\nexport SLURM_EXPORT_ENV=ALL\n"));
}

TEST(SlurmBatchTest, OnlyShellNamesReachTheBatchScript) {
  const std::vector<SlurmNodeSite> sites = Sites();
  LaunchSpec spec = Spec(Framework::kCustom);
  spec.env = {"A-B=1", "1X=2", "OK_1=it's", "=empty"};
  const SlurmSubmission sub = BuildSlurmSubmission(spec, Parts({{NodeId(0), 0b1}}), sites, "gpu");
  EXPECT_THAT(sub.batch_script, HasSubstr("\nexport OK_1='it'\\''s'\nexport SLURM_EXPORT_ENV"));
  EXPECT_THAT(sub.batch_script, Not(HasSubstr("A-B")));
  EXPECT_THAT(sub.batch_script, Not(HasSubstr("1X")));
}

TEST(SlurmBatchTest, JobRecordRoundTrips) {
  struct Case {
    std::string text;
    SlurmJobRecord record;
    std::string formatted;
  } cases[] = {
      {"41 node1,node2 srun\n", {"41", {"node1", "node2"}, false}, "41 node1,node2 srun\n"},
      {"42 node1 batch\n", {"42", {"node1"}, true}, "42 node1 batch\n"},
      {"- node3 srun\n", {"", {"node3"}, false}, "- node3 srun\n"},
      // Written by dlsched before the mode was recorded.
      {"43 node1\n", {"43", {"node1"}, std::nullopt}, "43 node1\n"},
      {"", {}, "- \n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseSlurmJobRecord(c.text), c.record);
    EXPECT_EQ(FormatSlurmJobRecord(c.record), c.formatted);
  }
}

TEST(SlurmBatchTest, Names) {
  EXPECT_EQ(SlurmJobName(JobId(7)), "dlsched-7");
  EXPECT_EQ(SlurmJobComment("/w/jobs/7"), "dlsched:/w/jobs/7");
}

}  // namespace
}  // namespace dlsched::daemon
