#include "policy/hetero/round_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/runtime/scheduler.h"
#include "support/builders.h"

namespace dlsched::hetero {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::MakeCluster;
using testing::MakeJob;
using testing::RecordingExecutor;

// Rates by (model, GPU type name); unknown pairs cannot run.
class TableModel final : public ThroughputModel {
 public:
  explicit TableModel(std::map<std::pair<std::string, std::string>, double> rates)
      : rates_(std::move(rates)) {}
  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override {
    const std::string& type = cluster.gpu_type_name(cluster.node_gpu_type(placement.parts[0].node));
    auto it = rates_.find({spec.model, type});
    return it == rates_.end() ? 0 : it->second;
  }

 private:
  std::map<std::pair<std::string, std::string>, double> rates_;
};

// "flat" runs alike on both types, "fast" 3x faster on V100.
const TableModel kModel(
    {{{"flat", "K80"}, 1}, {{"flat", "V100"}, 1}, {{"fast", "K80"}, 1}, {{"fast", "V100"}, 3}});

class RoundPolicyTest : public ::testing::Test {
 protected:
  void Start(const std::string& cluster_spec, Allocator allocator, bool agnostic = false,
             Duration realloc_interval = Duration::zero(), bool backfill = true,
             bool reset_counts = false) {
    RoundPolicyOptions options;
    options.name = "test";
    options.agnostic = agnostic;
    options.realloc_interval = realloc_interval;
    options.backfill_between_rounds = backfill;
    options.reset_counts_at_allocation = reset_counts;
    StartWith(cluster_spec, std::move(allocator), std::move(options));
  }
  // Starts one V100 under the greedy allocator, recording each problem's remaining work by row
  // in `remaining`.
  void StartRecordingRemaining(std::vector<double>& remaining) {
    Start("1x1xV100", [&remaining](const AllocationProblem& problem) {
      remaining = problem.remaining_iters;
      return AllocateGreedy(problem);
    });
  }
  void StartWith(const std::string& cluster_spec, Allocator allocator, RoundPolicyOptions options) {
    cluster_ = MakeCluster(cluster_spec);
    auto policy = std::make_unique<RoundPolicy>(std::move(options), std::move(allocator));
    policy_ = policy.get();
    scheduler_ = std::make_unique<Scheduler>(cluster_, std::move(policy), executor_, kModel,
                                             /*seed=*/1);
  }
  JobId Submit(const std::string& model, Timestamp at = kTimeZero, int gpus = 1) {
    JobSpec spec = MakeJob(0).Gpus(gpus).Submit(at.time_since_epoch()).Spec();
    spec.model = model;
    auto id = scheduler_->Submit(spec, at);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }
  std::string TypeOf(JobId id) const {
    const Job& job = scheduler_->jobs().at(id);
    if (job.state != JobState::kRunning) return "-";
    return cluster_.gpu_type_name(cluster_.node_gpu_type(job.placement.parts[0].node));
  }

  // After a round's cycle at `boundary`: each of `jobs` asked to stop checkpoints 30 s later,
  // and a cycle then starts the jobs waiting for its GPUs.
  void CheckpointPreempted(const std::vector<JobId>& jobs, Timestamp boundary) {
    for (JobId id : jobs) {
      if (!scheduler_->jobs().at(id).preempt_requested) continue;
      ASSERT_TRUE(
          scheduler_->Handle(JobSuspended{id, 1}, boundary + std::chrono::seconds(30)).ok());
      scheduler_->RunCycle(boundary + std::chrono::seconds(30));
    }
  }

  Cluster cluster_;
  RecordingExecutor executor_;
  std::unique_ptr<Scheduler> scheduler_;
  const RoundPolicy* policy_ = nullptr;
};

TEST_F(RoundPolicyTest, PlacesEachJobOnTheTypeItsAllocationGives) {
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  const JobId fast = Submit("fast");
  const JobId flat = Submit("flat");
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.launched(), 2);
  EXPECT_EQ(cycle.refused, 0);
  EXPECT_EQ(TypeOf(fast), "V100");
  EXPECT_EQ(TypeOf(flat), "K80");
  EXPECT_THAT(policy_->AllocationOf(fast), ElementsAre(0, 1));
  EXPECT_EQ(cycle.wake_at, AtSeconds(360));
}

TEST_F(RoundPolicyTest, GpusAServiceHoldsAreNotAllocated) {
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  ASSERT_TRUE(scheduler_->Submit(MakeJob(0).Service().GpuType("V100").Spec(), kTimeZero).ok());
  const JobId fast = Submit("fast");
  scheduler_->RunCycle(kTimeZero);
  // The V100 is the service's, so the allocation gives the fast job the K80.
  EXPECT_THAT(policy_->AllocationOf(fast), ElementsAre(1, 0));
  EXPECT_EQ(TypeOf(fast), "K80");
}

TEST_F(RoundPolicyTest, TheActiveSetFollowsCancellationsAndArrivalsBetweenRounds) {
  Start("1x1xV100", AllocateGreedy);
  const JobId a = Submit("flat");
  const JobId b = Submit("flat");
  const JobId c = Submit("flat");
  scheduler_->RunCycle(kTimeZero);  // X = 1/3 each; a runs
  EXPECT_EQ(TypeOf(a), "V100");
  EXPECT_EQ(policy_->allocations_computed(), 1);
  // A waiting job cancelled: it leaves the allocation, the others share the GPU.
  ASSERT_TRUE(scheduler_->Handle(JobCancelRequested{b}, AtSeconds(10)).ok());
  scheduler_->RunCycle(AtSeconds(10));
  EXPECT_EQ(policy_->allocations_computed(), 2);
  EXPECT_THAT(policy_->AllocationOf(b), IsEmpty());
  EXPECT_THAT(policy_->AllocationOf(a), ElementsAre(0.5));
  EXPECT_THAT(policy_->AllocationOf(c), ElementsAre(0.5));
  // A job submitted later joins at the next cycle; one admission rejects never does.
  const JobId d = Submit("flat", AtSeconds(20));
  const JobId too_big = Submit("flat", AtSeconds(20), /*gpus=*/2);
  scheduler_->RunCycle(AtSeconds(20));
  EXPECT_EQ(scheduler_->jobs().at(too_big).state, JobState::kRejected);
  EXPECT_EQ(policy_->allocations_computed(), 3);
  EXPECT_THAT(policy_->AllocationOf(d), ElementsAre(DoubleEq(1.0 / 3)));
  EXPECT_THAT(policy_->AllocationOf(too_big), IsEmpty());
  // The next round: c, never served, runs; a is preempted.
  scheduler_->RunCycle(AtSeconds(360));
  EXPECT_TRUE(scheduler_->jobs().at(a).preempt_requested);
}

TEST_F(RoundPolicyTest, JobsAfterOneThatLeftAreFoundAtTheirNewPositions) {
  // A sync updates only the positions that moved (after the first job removed) and those of the
  // jobs that came: each job must still find its own row of X, and one that left none.
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  const JobId j0 = Submit("fast");
  const JobId j1 = Submit("flat");
  scheduler_->RunCycle(kTimeZero);  // both run
  const JobId s1 = Submit("flat", AtSeconds(10));
  const JobId f2 = Submit("fast", AtSeconds(10));
  const JobId s2 = Submit("flat", AtSeconds(10));
  scheduler_->RunCycle(AtSeconds(10));  // no GPU free: the three wait
  ASSERT_TRUE(scheduler_->Handle(JobCancelRequested{s1}, AtSeconds(20)).ok());
  scheduler_->RunCycle(AtSeconds(20));
  // Four jobs, a time share of 1/2 each: the fast ones on the V100 (type 1), the flat on the K80.
  EXPECT_THAT(policy_->AllocationOf(s1), IsEmpty());
  EXPECT_THAT(policy_->AllocationOf(j0), ElementsAre(0, 0.5));
  EXPECT_THAT(policy_->AllocationOf(j1), ElementsAre(0.5, 0));
  EXPECT_THAT(policy_->AllocationOf(f2), ElementsAre(0, 0.5));
  EXPECT_THAT(policy_->AllocationOf(s2), ElementsAre(0.5, 0));
  // A fifth job (shares of 0.4): the third fast job gets the V100's last 0.2 and the K80's.
  const JobId f3 = Submit("fast", AtSeconds(30));
  scheduler_->RunCycle(AtSeconds(30));
  using ::testing::DoubleNear;
  EXPECT_THAT(policy_->AllocationOf(f2), ElementsAre(0, DoubleNear(0.4, 1e-12)));
  EXPECT_THAT(policy_->AllocationOf(s2), ElementsAre(DoubleNear(0.4, 1e-12), 0));
  EXPECT_THAT(policy_->AllocationOf(f3),
              ElementsAre(DoubleNear(0.2, 1e-12), DoubleNear(0.2, 1e-12)));
}

// Which problems max-min solves decides the bases its later solves start from, so a backfill
// that can place nothing still solves the X it reads (as it did before it learnt to stop early).
TEST_F(RoundPolicyTest, ABackfillWithNoRoomForAnyGangStillSolvesItsAllocation) {
  int solves = 0;
  Start("1x2xV100", [&solves](const AllocationProblem& problem) {
    ++solves;
    return AllocateGreedy(problem);
  });
  const JobId one = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  ASSERT_EQ(TypeOf(one), "V100");
  EXPECT_EQ(solves, 1);
  // Between rounds, a 2-GPU gang arrives where one GPU is free: nothing can start.
  const JobId two = Submit("flat", AtSeconds(10), /*gpus=*/2);
  const CycleResult cycle = scheduler_->RunCycle(AtSeconds(10));
  EXPECT_EQ(cycle.launched(), 0);
  EXPECT_EQ(TypeOf(two), "-");
  EXPECT_EQ(solves, 2);
}

TEST_F(RoundPolicyTest, AWalkPastItsFirstEntriesReachesTheTypeStillFree) {
  // 600 never-served jobs on one K80 and one V100: every entry has an infinite priority, so
  // they rank by X (larger first), then id, then type. Most jobs' X is on the V100, so the walk
  // fills one type with the first entry and passes over hundreds of the others' entries for
  // it, beyond the first 256 the walk keeps in its head, to the first entry of the other type.
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  std::vector<JobId> jobs;
  for (int i = 0; i < 600; ++i) jobs.push_back(Submit("fast"));
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  struct Entry {
    double x;
    uint32_t id;
    int type;
  };
  std::vector<Entry> entries;
  for (JobId id : jobs) {
    const std::vector<double> x = policy_->AllocationOf(id);
    ASSERT_EQ(x.size(), 2u);
    for (int t = 0; t < 2; ++t) {
      if (x[t] > 0) entries.push_back({x[t], id.value(), t});
    }
  }
  std::ranges::sort(entries, [](const Entry& a, const Entry& b) {
    if (a.x != b.x) return a.x > b.x;
    return a.id != b.id ? a.id < b.id : a.type < b.type;
  });
  const Entry& first = entries.front();
  const auto second = std::ranges::find_if(
      entries, [&](const Entry& e) { return e.type != first.type && e.id != first.id; });
  ASSERT_NE(second, entries.end());
  ASSERT_GT(second - entries.begin(), 256);
  EXPECT_EQ(cycle.launched(), 2);
  const char* names[] = {"K80", "V100"};
  EXPECT_EQ(TypeOf(JobId(first.id)), names[first.type]);
  EXPECT_EQ(TypeOf(JobId(second->id)), names[second->type]);
}

TEST_F(RoundPolicyTest, TheAgnosticBaselineDoesNotSeeTheSpeedup) {
  Start("1x1xK80+1x1xV100", AllocateGreedy, /*agnostic=*/true);
  const JobId fast = Submit("fast");
  const JobId flat = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  // Both types look alike to it, so the tie goes to the lower job and the first type.
  EXPECT_EQ(TypeOf(fast), "K80");
  EXPECT_EQ(TypeOf(flat), "V100");
}

TEST_F(RoundPolicyTest, TimeSharesAGpuInRoundsByTimeReceivedAgainstTheAllocation) {
  Start("1x1xV100", AllocateGreedy);  // X = 0.5 each
  const JobId a = Submit("flat");
  const JobId b = Submit("flat");
  std::string schedule;
  for (int round = 0; round < 5; ++round) {
    const Timestamp boundary = AtSeconds(360.0 * round);
    const CycleResult cycle = scheduler_->RunCycle(boundary);
    EXPECT_EQ(cycle.refused, 0);
    EXPECT_EQ(cycle.wake_at, boundary + std::chrono::seconds(360));
    // A preempted job holds its GPU until it has checkpointed; then the other one starts.
    CheckpointPreempted({a, b}, boundary);
    schedule += TypeOf(a) != "-" ? "a" : "b";
  }
  // Round 2 ties (each had one of two rounds): the running job stays, saving a preemption.
  EXPECT_EQ(schedule, "abbaa");
}

// More (job, type) pairs than the first chunk the round ranks (256): the round still takes them
// in rank order. 600 like jobs share one GPU; each round the least served runs, ties to the lower
// id, so round k runs job k.
TEST_F(RoundPolicyTest, ALongQueueRunsInRankOrder) {
  Start("1x1xV100", AllocateGreedy);
  std::vector<JobId> jobs;
  for (int i = 0; i < 600; ++i) jobs.push_back(Submit("flat"));
  for (int round = 0; round < 3; ++round) {
    const Timestamp boundary = AtSeconds(360.0 * round);
    scheduler_->RunCycle(boundary);
    CheckpointPreempted(jobs, boundary);
    for (int i = 0; i < 600; ++i) {
      EXPECT_EQ(TypeOf(jobs[i]), i == round ? "V100" : "-") << "round " << round << ", job " << i;
    }
  }
  EXPECT_EQ(policy_->allocations_computed(), 1);
}

TEST_F(RoundPolicyTest, RecomputesTheAllocationOnlyWhenJobsArriveOrLeave) {
  Start("1x2xV100", AllocateGreedy);
  const JobId a = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(policy_->allocations_computed(), 1);
  scheduler_->RunCycle(AtSeconds(360));
  scheduler_->RunCycle(AtSeconds(720));
  EXPECT_EQ(policy_->allocations_computed(), 1);
  const JobId b = Submit("flat", AtSeconds(800));
  scheduler_->RunCycle(AtSeconds(800));
  EXPECT_EQ(policy_->allocations_computed(), 2);
  // Mid-round, the arrival starts at once on the GPU nobody is assigned.
  EXPECT_EQ(TypeOf(b), "V100");
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a}, AtSeconds(900)).ok());
  scheduler_->RunCycle(AtSeconds(900));
  EXPECT_EQ(policy_->allocations_computed(), 3);
  EXPECT_THAT(policy_->AllocationOf(a), IsEmpty());
}

// The allocation problem carries each job's estimates as the scheduler last set them, though the
// policy copies them only from jobs that ran: a job suspended between two computations of X (its
// scheduler re-estimates it as it queues again) shows its new estimate at the next one.
TEST_F(RoundPolicyTest, AnAllocationSeesTheEstimatesOfJobsSuspendedSinceTheLast) {
  std::vector<double> remaining;  // the last problem's, by row
  StartRecordingRemaining(remaining);
  const JobId a = Submit("flat");
  const JobId b = Submit("flat");
  scheduler_->RunCycle(kTimeZero);  // a runs
  ASSERT_EQ(remaining.size(), 2u);
  const double at_arrival = remaining[0];
  scheduler_->RunCycle(AtSeconds(360));  // b's round: a checkpoints, b starts
  CheckpointPreempted({a, b}, AtSeconds(360));
  ASSERT_EQ(TypeOf(b), "V100");
  const JobId c = Submit("flat", AtSeconds(400));
  scheduler_->RunCycle(AtSeconds(400));  // an arrival: X again...
  EXPECT_EQ(remaining.size(), 2u);       // ...solved when read (no GPU is free to backfill)
  EXPECT_THAT(policy_->AllocationOf(c), ElementsAre(DoubleEq(1.0 / 3)));
  ASSERT_EQ(remaining.size(), 3u);
  const std::vector<JobId> rows = {a, b, c};
  for (size_t i = 0; i < rows.size(); ++i) {
    const Job& job = scheduler_->jobs().at(rows[i]);
    EXPECT_DOUBLE_EQ(remaining[i], ToSeconds(job.estimated_remaining) * job.spec.ref_iters_per_s)
        << "row " << i;
  }
  EXPECT_LT(remaining[0], at_arrival);  // a's checkpoint counted
}

TEST_F(RoundPolicyTest, AProblemFilledWhenReadHoldsTheEstimatesItWasPosedWith) {
  // A problem is posed at an arrival and filled when first read; an estimate that changes in
  // between without a new problem (a checkpoint, seen at an arrival that joins nothing) must
  // not reach it.
  std::vector<double> remaining;  // the last problem's, by row
  StartRecordingRemaining(remaining);
  const JobId a = Submit("flat");
  Submit("flat");
  scheduler_->RunCycle(kTimeZero);       // a runs
  scheduler_->RunCycle(AtSeconds(360));  // b's round: a is asked to checkpoint
  ASSERT_TRUE(scheduler_->jobs().at(a).preempt_requested);
  const JobId c = Submit("flat", AtSeconds(370));
  scheduler_->RunCycle(AtSeconds(370));  // posed, not read: a still holds the GPU
  const Job& job_a = scheduler_->jobs().at(a);
  const double posed = ToSeconds(job_a.estimated_remaining) * job_a.spec.ref_iters_per_s;
  ASSERT_TRUE(scheduler_->Handle(JobSuspended{a, 1000}, AtSeconds(390)).ok());
  scheduler_->RunCycle(AtSeconds(390));  // b takes the GPU
  ASSERT_NE(ToSeconds(job_a.estimated_remaining) * job_a.spec.ref_iters_per_s, posed);
  const JobId too_big = Submit("flat", AtSeconds(400), /*gpus=*/2);
  scheduler_->RunCycle(AtSeconds(400));  // an arrival that admission rejects
  ASSERT_EQ(scheduler_->jobs().at(too_big).state, JobState::kRejected);
  remaining.clear();
  EXPECT_THAT(policy_->AllocationOf(c), ElementsAre(DoubleEq(1.0 / 3)));
  ASSERT_EQ(remaining.size(), 3u);
  EXPECT_DOUBLE_EQ(remaining[0], posed);
}

// Explaining (ExplainPending) solves what it must tentatively: an allocator that learns from its
// calls (max-min's bases) learns only from the cycles that act.
TEST_F(RoundPolicyTest, AnExplanationsSolvesAreTentative) {
  std::vector<bool> tentative;  // per call
  Start("1x1xV100", [&tentative](const AllocationProblem& problem) {
    tentative.push_back(problem.tentative);
    return AllocateGreedy(problem);
  });
  Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  Submit("flat", AtSeconds(10));
  scheduler_->RunCycle(AtSeconds(10));  // the arrival's X, posed; no GPU free: unread
  ASSERT_EQ(tentative.size(), 1u);
  // The round at 360 s reads it: solved in the explanation, and again in the cycle, which does
  // not see the explanation's.
  scheduler_->ExplainPending(AtSeconds(360), /*with_text=*/false);
  scheduler_->RunCycle(AtSeconds(360));
  EXPECT_THAT(tentative, ElementsAre(false, true, false));
}

TEST_F(RoundPolicyTest, WithAReallocIntervalArrivalsWaitForTheNextComputation) {
  Start("1x2xV100", AllocateGreedy, /*agnostic=*/false, std::chrono::seconds(1920));
  const JobId a = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  scheduler_->RunCycle(AtSeconds(360));
  scheduler_->RunCycle(AtSeconds(720));
  EXPECT_EQ(policy_->allocations_computed(), 1);
  const JobId b = Submit("flat", AtSeconds(800));
  scheduler_->RunCycle(AtSeconds(800));
  // Mid-round: b has no row in X yet and waits, though a GPU is idle.
  EXPECT_EQ(policy_->allocations_computed(), 1);
  EXPECT_EQ(TypeOf(b), "-");
  // The next boundary recomputes, the last computation being at time 0.
  scheduler_->RunCycle(AtSeconds(1080));
  EXPECT_EQ(policy_->allocations_computed(), 2);
  EXPECT_EQ(TypeOf(b), "V100");
  const JobId c = Submit("flat", AtSeconds(1100));
  scheduler_->RunCycle(AtSeconds(1100));
  for (int boundary = 1440; boundary <= 2880; boundary += 360) {
    scheduler_->RunCycle(AtSeconds(boundary));
  }
  // Less than 1,920 s since 1,080 s: c is still outside X.
  EXPECT_EQ(policy_->allocations_computed(), 2);
  EXPECT_THAT(policy_->AllocationOf(c), IsEmpty());
  EXPECT_EQ(TypeOf(c), "-");
  EXPECT_EQ(TypeOf(a), "V100");
  scheduler_->RunCycle(AtSeconds(3000));  // 1,920 s, but mid-round
  EXPECT_EQ(policy_->allocations_computed(), 2);
  scheduler_->RunCycle(AtSeconds(3240));
  EXPECT_EQ(policy_->allocations_computed(), 3);
  EXPECT_THAT(policy_->AllocationOf(c), ::testing::SizeIs(1));
  const std::string saved = policy_->SaveState();
  EXPECT_THAT(saved, ::testing::HasSubstr(" realloc 3240000000 0"));
  RoundPolicy restored(policy_->options(), AllocateGreedy);
  ASSERT_TRUE(restored.RestoreState(saved).ok());
  EXPECT_EQ(restored.SaveState(), saved);
  // Without the interval the record is not expected.
  RoundPolicy plain(RoundPolicyOptions{.name = "plain"}, AllocateGreedy);
  EXPECT_FALSE(plain.RestoreState(saved).ok());
}

TEST_F(RoundPolicyTest, WithoutBackfillBetweenRoundsAnArrivalWaitsForTheBoundary) {
  Start("1x2xV100", AllocateGreedy, /*agnostic=*/false, Duration::zero(), /*backfill=*/false);
  Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  const JobId b = Submit("flat", AtSeconds(100));
  scheduler_->RunCycle(AtSeconds(100));
  EXPECT_EQ(TypeOf(b), "-");  // the idle GPU stays idle until the round ends
  scheduler_->RunCycle(AtSeconds(360));
  EXPECT_EQ(TypeOf(b), "V100");
}

// The first job's rounds_active in a saved state (round_policy_state.cc: "jobs J" then per job
// id failed_types index rounds_active ...).
int FirstJobRoundsActive(const std::string& state) {
  std::istringstream in(state.substr(state.find(" jobs ") + 6));
  int jobs = 0, id = 0, failed = 0, index = 0, rounds_active = -1;
  in >> jobs >> id >> failed >> index >> rounds_active;
  return rounds_active;
}

TEST_F(RoundPolicyTest, ResettingCountsAtAllocationForgetsTheRoundsBefore) {
  for (const bool reset : {false, true}) {
    SCOPED_TRACE(reset);
    Start("1x2xV100", AllocateGreedy, /*agnostic=*/false, Duration::zero(), /*backfill=*/true,
          reset);
    Submit("flat");
    for (int t = 0; t <= 720; t += 360) scheduler_->RunCycle(AtSeconds(t));
    EXPECT_EQ(FirstJobRoundsActive(policy_->SaveState()), 3);
    Submit("flat", AtSeconds(800));
    scheduler_->RunCycle(AtSeconds(800));  // recomputes X
    EXPECT_EQ(FirstJobRoundsActive(policy_->SaveState()), reset ? 0 : 3);
  }
}

TEST_F(RoundPolicyTest, IdleGpusGoToJobsTheAllocationLeftOut) {
  const Allocator nothing = [](const AllocationProblem& p) -> Result<Allocation> {
    return Allocation{p.num_types, std::vector<double>(p.iters_per_s.size(), 0.0)};
  };
  Start("1x1xK80+1x1xV100", nothing);
  const JobId a = Submit("fast");
  const JobId b = Submit("fast");
  scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(TypeOf(a), "V100");  // the fastest type with room first
  EXPECT_EQ(TypeOf(b), "K80");
}

TEST_F(RoundPolicyTest, AnAllocatorErrorFallsBackToTheGreedy) {
  const Allocator failing = [](const AllocationProblem&) -> Result<Allocation> {
    return Internal("solver broke");
  };
  Start("1x1xK80+1x1xV100", failing);
  const JobId fast = Submit("fast");
  const JobId flat = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(TypeOf(fast), "V100");
  EXPECT_EQ(TypeOf(flat), "K80");
}

TEST_F(RoundPolicyTest, AdmitsLikeTheFeasibilityPlugin) {
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  const JobId too_big = Submit("flat", kTimeZero, /*gpus=*/2);
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.rejected(), 1);
  EXPECT_EQ(scheduler_->jobs().at(too_big).state, JobState::kRejected);
}

TEST_F(RoundPolicyTest, AJobThatFailedOnATypeIsPlannedElsewhere) {
  Start("1x1xK80+1x1xV100", AllocateGreedy);
  const JobId fast = Submit("fast");
  scheduler_->RunCycle(kTimeZero);
  ASSERT_EQ(TypeOf(fast), "V100");
  ASSERT_TRUE(
      scheduler_->Handle(JobLaunchFailed{fast, "no memory", /*never_started=*/true}, AtSeconds(1))
          .ok());
  scheduler_->RunCycle(AtSeconds(1));
  EXPECT_EQ(TypeOf(fast), "K80");
  EXPECT_THAT(policy_->AllocationOf(fast), ElementsAre(1, 0));
}

// A sync reads only the running jobs ctx.running_changes says joined or left ctx.running since
// the last one (a job that stays running changes in nothing a sync reads), and every job it
// watches when the log does not know the last sync's revision. Seen through contexts whose job
// table says a running job ended unreported.
class RoundPolicyChangeLogTest : public RoundPolicyTest {
 protected:
  // Two jobs run on two V100s, a third waits, and the policy synced after the launches; then
  // `ended_` finished without the scheduler knowing.
  void SetUp() override {
    Start("1x2xV100", AllocateGreedy);
    ended_ = Submit("flat");
    Submit("flat");
    scheduler_->RunCycle(kTimeZero);
    ASSERT_EQ(TypeOf(ended_), "V100");
    Submit("flat", AtSeconds(10));
    scheduler_->RunCycle(AtSeconds(10));  // an arrival: a sync, after the launches
    jobs_ = scheduler_->jobs();
    jobs_.at(ended_).state = JobState::kSucceeded;
  }
  // A cycle of the policy at `now` on jobs_ with `log` as ctx.running_changes (explaining: the
  // policy's state stays as it was).
  Decisions DecideAt(Timestamp now, const ChangeLog<JobId>& log, bool explain = false) {
    SchedulingContext ctx{now,
                          cluster_,
                          scheduler_->state(),
                          jobs_,
                          scheduler_->queue(),
                          scheduler_->running(),
                          scheduler_->running_by_rank(),
                          kModel,
                          rng_};
    ctx.running_changes = &log;
    ctx.explain = explain;
    return policy_->Decide(ctx);
  }

  JobId ended_;
  JobTable jobs_;
  Rng rng_{1};
};

TEST_F(RoundPolicyChangeLogTest, AJobTheLogDoesNotListIsNotRead) {
  ChangeLog<JobId> log = scheduler_->running_changes();  // nothing since the last sync
  DecideAt(AtSeconds(20), log);
  EXPECT_THAT(policy_->AllocationOf(ended_), Not(IsEmpty()));
  log.Record(ended_);
  DecideAt(AtSeconds(30), log);
  EXPECT_THAT(policy_->AllocationOf(ended_), IsEmpty());
}

// What a cycle reads of the running jobs is read again only for the jobs the log lists: a job
// asked to stop that the log lists no longer counts as running on its type, so the round does
// not ask it again.
TEST_F(RoundPolicyChangeLogTest, ARunningJobAskedToStopIsReadAgainOnceLogged) {
  jobs_.at(ended_).state = JobState::kRunning;  // (not ended here)
  ChangeLog<JobId> log = scheduler_->running_changes();
  const Decisions first = DecideAt(AtSeconds(360), log, /*explain=*/true);
  ASSERT_EQ(first.preemptions.size(), 1u);  // three jobs, two GPUs
  const JobId victim = first.preemptions[0].job;
  jobs_.at(victim).preempt_requested = true;
  EXPECT_EQ(DecideAt(AtSeconds(360), log, /*explain=*/true).preemptions.size(), 1u);
  log.Record(victim);
  EXPECT_THAT(DecideAt(AtSeconds(360), log, /*explain=*/true).preemptions, IsEmpty());
}

TEST_F(RoundPolicyChangeLogTest, ALogThatDoesNotKnowTheLastSyncReadsEveryWatchedJob) {
  const ChangeLog<JobId> other;
  DecideAt(AtSeconds(20), other);
  EXPECT_THAT(policy_->AllocationOf(ended_), IsEmpty());
}

TEST(RoundTypeOrderTest, ShuffledDrawsEveryOrderAndRepeatsPerRound) {
  using Walk = RoundPolicyOptions::TypeWalk;
  EXPECT_THAT(RoundTypeOrder(Walk::kRanked, 3, 5), ElementsAre(0, 1, 2));
  EXPECT_THAT(RoundTypeOrder(Walk::kTypeOrder, 3, 5), ElementsAre(0, 1, 2));
  std::set<std::vector<int>> seen;
  for (int64_t round = 0; round < 60; ++round) {
    std::vector<int> order = RoundTypeOrder(Walk::kShuffled, 3, round);
    EXPECT_EQ(order, RoundTypeOrder(Walk::kShuffled, 3, round)) << round;  // the same round
    seen.insert(order);
    std::sort(order.begin(), order.end());
    EXPECT_THAT(order, ElementsAre(0, 1, 2)) << round;  // a permutation
  }
  EXPECT_EQ(seen.size(), 6u);  // all 3! orders occur
  EXPECT_THAT(RoundTypeOrder(Walk::kShuffled, 1, 7), ElementsAre(0));
}

TEST_F(RoundPolicyTest, CpuJobsRunBesideTheRoundsOnTheCpusTheyLeave) {
  Start("1x1xV100:4c+1x0xcpu:4c", AllocateGreedy);
  const JobId fast = Submit("fast");
  const Result<JobId> cpu_job = scheduler_->Submit(MakeJob(1).Gpus(0).Host(4).Spec(), kTimeZero);
  ASSERT_TRUE(cpu_job.ok()) << cpu_job.status().ToString();
  const CycleResult cycle = scheduler_->RunCycle(kTimeZero);
  EXPECT_EQ(cycle.launched(), 2);
  EXPECT_EQ(TypeOf(fast), "V100");
  EXPECT_EQ(scheduler_->jobs().at(*cpu_job).placement, (Placement{{{NodeId(1), 0, 4, 0}}}));
  EXPECT_THAT(policy_->AllocationOf(*cpu_job), IsEmpty());  // no part in the allocation
  // A round boundary passes it by.
  EXPECT_EQ(scheduler_->RunCycle(AtSeconds(360)).preempted(), 0);
  EXPECT_EQ(scheduler_->jobs().at(*cpu_job).state, JobState::kRunning);
}

// spread_tied_types: the agnostic matrix ties every type, so each job's X is split over them by
// their GPUs (1:3) rather than left on the type the allocator chose.
TEST_F(RoundPolicyTest, SpreadTiedTypesSplitsAnAgnosticAllocationByCapacity) {
  StartWith("1x1xK80+1x3xV100", AllocateGreedy,
            {.name = "spread", .agnostic = true, .spread_tied_types = true});
  const JobId a = Submit("fast");
  const JobId b = Submit("flat");
  scheduler_->RunCycle(kTimeZero);
  for (JobId id : {a, b}) EXPECT_THAT(policy_->AllocationOf(id), ElementsAre(0.25, 0.75));
}

// initial_rounds_received: one GPU, X = 0.9 and 0.1. With no initial count, the job never served
// ranks first (round 2 goes to b); with Gavel's half round, a's 0.9 / (1.5 / 2) beats
// b's 0.1 / (0.5 / 2) until b lags far enough behind its X.
TEST_F(RoundPolicyTest, AnInitialCountRanksNewJobsByTheirAllocation) {
  const Allocator fixed = [](const AllocationProblem& problem) -> Result<Allocation> {
    Allocation x{1, std::vector<double>(problem.num_jobs(), 0.0)};
    if (problem.num_jobs() == 2) x.fraction = {0.9, 0.1};
    return x;
  };
  for (const double initial : {0.0, 0.5}) {
    SCOPED_TRACE(initial);
    StartWith("1x1xV100", fixed, {.name = "fixed", .initial_rounds_received = initial});
    const JobId a = Submit("flat");
    const JobId b = Submit("flat");
    std::string schedule;
    for (int round = 0; round < 4; ++round) {
      const Timestamp boundary = AtSeconds(360.0 * round);
      scheduler_->RunCycle(boundary);
      CheckpointPreempted({a, b}, boundary);
      schedule += TypeOf(a) != "-" ? "a" : "b";
    }
    EXPECT_EQ(schedule, initial == 0 ? "abaa" : "aaaa");
  }
}

// zero_entries, Gavel's walk: V100 first; X gives a the K80 and b nothing. By default a takes
// its K80 and the work-conserving pass gives b the V100; with the zero entries the V100 left
// after its (no) X-entries goes at once to the first job by deficit and id, a, and b gets the
// K80 a no longer needs.
TEST_F(RoundPolicyTest, ZeroEntriesFillATypeBeforeTheNextTypesAllocation) {
  const Allocator k80_for_a = [](const AllocationProblem& problem) -> Result<Allocation> {
    Allocation x{2, std::vector<double>(2 * problem.num_jobs(), 0.0)};
    x.fraction[1] = 1;  // job 0 (a): the K80 (type 1)
    return x;
  };
  for (const bool zero_entries : {false, true}) {
    SCOPED_TRACE(zero_entries);
    StartWith("1x1xV100+1x1xK80", k80_for_a,
              {.name = "zero",
               .type_walk = RoundPolicyOptions::TypeWalk::kTypeOrder,
               .zero_entries = zero_entries});
    const JobId a = Submit("flat");
    const JobId b = Submit("flat");
    scheduler_->RunCycle(kTimeZero);
    EXPECT_EQ(TypeOf(a), zero_entries ? "V100" : "K80");
    EXPECT_EQ(TypeOf(b), zero_entries ? "K80" : "V100");
  }
}

// zero_entries on three V100s, X = 1 for the first job (a), none for the others; X is
// recomputed at most every 1,920 s. c runs on what a leaves from the first round (10 s) and b
// (arriving at 1,000 s) from the next; the recomputation at 2,160 s charges c the six rounds
// it received without X (deficit -6), b nothing. Then a job arriving after it (e, no row in X)
// holds the GPU it is walked to without running: c, ranked after b and e by deficit, waits
// with a GPU idle. Without zero_entries c, least served and first by id, runs.
TEST_F(RoundPolicyTest, ZeroEntriesRankByDeficitAndAJobWithoutARowHoldsItsGpus) {
  const Allocator first_only = [](const AllocationProblem& problem) -> Result<Allocation> {
    Allocation x{1, std::vector<double>(problem.num_jobs(), 0.0)};
    x.fraction[0] = 1;
    return x;
  };
  for (const bool zero_entries : {false, true}) {
    SCOPED_TRACE(zero_entries);
    StartWith("1x3xV100", first_only,
              {.name = "zero",
               .realloc_interval = std::chrono::seconds(1920),
               .backfill_between_rounds = false,
               .reset_counts_at_allocation = true,
               .type_walk = RoundPolicyOptions::TypeWalk::kTypeOrder,
               .zero_entries = zero_entries});
    const JobId a = Submit("flat", AtSeconds(10));
    const JobId c = Submit("flat", AtSeconds(10));
    scheduler_->RunCycle(AtSeconds(10));
    const JobId b = Submit("flat", AtSeconds(1000));
    scheduler_->RunCycle(AtSeconds(1000));
    for (int t = 1080; t <= 2160; t += 360) scheduler_->RunCycle(AtSeconds(t));
    EXPECT_EQ(policy_->allocations_computed(), 2);
    const JobId e = Submit("flat", AtSeconds(2200));
    scheduler_->RunCycle(AtSeconds(2200));
    scheduler_->RunCycle(AtSeconds(2520));
    CheckpointPreempted({a, b, c}, AtSeconds(2520));
    EXPECT_EQ(TypeOf(a), "V100");
    EXPECT_EQ(TypeOf(b), "V100");
    EXPECT_EQ(TypeOf(c), zero_entries ? "-" : "V100");
    EXPECT_EQ(TypeOf(e), "-");  // no row in X until the next computation
  }
}

// coalesce_above_jobs: above 2 active jobs, X is recomputed once the jobs changed since the
// last computation reach half the active jobs, or at a round boundary; until then an arrival
// has no row in X and waits, even with GPUs idle.
TEST_F(RoundPolicyTest, AboveTheLimitChangesAreCoalescedUntilAFractionOfTheActiveJobs) {
  StartWith("1x8xV100", AllocateGreedy,
            {.name = "coalesce", .coalesce_above_jobs = 2, .coalesce_fraction = 0.5});
  const JobId a = Submit("flat");
  Submit("flat");
  scheduler_->RunCycle(kTimeZero);  // 2 active, not above the limit
  EXPECT_EQ(policy_->allocations_computed(), 1);
  EXPECT_EQ(TypeOf(a), "V100");
  const JobId c = Submit("flat", AtSeconds(10));
  scheduler_->RunCycle(AtSeconds(10));  // 3 active: 1 change, below 1.5
  EXPECT_EQ(policy_->allocations_computed(), 1);
  EXPECT_THAT(policy_->AllocationOf(c), IsEmpty());
  EXPECT_EQ(TypeOf(c), "-");  // six V100s idle
  const JobId d = Submit("flat", AtSeconds(20));
  scheduler_->RunCycle(AtSeconds(20));  // 4 active: 2 changes, half of them
  EXPECT_EQ(policy_->allocations_computed(), 2);
  EXPECT_EQ(TypeOf(c), "V100");
  EXPECT_EQ(TypeOf(d), "V100");
  ASSERT_TRUE(scheduler_->Handle(JobFinished{a}, AtSeconds(30)).ok());
  const JobId e = Submit("flat", AtSeconds(30));
  scheduler_->RunCycle(AtSeconds(30));  // 4 active: a left, e came; 2 changes, half again
  EXPECT_EQ(policy_->allocations_computed(), 3);
  const JobId f = Submit("flat", AtSeconds(40));
  scheduler_->RunCycle(AtSeconds(40));  // 5 active: 1 change, below 2.5
  EXPECT_EQ(policy_->allocations_computed(), 3);
  EXPECT_EQ(TypeOf(e), "V100");
  EXPECT_EQ(TypeOf(f), "-");
  scheduler_->RunCycle(AtSeconds(360));  // a round boundary recomputes a stale X
  EXPECT_EQ(policy_->allocations_computed(), 4);
  EXPECT_EQ(TypeOf(f), "V100");
}

TEST_F(RoundPolicyTest, AtMostTheCoalescingLimitEveryChangeRecomputes) {
  for (const int limit : {0, 3}) {
    SCOPED_TRACE(limit);
    StartWith("1x8xV100", AllocateGreedy,
              {.name = "coalesce", .coalesce_above_jobs = limit, .coalesce_fraction = 1});
    for (int i = 0; i < 3; ++i) {
      const JobId job = Submit("flat", AtSeconds(10 * i));
      scheduler_->RunCycle(AtSeconds(10 * i));
      EXPECT_EQ(policy_->allocations_computed(), i + 1);
      EXPECT_EQ(TypeOf(job), "V100");
    }
  }
}

// deficit_ties: one GPU, X = 0.5 each for a and b. Rounds 0 and 1 go to a (ties by id) and b;
// round 2 ties them again: by default the job running there (b) keeps it, with deficit_ties the
// smaller id (a). At the recomputation before round 3 (c arrives) a has received 2 of its
// 0.5 x 3 rounds (deficit -0.5) and b 1 (+0.5); the new X ties them at their initial count, and
// the deficit gives the round to b (by default b, running there, again).
TEST_F(RoundPolicyTest, DeficitTiesRankEqualPrioritiesByTimeOwedUnderEarlierAllocations) {
  const Allocator halves = [](const AllocationProblem& problem) -> Result<Allocation> {
    Allocation x{1, std::vector<double>(problem.num_jobs(), 0.0)};
    x.fraction[0] = x.fraction[1] = 0.5;
    return x;
  };
  for (const bool deficit_ties : {false, true}) {
    SCOPED_TRACE(deficit_ties);
    StartWith("1x1xV100", halves,
              {.name = "ties",
               .backfill_between_rounds = false,
               .reset_counts_at_allocation = true,
               .initial_rounds_received = 0.5,
               .deficit_ties = deficit_ties});
    const JobId a = Submit("flat");
    const JobId b = Submit("flat");
    std::string schedule;
    for (int round = 0; round < 4; ++round) {
      const Timestamp boundary = AtSeconds(360.0 * round);
      if (round == 3) Submit("flat", boundary);
      scheduler_->RunCycle(boundary);
      CheckpointPreempted({a, b}, boundary);
      schedule += TypeOf(a) != "-" ? "a" : "b";
    }
    EXPECT_EQ(schedule, deficit_ties ? "abab" : "abbb");
  }
}

}  // namespace
}  // namespace dlsched::hetero
