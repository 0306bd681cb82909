// End-to-end tests of what `dlsched serve` accepts: bounded, validated, and always restorable
// (harness: daemon_harness.h).

#include <gtest/gtest.h>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

class InputHardeningTest : public DaemonIntegrationTest {
 protected:
  // POSTs raw bytes (Submit dumps a json, which cannot hold invalid UTF-8 or duplicate keys).
  std::pair<int, json> PostRaw(const std::string& body, const httplib::Headers& headers = {}) {
    auto res = client_->Post("/v1/jobs", headers, body, "application/json");
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  std::pair<int, json> SubmitWithKey(const json& job, const std::string& key) {
    return PostRaw(job.dump(), {{"Idempotency-Key", key}});
  }

  // The error message of a reply, or "" when it has none.
  static std::string Message(const json& reply) {
    if (!reply.is_object() || !reply.contains("error")) return "";
    return reply["error"].value("message", "");
  }
};

// A stored row that no longer parses (edited, or written by a build that accepted more) fails
// only its job: the daemon starts, restores the others, and says why on stderr and in the job.
TEST_F(InputHardeningTest, AnUnrestorableRowFailsOnlyItsJob) {
  StartDaemon();
  auto [s0, done] = Submit(Script("true"));
  ASSERT_EQ(s0, 201);
  ASSERT_TRUE(WaitForState(done["id"], "succeeded"));
  auto [s1, running] = Submit(Script("sleep 60", 4));
  ASSERT_EQ(s1, 201);
  ASSERT_TRUE(WaitForState(running["id"], "running"));
  auto [s2, bad_spec] = Submit(Script("true"));
  auto [s3, bad_state] = Submit(Script("true"));
  ASSERT_EQ(s2, 201);
  ASSERT_EQ(s3, 201);
  ASSERT_EQ(Job(bad_spec["id"])["state"], "queued");
  ASSERT_EQ(StopDaemon(), 0);

  // What an earlier build stored for such a deadline, and a state no build writes.
  Sql("UPDATE jobs SET spec = '{\"command\": [\"true\"], \"user\": \"anonymous\", "
      "\"deadline\": \"10000-01-01T00:00:00Z\"}' WHERE id = " +
      std::to_string(bad_spec["id"].get<int>()));
  Sql("UPDATE jobs SET state = 'exploded' WHERE id = " +
      std::to_string(bad_state["id"].get<int>()));
  StartDaemon();
  const std::string err = ReadTextFile(dir_ / "daemon.err");
  EXPECT_NE(err.find("job " + std::to_string(bad_spec["id"].get<int>()) + " cannot be restored"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("job " + std::to_string(bad_state["id"].get<int>()) + " cannot be restored"),
            std::string::npos)
      << err;

  EXPECT_EQ(Job(done["id"])["state"], "succeeded");
  EXPECT_EQ(Job(running["id"])["state"], "running");  // re-adopted
  const json spec_job = Job(bad_spec["id"]);
  EXPECT_EQ(spec_job["state"], "failed");
  EXPECT_NE(spec_job.value("reason", "").find("cannot be restored"), std::string::npos)
      << spec_job.dump();
  EXPECT_NE(spec_job.value("reason", "").find("deadline"), std::string::npos) << spec_job.dump();
  const json state_job = Job(bad_state["id"]);
  EXPECT_EQ(state_job["state"], "failed");
  EXPECT_NE(state_job.value("reason", "").find("exploded"), std::string::npos) << state_job.dump();

  // The daemon works on: a new job runs, and the next start is clean for the failed ones.
  auto [s4, next] = Submit(Script("true"));
  ASSERT_EQ(s4, 201);
  EXPECT_EQ(next["id"], bad_state["id"].get<int>() + 1);
  EXPECT_TRUE(Delete("/v1/jobs/" + std::to_string(running["id"].get<int>())).first == 202);
  EXPECT_TRUE(WaitForState(next["id"], "succeeded"));
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon();
  EXPECT_EQ(Job(bad_spec["id"])["state"], "failed");
  EXPECT_EQ(Job(bad_state["id"])["state"], "failed");
  EXPECT_EQ(Job(next["id"])["state"], "succeeded");
}

// The inputs that used to be stored and then stop every later start are refused, naming the
// field; the extremes that are accepted come back from a restart as they were.
TEST_F(InputHardeningTest, WhatIsAcceptedSurvivesARestart) {
  StartDaemon();
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"command", {"true"}}, {"deadline", "9999-12-31T23:59:60Z"}}, "deadline"},
      {{{"command", {"true"}}, {"deadline", "1e300"}}, "deadline"},
      {{{"command", {"true"}}, {"deadline", "0000-01-01T00:00:00+01:00"}}, "deadline"},
      {{{"command", {"true"}}, {"max_run_time_s", 1e-9}}, "max_run_time_s"},
  };
  for (const auto& [body, field] : refused) {
    SCOPED_TRACE(body.dump());
    auto [status, reply] = Submit(body);
    EXPECT_EQ(status, 400);
    EXPECT_EQ(Message(reply).rfind(field + ":", 0), 0u) << reply.dump();
  }
  const std::vector<json> accepted = {
      {{"command", {"sleep", "60"}}, {"deadline", "9999-12-31T23:59:59.999999Z"}, {"gpus", 4}},
      {{"command", {"true"}}, {"deadline", "2016-12-31T23:59:60Z"}},
      {{"command", {"true"}}, {"deadline", 0}, {"runtime_estimate_s", 1e-6}},
      {{"command", {"true"}}, {"max_run_time_s", 1e-6}, {"priority", -1000000}},
  };
  std::vector<json> specs;
  for (const json& body : accepted) {
    auto [status, reply] = Submit(body);
    ASSERT_EQ(status, 201) << body.dump() << " -> " << reply.dump();
    specs.push_back(reply["spec"]);
  }
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon();
  EXPECT_EQ(ReadTextFile(dir_ / "daemon.err").find("cannot be restored"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  for (size_t i = 0; i < specs.size(); ++i)
    EXPECT_EQ(Job(static_cast<int64_t>(i))["spec"], specs[i]);
  EXPECT_TRUE(Delete("/v1/jobs/0").first == 202);
}

TEST_F(InputHardeningTest, MalformedBodiesGet400NamingTheField) {
  StartDaemon();
  struct Case {
    std::string name;
    std::string body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"invalid UTF-8", "{\"command\": [\"true\"], \"name\": \"\xff\xfe\"}", "body"},
      {"invalid UTF-8 in a key", "{\"\xc3\x28\": 1, \"command\": [\"true\"]}", "body"},
      {"duplicate key", R"({"command": ["true"], "gpus": 1, "gpus": 4})", "gpus"},
      {"duplicate env variable", R"({"command": ["true"], "env": {"A": "1", "A": "2"}})", "env.A"},
      {"priority 2^64-1", R"({"command": ["true"], "priority": 18446744073709551615})", "priority"},
      {"February 31", R"({"command": ["true"], "deadline": "2024-02-31T00:00:00Z"})", "deadline"},
      {"NUL in name", R"({"command": ["true"], "name": "a\u0000b"})", "name"},
      {"NUL in user", R"({"command": ["true"], "user": "a\u0000b"})", "user"},
      {"200 KiB name",
       R"({"command": ["true"], "name": ")" + std::string(200 * 1024, 'n') + R"("})", "name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [status, reply] = PostRaw(c.body);
    EXPECT_EQ(status, 400) << reply.dump();
    EXPECT_EQ(Message(reply).rfind(c.field + ":", 0), 0u) << reply.dump();
  }
  EXPECT_EQ(StoredJobs(), 0);
}

TEST_F(InputHardeningTest, IdempotencyKeyMakesARetryReturnTheSameJob) {
  StartDaemon();
  const json job = Script("sleep 60");
  auto [s1, first] = SubmitWithKey(job, "submit-1");
  ASSERT_EQ(s1, 201) << first.dump();
  const int id = first["id"];
  auto [s2, again] = SubmitWithKey(job, "submit-1");
  EXPECT_EQ(s2, 200) << again.dump();
  EXPECT_EQ(again["id"], id);
  // The same key for something else is a conflict; another user's key is theirs alone.
  json other = job;
  other["gpus"] = 2;
  auto [s3, conflict] = SubmitWithKey(other, "submit-1");
  EXPECT_EQ(s3, 409) << conflict.dump();
  EXPECT_EQ(Message(conflict).rfind("Idempotency-Key:", 0), 0u) << conflict.dump();
  json bob = job;
  bob["user"] = "bob";
  auto [s4, bobs] = SubmitWithKey(bob, "submit-1");
  EXPECT_EQ(s4, 201) << bobs.dump();
  EXPECT_NE(bobs["id"], id);
  // Keys are bounded, printable, and given once.
  auto [s5, bad] = SubmitWithKey(job, std::string(300, 'k'));
  EXPECT_EQ(s5, 400);
  EXPECT_EQ(Message(bad).rfind("Idempotency-Key:", 0), 0u) << bad.dump();
  auto [s6, twice] = PostRaw(job.dump(), {{"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}});
  EXPECT_EQ(s6, 400) << twice.dump();
  EXPECT_EQ(StoredJobs(), 2);

  // The key is stored with the job: a retry after a restart still finds it.
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon();
  auto [s7, after] = SubmitWithKey(job, "submit-1");
  EXPECT_EQ(s7, 200) << after.dump();
  EXPECT_EQ(after["id"], id);
  EXPECT_EQ(after["spec"]["idempotency_key"], "submit-1");
  EXPECT_EQ(StoredJobs(), 2);
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(id)).first, 202);
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(bobs["id"].get<int>())).first, 202);
}

}  // namespace
}  // namespace dlsched::integration
