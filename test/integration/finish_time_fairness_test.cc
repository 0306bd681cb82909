// The finish-time-fairness allocator runs live like every round-based profile (issue 19 item 5):
// a daemon under a short-round copy of gavel-finish-time-fairness runs a 2-GPU and a 1-GPU job to
// success, and its event log replays to the same decisions.

#include <fstream>
#include <string>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

class FinishTimeFairnessLiveTest : public DaemonIntegrationTest {};

TEST_F(FinishTimeFairnessLiveTest, RunsLiveAndItsLogReplays) {
  // Gavel's mechanics as the shipped profile, with 2-second rounds for the test.
  const fs::path profile = dir_ / "ftf-short.json";
  std::ofstream(profile) << R"({"name": "ftf-short", "allocator": "finish-time-fairness",
      "round_s": 2, "realloc_interval_s": 4, "backfill_between_rounds": false,
      "reset_counts_at_allocation": true})";
  StartDaemon({"--profile", profile.string()});
  auto [s1, a] = Submit(Script("sleep 0.5", 2));
  auto [s2, b] = Submit(Script("true", 1));
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(a["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(b["id"], "succeeded"));
  EXPECT_EQ(StopDaemon(), 0);
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("policy ftf-short,"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("(profile ftf-short)"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("all 2 decisions identical"), std::string::npos) << replay.out;
}

}  // namespace
}  // namespace dlsched::integration
