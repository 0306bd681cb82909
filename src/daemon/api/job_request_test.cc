#include "daemon/api/job_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

TEST(JobRequestTest, ParsesEveryField) {
  Result<JobRequest> r = ParseJobRequest(R"({
      "name": "resnet", "user": "ann", "queue": "vision", "model": "ResNet-50",
      "batch_size": 64, "command": ["python", "train.py"], "workdir": "/tmp",
      "env": {"A": "1"}, "gpus": 2, "gpu_type": "V100", "memory_mib": 1024, "priority": 5,
      "deadline": "2024-05-01T12:00:00Z", "qos": "strict", "max_run_time_s": 600,
      "runtime_estimate_s": 300, "framework": "pytorch", "iterations": 1000})",
                                         "nobody");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->spec.name, "resnet");
  EXPECT_EQ(r->spec.user, "ann");
  EXPECT_EQ(r->spec.num_gpus, 2);
  EXPECT_EQ(r->spec.gpu_type, "V100");
  EXPECT_EQ(r->spec.priority, 5);
  EXPECT_EQ(r->spec.qos, QosClass::kStrict);
  EXPECT_EQ(*r->spec.deadline, AtSeconds(1714564800));
  EXPECT_EQ(*r->spec.runtime_estimate, Seconds(300));
  EXPECT_DOUBLE_EQ(r->spec.iterations, 300);
  EXPECT_EQ(*r->max_run_time, Seconds(600));
  EXPECT_EQ(r->framework, Framework::kPyTorch);
  EXPECT_EQ(r->command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(r->env.at("A"), "1");
  EXPECT_DOUBLE_EQ(r->total_iterations, 1000);
}

TEST(JobRequestTest, DefaultsAndScripts) {
  Result<JobRequest> r = ParseJobRequest(R"({"script": "echo hi"})", "bob");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->spec.user, "bob");
  EXPECT_EQ(r->spec.num_gpus, 1);
  EXPECT_EQ(r->command, (std::vector<std::string>{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(r->framework, Framework::kCustom);
  EXPECT_FALSE(r->max_run_time.has_value());
  EXPECT_DOUBLE_EQ(r->spec.iterations, ToSeconds(kDefaultRuntimeEstimate));
}

TEST(JobRequestTest, RejectsBadInputNamingTheField) {
  struct Case {
    std::string name;
    std::string body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"zero gpus", R"({"command": ["true"], "gpus": 0})", "gpus"},
      {"negative gpus", R"({"command": ["true"], "gpus": -2})", "gpus"},
      {"fractional gpus", R"({"command": ["true"], "gpus": 1.5})", "gpus"},
      {"string gpus", R"({"command": ["true"], "gpus": "2"})", "gpus"},
      {"no command", R"({"gpus": 1})", "command"},
      {"empty command", R"({"command": []})", "command"},
      {"empty program", R"({"command": [""]})", "command"},
      {"non-string arg", R"({"command": ["a", 1]})", "command"},
      {"both", R"({"command": ["a"], "script": "b"})", "command"},
      {"blank script", R"({"script": "  \n"})", "script"},
      {"relative workdir", R"({"command": ["a"], "workdir": "rel"})", "workdir"},
      {"bad env name", R"({"command": ["a"], "env": {"1A": "x"}})", "env"},
      {"bad env value", R"({"command": ["a"], "env": {"A": 1}})", "env"},
      {"unknown field", R"({"command": ["a"], "gpu": 2})", "gpu"},
      {"bad qos", R"({"command": ["a"], "qos": "gold"})", "qos"},
      {"bad framework", R"({"command": ["a"], "framework": "jax"})", "framework"},
      {"bad deadline", R"({"command": ["a"], "deadline": "tomorrow"})", "deadline"},
      {"zero max run", R"({"command": ["a"], "max_run_time_s": 0})", "max_run_time_s"},
      {"malformed", R"({"command": ["a"],)", "body"},
      {"not an object", R"([1, 2])", "body"},
      {"empty user", R"({"command": ["a"], "user": ""})", "user"},
      {"bad kind", R"({"command": ["a"], "kind": "batch"})", "kind"},
      {"load without service", R"({"command": ["a"], "service_load": "0:1"})", "service_load"},
      {"malformed load", R"({"command": ["a"], "kind": "service", "service_load": "x"})",
       "service_load"},
      {"load above the gang",
       R"({"command": ["a"], "gpus": 2, "kind": "service", "service_load": "0:1;3600:3"})",
       "service_load"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<JobRequest> r = ParseJobRequest(c.body, "u");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(c.field + ":", 0), 0u) << r.status().message();
  }
}

TEST(JobRequestTest, OversizedCommandIsRefused) {
  const std::string big(2000, 'x');
  Result<JobRequest> r =
      ParseJobRequest(R"({"script": ")" + big + R"("})", "u", RequestLimits{1000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("command:", 0), 0u);
}

TEST(JobRequestTest, ChecksTheClusterCanEverRunIt) {
  const Cluster cluster = testing::MakeCluster("2x4xV100+1x8xA100");
  struct Case {
    std::string name;
    std::string body;
    std::string field;  // empty: fits
    bool multi_node = false;
  };
  const std::vector<Case> cases = {
      {"fits", R"({"command": ["a"], "gpus": 4})", ""},
      {"fits typed", R"({"command": ["a"], "gpus": 8, "gpu_type": "A100"})", ""},
      {"bigger than any node", R"({"command": ["a"], "gpus": 9})", "gpus"},
      {"bigger than typed nodes", R"({"command": ["a"], "gpus": 5, "gpu_type": "V100"})", "gpus"},
      {"unknown type", R"({"command": ["a"], "gpu_type": "K80"})", "gpu_type"},
      {"across nodes", R"({"command": ["a"], "gpus": 8, "gpu_type": "V100"})", "", true},
      {"more than the cluster has", R"({"command": ["a"], "gpus": 9, "gpu_type": "V100"})", "gpus",
       true},
      {"more than one type has", R"({"command": ["a"], "gpus": 9})", "gpus", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<JobRequest> r = ParseJobRequest(c.body, "u");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Status fits = CheckFitsCluster(*r, cluster, c.multi_node);
    if (c.field.empty()) {
      EXPECT_TRUE(fits.ok()) << fits.ToString();
    } else {
      ASSERT_FALSE(fits.ok());
      EXPECT_EQ(fits.message().rfind(c.field + ":", 0), 0u) << fits.message();
    }
  }
}

TEST(JobRequestTest, ServicesRoundTripWithTheirLoad) {
  Result<JobRequest> r = ParseJobRequest(
      R"({"script": "serve", "gpus": 4, "kind": "service", "service_load": "0:1;28800:4"})", "ann");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->spec.is_service());
  EXPECT_EQ(r->spec.service->NeedAt(AtSeconds(30000), 4), 4);
  const nlohmann::json doc = JobRequestToJson(*r);
  EXPECT_EQ(doc["kind"], "service");
  EXPECT_EQ(doc["service_load"], "0:1;28800:4");
  Result<JobRequest> again = ParseJobRequestJson(doc, "ann");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(JobRequestToJson(*again), doc);
  // Without a load, a service needs all its GPUs; training jobs carry no kind.
  Result<JobRequest> full = ParseJobRequest(R"({"script": "serve", "kind": "service"})", "ann");
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(JobRequestToJson(*full).contains("service_load"));
  Result<JobRequest> training = ParseJobRequest(R"({"script": "t", "kind": "training"})", "ann");
  ASSERT_TRUE(training.ok());
  EXPECT_FALSE(training->spec.is_service());
  EXPECT_FALSE(JobRequestToJson(*training).contains("kind"));
}

TEST(JobRequestTest, CanonicalJsonRoundTrips) {
  Result<JobRequest> r = ParseJobRequest(
      R"({"name": "x", "script": "echo", "gpus": 3, "max_run_time_s": 90,
          "deadline": 1700000000.5, "env": {"B": "2"}, "framework": "mpi", "priority": -3})",
      "ann");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json doc = JobRequestToJson(*r);
  Result<JobRequest> again = ParseJobRequestJson(doc, "someone-else");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(JobRequestToJson(*again), doc);
  EXPECT_EQ(again->spec.user, "ann");
  EXPECT_EQ(*again->spec.deadline, *r->spec.deadline);
}

TEST(JobRequestTest, TimesParseAndFormat) {
  struct Case {
    std::string text;
    int64_t want_us;
  };
  const std::vector<Case> cases = {
      {"1970-01-01T00:00:00Z", 0},
      {"2024-05-01T12:00:00Z", 1714564800000000},
      {"2024-05-01T14:00:00+02:00", 1714564800000000},
      {"2024-05-01T12:00:00.25Z", 1714564800250000},
      {"1714564800", 1714564800000000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Timestamp> t = ParseTime(c.text);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->time_since_epoch().count(), c.want_us);
  }
  EXPECT_EQ(FormatTime(Timestamp(Duration(1714564800250000))), "2024-05-01T12:00:00.250000Z");
  EXPECT_FALSE(ParseTime("2024-05-01 12:00").ok());
  EXPECT_FALSE(ParseTime("2024-05-01T12:00:00").ok());
}

}  // namespace
}  // namespace dlsched::daemon
