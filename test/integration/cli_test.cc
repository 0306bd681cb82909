// The client commands (submit, logs, queue, show) against a real daemon (harness:
// daemon_harness.h).

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

// The id `submit --parsable` printed: the whole of stdout is the id and a newline.
int64_t ParsedId(const RunResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find_first_not_of("0123456789\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.back(), '\n');
  return r.out.empty() ? -1 : std::stoll(r.out);
}

TEST_F(DaemonIntegrationTest, SubmitSendsEveryFieldOfTheJobSpec) {
  StartDaemon();
  const RunResult r = Cli({"submit",
                           "--parsable",
                           "--name",
                           "full",
                           "--queue",
                           "research",
                           "--gpus",
                           "2",
                           "--gpu-type",
                           "V100",
                           "--selector",
                           "gpu=V100",
                           "--prefer",
                           "rack=r000",
                           "--memory-mib",
                           "2048",
                           "--model",
                           "ResNet-50",
                           "--batch-size",
                           "64",
                           "--iterations",
                           "500",
                           "--max-run-time",
                           "2h",
                           "--estimate",
                           "1h30m",
                           "--priority",
                           "3",
                           "--qos",
                           "soft",
                           "--deadline",
                           "1d",
                           "--framework",
                           "pytorch",
                           "--env",
                           "A=1",
                           "--workdir",
                           dir_.string(),
                           "--",
                           "sleep",
                           "60"});
  const int64_t id = ParsedId(r);
  const json spec = Job(id)["spec"];
  EXPECT_EQ(spec["name"], "full");
  EXPECT_EQ(spec["queue"], "research");
  EXPECT_EQ(spec["gpus"], 2);
  EXPECT_EQ(spec["gpu_type"], "V100");
  EXPECT_EQ(spec["selector"], (json{{"gpu", "V100"}}));
  EXPECT_EQ(spec["prefer"], (json{{"rack", "r000"}}));
  EXPECT_EQ(spec["memory_mib"], 2048);
  EXPECT_EQ(spec["model"], "ResNet-50");
  EXPECT_EQ(spec["batch_size"], 64);
  EXPECT_EQ(spec["iterations"], 500);
  EXPECT_EQ(spec["max_run_time_s"], 7200);
  EXPECT_EQ(spec["runtime_estimate_s"], 5400);
  EXPECT_EQ(spec["priority"], 3);
  EXPECT_EQ(spec["qos"], "soft");
  EXPECT_TRUE(spec.contains("deadline"));
  EXPECT_EQ(spec["framework"], "pytorch");
  EXPECT_EQ(spec["env"]["A"], "1");
  const RunResult show = Cli({"show", std::to_string(id)});
  for (const char* row : {"queue:", "research", "selector:", "memory_mib:", "2048",
                          "model:", "ResNet-50", "max_run_time_s:", "7200"}) {
    EXPECT_NE(show.out.find(row), std::string::npos) << row << " in\n" << show.out;
  }
  const RunResult as_user = Cli({"submit", "--parsable", "--user", "alice", "--", "true"});
  EXPECT_EQ(Job(ParsedId(as_user))["user"], "alice");

  const RunResult service = Cli({"submit", "--parsable", "--kind", "service", "--service-load",
                                 "0:1", "--gpus", "2", "--", "sleep", "60"});
  const json service_spec = Job(ParsedId(service))["spec"];
  EXPECT_EQ(service_spec["kind"], "service");
  EXPECT_EQ(service_spec["service_load"], "0:1");

  // A selector no node matches is the server's 400: a usage error, its message passed on.
  const RunResult refused = Cli({"submit", "--selector", "zone=mars", "--", "true"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("selector"), std::string::npos) << refused.err;
}

TEST_F(DaemonIntegrationTest, SubmitWaitExitsWithTheJobsExitCode) {
  StartDaemon();
  const RunResult failed = Cli({"submit", "--wait", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(failed.code, 3) << failed.err;
  EXPECT_NE(failed.out.find("submitted job"), std::string::npos) << failed.out;
  EXPECT_NE(failed.err.find("failed: exit code 3"), std::string::npos) << failed.err;

  const fs::path script = dir_ / "job.sh";
  std::ofstream(script) << "echo from-script\n";
  const RunResult ok = Cli({"submit", "--wait", "--parsable", "--script", script.string()});
  EXPECT_EQ(ok.code, 0) << ok.err;
  const int64_t id = ParsedId(ok);
  const RunResult logs = Cli({"logs", std::to_string(id)});
  EXPECT_EQ(logs.out, "from-script\n");

  const RunResult both = Cli({"submit", "--script", script.string(), "--", "true"});
  EXPECT_EQ(both.code, 2);
}

TEST_F(DaemonIntegrationTest, LogsShowBothStreamsByDefault) {
  StartDaemon();
  const RunResult r = Cli({"submit", "--wait", "--parsable", "--", "sh", "-c",
                           "echo to-stdout; echo to-stderr >&2; exit 1"});
  EXPECT_EQ(r.code, 1) << r.err;
  ASSERT_FALSE(r.out.empty());
  const std::string id = r.out.substr(0, r.out.size() - 1);  // --parsable: the id alone

  const RunResult both = Cli({"logs", id});
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(both.out, "to-stdout\n");
  EXPECT_EQ(both.err, "to-stderr\n");

  const RunResult out_only = Cli({"logs", "--stdout", id});
  EXPECT_EQ(out_only.out, "to-stdout\n");
  EXPECT_EQ(out_only.err, "");
  const RunResult err_only = Cli({"logs", "--stderr", id});
  EXPECT_EQ(err_only.out, "to-stderr\n");  // the chosen stream is the output
  EXPECT_EQ(err_only.err, "");

  const RunResult as_json = Cli({"logs", "--json", id});
  const json doc = json::parse(as_json.out);
  ASSERT_EQ(doc["logs"].size(), 2u) << as_json.out;
  EXPECT_EQ(doc["logs"][0]["stream"], "stdout");
  EXPECT_EQ(doc["logs"][0]["text"], "to-stdout\n");
  EXPECT_EQ(doc["logs"][1]["stream"], "stderr");
  EXPECT_EQ(doc["logs"][1]["text"], "to-stderr\n");
  const json one = json::parse(Cli({"logs", "--json", "--stderr", id}).out);
  EXPECT_EQ(one["stream"], "stderr");
  EXPECT_EQ(one["text"], "to-stderr\n");
}

TEST_F(DaemonIntegrationTest, QueueJsonHasThePositionAndCauseTheTableShows) {
  StartDaemon({"--profile", "fifo-backfill"});  // no preemption: the waiting job is gpus-busy
  const int64_t holder =
      ParsedId(Cli({"submit", "--parsable", "--gpus", "4", "--", "sleep", "60"}));
  ASSERT_TRUE(WaitForState(holder, "running"));
  const int64_t waiting =
      ParsedId(Cli({"submit", "--parsable", "--gpus", "4", "--", "sleep", "60"}));
  ASSERT_TRUE(WaitForState(waiting, "queued"));

  json entry;
  ASSERT_TRUE(Eventually([&] {
    const json doc = json::parse(Cli({"queue", "--json"}).out);
    for (const json& job : doc["jobs"]) {
      if (job["id"] == waiting) entry = job;
    }
    return entry.contains("pending_cause") && entry["pending_cause"] != "other";
  })) << entry.dump();
  EXPECT_EQ(entry["position"], 1);
  EXPECT_EQ(entry["pending_cause"], "gpus-busy");
  EXPECT_FALSE(entry["pending_reason"].get<std::string>().empty());

  const RunResult table = Cli({"queue"});
  EXPECT_NE(table.out.find("gpus-busy"), std::string::npos) << table.out;
}

// Control characters in a job's name never reach a terminal: the API refuses them, and a row that
// holds one (stored by an older build, or edited) fails at restore with a reason that quotes no
// raw byte. The tables escape whatever else the server sends (EscapeControlTest).
TEST_F(DaemonIntegrationTest, ControlCharactersInJobNamesNeverReachATerminal) {
  StartDaemon();
  const std::string name = "\x1b]0;pwned\x07\x1b[2Jx";
  EXPECT_EQ(Submit({{"name", name}, {"command", {"true"}}}).first, 400);
  EXPECT_EQ(Submit({{"name",
                     "\xc2\x9b"
                     "2J"},
                    {"command", {"true"}}})
                .first,
            400);  // C1 CSI
  const int64_t id =
      ParsedId(Cli({"submit", "--parsable", "--name", "plain", "--", "sleep", "60"}));
  ASSERT_TRUE(WaitForState(id, "running"));
  json spec = Job(id)["spec"];
  Kill9();
  spec["name"] = name;
  Sql("UPDATE jobs SET spec = '" + spec.dump() + "' WHERE id = " + std::to_string(id));
  StartDaemon();
  ASSERT_TRUE(WaitForState(id, "failed"));
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"queue", "--all"},
        std::vector<std::string>{"show", std::to_string(id)}}) {
    SCOPED_TRACE(command.front());
    const RunResult r = Cli(command);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  }
  EXPECT_NE(Cli({"show", std::to_string(id)}).out.find("name: must not contain control bytes"),
            std::string::npos);
}

TEST_F(DaemonIntegrationTest, ServeGpusTakesOneNodeAsGpusByType) {
  const fs::path out = dir_ / "serve.out";
  pid_ = Spawn({DLSCHED_BINARY, "serve", "--listen", "127.0.0.1:0", "--gpus", "8xV100", "--workdir",
                (dir_ / "work").string(), "--db", (dir_ / "state.db").string()},
               out, dir_ / "serve.err");
  ASSERT_GT(pid_, 0);
  ASSERT_TRUE(Eventually([&] {
    const std::optional<std::string> url = ListeningUrl(out);
    if (url) url_ = *url;
    return url.has_value();
  })) << ReadTextFile(dir_ / "serve.err");
  const json nodes = json::parse(Cli({"nodes", "--json"}).out);
  ASSERT_EQ(nodes["nodes"].size(), 1u) << nodes.dump();
  EXPECT_EQ(nodes["nodes"][0]["gpus_total"], 8);

  // A miscased type is refused before the daemon starts.
  const RunResult miscased = Dlsched({"serve", "--listen", "127.0.0.1:0", "--gpus", "8xv100",
                                      "--db", (dir_ / "other.db").string()});
  EXPECT_EQ(miscased.code, 2);
  EXPECT_NE(miscased.err.find("GPU type 'v100' is spelt 'V100'"), std::string::npos)
      << miscased.err;
}

}  // namespace
}  // namespace dlsched::integration
