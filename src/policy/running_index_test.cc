#include "dlsched/policy/running_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Timestamp At(int s) { return Timestamp(seconds(s)); }

// Shortest remaining time first, as srtf: a running job's rank falls by one per microsecond.
class Remaining final : public QueueSortPlugin {
 public:
  std::string_view Name() const override { return "remaining"; }
  int64_t Rank(const JobView& job) const override {
    return (job.estimated_remaining() - job.current_segment()).count();
  }
  int64_t RankDrift(const JobView&) const override { return -1; }
};

// Rank as Remaining, but it announces no drift: its running jobs' ranks change unannounced.
class Unannounced final : public QueueSortPlugin {
 public:
  std::string_view Name() const override { return "unannounced"; }
  int64_t Rank(const JobView& job) const override {
    return (job.estimated_remaining() - job.current_segment()).count();
  }
};

// Even jobs drift as Remaining, odd ones keep their remaining time: their keys are right, but
// jobs of different drifts interleave, so the stored order goes stale.
class MixedDrift final : public QueueSortPlugin {
 public:
  std::string_view Name() const override { return "mixed"; }
  int64_t Rank(const JobView& job) const override {
    const Duration run = Drifts(job) ? job.current_segment() : Duration(0);
    return (job.estimated_remaining() - run).count();
  }
  int64_t RankDrift(const JobView& job) const override { return Drifts(job) ? -1 : 0; }

 private:
  static bool Drifts(const JobView& job) { return job.id().value() % 2 == 0; }
};

// A job may be preempted once it ran a minute.
class MinuteGuard final : public PreemptPlugin {
 public:
  std::string_view Name() const override { return "minute"; }
  Timestamp VictimFrom(const JobView& victim) const override {
    return victim.job().segment_start + seconds(60);
  }
};

class RunningIndexTest : public ::testing::Test {
 protected:
  // A job that started running at `start` with `remaining_s` left then.
  JobId Start(int remaining_s, int start) {
    const JobId id = jobs_.Add(testing::MakeJob(0).Spec());
    Job& job = jobs_.at(id);
    job.state = JobState::kRunning;
    job.segment_start = At(start);
    job.estimated_remaining = seconds(remaining_s);
    return id;
  }
  // The victims, lowest rank (first to run) first.
  static std::vector<JobId> Victims(const RunningIndex& index) {
    std::vector<JobId> ids;
    for (const RankKey& key : index.victims()) ids.push_back(key.id);
    return ids;
  }

  JobTable jobs_;
};

TEST_F(RunningIndexTest, KeepsADriftingOrderAndJoinsGuardedJobsWhenTheirTimeComes) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, 0);
  const JobId b = Start(300, 0);
  index.Refresh(At(0));
  index.Insert(a, At(0));
  index.Insert(b, At(0));
  const JobId c = Start(400, 30);  // 370 s left at 60 s, between b (240) and a (440)
  index.Refresh(At(30));
  index.Insert(c, At(30));
  EXPECT_TRUE(index.victims().empty());  // all within their first minute
  EXPECT_TRUE(index.CheckOrder(At(30)).ok());

  index.Refresh(At(60));
  EXPECT_THAT(Victims(index), ElementsAre(b, a));
  EXPECT_EQ(index.guarded().begin()->second, c);
  ASSERT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();
  index.Refresh(At(90));
  EXPECT_THAT(Victims(index), ElementsAre(b, c, a));
  EXPECT_EQ(index.KeyAt(c, At(90)), order.KeyOf(JobView(jobs_.at(c), At(90))));
  EXPECT_TRUE(index.CheckOrder(At(200)).ok());
}

TEST_F(RunningIndexTest, AJobAskedToStopLeavesTheVictimsAndJoinsThemNoMore) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, -60);
  const JobId b = Start(300, -60);
  const JobId c = Start(400, 0);  // guarded until 60 s
  index.Refresh(At(0));
  for (JobId id : {a, b, c}) index.Insert(id, At(0));
  ASSERT_THAT(Victims(index), ElementsAre(b, a));

  jobs_.at(a).preempt_requested = true;
  index.Stopping(a);
  jobs_.at(c).preempt_requested = true;
  index.Stopping(c);
  EXPECT_THAT(Victims(index), ElementsAre(b));
  ASSERT_EQ(index.guarded().size(), 1u);  // guarded until its time, as before
  EXPECT_EQ(index.guarded().begin()->second, c);
  EXPECT_EQ(index.size(), 3u);

  index.Refresh(At(60));  // c's guard ends: it stays out of the victims
  EXPECT_THAT(Victims(index), ElementsAre(b));
  EXPECT_TRUE(index.guarded().empty());
  EXPECT_EQ(index.size(), 3u);
  index.Erase(a);
  index.Erase(c);
  EXPECT_EQ(index.size(), 1u);
  EXPECT_TRUE(index.CheckOrder(At(60)).ok());
}

TEST_F(RunningIndexTest, CheckOrderFindsARankChangeTheOrderDidNotAnnounce) {
  const Unannounced sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, -60);  // 440 s left at 0
  index.Refresh(At(0));
  index.Insert(a, At(0));
  EXPECT_TRUE(index.CheckOrder(At(0)).ok());
  const Status later = index.CheckOrder(At(10));  // the rank fell 10 s unseen
  EXPECT_EQ(later.code(), StatusCode::kInternal);
  EXPECT_THAT(
      later.message(),
      HasSubstr("job 0 is filed at rank 440000000 at t=10000000 us, its order ranks it 430000000"));
}

TEST_F(RunningIndexTest, CheckOrderFindsJobsOfDifferentDriftsThatInterleave) {
  const MixedDrift sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId drifting = Start(160, -60);  // job 0: 100 s left at 0, falling
  const JobId fixed = Start(50, -60);      // job 1: 50 s, always
  index.Refresh(At(0));
  index.Insert(drifting, At(0));
  index.Insert(fixed, At(0));
  EXPECT_THAT(Victims(index), ElementsAre(fixed, drifting));
  EXPECT_TRUE(index.CheckOrder(At(40)).ok());
  // From 50 s on the drifting job ranks first; the index still walks the other first.
  const Status later = index.CheckOrder(At(60));
  EXPECT_EQ(later.code(), StatusCode::kInternal);
  EXPECT_THAT(later.message(), HasSubstr("job 1 is walked before job 0"));
}

TEST_F(RunningIndexTest, FilesEachVictimUnderItsTenantInTheVictimsOrder) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/true);
  RunningIndex index(jobs_, order);
  const auto start = [&](int remaining_s, int start_s, const char* tenant, int gpus) {
    const JobId id = Start(remaining_s, start_s);
    jobs_.at(id).spec.queue = tenant;
    jobs_.at(id).spec.num_gpus = gpus;
    return id;
  };
  const auto filed = [&](const std::string& tenant) {
    std::vector<JobId> ids;
    for (const RankKey& key : index.victims_by_tenant().at(tenant).victims) ids.push_back(key.id);
    return ids;
  };
  const JobId a = start(500, -60, "x", 1);
  const JobId b = start(300, -60, "y", 0);  // a CPU job
  const JobId c = start(400, -60, "x", 2);
  const JobId d = start(200, 0, "y", 1);  // guarded: within its first minute
  index.Refresh(At(0));
  for (JobId id : {a, b, c, d}) index.Insert(id, At(0));
  EXPECT_THAT(Victims(index), ElementsAre(b, c, a));
  EXPECT_THAT(filed("x"), ElementsAre(c, a));
  EXPECT_THAT(filed("y"), ElementsAre(b));  // d joins once it is a victim
  EXPECT_EQ(index.victims_by_tenant().at("x").cpu_jobs, 0u);
  EXPECT_EQ(index.victims_by_tenant().at("y").cpu_jobs, 1u);
  ASSERT_TRUE(index.CheckOrder(At(0)).ok()) << index.CheckOrder(At(0)).message();

  index.Refresh(At(60));
  EXPECT_THAT(filed("y"), ElementsAre(d, b));
  index.Erase(b);
  index.Erase(c);
  EXPECT_THAT(filed("x"), ElementsAre(a));
  EXPECT_THAT(filed("y"), ElementsAre(d));
  EXPECT_EQ(index.victims_by_tenant().at("y").cpu_jobs, 0u);
  index.Erase(a);
  EXPECT_TRUE(index.victims_by_tenant().at("x").victims.empty());  // the tenant stays
  EXPECT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();
}

TEST_F(RunningIndexTest, AVictimAskedToStopLeavesItsTenantsVictimsToo) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/true);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, -60);
  const JobId b = Start(300, -60);
  jobs_.at(b).spec.num_gpus = 0;  // a CPU job: its tenant's count of CPU victims drops too
  for (JobId id : {a, b}) jobs_.at(id).spec.queue = "x";
  index.Refresh(At(0));
  for (JobId id : {a, b}) index.Insert(id, At(0));
  ASSERT_EQ(index.victims_by_tenant().at("x").victims.size(), 2u);

  jobs_.at(b).preempt_requested = true;
  index.Stopping(b);
  const RunningIndex::TenantVictims& x = index.victims_by_tenant().at("x");
  ASSERT_EQ(x.victims.size(), 1u);
  EXPECT_EQ(x.victims.begin()->id, a);
  EXPECT_EQ(x.cpu_jobs, 0u);
  EXPECT_TRUE(index.CheckOrder(At(0)).ok()) << index.CheckOrder(At(0)).message();
  index.Erase(b);  // a stopping victim leaves without touching the filing again
  index.Refresh(At(60));
  EXPECT_EQ(index.victims_by_tenant().at("x").victims.size(), 1u);
  EXPECT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();
}

TEST_F(RunningIndexTest, FilesNoTenantsWithoutATenantIndex) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, -60);
  index.Refresh(At(0));
  index.Insert(a, At(0));
  EXPECT_THAT(Victims(index), ElementsAre(a));
  EXPECT_TRUE(index.victims_by_tenant().empty());
}

// A victim sharing its GPU with a job that is no victim is dead: filed apart, under its tenant
// too, until the co-holder turns victim or leaves; it dies again when a co-holder is asked to
// stop. Only the shared jobs on one GPU are concerned.
TEST_F(RunningIndexTest, AVictimSharingAGpuWithNoVictimIsDeadUntilItsCoHolderTurnsVictimOrGoes) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/true);
  RunningIndex index(jobs_, order);
  const auto start = [&](int remaining_s, int start_s, int gpu, ShareMode share) {
    const JobId id = Start(remaining_s, start_s);
    Job& job = jobs_.at(id);
    job.spec.queue = "x";
    job.placement = Placement{{NodeGpus{NodeId(0), GpuMask{1} << gpu}}};
    job.share = share;
    return id;
  };
  const auto dead = [&] {
    std::vector<JobId> ids;
    for (const RankKey& key : index.dead_victims()) ids.push_back(key.id);
    return ids;
  };
  const auto tenant_dead = [&] {
    std::vector<JobId> ids;
    for (const RankKey& key : index.victims_by_tenant().at("x").dead) ids.push_back(key.id);
    return ids;
  };
  const JobId a = start(500, -60, 0, ShareMode::kPacked);
  const JobId b = start(300, 0, 0, ShareMode::kPacked);  // guarded until 60 s
  const JobId c = start(400, -60, 1, ShareMode::kPacked);
  const JobId d = start(200, -60, 1, ShareMode::kPacked);
  const JobId e = start(100, -60, 2, ShareMode::kExclusive);
  // An exclusive job's GPU number may be another's shared one on another node: no co-holder.
  const JobId f = start(600, 0, 1, ShareMode::kExclusive);
  jobs_.at(f).placement.parts.front().node = NodeId(1);
  index.Refresh(At(0));
  for (JobId id : {a, b, c, d, e, f}) index.Insert(id, At(0));
  EXPECT_THAT(Victims(index), ElementsAre(e, d, c));  // c and d share GPU 1, both victims
  EXPECT_THAT(dead(), ElementsAre(a));                // b, guarded, holds GPU 0 with it
  EXPECT_THAT(tenant_dead(), ElementsAre(a));
  ASSERT_TRUE(index.CheckOrder(At(0)).ok()) << index.CheckOrder(At(0)).message();

  jobs_.at(d).preempt_requested = true;
  index.Stopping(d);  // d stays on GPU 1 until it stops: c is dead now
  EXPECT_THAT(Victims(index), ElementsAre(e));
  EXPECT_THAT(dead(), ElementsAre(c, a));
  ASSERT_TRUE(index.CheckOrder(At(0)).ok()) << index.CheckOrder(At(0)).message();
  index.Erase(d);  // gone: c alive again
  EXPECT_THAT(Victims(index), ElementsAre(e, c));
  EXPECT_THAT(dead(), ElementsAre(a));

  index.Refresh(At(60));  // b's (and f's) guard ends: a and b are both victims of GPU 0
  EXPECT_THAT(Victims(index), ElementsAre(e, b, c, a, f));
  EXPECT_TRUE(dead().empty());
  EXPECT_TRUE(tenant_dead().empty());
  EXPECT_EQ(index.size(), 5u);
  ASSERT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();

  const JobId g = start(50, 60, 0, ShareMode::kPacked);  // a third, guarded holder of GPU 0
  index.Insert(g, At(60));
  EXPECT_THAT(Victims(index), ElementsAre(e, c, f));
  EXPECT_THAT(dead(), ElementsAre(b, a));
  ASSERT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();
  index.Erase(g);
  EXPECT_THAT(Victims(index), ElementsAre(e, b, c, a, f));
  EXPECT_TRUE(index.CheckOrder(At(60)).ok()) << index.CheckOrder(At(60)).message();
}

// CheckOrder finds a job whose shared GPU moved behind the index's back (so its victims' standing,
// dead or alive, may be wrong).
TEST_F(RunningIndexTest, CheckOrderFindsAJobFiledOnAnotherSharedGpuThanItHolds) {
  const Remaining sort;
  const MinuteGuard guard;
  const RankOrder order(&sort, {&guard}, /*by_tenant=*/false);
  RunningIndex index(jobs_, order);
  const JobId a = Start(500, -60);
  const JobId b = Start(300, 0);  // guarded
  for (JobId id : {a, b}) {
    jobs_.at(id).placement = Placement{{NodeGpus{NodeId(0), GpuMask{1}}}};
    jobs_.at(id).share = ShareMode::kPacked;
  }
  jobs_.at(b).placement.parts.front().gpus = GpuMask{2};
  index.Refresh(At(0));
  for (JobId id : {a, b}) index.Insert(id, At(0));
  EXPECT_THAT(Victims(index), ElementsAre(a));
  ASSERT_TRUE(index.CheckOrder(At(0)).ok()) << index.CheckOrder(At(0)).message();
  jobs_.at(b).placement.parts.front().gpus = GpuMask{1};
  const Status moved = index.CheckOrder(At(0));
  EXPECT_EQ(moved.code(), StatusCode::kInternal);
  EXPECT_THAT(moved.message(), HasSubstr("job 1 is filed on another shared GPU than it holds"));
}

TEST(RankOrderTest, TheDefaultRanksAllAlikeAndNeverTakesAVictim) {
  const Job job = testing::MakeJob(3).Priority(9).Submit(seconds(5)).Running(At(0)).Build();
  const JobView view(job, At(100));
  const RankOrder& fifo = RankOrder::Fifo();
  EXPECT_EQ(fifo.KeyOf(view), (RankKey{0, At(5), job.id}));
  EXPECT_EQ(fifo.RankDrift(view), 0);
  EXPECT_EQ(fifo.NextRankChange(view, At(100)), kTimeNever);
  EXPECT_EQ(fifo.VictimFrom(view), kTimeNever);
  EXPECT_FALSE(fifo.by_tenant());
}

TEST(RankOrderTest, AVictimPassesEveryGuard) {
  // A guard that lets a job go from 30 s into its run.
  class HalfMinuteGuard final : public PreemptPlugin {
   public:
    std::string_view Name() const override { return "half-minute"; }
    Timestamp VictimFrom(const JobView& victim) const override {
      return victim.job().segment_start + seconds(30);
    }
  };
  const MinuteGuard minute;
  const HalfMinuteGuard half;
  const Remaining sort;
  const Job job = testing::MakeJob(0).Running(At(10)).Build();
  const RankOrder both(&sort, {&half, &minute}, /*by_tenant=*/true);
  EXPECT_EQ(both.VictimFrom(JobView(job, At(10))), At(70));
  EXPECT_TRUE(both.by_tenant());
  EXPECT_EQ(RankOrder(&sort, {&half}, false).VictimFrom(JobView(job, At(10))), At(40));
  EXPECT_EQ(RankOrder(&sort, {}, false).VictimFrom(JobView(job, At(10))), kTimeNever);
}

}  // namespace
}  // namespace dlsched
