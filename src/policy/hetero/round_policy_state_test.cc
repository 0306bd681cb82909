#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/runtime/scheduler.h"
#include "policy/hetero/round_policy.h"
#include "support/builders.h"

namespace dlsched::hetero {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeJob;
using testing::RecordingExecutor;

// 3 iterations per second on a V100, 1 on a K80, for every job.
class TwoSpeedModel final : public ThroughputModel {
 public:
  double ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                        const Placement& placement) const override {
    const std::string& type = cluster.gpu_type_name(cluster.node_gpu_type(placement.parts[0].node));
    return type == "V100" ? 3 : 1;
  }
};
const TwoSpeedModel kModel;

constexpr Duration kRound = std::chrono::seconds(360);

// One driver run: a Scheduler over a RoundPolicy, and what its executor was told, as text.
struct DriverRun {
  explicit DriverRun(const Cluster& cluster, RoundPolicyOptions options = {.name = "test"}) {
    auto owned = std::make_unique<RoundPolicy>(std::move(options), AllocateGreedy);
    policy = owned.get();
    scheduler = std::make_unique<Scheduler>(cluster, std::move(owned), executor, kModel, 1);
  }
  // A fresh driver taking over `before`'s jobs, as a restarted daemon restores its rows.
  DriverRun(const Cluster& cluster, const DriverRun& before, bool restore_state)
      : DriverRun(cluster, before.policy->options()) {
    for (size_t i = 0; i < before.scheduler->jobs().size(); ++i) {
      const Job& job = before.scheduler->jobs().at(JobId(static_cast<uint32_t>(i)));
      Scheduler::RestoredJob r;
      r.spec = job.spec;
      r.state = job.state;
      r.placement = job.placement;
      r.queued_since = job.queued_since;
      r.segment_start = job.segment_start;
      r.first_start = job.first_start;
      r.finish_time = job.finish_time;
      r.run_time = job.run_time;
      r.attained_gpu_time = job.attained_gpu_time;
      r.iterations_done = job.iterations_done;
      r.preemptions = job.preemptions;
      EXPECT_TRUE(scheduler->Restore(std::move(r)).ok());
    }
    if (restore_state) {
      EXPECT_TRUE(policy->RestoreState(before.policy->SaveState()).ok());
    }
  }

  // Rounds [first, last): a cycle at each boundary; preempted jobs checkpoint 30 s later, and
  // a cycle then starts the jobs waiting for their GPUs. A job arrives in round 2.
  void Rounds(int first, int last) {
    for (int round = first; round < last; ++round) {
      const Timestamp boundary = Timestamp(round * kRound);
      if (round == 2) {
        JobSpec spec = MakeJob(0).Submit(boundary.time_since_epoch()).Spec();
        EXPECT_TRUE(scheduler->Submit(spec, boundary).ok());
      }
      scheduler->RunCycle(boundary);
      const Timestamp later = boundary + std::chrono::seconds(30);
      for (JobId id : std::vector<JobId>(scheduler->running())) {
        if (scheduler->jobs().at(id).preempt_requested) {
          EXPECT_TRUE(scheduler->Handle(JobSuspended{id, 1.0 + round}, later).ok());
        }
      }
      scheduler->RunCycle(later);
    }
  }
  // The executor calls from `from` on ("launch 1 n1 at 1470.000000", "stop 0 at 1440.000000"),
  // those of one instant sorted: a restarted scheduler lists its running jobs by id rather than
  // in launch order, so the preemptions of a cycle may come in another order.
  std::vector<std::string> Calls(size_t from = 0) const {
    std::vector<std::pair<Timestamp, std::string>> calls;
    for (size_t i = from; i < executor.calls.size(); ++i) {
      const RecordingExecutor::Call& c = executor.calls[i];
      std::string text = c.kind == RecordingExecutor::Call::kLaunch ? "launch " : "stop ";
      text += std::to_string(c.job.value());
      for (const auto& part : c.placement.parts) text += " n" + std::to_string(part.node.value());
      calls.emplace_back(c.at, text + " at " + std::to_string(ToSeconds(c.at)));
    }
    std::stable_sort(calls.begin(), calls.end());
    std::vector<std::string> out;
    for (auto& [at, text] : calls) out.push_back(std::move(text));
    return out;
  }

  RecordingExecutor executor;
  std::unique_ptr<Scheduler> scheduler;
  RoundPolicy* policy = nullptr;
};

Scheduler& Start(DriverRun& run) {
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(run.scheduler->Submit(MakeJob(0).Spec(), kTimeZero).ok());
  return *run.scheduler;
}

TEST(RoundPolicyStateTest, ARestartWithTheSavedStateDecidesAsTheUninterruptedRun) {
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  DriverRun whole(cluster);
  Start(whole);
  whole.Rounds(0, 4);
  const size_t at_restart = whole.executor.calls.size();
  whole.Rounds(4, 9);
  // Jobs move between the types across rounds.
  const std::vector<std::string> after = whole.Calls(at_restart);
  ASSERT_GE(after.size(), 6u);

  DriverRun first(cluster);
  Start(first);
  first.Rounds(0, 4);
  const std::vector<std::string> all = whole.Calls();
  ASSERT_EQ(first.Calls(), std::vector<std::string>(all.begin(), all.begin() + at_restart));
  DriverRun restarted(cluster, first, /*restore_state=*/true);
  restarted.Rounds(4, 9);
  EXPECT_EQ(restarted.Calls(), after);
  EXPECT_EQ(restarted.policy->SaveState(), whole.policy->SaveState());

  // Without the state (the rounds each job received are lost), the restart decides otherwise:
  // what the state carries matters.
  DriverRun forgetful(cluster, first, /*restore_state=*/false);
  forgetful.Rounds(4, 9);
  EXPECT_NE(forgetful.Calls(), after);
}

// Gavel's lease lists (deficit_ties, zero_entries): the deficits travel with the state.
TEST(RoundPolicyStateTest, TheDeficitsTravelWithTheState) {
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  const RoundPolicyOptions gavel = {.name = "test",
                                    .realloc_interval = 2 * kRound,
                                    .backfill_between_rounds = false,
                                    .reset_counts_at_allocation = true,
                                    .type_walk = RoundPolicyOptions::TypeWalk::kTypeOrder,
                                    .initial_rounds_received = 0.5,
                                    .deficit_ties = true,
                                    .zero_entries = true};
  DriverRun whole(cluster, gavel);
  Start(whole);
  whole.Rounds(0, 4);
  const size_t at_restart = whole.executor.calls.size();
  EXPECT_THAT(whole.policy->SaveState(), HasSubstr(" deficits "));
  whole.Rounds(4, 9);
  DriverRun first(cluster, gavel);
  Start(first);
  first.Rounds(0, 4);
  DriverRun restarted(cluster, first, /*restore_state=*/true);
  restarted.Rounds(4, 9);
  EXPECT_EQ(restarted.Calls(), whole.Calls(at_restart));
  EXPECT_EQ(restarted.policy->SaveState(), whole.policy->SaveState());
  // A state without its deficits is refused.
  const std::string saved = first.policy->SaveState();
  DriverRun fresh(cluster, gavel);
  EXPECT_EQ(fresh.policy->RestoreState(saved.substr(0, saved.find(" deficits"))).code(),
            StatusCode::kInvalidArgument);
}

// coalesce_above_jobs: a stale X and the changes counted since the last computation travel
// with the state; a state saved before the record existed (no stale X) still restores.
TEST(RoundPolicyStateTest, ACoalescedXTravelsWithTheState) {
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  const RoundPolicyOptions coalesce = {
      .name = "test", .coalesce_above_jobs = 1, .coalesce_fraction = 1};
  const auto arrive_mid_round = [](DriverRun& run) {
    const Timestamp at = Timestamp(kRound + std::chrono::seconds(100));
    EXPECT_TRUE(run.scheduler->Submit(MakeJob(0).Submit(at.time_since_epoch()).Spec(), at).ok());
    run.scheduler->RunCycle(at);  // 3 active, 1 change: X stays stale
  };
  DriverRun whole(cluster, coalesce);
  Start(whole);
  whole.Rounds(0, 2);
  arrive_mid_round(whole);
  const std::string saved = whole.policy->SaveState();
  EXPECT_THAT(saved, HasSubstr(" coalesce 1 1"));
  const size_t at_restart = whole.executor.calls.size();
  whole.Rounds(2, 6);

  DriverRun first(cluster, coalesce);
  Start(first);
  first.Rounds(0, 2);
  arrive_mid_round(first);
  ASSERT_EQ(first.policy->SaveState(), saved);
  DriverRun restarted(cluster, first, /*restore_state=*/true);
  restarted.Rounds(2, 6);
  EXPECT_EQ(restarted.Calls(), whole.Calls(at_restart));
  EXPECT_EQ(restarted.policy->SaveState(), whole.policy->SaveState());

  DriverRun older(cluster, coalesce);
  EXPECT_TRUE(older.policy->RestoreState(saved.substr(0, saved.find(" coalesce"))).ok());
  DriverRun bad(cluster, coalesce);
  EXPECT_EQ(bad.policy->RestoreState(saved.substr(0, saved.find(" coalesce")) + " coalesce 2 1")
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(RoundPolicyStateTest, ExplainingLeavesTheStateAsItWas) {
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  DriverRun run(cluster);
  Start(run);
  run.Rounds(0, 2);
  const std::string before = run.policy->SaveState();
  // At the next boundary, before its cycle: explaining must not start the round.
  run.scheduler->ExplainPending(Timestamp(2 * kRound));
  EXPECT_EQ(run.policy->SaveState(), before);
}

TEST(RoundPolicyStateTest, TheTextReadsBackAndBadTextIsRefused) {
  const Cluster cluster = MakeCluster("1x1xK80+1x1xV100");
  DriverRun run(cluster);
  EXPECT_EQ(run.policy->SaveState(), "");  // nothing decided, nothing to carry
  Start(run);
  run.Rounds(0, 3);
  const std::string saved = run.policy->SaveState();
  EXPECT_THAT(saved, HasSubstr("round-policy 1"));
  DriverRun other(cluster);
  ASSERT_TRUE(other.policy->RestoreState(saved).ok());
  EXPECT_EQ(other.policy->SaveState(), saved);
  for (const std::string& bad : {std::string("nonsense"), saved.substr(0, saved.size() / 2),
                                 saved + " 7", std::string("round-policy 2"),
                                 std::string("round-policy 1 types 2 next_round 0 "
                                             "allocations 0 x 99999999 jobs 0 assigned 0"),
                                 // Jobs out of id order (the order of X's rows).
                                 std::string("round-policy 1 types 1 next_round 0 allocations 0 "
                                             "x 0 jobs 2 5 0 -1 0 1 0 3 0 -1 0 1 0 assigned 0")}) {
    SCOPED_TRACE(bad);
    DriverRun fresh(cluster);
    const Status restored = fresh.policy->RestoreState(bad);
    EXPECT_EQ(restored.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(restored.message(), HasSubstr("policy test: cannot restore its state"));
    EXPECT_EQ(fresh.policy->SaveState(), "");  // unchanged
  }
}

}  // namespace
}  // namespace dlsched::hetero
