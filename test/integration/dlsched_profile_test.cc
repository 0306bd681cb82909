// The combined `dlsched` profile (issue 21) is the daemon's default: `serve` without --profile
// runs it (as its base, having no sharing knowledge), logs it, and its event log replays to the
// same decisions; `dlsched policies` lists it first.

#include <string>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

using DlschedProfileTest = DaemonIntegrationTest;

TEST_F(DlschedProfileTest, ServeRunsTheDlschedProfileByDefaultAndItsLogReplays) {
  StartDaemon();
  auto [s1, a] = Submit(Script("true", 4));
  auto [s2, b] = Submit(Script("true", 1));
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(a["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(b["id"], "succeeded"));
  EXPECT_EQ(StopDaemon(), 0);
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("policy dlsched"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("(profile dlsched)"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("all 2 decisions identical"), std::string::npos) << replay.out;
}

TEST_F(DlschedProfileTest, PoliciesListsDlschedFirst) {
  const RunResult policies = Dlsched({"policies"});
  ASSERT_EQ(policies.code, 0);
  EXPECT_EQ(policies.out.substr(0, policies.out.find('\n')), "dlsched") << policies.out;
}

}  // namespace
}  // namespace dlsched::integration
