#include "policy/sharing_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "dlsched/policy/pipeline.h"
#include "dlsched/runtime/scheduler.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using ::testing::ElementsAre;
using testing::MakeCluster;
using testing::MakeJob;
using testing::RecordingExecutor;

// Jobs are "light" (type 0) or "heavy" (type 1): heavy beside heavy runs at 0.5, anything else
// at 0.9. Memory demand per job is set by the test.
class TwoTypeModel final : public sharing::InterferenceModel {
 public:
  double PairSpeed(const sharing::SharingJob& self,
                   const sharing::SharingJob& other) const override {
    return self.type == 1 && other.type == 1 ? 0.5 : 0.9;
  }
};

class FakeSharingView final : public SharingView {
 public:
  const sharing::InterferenceModel* Interference(GpuTypeId) const override { return &model_; }
  sharing::SharingJob Features(JobId job) const override {
    sharing::SharingJob features;
    features.type = heavy.contains(job.value()) ? 1 : 0;
    return features;
  }
  int64_t MemoryDemandMib(JobId job, double) const override {
    auto it = memory_mib.find(job.value());
    return it == memory_mib.end() ? 4096 : it->second;
  }
  uint64_t ShareGroup(JobId job) const override {
    auto it = group.find(job.value());
    return it == group.end() ? 0 : it->second;
  }
  std::optional<uint64_t> DemandRevision() const override { return revision; }

  std::map<uint32_t, bool> heavy;
  std::map<uint32_t, int64_t> memory_mib;
  std::map<uint32_t, uint64_t> group;
  std::optional<uint64_t> revision;  // none by default: every demand may have changed

 private:
  TwoTypeModel model_;
};

PipelineConfig Fifo() {
  PipelineConfig config;
  config.name = "fifo";
  config.admit = {{"feasibility", {}, 1}};
  config.queue_sort = {"fifo", {}, 1};
  config.backfill = true;
  return config;
}

SharingPolicyConfig Config() {
  SharingPolicyConfig config;
  config.name = "share";
  config.max_jobs_per_gpu = 2;
  config.max_slowdown = 1.5;
  config.min_residence = std::chrono::minutes(10);
  config.max_migrations_per_job = 1;
  return config;
}

class SharingPolicyTest : public ::testing::Test {
 protected:
  void Start(const std::string& cluster_spec, SharingPolicyConfig config, bool with_view = true) {
    cluster_ = MakeCluster(cluster_spec);
    auto base = BuildPipeline(Fifo(), InTreeRegistry());
    ASSERT_TRUE(base.ok()) << base.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(
        cluster_, MakeSharingPolicy(std::move(config), std::move(base).value()), executor_, model_,
        /*seed=*/1);
    if (with_view) scheduler_->set_sharing_view(&view_);
  }
  JobId Submit(uint32_t n, Timestamp at = kTimeZero) {
    auto id = scheduler_->Submit(MakeJob(n).Submit(at - kTimeZero).Spec(), at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }
  const Job& job(JobId id) const { return scheduler_->jobs().at(id); }
  int Sharers(JobId id) const {
    const NodeGpus& part = job(id).placement.parts.front();
    return scheduler_->state().sharers(part.node, std::countr_zero(part.gpus));
  }

  Cluster cluster_;
  RecordingExecutor executor_;
  SimpleThroughputModel model_;
  FakeSharingView view_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SharingPolicyTest, WaitingJobsJoinRunningOnesUpToK) {
  Start("1x2xV100", Config());
  const JobId a = Submit(0);
  const JobId b = Submit(1);
  scheduler_->RunCycle(kTimeZero);  // the base places a and b alone, in the shared mode
  ASSERT_EQ(job(a).share, ShareMode::kPacked);
  const JobId c = Submit(2, AtSeconds(1));
  const JobId d = Submit(3, AtSeconds(1));
  const JobId e = Submit(4, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(job(c).state, JobState::kRunning);
  EXPECT_EQ(job(d).state, JobState::kRunning);
  EXPECT_EQ(job(e).state, JobState::kQueued) << "k = 2: both GPUs are full";
  EXPECT_EQ(Sharers(a), 2);
  EXPECT_EQ(Sharers(b), 2);
  EXPECT_EQ(scheduler_->state().free_total(), 0);
}

// A job joins only a GPU whose holders are of its sharing group (the live daemon under MPS: its
// user's jobs).
TEST_F(SharingPolicyTest, JobsShareOnlyWithTheirGroup) {
  Start("1x2xV100", Config());
  view_.group = {{0, 7}, {1, 9}, {2, 9}, {3, 5}};
  const JobId a = Submit(0);
  const JobId b = Submit(1);
  scheduler_->RunCycle(kTimeZero);
  const JobId c = Submit(2, AtSeconds(1));
  const JobId d = Submit(3, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(job(c).state, JobState::kRunning);
  EXPECT_EQ(job(c).placement, job(b).placement) << "c joins its group's GPU, not a's";
  EXPECT_EQ(Sharers(a), 1);
  EXPECT_EQ(job(d).state, JobState::kQueued) << "no GPU of its group";
}

TEST_F(SharingPolicyTest, NoJobIsPlacedWhereItsMemoryOrSlowdownBreaksTheBound) {
  struct Case {
    const char* name;
    bool heavy_pair;      // both jobs heavy: each would run at 0.5 (slowdown 2 > 1.5)
    int64_t waiting_mib;  // the waiting job's demand beside the running job's 4096 MiB
    bool aware;           // interference-aware
    bool joins;
  };
  const Case cases[] = {
      {"fits", false, 4096, true, true},
      {"slowdown over the bound", true, 4096, true, false},
      {"naive ignores the slowdown", true, 4096, false, true},
      {"memory over the GPU", false, 32768, true, false},
      {"naive still checks memory", false, 32768, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    view_ = {};
    SharingPolicyConfig config = Config();
    config.interference_aware = c.aware;
    Start("1x1xV100", config);
    const JobId a = Submit(0);
    scheduler_->RunCycle(kTimeZero);
    const JobId b = Submit(1, AtSeconds(1));
    view_.heavy = {{0, c.heavy_pair}, {1, c.heavy_pair}};
    if (!c.heavy_pair) view_.heavy.clear();
    view_.memory_mib[b.value()] = c.waiting_mib;
    scheduler_->RunCycle(AtSeconds(1));
    EXPECT_EQ(job(b).state == JobState::kRunning, c.joins);
    EXPECT_EQ(Sharers(a), c.joins ? 2 : 1);
  }
}

TEST_F(SharingPolicyTest, WithoutASharingViewItDecidesAsItsBase) {
  Start("1x1xV100", Config(), /*with_view=*/false);
  const JobId a = Submit(0);
  scheduler_->RunCycle(kTimeZero);
  const JobId b = Submit(1, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(job(a).share, ShareMode::kExclusive);
  EXPECT_EQ(job(b).state, JobState::kQueued);
}

// Two heavy jobs share a GPU, each slowed 2x; then the other GPU frees up with nothing waiting:
// one of them migrates there, only after its minimum residence, and at most once.
TEST_F(SharingPolicyTest, SlowedJobsMigrateToFreeGpusWithHysteresisAndACap) {
  SharingPolicyConfig config = Config();
  config.max_slowdown = 3;  // let two heavy jobs share (each slowed 2x)
  Start("1x2xV100", config);
  view_.heavy = {{0, true}, {1, true}, {2, true}};
  const JobId a = Submit(0);
  const JobId blocker = Submit(1);
  scheduler_->RunCycle(kTimeZero);
  const JobId c = Submit(2, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(c).state, JobState::kRunning);
  const NodeGpus shared = job(c).placement.parts.front();

  // The blocker ends at 2 minutes: a GPU is free and nothing waits, but c has been on its GPU
  // for less than the 10 minutes' residence: nothing moves (hysteresis).
  ASSERT_TRUE(scheduler_->Handle(JobFinished{blocker}, AtSeconds(120)).ok());
  const CycleResult freed = scheduler_->RunCycle(AtSeconds(120));
  EXPECT_FALSE(job(a).preempt_requested || job(c).preempt_requested);

  // The policy asked to be woken when the residence ends; then one of the two moves.
  EXPECT_EQ(freed.wake_at, AtSeconds(600));  // a started at 0
  scheduler_->RunCycle(AtSeconds(700));
  const JobId moved = job(a).preempt_requested ? a : c;
  ASSERT_TRUE(job(moved).preempt_requested);
  EXPECT_FALSE(job(a).preempt_requested && job(c).preempt_requested);
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{moved, 10}, AtSeconds(730)).ok());
  EXPECT_EQ(job(moved).migrations, 1);
  EXPECT_EQ(job(moved).preemptions, 0);
  scheduler_->RunCycle(AtSeconds(730));
  ASSERT_EQ(job(moved).state, JobState::kRunning);
  EXPECT_NE(job(moved).placement.parts.front(), shared) << "it went to the free GPU";

  // A new job joins the moved job's GPU (the other GPU's job fills its memory); later the same
  // situation arises: the capped job stays, the new one moves.
  const JobId other = moved == a ? c : a;
  view_.memory_mib[other.value()] = 30000;
  const JobId d = Submit(3, AtSeconds(800));
  view_.heavy[3] = true;
  scheduler_->RunCycle(AtSeconds(800));
  ASSERT_EQ(job(d).state, JobState::kRunning);
  ASSERT_EQ(job(d).placement, job(moved).placement);
  ASSERT_TRUE(scheduler_->Handle(JobFinished{other}, AtSeconds(900)).ok());
  scheduler_->RunCycle(AtSeconds(900));
  scheduler_->RunCycle(AtSeconds(2000));
  EXPECT_FALSE(job(moved).preempt_requested) << "at most one migration per job";
  EXPECT_TRUE(job(d).preempt_requested) << "d may still move to the GPU `other` left";
}

// Observed demand that grows past a GPU's memory moves its largest holder off it at the next
// departure, whatever its residence; a job alone on its GPU is never moved for memory.
TEST_F(SharingPolicyTest, TheLargestHolderMigratesWhenItsGpuNoLongerHoldsTheDemand) {
  Start("1x3xV100", Config());
  const JobId a = Submit(0);
  const JobId alone = Submit(1);
  const JobId leaving = Submit(2);
  scheduler_->RunCycle(kTimeZero);  // each alone on a GPU
  const JobId c = Submit(3, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(c).state, JobState::kRunning);
  ASSERT_EQ(job(c).placement, job(a).placement) << "c joins the first GPU";
  view_.memory_mib[a.value()] = int64_t{1} << 30;
  view_.memory_mib[alone.value()] = int64_t{1} << 30;
  scheduler_->RunCycle(AtSeconds(2));  // no departure: demand is not looked at
  EXPECT_FALSE(job(a).preempt_requested);
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{leaving, JobState::kSucceeded, ""}, AtSeconds(3)).ok());
  scheduler_->RunCycle(AtSeconds(3));
  EXPECT_TRUE(job(a).preempt_requested);
  EXPECT_TRUE(job(a).migrating);
  EXPECT_FALSE(job(c).preempt_requested);
  EXPECT_FALSE(job(alone).preempt_requested);
}

// A memory check that found no GPU over is not repeated while the view's demand revision and the
// shared GPUs' join revision stay: this view changes a demand without saying so, and only once
// its revision moves is the GPU found over.
TEST_F(SharingPolicyTest, TheMemoryCheckWaitsForADemandRevision) {
  Start("1x5xV100", Config());
  view_.revision = 1;
  const JobId alone = Submit(0);
  const JobId a = Submit(1);
  const JobId leaving = Submit(2);
  const JobId second = Submit(3);
  const JobId third = Submit(4);
  scheduler_->RunCycle(kTimeZero);  // each alone on a GPU
  const JobId c = Submit(5, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(c).placement, job(a).placement) << "c joins the second GPU";
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{leaving, JobState::kSucceeded, ""}, AtSeconds(2)).ok());
  scheduler_->RunCycle(AtSeconds(2));  // checked: a and c fit
  EXPECT_FALSE(job(a).preempt_requested);
  view_.memory_mib[a.value()] = int64_t{1} << 30;
  ASSERT_TRUE(scheduler_->Handle(JobFinished{second, JobState::kSucceeded, ""}, AtSeconds(3)).ok());
  scheduler_->RunCycle(AtSeconds(3));
  EXPECT_FALSE(job(a).preempt_requested) << "the same revisions: not checked again";
  view_.revision = 2;
  ASSERT_TRUE(scheduler_->Handle(JobFinished{third, JobState::kSucceeded, ""}, AtSeconds(4)).ok());
  scheduler_->RunCycle(AtSeconds(4));
  EXPECT_TRUE(job(a).preempt_requested);
  EXPECT_FALSE(job(alone).preempt_requested);
}

// A GPU that a memory check found over is checked again at the next departure though no
// revision moved: its largest holder was asked to migrate and has not left yet, so the other one
// moves too (a check that looked only at GPUs found fitting, or at none, would leave it).
TEST_F(SharingPolicyTest, AGpuFoundOverIsCheckedAgainWhileTheRevisionsStay) {
  Start("1x5xV100", Config());
  view_.revision = 1;
  Submit(0);
  const JobId a = Submit(1);
  const JobId leaving = Submit(2);
  const JobId second = Submit(3);
  Submit(4);
  scheduler_->RunCycle(kTimeZero);  // each alone on a GPU
  const JobId c = Submit(5, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  ASSERT_EQ(job(c).placement, job(a).placement) << "c joins the second GPU";
  view_.memory_mib[a.value()] = int64_t{1} << 30;
  view_.memory_mib[c.value()] = int64_t{1} << 29;
  view_.revision = 2;
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{leaving, JobState::kSucceeded, ""}, AtSeconds(2)).ok());
  scheduler_->RunCycle(AtSeconds(2));
  ASSERT_TRUE(job(a).preempt_requested) << "the largest holder moves first";
  ASSERT_FALSE(job(c).preempt_requested);
  ASSERT_TRUE(scheduler_->Handle(JobFinished{second, JobState::kSucceeded, ""}, AtSeconds(3)).ok());
  scheduler_->RunCycle(AtSeconds(3));
  EXPECT_TRUE(job(c).preempt_requested) << "its GPU is still over, a has not left";
  EXPECT_TRUE(job(c).migrating);
}

// A GPU a job joined after a memory check is checked at the next one though no demand revision
// moved (only a join can have put it over: this view changes a demand without saying so, after
// the join, as a world that broke the revision's promise would), and found over.
TEST_F(SharingPolicyTest, AGpuJoinedSinceTheLastMemoryCheckIsChecked) {
  Start("1x4xV100", Config());
  view_.revision = 1;
  const JobId first = Submit(0);
  const JobId leaving = Submit(1);
  const JobId second = Submit(2);
  const JobId third = Submit(3);
  scheduler_->RunCycle(kTimeZero);  // each alone on a GPU
  ASSERT_TRUE(
      scheduler_->Handle(JobFinished{leaving, JobState::kSucceeded, ""}, AtSeconds(1)).ok());
  scheduler_->RunCycle(AtSeconds(1));  // checked: no GPU held by two
  const JobId c = Submit(4, AtSeconds(2));
  const JobId d = Submit(5, AtSeconds(2));
  scheduler_->RunCycle(AtSeconds(2));  // c takes the free GPU, d joins a held one
  ASSERT_EQ(job(c).state, JobState::kRunning);
  ASSERT_EQ(job(d).state, JobState::kRunning);
  ASSERT_EQ(Sharers(d), 2);
  JobId host;  // the job d joined
  for (JobId id : {first, second, third}) {
    if (job(id).placement == job(d).placement) host = id;
  }
  ASSERT_TRUE(host.valid());
  view_.memory_mib[host.value()] = int64_t{1} << 30;
  const JobId leaves = host == third ? second : third;
  ASSERT_TRUE(scheduler_->Handle(JobFinished{leaves, JobState::kSucceeded, ""}, AtSeconds(3)).ok());
  scheduler_->RunCycle(AtSeconds(3));
  EXPECT_TRUE(job(host).preempt_requested) << "the GPU d joined is checked";
  EXPECT_FALSE(job(d).preempt_requested);
}

TEST(SharingPolicyConfigTest, RejectsBadValues) {
  const auto with = [](auto edit) {
    SharingPolicyConfig config = Config();
    edit(config);
    return ValidateSharingPolicyConfig(config);
  };
  EXPECT_TRUE(with([](SharingPolicyConfig&) {}).ok());
  EXPECT_FALSE(with([](SharingPolicyConfig& c) { c.mode = ShareMode::kExclusive; }).ok());
  EXPECT_FALSE(with([](SharingPolicyConfig& c) { c.max_jobs_per_gpu = 0; }).ok());
  EXPECT_FALSE(with([](SharingPolicyConfig& c) { c.memory_percentile = 101; }).ok());
  EXPECT_FALSE(with([](SharingPolicyConfig& c) { c.max_slowdown = 0.9; }).ok());
  EXPECT_FALSE(with([](SharingPolicyConfig& c) { c.min_slowdown_to_migrate = 0.5; }).ok());
}

// A GPU's second holder needs host CPUs of its own on the node: 2 per GPU by the cluster's
// defaults, 6 on the node.
TEST_F(SharingPolicyTest, AJobJoinsASharedGpuOnlyWithCpusOfItsOwnOnTheNode) {
  Start("1x2xV100:6c", Config());
  cluster_.set_host_defaults({.cpus_per_gpu = 2});
  const JobId a = Submit(0);
  const JobId b = Submit(1);
  scheduler_->RunCycle(kTimeZero);
  ASSERT_EQ(job(a).share, ShareMode::kPacked);
  ASSERT_EQ(job(b).placement.parts.front().cpus, 2);
  const JobId c = Submit(2, AtSeconds(1));
  const JobId d = Submit(3, AtSeconds(1));
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(job(c).state, JobState::kRunning);
  EXPECT_EQ(job(c).placement.parts.front().cpus, 2);
  EXPECT_EQ(job(d).state, JobState::kQueued) << "room on the GPUs (k = 2), none in the CPUs";
  EXPECT_EQ(scheduler_->state().free_cpus(NodeId(0)), 0);
}

}  // namespace
}  // namespace dlsched
