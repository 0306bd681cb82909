// Every kind of profile runs live (issue 18): a round-based heterogeneity-aware daemon moves
// jobs between GPU types across rounds, survives kill -9 with its policy's state, and its event
// log replays to the same decisions; a sharing profile runs live (GPU sharing itself:
// live_sharing_test.cc); `--replay` takes every profile `dlsched policies` prints.

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

// Seconds per round: long next to a preemption and relaunch (tens of milliseconds), short for
// the test.
constexpr int kRoundS = 3;

class LiveProfilesTest : public DaemonIntegrationTest {
 protected:
  // A daemon on 1x4xV100 started with `serve_args` runs a 2-GPU and a 1-GPU job to success
  // under `profile` (its start-up line names it), and its log replays to the same 2 decisions.
  void ExpectTwoJobsRunAndReplay(const std::vector<std::string>& serve_args,
                                 const std::string& profile) {
    StartDaemon(serve_args);
    auto [s1, a] = Submit(Script("true", 2));
    auto [s2, b] = Submit(Script("true", 1));
    ASSERT_EQ(s1, 201);
    ASSERT_EQ(s2, 201);
    ASSERT_TRUE(WaitForState(a["id"], "succeeded"));
    ASSERT_TRUE(WaitForState(b["id"], "succeeded"));
    EXPECT_EQ(StopDaemon(), 0);
    EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("policy " + profile + ","), std::string::npos)
        << ReadTextFile(dir_ / "daemon.err");
    const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
    EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
    EXPECT_NE(replay.out.find("(profile " + profile + ")"), std::string::npos) << replay.out;
    EXPECT_NE(replay.out.find("all 2 decisions identical"), std::string::npos) << replay.out;
  }
  // The daemon on one V100 and one K80 (nodes n0000 and n0001), under a profile of hetero-las's
  // allocator with a short round.
  void StartRoundDaemon() {
    const fs::path profile = dir_ / "hetero-las-short.json";
    std::ofstream(profile) << R"({"name": "hetero-las-short", "allocator": "max-min", "round_s": )"
                           << kRoundS << "}";
    StartServe({"--gpus", "1x1xV100+1x1xK80", "--profile", profile.string()});
  }

  // The logged launches (job|placement), after event `after_seq`, in order.
  std::vector<std::string> Launches(int64_t after_seq = 0) {
    return StoredRows("SELECT job, detail FROM events WHERE kind = 'launch' AND seq > " +
                      std::to_string(after_seq) + " ORDER BY seq");
  }
  // The log's rows other than cycles (seq|kind|job|detail), one per line: what a failure shows.
  std::string EventsText() {
    std::string text;
    for (const std::string& row : StoredRows(
             "SELECT seq, kind, job, detail FROM events WHERE kind != 'cycle' ORDER BY seq")) {
      text += row + "\n";
    }
    return text;
  }
  // Whether some job was launched on both nodes among `launches`.
  static bool SomeJobMoved(const std::vector<std::string>& launches,
                           std::map<std::string, std::string> last = {}) {
    for (const std::string& l : launches) {
      const std::string job = l.substr(0, l.find('|'));
      const std::string node = l.substr(l.find('|') + 1, 5);
      auto [it, first] = last.emplace(job, node);
      if (!first && it->second != node) return true;
      it->second = node;
    }
    return false;
  }
};

TEST_F(LiveProfilesTest, ARoundBasedDaemonMovesJobsBetweenTypesSurvivesKill9AndReplays) {
  StartRoundDaemon();
  auto [s1, a] = Submit(LongJob());
  auto [s2, b] = Submit(LongJob());
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(a["id"], "running"));
  ASSERT_TRUE(WaitForState(b["id"], "running"));
  // One V100 and one K80 for two jobs: max-min fairness gives each a share of both, so the
  // rounds move them between the types.
  ASSERT_TRUE(Eventually([&] { return SomeJobMoved(Launches()) && NoStopInFlight(2); },
                         seconds(6 * kRoundS)))
      << EventsText() << ReadTextFile(dir_ / "daemon.err");
  const std::vector<std::string> before = Launches();
  // The policy's state (allocation, rounds per job) is in the store, written with its cycles.
  const std::vector<std::string> stored =
      StoredRows("SELECT json_extract(value, '$.state') FROM meta WHERE key = 'policy_state'");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_NE(stored[0].find("round-policy 1"), std::string::npos) << stored[0];

  Kill9();
  StartRoundDaemon();
  const int64_t restart = LastStartSeq();
  // The restarted daemon restored the state the store held at the kill (its start record says
  // which), re-adopted both jobs and goes on moving them.
  const std::vector<std::string> restored = StoredRows(
      "SELECT json_extract(detail, '$.policy_state'), json_extract(detail, '$.running') FROM "
      "events WHERE seq = " +
      std::to_string(restart));
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0], stored[0] + "|2");
  std::map<std::string, std::string> last;
  for (const std::string& l : before) last[l.substr(0, l.find('|'))] = l.substr(l.find('|') + 1, 5);
  ASSERT_TRUE(Eventually([&] { return SomeJobMoved(Launches(restart), last) && NoStopInFlight(2); },
                         seconds(6 * kRoundS)))
      << EventsText() << ReadTextFile(dir_ / "daemon.err");
  EXPECT_EQ(StopDaemon(), 0);

  const std::string db = (dir_ / "state.db").string();
  const RunResult replay = Dlsched({"simulate", "--replay", db});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("2 daemon runs (profile hetero-las-short)"), std::string::npos)
      << replay.out;
  EXPECT_NE(replay.out.find("decisions identical"), std::string::npos) << replay.out;
  EXPECT_EQ(replay.out.find("divergence"), std::string::npos) << replay.out;

  // A tampered state: the restart's record no longer matches what the replayed policy had.
  Sql("UPDATE events SET detail = json_set(detail, '$.policy_state', 'round-policy 1 bad') "
      "WHERE seq = " +
      std::to_string(restart));
  const RunResult tampered = Dlsched({"simulate", "--replay", db});
  EXPECT_EQ(tampered.code, 1) << tampered.out << tampered.err;
  EXPECT_NE(tampered.out.find("restored the policy's state 'round-policy 1 bad'"),
            std::string::npos)
      << tampered.out;

  // Every profile `dlsched policies` prints replays the log (a what-if: exit 0 or 1, never a
  // refusal).
  const RunResult policies = Dlsched({"policies"});
  ASSERT_EQ(policies.code, 0);
  std::istringstream names(policies.out);
  int replayed = 0;
  for (std::string name; std::getline(names, name);) {
    SCOPED_TRACE(name);
    const RunResult what_if = Dlsched({"simulate", "--replay", db, "--policy", name});
    EXPECT_TRUE(what_if.code == 0 || what_if.code == 1) << what_if.out << what_if.err;
    EXPECT_NE(what_if.out.find("(profile " + name + ")"), std::string::npos) << what_if.out;
    ++replayed;
  }
  EXPECT_GE(replayed, 16);
}

TEST_F(LiveProfilesTest, ASharingProfileRunsLiveAndReplays) {
  ExpectTwoJobsRunAndReplay({"--profile", "greedy-share"}, "greedy-share");
}

// The shipped gavel-finish-time-fairness (issue 19 item 5: the face-centred allocator, Gavel's
// lease lists with deficits that travel with the saved state), with 2-second rounds for the test.
TEST_F(LiveProfilesTest, AFinishTimeFairnessProfileRunsLiveAndReplays) {
  const fs::path profile = dir_ / "ftf-short.json";
  std::ofstream(profile) << R"({"name": "ftf-short", "allocator": "finish-time-fairness-centre",
      "round_s": 2, "realloc_interval_s": 4, "backfill_between_rounds": false,
      "reset_counts_at_allocation": true, "type_walk": "type-order",
      "initial_rounds_received": 0.5, "deficit_ties": true, "zero_entries": true})";
  ExpectTwoJobsRunAndReplay({"--profile", profile.string()}, "ftf-short");
}

// The combined `dlsched` profile (issue 21) is the daemon's default: `serve` without --profile
// runs it, logs it, and its event log replays to the same decisions; `dlsched policies` lists it
// first.
TEST_F(LiveProfilesTest, ServeRunsTheDlschedProfileByDefaultAndItsLogReplays) {
  ExpectTwoJobsRunAndReplay({}, "dlsched");
}

TEST_F(LiveProfilesTest, PoliciesListsDlschedFirst) {
  const RunResult policies = Dlsched({"policies"});
  ASSERT_EQ(policies.code, 0);
  EXPECT_EQ(policies.out.substr(0, policies.out.find('\n')), "dlsched") << policies.out;
}

}  // namespace
}  // namespace dlsched::integration
