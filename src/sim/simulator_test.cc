#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dlsched/policy/pipeline.h"
#include "io/profile.h"
#include "policy/sharing_policy.h"
#include "support/builders.h"

namespace dlsched::sim {
namespace {

using dlsched::testing::MakeCluster;
using dlsched::testing::MakeJob;
using std::chrono::seconds;

std::unique_ptr<SchedulingPolicy> Policy(const std::string& name) {
  auto profile = LoadPolicyProfile(name);
  DS_CHECK(profile.ok()) << profile.status().ToString();
  auto policy = BuildPolicy(*profile);
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
  options.runtime_estimates = RuntimeEstimates::kOracle;  // srtf knows which job is short
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

JobSpec UserJob(uint32_t id, std::string user, double submit_s, double work_s) {
  JobSpec spec = Job(id, 1, submit_s, work_s);
  spec.user = std::move(user);
  return spec;
}

TEST(SimulatorTest, OracleAndHistoryEstimatesOrderSjfDifferentlyAndAreLabelled) {
  // Phase 1 (t = 0..5): u1's jobs take 10 s, u2's 100 s. Phase 2: x holds the GPU from 1000 to
  // 1050; p (u2, truly 5 s) and q (u1, truly 50 s) wait for it. The history predicts q short
  // (u1's past) and p long (u2's past); the oracle knows p is the short one.
  const Cluster cluster = MakeCluster("1x1xV100");
  std::vector<JobSpec> jobs;
  for (uint32_t i = 0; i < 3; ++i) jobs.push_back(UserJob(i, "u1", i, 10));
  for (uint32_t i = 3; i < 6; ++i) jobs.push_back(UserJob(i, "u2", i, 100));
  jobs.push_back(UserJob(6, "u3", 1000, 50));
  jobs.push_back(UserJob(7, "u2", 1001, 5));   // p
  jobs.push_back(UserJob(8, "u1", 1002, 50));  // q

  const RunResult history = Simulated("sjf", cluster, jobs);
  EXPECT_EQ(history.runtime_estimator, "history");
  EXPECT_FALSE(history.oracle);
  EXPECT_EQ(history.jobs[8].first_start, AtSeconds(1050));
  EXPECT_EQ(history.jobs[7].first_start, AtSeconds(1100));

  SimOptions oracle_options;
  oracle_options.runtime_estimates = RuntimeEstimates::kOracle;
  const RunResult oracle = Simulated("sjf", cluster, jobs, oracle_options);
  EXPECT_EQ(oracle.runtime_estimator, "oracle");
  EXPECT_TRUE(oracle.oracle);
  EXPECT_EQ(oracle.jobs[7].first_start, AtSeconds(1050));
  EXPECT_EQ(oracle.jobs[8].first_start, AtSeconds(1055));
}

TEST(SimulatorTest, StatedEstimatesAreUsersEstimates) {
  // With users' estimates, sjf follows what users say: j1 claims to be short.
  const Cluster cluster = MakeCluster("1x1xV100");
  std::vector<JobSpec> jobs = {Job(0, 1, 0, 100), Job(1, 1, 1, 500), Job(2, 1, 2, 50)};
  jobs[1].runtime_estimate = seconds(10);
  jobs[2].runtime_estimate = seconds(1000);
  SimOptions options;
  options.runtime_estimates = RuntimeEstimates::kStated;
  const RunResult run = Simulated("sjf", cluster, jobs, options);
  EXPECT_EQ(run.runtime_estimator, "stated");
  EXPECT_FALSE(run.oracle);
  EXPECT_EQ(run.jobs[1].first_start, AtSeconds(100));
  EXPECT_EQ(run.jobs[2].first_start, AtSeconds(600));
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
    // Every instant with events runs one cycle, timed; the count is a function of the inputs.
    EXPECT_GT(a.summary.cycle_times.cycles, 0);
    EXPECT_EQ(a.summary.cycle_times.cycles, b.summary.cycle_times.cycles);
    EXPECT_LE(a.summary.cycle_times.p50_s, a.summary.cycle_times.p99_s);
    EXPECT_LE(a.summary.cycle_times.p99_s, a.summary.cycle_times.max_s);
    EXPECT_GT(a.summary.cycle_times.max_s, 0);
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

// GPU sharing: a sharing policy over fifo-backfill, with the built-in job types, so the jobs'
// features and ground truth come from the SharingWorld and the test checks the executor's
// timing against it.
class SharedSimulationTest : public ::testing::Test {
 protected:
  RunResult Run(std::vector<JobSpec> jobs, ShareMode mode, SimOptions options = {}) {
    SharingOptions sharing_options;
    sharing_options.interference_noise_cv = 0;
    auto built = SharingWorld::Build(jobs, cluster_, sharing_options);
    DS_CHECK(built.ok()) << built.status().ToString();
    world_ = std::move(built).value();
    SharingPolicyConfig config;
    config.name = "share";
    config.mode = mode;
    config.max_slowdown = 100;
    Workload workload{"test", std::move(jobs), 0};
    SimpleThroughputModel model;
    SharingWorld run_world = *world_;
    return Simulate({cluster_, workload, model, model, &run_world},
                    MakeSharingPolicy(config, Policy("fifo-backfill")), options);
  }

  Cluster cluster_ = MakeCluster("1x1xV100");  // one GPU of 16 GiB
  std::unique_ptr<SharingWorld> world_;
};

JobSpec Fraction(uint32_t id, double submit_s, double work_s, int64_t memory_mib) {
  JobSpec spec = Job(id, 1, submit_s, work_s);
  spec.memory_mib = memory_mib;
  return spec;
}

TEST_F(SharedSimulationTest, PackedJobsRunAtTheirInterferenceSpeedUntilOneLeaves) {
  const RunResult run =
      Run({Fraction(0, 0, 1000, 7000), Fraction(1, 1, 1000, 7000)}, ShareMode::kPacked);
  ASSERT_EQ(run.summary.completed, 2);
  // Job 0 runs alone for 1 s, then both at the truth's pair speed s until job 0 ends; job 1
  // then runs its last second alone.
  const double s = world_->PackedSpeed(JobId(0), std::vector<JobId>{JobId(1)}, GpuTypeId(0));
  ASSERT_LT(s, 1.0);
  const double first_end = 1 + 999 / s;
  EXPECT_NEAR(ToSeconds(run.jobs[0].finish_time - kTimeZero), first_end, 1e-3);
  EXPECT_NEAR(ToSeconds(run.jobs[1].finish_time - kTimeZero), first_end + 1, 1e-3);
  EXPECT_EQ(run.sharing.jobs_shared, 2);
  EXPECT_NEAR(run.sharing.max_slowdown, 1 / s, 1e-9);
  EXPECT_NEAR(run.sharing.shared_gpu_s, first_end - 1, 1e-3);
  EXPECT_EQ(run.sharing.oom_restarts, 0);
  EXPECT_GT(run.sharing.gpu_mem_utilization, 0);
}

TEST_F(SharedSimulationTest, TimeSlicedJobsEachGetTheirTurnsOfTheGpu) {
  SimOptions options;
  options.time_slice_overhead = 0.05;
  const RunResult run = Run({Fraction(0, 0, 1000, 2048), Fraction(1, 1, 1000, 2048)},
                            ShareMode::kTimeSliced, options);
  ASSERT_EQ(run.summary.completed, 2);
  // Job 0 runs alone for 1 s, then both at (1 - 0.05) / 2 of their speed until job 0 ends; job
  // 1 then runs its last second alone.
  const double first_end = 1 + 999 / 0.475;
  EXPECT_NEAR(ToSeconds(run.jobs[0].finish_time - kTimeZero), first_end, 1e-3);
  EXPECT_NEAR(ToSeconds(run.jobs[1].finish_time - kTimeZero), first_end + 1, 1e-3);
  EXPECT_NEAR(run.sharing.max_slowdown, 1 / 0.475, 1e-9);
}

TEST_F(SharedSimulationTest, UnderDeclaredMemoryKillsOneJobWhichRestartsAloneAndFinishes) {
  // Two large CNNs (13 GiB each, built-in type) whose users declare 4 GiB: the policy packs
  // them on the 16 GiB GPU, the truth runs out of memory at once; the victim restarts from its
  // checkpoint and, as a job just killed out of memory, gets a GPU of its own.
  JobSpec a = Job(0, 1, 0, 3600);
  JobSpec b = Job(1, 1, 1, 3600);
  for (JobSpec* spec : {&a, &b}) {
    spec->model = "large-cnn";
    spec->batch_size = 128;
    spec->memory_mib = 4096;
  }
  const RunResult run = Run({a, b}, ShareMode::kPacked);
  EXPECT_EQ(run.summary.completed, 2);
  EXPECT_EQ(run.sharing.oom_restarts, 1);
  // The kill came as the second job joined, before any checkpoint: at most the first job's one
  // second alone was lost, and no job ran slowed for long.
  EXPECT_LE(run.sharing.oom_lost_gpu_s, 1.0 + 1e-9);
  EXPECT_LT(run.sharing.shared_gpu_s, 1.0);
  // Both finish; the victim waits for the survivor's GPU, as it may not share for a while.
  const Timestamp last = std::max(run.jobs[0].finish_time, run.jobs[1].finish_time);
  EXPECT_NEAR(ToSeconds(last - kTimeZero), 7200 + 30, 2.0);  // + the restore delay
}

// Checks, before every decision, that the scheduler's running index is in the policy's rank
// order (RunningIndex::CheckOrder; debug builds check it on every Refresh), and counts the
// checks and the first failure.
struct OrderChecks {
  int checked = 0;
  std::string first_failure;
};
class OrderChecking final : public SchedulingPolicy {
 public:
  OrderChecking(std::unique_ptr<SchedulingPolicy> inner, OrderChecks& checks)
      : inner_(std::move(inner)), checks_(&checks) {}
  std::string_view Name() const override { return inner_->Name(); }
  const RankOrder& Order() const override { return inner_->Order(); }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    return inner_->Admit(job, ctx);
  }
  Decisions Decide(const SchedulingContext& ctx) const override {
    ++checks_->checked;
    const Status order = ctx.running_by_rank.CheckOrder(ctx.now);
    if (!order.ok() && checks_->first_failure.empty()) checks_->first_failure = order.message();
    return inner_->Decide(ctx);
  }

 private:
  std::unique_ptr<SchedulingPolicy> inner_;
  OrderChecks* checks_;
};

TEST(SimulatorTest, EveryShippedQueueSortKeepsTheRunningIndexInItsRankOrder) {
  // Gangs of 1 to 8 GPUs arriving faster than 16 GPUs serve them, a third with deadlines, so
  // that jobs preempt each other, wait, and cross their sorts' thresholds and grid points.
  Rng rng(11);
  std::vector<JobSpec> jobs;
  for (uint32_t i = 0; i < 160; ++i) {
    JobSpec spec = Job(i, 1 << rng.Below(4), 30.0 * i, rng.Uniform(60, 20000));
    spec.priority = static_cast<int>(rng.Below(4));
    if (i % 3 == 0) spec.deadline = spec.submit_time + Seconds(rng.Uniform(3000, 40000));
    jobs.push_back(std::move(spec));
  }
  const Cluster cluster = MakeCluster("2x8xV100");
  for (const char* sort :
       {"fifo", "sjf", "srtf", "las", "tiresias", "priority", "multi_priority", "edf", "laxity"}) {
    SCOPED_TRACE(sort);
    PipelineConfig profile;
    profile.name = sort;
    profile.admit = {{"feasibility", {}, 1}};
    profile.queue_sort = {sort, {}, 1};
    if (std::string_view(sort) == "las")
      profile.queue_sort.args = PluginArgs({{"quantum_s", "300"}});
    profile.score = {{"consolidate", {}, 1}};
    profile.preempt = {{"priority_preempt", PluginArgs({{"min_run_s", "120"}}), 1}};
    auto built = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    OrderChecks checks;
    Workload workload{"mixed", jobs, 0};
    SimpleThroughputModel model;
    const RunResult run =
        Simulate({cluster, workload, model, model},
                 std::make_unique<OrderChecking>(std::move(built).value(), checks), SimOptions{});
    EXPECT_GT(run.summary.preemptions, 0);  // victims were filed, guarded and walked
    EXPECT_GT(checks.checked, 100);
    EXPECT_EQ(checks.first_failure, "");
  }
}

}  // namespace
}  // namespace dlsched::sim
