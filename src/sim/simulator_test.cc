#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dlsched/policy/pipeline.h"
#include "io/profile.h"
#include "support/builders.h"

namespace dlsched::sim {
namespace {

using dlsched::testing::MakeCluster;
using dlsched::testing::MakeJob;
using std::chrono::seconds;

std::unique_ptr<SchedulingPolicy> Policy(const std::string& name) {
  auto policy = LoadPolicy(name);
  DS_CHECK(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

JobSpec Job(uint32_t id, int gpus, double submit_s, double work_s) {
  return MakeJob(id).Gpus(gpus).Submit(Seconds(submit_s)).Work(Seconds(work_s)).Spec();
}

RunResult Simulated(const std::string& policy, const Cluster& cluster, std::vector<JobSpec> jobs,
                    SimOptions options = {}) {
  Workload workload{"test", std::move(jobs), 0};
  SimpleThroughputModel model;
  return Simulate({cluster, workload, model, model}, Policy(policy), options);
}

TEST(SimulatorTest, FifoRunsJobsBackToBackWithExactTimes) {
  const Cluster cluster = MakeCluster("1x4xV100");
  const RunResult run =
      Simulated("fifo", cluster, {Job(0, 4, 0, 100), Job(1, 4, 10, 50), Job(2, 2, 20, 10)});
  ASSERT_EQ(run.jobs.size(), 3u);
  EXPECT_EQ(run.summary.completed, 3);
  EXPECT_EQ(run.jobs[0].finish_time, AtSeconds(100));
  EXPECT_EQ(run.jobs[1].first_start, AtSeconds(100));
  EXPECT_EQ(run.jobs[1].finish_time, AtSeconds(150));
  EXPECT_EQ(run.jobs[2].finish_time, AtSeconds(160));
  EXPECT_DOUBLE_EQ(run.summary.makespan_s, 160);
}

TEST(SimulatorTest, SpreadGangRunsSlowerThanConsolidated) {
  // Two nodes with 2 free GPUs each: a 4-GPU gang must span them and pays the node penalty.
  const Cluster cluster = MakeCluster("2x2xV100");
  const RunResult run = Simulated("fifo", cluster, {Job(0, 4, 0, 85)});
  EXPECT_EQ(run.jobs[0].finish_time, AtSeconds(100));  // 85 / (1 - 0.15)
}

TEST(SimulatorTest, PreemptionCostsCheckpointAndRestoreTime) {
  const Cluster cluster = MakeCluster("1x1xV100");
  SimOptions options;
  options.checkpoint_delay = seconds(10);
  options.restore_delay = seconds(20);
  // Under srtf the short job arriving at t=100 preempts the long one (min run 60 s).
  const RunResult run =
      Simulated("srtf", cluster, {Job(0, 1, 0, 1000), Job(1, 1, 100, 50)}, options);
  EXPECT_EQ(run.summary.preemptions, 1);
  // Victim checkpoints 100..110, short job runs 110..160, long job restores 160..180 and then
  // needs its remaining 900 s: done at 1080.
  EXPECT_EQ(run.jobs[1].first_start, AtSeconds(110));
  EXPECT_EQ(run.jobs[1].finish_time, AtSeconds(160));
  EXPECT_EQ(run.jobs[0].finish_time, AtSeconds(1080));
}

TEST(SimulatorTest, ImpossibleJobIsRejectedAndCounted) {
  const Cluster cluster = MakeCluster("1x4xV100");
  const RunResult run = Simulated("fifo", cluster, {Job(0, 8, 0, 10), Job(1, 1, 0, 10)});
  EXPECT_EQ(run.summary.rejected, 1);
  EXPECT_EQ(run.summary.completed, 1);
  EXPECT_EQ(run.jobs[0].final_state, JobState::kRejected);
  EXPECT_FALSE(run.jobs[0].reason.empty());
}

// The ground truth of a GPU type on which some models cannot run at all (out of memory).
class NoBigModelsOn final : public ThroughputModel {
 public:
  explicit NoBigModelsOn(std::string type) : type_(std::move(type)) {}
  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override {
    const std::string_view type =
        cluster.gpu_type_name(cluster.node_gpu_type(placement.parts[0].node));
    if (spec.model == "big" && (type == type_ || type_ == "any")) return 0;
    return base_.ItersPerSecond(spec, cluster, placement);
  }

 private:
  std::string type_;
  SimpleThroughputModel base_;
};

TEST(SimulatorTest, AJobThatCannotRunOnAGpuTypeMovesToAnotherOrFails) {
  const Cluster cluster = MakeCluster("1x2xK80+1x2xV100");
  JobSpec big = Job(0, 1, 0, 100);
  big.model = "big";
  std::vector<JobSpec> jobs{big, Job(1, 1, 0, 100), Job(2, 1, 0, 100)};
  SimpleThroughputModel estimator;
  for (const std::string type : {"K80", "V100", "any"}) {
    SCOPED_TRACE(type);
    const Workload workload{"test", jobs, 0};
    const NoBigModelsOn truth(type);
    const RunResult run = Simulate({cluster, workload, truth, estimator}, Policy("fifo"), {});
    if (type == "any") {
      EXPECT_EQ(run.jobs[0].final_state, JobState::kFailed);
      EXPECT_THAT(run.jobs[0].reason, ::testing::HasSubstr("no GPU type it could use is left"));
      EXPECT_EQ(run.summary.completed, 2);
    } else {
      EXPECT_EQ(run.jobs[0].final_state, JobState::kSucceeded);
      EXPECT_EQ(run.summary.completed, 3);
    }
  }
}

TEST(SimulatorTest, StopAtLeavesUnfinishedJobsWithAReason) {
  const Cluster cluster = MakeCluster("1x1xV100");
  SimOptions options;
  options.stop_at = AtSeconds(50);
  const RunResult run =
      Simulated("fifo-backfill", cluster, {Job(0, 1, 0, 100), Job(1, 1, 1, 10)}, options);
  EXPECT_EQ(run.summary.unfinished, 2);
  EXPECT_EQ(run.jobs[1].final_state, JobState::kQueued);
  EXPECT_NE(run.jobs[1].reason.find("waiting for 1 GPU (0 free)"), std::string::npos);
}

TEST(SimulatorTest, SameInputsSameResult) {
  const Cluster cluster = MakeCluster("2x4xV100");
  std::vector<JobSpec> jobs;
  Rng rng(7);
  for (uint32_t i = 0; i < 300; ++i) {
    jobs.push_back(Job(i, 1 << rng.Below(3), i * 7.0, rng.Exponential(300) + 1));
  }
  for (const char* policy : {"fifo", "las", "tiresias", "srtf"}) {
    SCOPED_TRACE(policy);
    SimOptions options;
    options.estimate_error = 0.5;
    const RunResult a = Simulated(policy, cluster, jobs, options);
    const RunResult b = Simulated(policy, cluster, jobs, options);
    ASSERT_EQ(a.jobs.size(), b.jobs.size());
    for (size_t i = 0; i < a.jobs.size(); ++i) {
      EXPECT_EQ(a.jobs[i].finish_time, b.jobs[i].finish_time);
      EXPECT_EQ(a.jobs[i].preemptions, b.jobs[i].preemptions);
    }
    EXPECT_EQ(a.summary.completed, 300);
    EXPECT_EQ(a.series.size(), b.series.size());
  }
}

TEST(SimulatorTest, SamplesWhyJobsWaitAndMeasuresTenantsAndGpuTypes) {
  // One K80 and one V100 node. Tenant a's 4-GPU V100 job runs 0-100 s; tenant b's V100 job
  // waits for it (GPUs busy) while the K80s sit idle; then it runs 100-150 s.
  const Cluster cluster = MakeCluster("1x4xK80+1x4xV100");
  JobSpec first = Job(0, 4, 0, 100);
  first.gpu_type = "V100";
  first.queue = "a";
  JobSpec second = Job(1, 4, 0, 50);
  second.gpu_type = "V100";
  second.queue = "b";
  SimOptions options;
  options.explain_every = seconds(10);
  const RunResult run = Simulated("fifo-backfill", cluster, {first, second}, options);
  ASSERT_EQ(run.summary.completed, 2);
  const auto waited = [&](PendingCause cause) {
    return run.jobs[1].pending_s_by_cause[static_cast<size_t>(cause)];
  };
  EXPECT_DOUBLE_EQ(waited(PendingCause::kNoMatchingGpus), 100);  // 4 K80s free, none usable
  EXPECT_DOUBLE_EQ(
      run.summary.pending_s_by_cause[static_cast<size_t>(PendingCause::kNoMatchingGpus)], 100);
  EXPECT_DOUBLE_EQ(run.summary.fragmentation_blocked_s, 0);
  ASSERT_EQ(run.summary.tenant_share.size(), 2u);
  EXPECT_EQ(run.summary.tenant_share[0].first, "a");
  EXPECT_NEAR(run.summary.tenant_share[0].second, 2.0 / 3, 1e-9);  // 400 of 600 GPU-seconds
  ASSERT_EQ(run.summary.gpu_type_utilization.size(), 2u);
  EXPECT_EQ(run.summary.gpu_type_utilization[0], (std::pair<std::string, double>("K80", 0.0)));
  EXPECT_EQ(run.summary.gpu_type_utilization[1], (std::pair<std::string, double>("V100", 1.0)));

  // Sampling off: nothing is counted, and the decisions are the same.
  options.explain_every = Duration::zero();
  const RunResult quiet = Simulated("fifo-backfill", cluster, {first, second}, options);
  EXPECT_EQ(quiet.jobs[1].finish_time, run.jobs[1].finish_time);
  EXPECT_DOUBLE_EQ(
      quiet.summary.pending_s_by_cause[static_cast<size_t>(PendingCause::kNoMatchingGpus)], 0);
}

}  // namespace
}  // namespace dlsched::sim
