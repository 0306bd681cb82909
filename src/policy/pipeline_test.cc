#include "dlsched/policy/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "dlsched/runtime/scheduler.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using ::testing::ElementsAre;
using testing::MakeCluster;
using testing::MakeJob;
using testing::RecordingExecutor;

// A filter that keeps every job off node 0.
class NotNodeZero final : public FilterPlugin {
 public:
  static constexpr std::string_view kName = "not-node-0";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args) {
    DS_RETURN_IF_ERROR(args.CheckKnown({}));
    return std::unique_ptr<Plugin>(std::make_unique<NotNodeZero>());
  }
  std::string_view Name() const override { return kName; }
  Fit FilterNode(const JobView&, NodeId node, const SchedulingContext&) const override {
    return node == NodeId(0) ? Fit::Unfit("node 0 is reserved") : Fit::Yes();
  }
};

// The profile's filters decide which nodes a gang may use, and why-pending names the filter
// that keeps a job waiting while enough GPUs are free elsewhere.
TEST(PipelineFilterTest, AFilterKeepsJobsOffTheNodesItRefusesAndWhyPendingNamesIt) {
  PluginRegistry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  ASSERT_TRUE(registry.Register<NotNodeZero>().ok());
  PipelineConfig profile;
  profile.name = "filtered";
  profile.queue_sort = {"fifo", {}, 1};
  profile.filter = {{"not-node-0", {}, 1}};
  profile.score = {{"consolidate", {}, 1}};
  const Cluster cluster = MakeCluster("2x4xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, registry);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto submit = [&](uint32_t i, int gpus) {
    Result<JobId> id = scheduler.Submit(MakeJob(i).Gpus(gpus).Spec(), kTimeZero);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  };
  const JobId first = submit(0, 1);
  scheduler.RunCycle(kTimeZero);
  ASSERT_EQ(scheduler.jobs().at(first).state, JobState::kRunning);
  EXPECT_EQ(scheduler.jobs().at(first).placement.parts.at(0).node, NodeId(1));

  const JobId blocked = submit(1, 4);  // node 1 has 3 free, node 0 all 4
  scheduler.RunCycle(kTimeZero);
  EXPECT_EQ(scheduler.jobs().at(blocked).state, JobState::kQueued);
  const std::vector<PendingReason> reasons = scheduler.ExplainPending(kTimeZero);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].job, blocked);
  EXPECT_EQ(reasons[0].cause, PendingCause::kNoMatchingGpus);
  EXPECT_EQ(reasons[0].reason,
            "needs 4 GPUs on nodes the profile's filters pass: 3 free there (7 free in total); "
            "filter not-node-0 refuses nodes with 4 of them (node 0 is reserved)");
}

// The two quota passes of a backfilling pipeline: jobs within their tenant's guarantee start
// first, in policy order; then the others, in policy order, on what is left. The first pass
// walks only the tenants below their guarantee and the second the whole queue, so each must
// see its jobs in the same order, skip the other pass's ones and drop gangs wider than what
// could still start, whichever walk (starving jobs by wait, or the policy order) met them and
// whether victim searches keep the bound open.
TEST(PipelineQuotaTest, GuaranteedJobsStartFirstThenBorrowersInPolicyOrder) {
  struct Case {
    const char* name;
    bool preempt;
    bool starving;  // a zero starvation limit: every job is walked by wait, not by rank
  };
  for (const Case& c :
       {Case{"backfill", false, false}, Case{"with preemption", true, false},
        Case{"all starving", false, true}, Case{"all starving, with preemption", true, true}}) {
    SCOPED_TRACE(c.name);
    PipelineConfig profile;
    profile.name = "fifo-quota";
    profile.admit = {{"feasibility", {}, 1}};
    profile.queue_sort = {"fifo", {}, 1};
    profile.score = {{"consolidate", {}, 1}};
    profile.backfill = true;
    if (c.preempt) profile.preempt = {{"priority_preempt", {}, 1}};
    if (c.starving) profile.starvation_limit = Duration(0);
    // 8 GPUs: a and b are guaranteed 2 each; c has no quota (never within a guarantee).
    profile.quotas = {{"a", {0.25, 1.0}}, {"b", {0.25, 0.75}}};
    const Cluster cluster = MakeCluster("1x8xV100");
    RecordingExecutor executor;
    SimpleThroughputModel model;
    auto policy = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);

    struct Submission {
      const char* tenant;
      int gpus;
    };
    // FIFO order. Without quotas, backfill would start c1, b1, b2 and b3.
    const Submission submissions[] = {{"c", 3}, {"b", 2}, {"b", 2}, {"a", 2},
                                      {"b", 1}, {"a", 1}, {"c", 1}};
    std::vector<JobId> ids;
    for (uint32_t i = 0; i < std::size(submissions); ++i) {
      JobSpec spec = MakeJob(i).Gpus(submissions[i].gpus).Spec();
      spec.queue = submissions[i].tenant;
      auto id = scheduler.Submit(spec, kTimeZero);
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ids.push_back(*id);
    }
    scheduler.RunCycle(kTimeZero);
    // First pass: b1 and a1 (each within its 2 GPUs). Second: c1 (3 of the 4 left), b3 (the
    // last one); b2 (2 GPUs), a2 and c2 find nothing free and no job ranked below them.
    EXPECT_THAT(executor.Launched(), ElementsAre(ids[1], ids[3], ids[0], ids[4]));
    EXPECT_TRUE(executor.Preempted().empty());
    EXPECT_EQ(scheduler.state().free_total(), 0);
    for (size_t i : {2, 5, 6}) {
      EXPECT_EQ(scheduler.jobs().at(ids[i]).state, JobState::kQueued) << i;
    }
  }
}

// A tenant above its guarantee when the first pass starts may fall below it during the pass,
// when several of its jobs are preempted for another tenant: its jobs the pass meets after
// that are within the guarantee, so they start (or reclaim GPUs) in the first pass too.
TEST(PipelineQuotaTest, ATenantFallingBelowItsGuaranteeMidPassIsServedInTheFirstPass) {
  PipelineConfig profile;
  profile.name = "fifo-quota";
  profile.admit = {{"feasibility", {}, 1}};
  profile.queue_sort = {"fifo", {}, 1};
  profile.score = {{"consolidate", {}, 1}};
  profile.preempt = {{"priority_preempt", {}, 1}};
  profile.backfill = true;
  // 8 GPUs: a and b are guaranteed 2 each; c has no quota.
  profile.quotas = {{"a", {0.25, 1.0}}, {"b", {0.25, 1.0}}};
  const Cluster cluster = MakeCluster("1x8xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, InTreeRegistry());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto submit = [&](uint32_t i, const char* tenant, int gpus, Timestamp at) {
    JobSpec spec = MakeJob(i).Gpus(gpus).Spec();
    spec.queue = tenant;
    auto id = scheduler.Submit(spec, at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : JobId();
  };

  // c0 (5 GPUs), b0 (1) and b1 (2) fill the cluster; b holds 3, above its guarantee.
  const JobId c0 = submit(0, "c", 5, kTimeZero);
  submit(1, "b", 1, kTimeZero);
  const JobId b1 = submit(2, "b", 2, kTimeZero);
  scheduler.RunCycle(kTimeZero);
  ASSERT_EQ(scheduler.state().free_total(), 0);

  // a0 reclaims b1 (b's lowest-ranked running job, b borrowing one GPU), which leaves b 1 GPU:
  // b2, next in FIFO order, is then within b's guarantee and reclaims c0's GPUs in the same
  // pass. Had it waited for the second pass, that pass would pass over it as a guaranteed job.
  const JobId a0 = submit(3, "a", 2, AtSeconds(1));
  const JobId b2 = submit(4, "b", 1, AtSeconds(1));
  scheduler.RunCycle(AtSeconds(1));
  EXPECT_THAT(executor.Preempted(), ElementsAre(b1, c0));
  for (JobId id : {b1, c0}) {
    ASSERT_TRUE(scheduler.Handle(JobSuspended{id, 0}, AtSeconds(2)).ok());
  }
  scheduler.RunCycle(AtSeconds(2));
  EXPECT_EQ(scheduler.jobs().at(a0).state, JobState::kRunning);
  EXPECT_EQ(scheduler.jobs().at(b2).state, JobState::kRunning);
}

// A max_share of 1 caps nothing: a tenant holding every GPU is not over its quota, so its own
// higher-ranked job preempts its lower-ranked one (and waits as gpus-busy, not as quota).
TEST(PipelineQuotaTest, AWholeClusterMaxShareIsNoCap) {
  PipelineConfig profile;
  profile.name = "priority-guarantee";
  profile.admit = {{"feasibility", {}, 1}};
  profile.queue_sort = {"priority", {}, 1};
  profile.score = {{"consolidate", {}, 1}};
  profile.preempt = {{"priority_preempt", {}, 1}};
  profile.backfill = true;
  profile.quotas = {{"*", {0.1, 1.0}}};
  const Cluster cluster = MakeCluster("1x4xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, InTreeRegistry());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  auto low = scheduler.Submit(MakeJob(0).Gpus(4).Spec(), kTimeZero);
  ASSERT_TRUE(low.ok());
  scheduler.RunCycle(kTimeZero);
  ASSERT_EQ(scheduler.jobs().at(*low).state, JobState::kRunning);
  auto high = scheduler.Submit(MakeJob(1).Gpus(4).Priority(5).Spec(), AtSeconds(1));
  ASSERT_TRUE(high.ok());
  scheduler.RunCycle(AtSeconds(1));
  EXPECT_THAT(executor.Preempted(), ElementsAre(*low));
}

// One node of `gpus` V100s and `cpus` CPU cores (0: not stated).
Cluster OneNode(int gpus, int cpus) {
  Cluster cluster;
  NodeSpec node;
  node.name = "n0";
  node.rack = cluster.InternRack("r0");
  const GpuTypeId v100 = cluster.InternGpuType("V100");
  for (int g = 0; g < gpus; ++g) node.gpus.push_back({v100, 16384, 0});
  node.cpus = cpus;
  DS_CHECK(cluster.AddNode(std::move(node)).ok());
  return cluster;
}

// A fifo profile without preemption; `fair`: the fair tenant order.
PipelineConfig FifoProfile(bool fair, PipelineConfig::ShareMeasure measure) {
  PipelineConfig profile;
  profile.name = "fifo-tenants";
  profile.admit = {{"feasibility", {}, 1}};
  profile.queue_sort = {"fifo", {}, 1};
  profile.score = {{"consolidate", {}, 1}};
  profile.backfill = true;
  profile.share_measure = measure;
  if (fair) profile.tenant_order = PipelineConfig::TenantOrder::kFair;
  return profile;
}

// Submits `count` jobs of `gpus` GPUs and `cpus` CPUs for tenant `tenant`, ids from `first`.
std::vector<JobId> SubmitTasks(Scheduler& scheduler, const char* tenant, uint32_t first, int count,
                               int gpus, int cpus) {
  std::vector<JobId> ids;
  for (int i = 0; i < count; ++i) {
    JobSpec spec = MakeJob(first + static_cast<uint32_t>(i)).Gpus(gpus).Spec();
    spec.queue = tenant;
    spec.cpus = cpus;
    Result<JobId> id = scheduler.Submit(spec, kTimeZero);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (id.ok()) ids.push_back(*id);
  }
  return ids;
}

int CountRunning(const Scheduler& scheduler, const std::vector<JobId>& ids) {
  int running = 0;
  for (JobId id : ids) running += scheduler.jobs().at(id).state == JobState::kRunning;
  return running;
}

// DRF's example (Ghodsi et al., NSDI'11, section 4), with GPUs for its CPUs and CPU cores for
// its GB of memory: 9 GPUs and 18 CPUs; user A's tasks take <1 GPU, 4 CPUs>, B's <3 GPUs,
// 1 CPU>. Progressive filling on dominant shares gives A three tasks and B two (both at a
// dominant share of 2/3), whatever order the queue sort gives their jobs (here all of A's
// first). On GPU shares alone, and in the rank order (fifo) without the fair order, A's tasks,
// small in GPUs, take what the node's CPUs hold (four: 16 of 18 CPUs) and B gets one task; on a
// cluster that states no CPUs (where the dominant share is the GPU share and CPUs limit
// nothing) A takes all six.
TEST(PipelineFairTest, ProgressiveFillingOnDominantSharesIsDrf) {
  using Measure = PipelineConfig::ShareMeasure;
  struct Case {
    const char* name;
    bool fair;
    Measure measure;
    int cpus;  // the node's
    int a, b;  // tasks running
  };
  for (const Case& c : {Case{"dominant share", true, Measure::kDominant, 18, 3, 2},
                        Case{"gpu share", true, Measure::kGpu, 18, 4, 1},
                        Case{"dominant, no CPUs stated", true, Measure::kDominant, 0, 6, 1},
                        Case{"rank order", false, Measure::kDominant, 18, 4, 1}}) {
    SCOPED_TRACE(c.name);
    const Cluster cluster = OneNode(9, c.cpus);
    RecordingExecutor executor;
    SimpleThroughputModel model;
    auto policy = BuildPipeline(FifoProfile(c.fair, c.measure), InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
    const std::vector<JobId> a = SubmitTasks(scheduler, "A", 0, 6, 1, 4);
    const std::vector<JobId> b = SubmitTasks(scheduler, "B", 10, 3, 3, 1);
    scheduler.RunCycle(kTimeZero);
    EXPECT_EQ(CountRunning(scheduler, a), c.a);
    EXPECT_EQ(CountRunning(scheduler, b), c.b);
  }
}

// A quota on the dominant share caps every resource: a tenant capped at half the cluster runs
// two jobs of 8 CPUs on 32 CPUs however few GPUs they take, and why-pending names the CPUs; on
// GPU shares it runs all four (4 of 16 GPUs).
TEST(PipelineFairTest, ADominantShareQuotaCapsCpus) {
  for (const auto measure :
       {PipelineConfig::ShareMeasure::kDominant, PipelineConfig::ShareMeasure::kGpu}) {
    const bool dominant = measure == PipelineConfig::ShareMeasure::kDominant;
    SCOPED_TRACE(dominant ? "dominant" : "gpu");
    PipelineConfig profile = FifoProfile(false, measure);
    profile.quotas = {{"a", {0.0, 0.5}}};
    const Cluster cluster = OneNode(16, 32);
    RecordingExecutor executor;
    SimpleThroughputModel model;
    auto policy = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
    const std::vector<JobId> a = SubmitTasks(scheduler, "a", 0, 4, 1, 8);
    scheduler.RunCycle(kTimeZero);
    EXPECT_EQ(CountRunning(scheduler, a), dominant ? 2 : 4);
    const std::vector<PendingReason> reasons = scheduler.ExplainPending(kTimeZero);
    if (dominant) {
      ASSERT_EQ(reasons.size(), 2u);
      EXPECT_EQ(reasons[0].cause, PendingCause::kQuota);
      EXPECT_EQ(reasons[0].reason, "tenant 'a' holds 16 CPUs; its cap is 16 (dominant share)");
    } else {
      EXPECT_TRUE(reasons.empty());
    }
  }
}

// A tenant within its guarantee reclaims GPUs from a borrower: on dominant shares a tenant at
// its GPU guarantee but over its CPU guarantee borrows; on GPU shares it does not.
TEST(PipelineFairTest, ATenantOverItsCpuGuaranteeIsABorrower) {
  for (const auto measure :
       {PipelineConfig::ShareMeasure::kDominant, PipelineConfig::ShareMeasure::kGpu}) {
    const bool dominant = measure == PipelineConfig::ShareMeasure::kDominant;
    SCOPED_TRACE(dominant ? "dominant" : "gpu");
    PipelineConfig profile = FifoProfile(false, measure);
    profile.preempt = {{"priority_preempt", {}, 1}};
    profile.quotas = {{"*", {0.5, 1.0}}};  // 2 of the 4 GPUs, 4 of the 8 CPUs
    const Cluster cluster = OneNode(4, 8);
    RecordingExecutor executor;
    SimpleThroughputModel model;
    auto policy = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
    const std::vector<JobId> b = SubmitTasks(scheduler, "b", 0, 1, 2, 6);  // over on CPUs
    const std::vector<JobId> c = SubmitTasks(scheduler, "c", 1, 1, 2, 0);  // at its guarantee
    scheduler.RunCycle(kTimeZero);
    ASSERT_EQ(CountRunning(scheduler, b) + CountRunning(scheduler, c), 2);
    SubmitTasks(scheduler, "a", 2, 1, 2, 1);  // within its guarantee; ranked below both
    scheduler.RunCycle(AtSeconds(1));
    if (dominant) {
      EXPECT_THAT(executor.Preempted(), ElementsAre(b[0]));
    } else {
      EXPECT_TRUE(executor.Preempted().empty());
    }
  }
}

// Two Tiresias queues split at 100 GPU-s, preempting by priority_preempt.
PipelineConfig TwoQueueTiresias(bool lower_rank_only) {
  PipelineConfig profile;
  profile.name = "two-queue-tiresias";
  profile.queue_sort = {"tiresias", PluginArgs({{"thresholds_gpu_s", "100"}}), 1};
  profile.preempt = {{"priority_preempt",
                      PluginArgs({{"lower_rank_only", lower_rank_only ? "true" : "false"}}), 1}};
  return profile;
}

// priority_preempt's lower_rank_only: a waiting job preempts only jobs of a worse rank (here a
// lower Tiresias queue), never a later-submitted one of its own queue; without it, FIFO order
// inside the queue lets the earlier job take the GPU back.
TEST(PipelinePreemptTest, LowerRankOnlyNeverPreemptsWithinARank) {
  for (const bool lower_rank_only : {false, true}) {
    SCOPED_TRACE(lower_rank_only ? "lower_rank_only" : "any lower key");
    const PipelineConfig profile = TwoQueueTiresias(lower_rank_only);
    const Cluster cluster = MakeCluster("1x1xV100");
    RecordingExecutor executor;
    SimpleThroughputModel model;
    auto policy = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
    const auto a = scheduler.Submit(MakeJob(0).Spec(), kTimeZero);
    ASSERT_TRUE(a.ok());
    scheduler.RunCycle(kTimeZero);
    const auto b = scheduler.Submit(MakeJob(1).Spec(), AtSeconds(50));
    ASSERT_TRUE(b.ok());
    scheduler.RunCycle(AtSeconds(50));  // both in queue 0: a, submitted first, keeps the GPU
    EXPECT_TRUE(executor.Preempted().empty());
    scheduler.RunCycle(AtSeconds(100));  // a has 100 GPU-s: queue 1, below b
    ASSERT_THAT(executor.Preempted(), ElementsAre(*a));
    ASSERT_TRUE(scheduler.Handle(JobSuspended{*a, 0}, AtSeconds(100)).ok());
    scheduler.RunCycle(AtSeconds(100));
    ASSERT_EQ(scheduler.jobs().at(*b).state, JobState::kRunning);
    scheduler.RunCycle(AtSeconds(200));  // b has 100 GPU-s too: both in queue 1
    if (lower_rank_only) {
      EXPECT_THAT(executor.Preempted(), ElementsAre(*a));
    } else {
      EXPECT_THAT(executor.Preempted(), ElementsAre(*a, *b));
    }
  }
}

// A lower_rank_only search stops at the first victim of the job's rank (LowerRankOnly): it still
// takes the victims of a worse rank met before, and never commits them alone when the job needs
// the same-rank victim's GPUs too.
TEST(PipelinePreemptTest, LowerRankOnlySearchStopsAtTheJobsRank) {
  const PipelineConfig profile = TwoQueueTiresias(/*lower_rank_only=*/true);
  const Cluster cluster = MakeCluster("1x2xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, InTreeRegistry());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto a = scheduler.Submit(MakeJob(0).Spec(), kTimeZero);
  ASSERT_TRUE(a.ok());
  scheduler.RunCycle(kTimeZero);
  const auto c = scheduler.Submit(MakeJob(1).Spec(), AtSeconds(50));
  ASSERT_TRUE(c.ok());
  scheduler.RunCycle(AtSeconds(50));
  ASSERT_EQ(scheduler.jobs().at(*c).state, JobState::kRunning);
  // At 100 s a is in queue 1, c still in queue 0. A 2-GPU job of queue 0 needs c's GPU too.
  const auto wide = scheduler.Submit(MakeJob(2).Gpus(2).Spec(), AtSeconds(100));
  ASSERT_TRUE(wide.ok());
  scheduler.RunCycle(AtSeconds(100));
  EXPECT_TRUE(executor.Preempted().empty());
  // A 1-GPU job of queue 0 takes a's GPU, never c's.
  const auto narrow = scheduler.Submit(MakeJob(3).Spec(), AtSeconds(101));
  ASSERT_TRUE(narrow.ok());
  scheduler.RunCycle(AtSeconds(101));
  EXPECT_THAT(executor.Preempted(), ElementsAre(*a));
}

// A preempt plugin that lets any job preempt any victim at once, and counts the pairs it is
// asked about.
class CountingPreempt final : public PreemptPlugin {
 public:
  static constexpr std::string_view kName = "counting-preempt";
  static inline int asked = 0;
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args) {
    DS_RETURN_IF_ERROR(args.CheckKnown({}));
    return std::unique_ptr<Plugin>(std::make_unique<CountingPreempt>());
  }
  std::string_view Name() const override { return kName; }
  Timestamp VictimFrom(const JobView& victim) const override { return victim.job().segment_start; }
  Fit MayPreempt(const JobView&, const JobView&, const SchedulingContext&) const override {
    ++asked;
    return Fit::Yes();
  }
};

// A failed victim search that met every victim ranked below its job (no guarantee shielded
// one) stands for a later job of another tenant, as wide and ranked at or below it: that job's
// search would meet a subset of the same victims and fail too, so it walks none.
TEST(PipelinePreemptTest, AnUnshieldedFailedSearchSparesLaterTenantsTheWalk) {
  PluginRegistry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  ASSERT_TRUE(registry.Register<CountingPreempt>().ok());
  PipelineConfig profile;
  profile.name = "priority-quota";
  profile.queue_sort = {"priority", {}, 1};
  profile.score = {{"consolidate", {}, 1}};
  profile.preempt = {{"counting-preempt", {}, 1}};
  profile.quotas = {{"a", {0.0, 1.0}}, {"b", {0.0, 1.0}}};  // no guarantee shields a job
  const Cluster cluster = MakeCluster("1x4xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, registry);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto submit = [&](uint32_t i, int gpus, int priority, const char* tenant, Timestamp at) {
    JobSpec spec = MakeJob(i).Gpus(gpus).Priority(priority).Spec();
    spec.queue = tenant;
    Result<JobId> id = scheduler.Submit(spec, at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  };
  // Tenant a runs a 2-GPU job above the waiting ones and two 1-GPU jobs below them.
  submit(0, 2, 10, "a", kTimeZero);
  submit(1, 1, 0, "a", kTimeZero);
  submit(2, 1, 0, "a", kTimeZero);
  scheduler.RunCycle(kTimeZero);
  ASSERT_EQ(scheduler.state().free_total(), 0);
  // Each 4-GPU job could free only the two low jobs' GPUs. The first search asks about both;
  // the second one's (tenant a's own, submitted later) is known to fail.
  CountingPreempt::asked = 0;
  const JobId first = submit(3, 4, 5, "b", AtSeconds(10));
  const JobId second = submit(4, 4, 5, "a", AtSeconds(10));
  scheduler.RunCycle(AtSeconds(10));
  EXPECT_EQ(CountingPreempt::asked, 2);
  EXPECT_TRUE(executor.Preempted().empty());
  EXPECT_EQ(scheduler.jobs().at(first).state, JobState::kQueued);
  EXPECT_EQ(scheduler.jobs().at(second).state, JobState::kQueued);
}

// A preempt plugin that refuses every victim to the jobs of tenant "polite" (MayPreemptAny) and
// lets every other job preempt any victim.
class PolitePreempt final : public PreemptPlugin {
 public:
  static constexpr std::string_view kName = "polite-preempt";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args) {
    DS_RETURN_IF_ERROR(args.CheckKnown({}));
    return std::unique_ptr<Plugin>(std::make_unique<PolitePreempt>());
  }
  std::string_view Name() const override { return kName; }
  Timestamp VictimFrom(const JobView& victim) const override { return victim.job().segment_start; }
  Fit MayPreempt(const JobView& job, const JobView&, const SchedulingContext& ctx) const override {
    return MayPreemptAny(job, ctx);
  }
  Fit MayPreemptAny(const JobView& job, const SchedulingContext&) const override {
    return job.job().spec.queue == "polite" ? Fit::Unfit("polite") : Fit::Yes();
  }
};

// A search that a plugin's refusal cut short met no victim, so under tenant quotas its failure
// stands for no later job of another tenant (Cycle::failed_unshielded): one the plugin lets
// preempt still takes the GPUs.
TEST(PipelinePreemptTest, ASearchARefusalCutShortStandsForNoOtherJob) {
  PluginRegistry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  ASSERT_TRUE(registry.Register<PolitePreempt>().ok());
  PipelineConfig profile;
  profile.name = "priority-polite";
  profile.queue_sort = {"priority", {}, 1};
  profile.score = {{"consolidate", {}, 1}};
  profile.preempt = {{"polite-preempt", {}, 1}};
  profile.backfill = true;  // the polite job blocks no one behind it
  profile.quotas = {{"a", {0.0, 1.0}}, {"polite", {0.0, 1.0}}};  // no guarantee shields a job
  const Cluster cluster = MakeCluster("1x2xV100");
  RecordingExecutor executor;
  SimpleThroughputModel model;
  auto policy = BuildPipeline(profile, registry);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Scheduler scheduler(cluster, std::move(policy).value(), executor, model, /*seed=*/1);
  const auto submit = [&](uint32_t i, int priority, const char* queue, Timestamp at) {
    JobSpec spec = MakeJob(i).Gpus(2).Priority(priority).Spec();
    spec.queue = queue;
    Result<JobId> id = scheduler.Submit(spec, at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  };
  const JobId low = submit(0, 0, "a", kTimeZero);
  scheduler.RunCycle(kTimeZero);
  const JobId polite = submit(1, 5, "polite", AtSeconds(10));
  submit(2, 5, "a", AtSeconds(10));  // ranks below polite: submitted after it
  scheduler.RunCycle(AtSeconds(10));
  EXPECT_THAT(executor.Preempted(), ElementsAre(low));
  EXPECT_EQ(scheduler.jobs().at(polite).state, JobState::kQueued);
}

// ---------------------------------------------------------------------------------------------
// Victim searches among jobs that share GPUs (RunningIndex::dead_victims): a search may leave
// out the victims whose release frees no GPU, and must decide as the whole walk would.

// The pipeline, except in a cycle the test scripted launches for: that cycle launches them (the
// pipeline launches no job shared; a sharing decorator does).
class ScriptedLaunches final : public SchedulingPolicy {
 public:
  ScriptedLaunches(std::unique_ptr<SchedulingPolicy> pipeline, std::vector<LaunchDecision>* script)
      : pipeline_(std::move(pipeline)), script_(script) {}
  std::string_view Name() const override { return pipeline_->Name(); }
  const RankOrder& Order() const override { return pipeline_->Order(); }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override {
    return pipeline_->Admit(job, ctx);
  }
  Decisions Decide(const SchedulingContext& ctx) const override {
    if (script_->empty()) return pipeline_->Decide(ctx);
    Decisions decisions;
    decisions.launches = std::exchange(*script_, {});
    return decisions;
  }

 private:
  std::unique_ptr<SchedulingPolicy> pipeline_;
  std::vector<LaunchDecision>* script_;
};

// Lets any job preempt any victim once it ran 100 s (VictimBlind), and records whom each job
// asked about.
class RecordingPreempt final : public PreemptPlugin {
 public:
  static constexpr std::string_view kName = "recording-preempt";
  static inline std::vector<std::pair<JobId, JobId>> asked;  // (job, victim)
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args) {
    DS_RETURN_IF_ERROR(args.CheckKnown({}));
    return std::unique_ptr<Plugin>(std::make_unique<RecordingPreempt>());
  }
  std::string_view Name() const override { return kName; }
  Timestamp VictimFrom(const JobView& victim) const override {
    return victim.job().segment_start + std::chrono::seconds(100);
  }
  Fit MayPreempt(const JobView& job, const JobView& victim,
                 const SchedulingContext&) const override {
    asked.push_back({job.id(), victim.id()});
    return Fit::Yes();
  }
  bool VictimBlind() const override { return true; }
};

class PipelineSharedVictimsTest : public ::testing::Test {
 protected:
  // Priority order, preemption (RecordingPreempt: after 100 s of run), with `quotas`.
  void Start(Cluster cluster,
             std::map<std::string, PipelineConfig::Quota, std::less<>> quotas = {}) {
    ASSERT_TRUE(RegisterInTreePlugins(registry_).ok());
    ASSERT_TRUE(registry_.Register<RecordingPreempt>().ok());
    RecordingPreempt::asked.clear();
    cluster_ = std::move(cluster);
    PipelineConfig profile;
    profile.name = "priority-shared";
    profile.queue_sort = {"priority", {}, 1};
    profile.score = {{"consolidate", {}, 1}};
    profile.preempt = {{"recording-preempt", {}, 1}};
    profile.quotas = std::move(quotas);
    auto policy = BuildPipeline(profile, registry_);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(
        cluster_, std::make_unique<ScriptedLaunches>(std::move(policy).value(), &script_),
        executor_, model_, /*seed=*/1);
  }
  JobId Submit(uint32_t i, int priority, Timestamp at, int gpus = 1, int cpus = 0,
               const char* tenant = "t") {
    JobSpec spec = MakeJob(i).Gpus(gpus).Priority(priority).Host(cpus).Spec();
    spec.queue = tenant;
    Result<JobId> id = scheduler_->Submit(spec, at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }
  // Queues the launch of `job` on GPU `gpu` of node 0 with `cpus`, shared or not, for the next
  // cycle.
  void Launch(JobId job, int gpu, ShareMode share, int cpus = 0) {
    script_.push_back({job, Placement{{NodeGpus{NodeId(0), GpuMask{1} << gpu, cpus, 0}}}, share});
  }
  // Runs the cycle at `at`; with launches scripted, expects them all carried out.
  void Cycle(Timestamp at) {
    const size_t scripted = script_.size();
    const CycleResult result = scheduler_->RunCycle(at);
    EXPECT_GE(result.launches.size(), scripted);
  }
  // On a 1x2xV100 cluster: `a` packed on GPU 0, `x` exclusive on GPU 1, then `g` (priority 9,
  // guarded) packed beside `a`, which makes `a` a dead victim. No GPU is left free.
  std::pair<JobId, JobId> FillWithADeadVictim(int a_priority, int x_priority) {
    Start(MakeCluster("1x2xV100"));
    const JobId a = Submit(0, a_priority, kTimeZero);
    const JobId x = Submit(1, x_priority, kTimeZero);
    Launch(a, 0, ShareMode::kPacked);
    Launch(x, 1, ShareMode::kExclusive);
    Cycle(kTimeZero);
    const JobId g = Submit(2, 9, AtSeconds(50));
    Launch(g, 0, ShareMode::kPacked);
    Cycle(AtSeconds(50));
    EXPECT_EQ(scheduler_->state().free_total(), 0);
    return {a, x};
  }
  std::vector<JobId> AskedAbout(JobId victim) const {
    std::vector<JobId> jobs;
    for (const auto& [job, v] : RecordingPreempt::asked) {
      if (v == victim) jobs.push_back(job);
    }
    return jobs;
  }

  PluginRegistry registry_;
  Cluster cluster_;
  RecordingExecutor executor_;
  SimpleThroughputModel model_;
  std::vector<LaunchDecision> script_;
  std::unique_ptr<Scheduler> scheduler_;
};

// A search walks `a` (dead: it shares GPU 0 with `g`, guarded) before `x`, whose GPU lets the
// job start: the whole walk released both, so both are preempted, as before dead victims were
// left out of the walk.
TEST_F(PipelineSharedVictimsTest, ASearchThatSucceedsPreemptsTheDeadVictimsTheWholeWalkMet) {
  const auto [a, x] = FillWithADeadVictim(/*a_priority=*/0, /*x_priority=*/1);

  const JobId job = Submit(3, 5, AtSeconds(100));
  Cycle(AtSeconds(100));
  EXPECT_THAT(executor_.Preempted(), ElementsAre(a, x));
  EXPECT_EQ(scheduler_->jobs().at(job).state, JobState::kQueued);  // until they stop
}

// The search releases `x` first and starts on its GPU; the dead victim `a` (sharing GPU 0 with
// `g`, guarded) ranks above `x`, so the whole walk would not have met it: no walk again, and `x`
// is asked about once.
TEST_F(PipelineSharedVictimsTest, ASearchThatSucceedsBeforeAnyDeadVictimWalksOnce) {
  const auto [a, x] = FillWithADeadVictim(/*a_priority=*/1, /*x_priority=*/0);

  const JobId job = Submit(3, 5, AtSeconds(100));
  Cycle(AtSeconds(100));
  EXPECT_THAT(executor_.Preempted(), ElementsAre(x));
  EXPECT_THAT(AskedAbout(x), ElementsAre(job));
  EXPECT_TRUE(AskedAbout(a).empty());
}

// `a` is dead while `b`, its GPU's other holder, is guarded: a search then fails. Once `b` turns
// victim, `a` is one again, and releasing both frees the GPU.
TEST_F(PipelineSharedVictimsTest, ADeadVictimJoinsTheWalkAgainWhenItsCoHolderTurnsVictim) {
  Start(MakeCluster("1x1xV100"));
  const JobId a = Submit(0, 0, kTimeZero);
  Launch(a, 0, ShareMode::kPacked);
  Cycle(kTimeZero);
  const JobId b = Submit(1, 1, AtSeconds(50));
  Launch(b, 0, ShareMode::kPacked);
  Cycle(AtSeconds(50));

  const JobId job = Submit(2, 5, AtSeconds(100));
  Cycle(AtSeconds(100));
  EXPECT_TRUE(executor_.Preempted().empty());
  Cycle(AtSeconds(150));  // b's guard ends (the failed search's wake-up)
  EXPECT_THAT(executor_.Preempted(), ElementsAre(a, b));
  EXPECT_EQ(scheduler_->jobs().at(job).state, JobState::kQueued);  // until they stop
}

// A job whose host request the nodes limit walks the dead victims too: releasing one frees
// its CPUs. Here `v`'s GPU alone lacks the CPUs; `d`'s (dead) make up the job's 8.
TEST_F(PipelineSharedVictimsTest, AJobTheHostsLimitWalksTheDeadVictimsForTheirCpus) {
  Start(OneNode(2, 8));
  const JobId v = Submit(0, 0, kTimeZero);
  const JobId d = Submit(1, 1, kTimeZero, 1, 4);
  Launch(v, 1, ShareMode::kExclusive);
  Launch(d, 0, ShareMode::kPacked, 4);
  Cycle(kTimeZero);
  Launch(Submit(2, 9, AtSeconds(50)), 0, ShareMode::kPacked);
  Cycle(AtSeconds(50));

  Submit(3, 5, AtSeconds(100), 1, 8);
  Cycle(AtSeconds(100));
  EXPECT_THAT(executor_.Preempted(), ElementsAre(v, d));
}

// Tenant g's guarantee (one GPU, 21 CPUs) shields its dead victim `d` (one GPU, 32 CPUs) from
// tenant b's job, though not every job of g (g holds 32 CPUs): the whole walk passes over `d`,
// so b's failed search stands for no job of another tenant (Cycle::failed_unshielded), and g's
// own job, ranked below it, still searches (and asks about `v`).
TEST_F(PipelineSharedVictimsTest, AGuaranteeShieldingADeadVictimKeepsAFailedSearchFromStanding) {
  Start(OneNode(3, 64), {{"g", {0.34, 1.0}}, {"b", {0.0, 1.0}}, {"o", {0.0, 1.0}}});
  const JobId d = Submit(0, 0, kTimeZero, 1, 32, "g");
  const JobId v = Submit(1, 1, kTimeZero, 1, 0, "o");
  const JobId x = Submit(2, 10, kTimeZero, 1, 0, "o");
  Launch(d, 0, ShareMode::kPacked, 32);
  Launch(v, 1, ShareMode::kExclusive);
  Launch(x, 2, ShareMode::kExclusive);
  Cycle(kTimeZero);
  Launch(Submit(3, 10, AtSeconds(50), 1, 0, "o"), 0, ShareMode::kPacked);
  Cycle(AtSeconds(50));

  const JobId from_b = Submit(4, 5, AtSeconds(100), 2, 0, "b");
  const JobId from_g = Submit(5, 5, AtSeconds(100), 2, 0, "g");
  Cycle(AtSeconds(100));
  EXPECT_TRUE(executor_.Preempted().empty());
  EXPECT_THAT(AskedAbout(v), ElementsAre(from_b, from_g));
}

}  // namespace
}  // namespace dlsched
