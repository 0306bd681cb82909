// The built-in round-based profiles live (issue 18, docs/hetero.md "Running it live"): `serve
// --profile hetero-las --round S` on a cluster of two GPU types moves a job between the types
// across rounds (seen through the API and in the event log), goes on after kill -9 and a restart
// with the same decisions, and its log replays to "all N decisions identical"; hetero-minjct runs
// jobs to completion through rounds, a restart and a replay the same way.

#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon_harness.h"

namespace dlsched::integration {
namespace {

class HeteroLiveTest : public DaemonIntegrationTest {
 protected:
  // One V100 node (n0000) and one K80 node (n0001), one GPU each, under built-in `profile` with
  // rounds of `round_s` seconds.
  void StartRounds(const std::string& profile, const std::string& round_s) {
    StartServe({"--gpus", "1x1xV100+1x1xK80", "--profile", profile, "--round", round_s});
  }

  // Node name -> GPU type, from GET /v1/nodes.
  std::map<std::string, std::string> NodeTypes() {
    std::map<std::string, std::string> types;
    auto [status, body] = Get("/v1/nodes");
    EXPECT_EQ(status, 200) << body.dump();
    for (const json& node : body["nodes"]) {
      types[node["name"].get<std::string>()] = node["gpus"][0]["type"].get<std::string>();
    }
    return types;
  }

  // Adds the GPU type each of `jobs` runs on now (GET /v1/jobs/{id}: its placement's node) to
  // `seen[id]`.
  void Observe(const std::vector<int64_t>& jobs, const std::map<std::string, std::string>& types,
               std::map<int64_t, std::set<std::string>>& seen) {
    for (int64_t id : jobs) {
      auto [status, body] = Get("/v1/jobs/" + std::to_string(id));
      if (status != 200 || body["state"] != "running" || !body["placement"].is_string()) continue;
      const std::string placement = body["placement"];
      const auto type = types.find(placement.substr(0, placement.find(':')));
      if (type != types.end()) seen[id].insert(type->second);
    }
  }

  // The GPU types each job was launched on after event `after_seq`, from the logged launches.
  std::map<std::string, std::set<std::string>> LaunchedTypes(
      const std::map<std::string, std::string>& types, int64_t after_seq = 0) {
    std::map<std::string, std::set<std::string>> launched;
    for (const std::string& row :
         StoredRows("SELECT job, detail FROM events WHERE kind = 'launch' AND seq > " +
                    std::to_string(after_seq) + " ORDER BY seq")) {
      const std::string job = row.substr(0, row.find('|'));
      const std::string placement = row.substr(row.find('|') + 1);
      const auto type = types.find(placement.substr(0, placement.find(':')));
      if (type != types.end()) launched[job].insert(type->second);
    }
    return launched;
  }
  static bool SomeJobOnBoth(const std::map<std::string, std::set<std::string>>& launched) {
    for (const auto& [job, on] : launched) {
      if (on.size() == 2) return true;
    }
    return false;
  }

  // Replays the stopped daemon's log; expects every decision identical over `runs` runs of
  // `profile`.
  void ExpectIdenticalReplay(const std::string& profile, int runs) {
    const RunResult replay = Dlsched({"simulate", "--replay", (dir_ / "state.db").string()});
    EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
    EXPECT_NE(replay.out.find(std::to_string(runs) + " daemon runs (profile " + profile + ")"),
              std::string::npos)
        << replay.out;
    EXPECT_TRUE(std::regex_search(replay.out, std::regex("\nall [1-9][0-9]* decisions identical")))
        << replay.out;
    EXPECT_EQ(replay.out.find("divergence"), std::string::npos) << replay.out;
  }

  // Counts to `steps` tenths of a second in its checkpoint directory, going on from its count
  // after a preemption (SIGTERM: it exits 0, having saved the count), then succeeds.
  json CountingJob(int steps) {
    return Script(
        "mkdir -p \"$DLSCHED_CHECKPOINT_DIR\"; f=\"$DLSCHED_CHECKPOINT_DIR/count\"; "
        "c=$(cat \"$f\" 2>/dev/null || echo 0); trap 'exit 0' TERM; "
        "while [ \"$c\" -lt " +
            std::to_string(steps) + " ]; do sleep 0.1; c=$((c + 1)); echo \"$c\" > \"$f\"; done",
        1);
  }
};

TEST_F(HeteroLiveTest, HeteroLasMovesAJobBetweenTypesAcrossRoundsSurvivesKill9AndReplays) {
  StartRounds("hetero-las", "2");
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("policy hetero-las"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  const std::map<std::string, std::string> types = NodeTypes();
  ASSERT_EQ(types.size(), 2u);
  ASSERT_EQ(types.at("n0000"), "V100");
  ASSERT_EQ(types.at("n0001"), "K80");
  std::vector<int64_t> jobs;
  for (int i = 0; i < 2; ++i) {
    auto [status, body] = Submit(LongJob());
    ASSERT_EQ(status, 201) << body.dump();
    jobs.push_back(body["id"]);
  }
  // Two jobs, one V100 and one K80: max-min fairness gives each a share of both types, so the
  // rounds swap them. The API shows a job on one type and later on the other.
  std::map<int64_t, std::set<std::string>> seen;
  ASSERT_TRUE(Eventually(
      [&] {
        Observe(jobs, types, seen);
        for (const auto& [id, on] : seen) {
          if (on.size() == 2) return true;
        }
        return false;
      },
      seconds(20)))
      << ::testing::PrintToString(seen) << ReadTextFile(dir_ / "daemon.err");
  ASSERT_TRUE(SomeJobOnBoth(LaunchedTypes(types)))
      << ::testing::PrintToString(LaunchedTypes(types));
  // Every boundary preempts both jobs (SIGTERM, --grace) and relaunches them swapped.
  ASSERT_TRUE(Eventually([&] { return NoStopInFlight(jobs.size()); }, seconds(10)));

  // kill -9 mid-run: the restarted daemon restores the policy's state, re-adopts both jobs and
  // goes on swapping them.
  Kill9();
  StartRounds("hetero-las", "2");
  const int64_t restart = LastStartSeq();
  const std::vector<std::string> restored =
      StoredRows("SELECT json_extract(detail, '$.running') FROM events WHERE seq = " +
                 std::to_string(restart));
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0], "2");
  ASSERT_TRUE(Eventually(
      [&] { return SomeJobOnBoth(LaunchedTypes(types, restart)) && NoStopInFlight(jobs.size()); },
      seconds(20)))
      << ::testing::PrintToString(LaunchedTypes(types, restart))
      << ReadTextFile(dir_ / "daemon.err");
  EXPECT_EQ(StopDaemon(), 0);
  ExpectIdenticalReplay("hetero-las", 2);
}

TEST_F(HeteroLiveTest, HeteroMinJctRunsJobsToCompletionThroughRoundsARestartAndAReplay) {
  StartRounds("hetero-minjct", "1");
  const std::map<std::string, std::string> types = NodeTypes();
  std::vector<int64_t> jobs;
  for (int steps : {25, 40, 15}) {
    auto [status, body] = Submit(CountingJob(steps));
    ASSERT_EQ(status, 201) << body.dump();
    jobs.push_back(body["id"]);
  }
  // Three jobs on two GPUs: the rounds run them in turns.
  ASSERT_TRUE(Eventually([&] { return LaunchedTypes(types).size() == 3; }, seconds(20)))
      << ::testing::PrintToString(LaunchedTypes(types)) << ReadTextFile(dir_ / "daemon.err");
  Kill9();
  StartRounds("hetero-minjct", "1");
  for (int64_t id : jobs) {
    ASSERT_TRUE(Eventually([&] { return Job(id).value("state", "") == "succeeded"; }, seconds(40)))
        << id << Job(id).dump() << ReadTextFile(dir_ / "daemon.err");
  }
  EXPECT_EQ(StopDaemon(), 0);
  ExpectIdenticalReplay("hetero-minjct", 2);
}

TEST_F(HeteroLiveTest, RoundIsRefusedForAProfileWithoutRounds) {
  const RunResult refused =
      Dlsched({"serve", "--listen", "127.0.0.1:0", "--gpus", "1x1xV100", "--workdir",
               (dir_ / "work").string(), "--profile", "fifo", "--round", "2"});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--round: profile 'fifo' is not round-based"), std::string::npos)
      << refused.err;
}

}  // namespace
}  // namespace dlsched::integration
