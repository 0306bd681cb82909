#include "daemon/job/job_request.h"

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
      {"negative cpus", R"({"command": ["a"], "cpus": -1})", "cpus"},
      {"too many cpus", R"({"command": ["a"], "cpus": 65537})", "cpus"},
      {"string host memory", R"({"command": ["a"], "host_memory_mib": "4g"})", "host_memory_mib"},
      {"too much host memory", R"({"command": ["a"], "host_memory_mib": 1073741825})",
       "host_memory_mib"},
      {"cpu job without cpus", R"({"command": ["a"], "gpus": 0, "host_memory_mib": 10})", "gpus"},
      {"cpu service", R"({"command": ["a"], "gpus": 0, "cpus": 2, "kind": "service"})", "kind"},
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

// A body with several bad fields gets the error of the one read first: the field groups in
// ParseFields' order (identity, command, resources, terms, kind, progress and key), fields in
// their order within a group. Clients see this message, so a reordering shows here.
TEST(JobRequestTest, TheFirstBadFieldReadIsTheOneReported) {
  struct Case {
    std::string name;
    std::string body;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"unknown field first", R"({"name": 1, "bogus": 1})", "bogus: unknown field"},
      {"identity before command", R"({"command": 1, "batch_size": -1})",
       "batch_size: must be at least 0, got -1"},
      {"command before resources", R"({"command": [], "gpus": 0})", "command: must not be empty"},
      {"env before resources", R"({"command": ["a"], "gpus": 0, "env": {"A": 1}})",
       "env: value of A must be a string"},
      {"resources before terms", R"({"command": ["a"], "priority": "x", "memory_mib": -1})",
       "memory_mib: must be at least 0, got -1"},
      {"terms before framework", R"({"command": ["a"], "framework": "jax", "deadline": "x"})",
       "deadline: 'x' is not an RFC 3339 time (2024-05-01T12:00:00Z) or Unix seconds"},
      {"kind before iterations", R"({"command": ["a"], "iterations": 0, "kind": "batch"})",
       "kind: must be training or service, got 'batch'"},
      {"iterations before the key", R"({"command": ["a"], "idempotency_key": 1, "iterations": 0})",
       "iterations: must be a positive number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<JobRequest> r = ParseJobRequest(c.body, "u");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), c.message);
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

TEST(JobRequestTest, HostResourcesAndCpuJobsRoundTrip) {
  Result<JobRequest> r = ParseJobRequest(
      R"({"script": "make", "gpus": 0, "cpus": 6, "host_memory_mib": 4096})", "ann");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->spec.num_gpus, 0);
  EXPECT_EQ(r->spec.cpus, 6);
  EXPECT_EQ(r->spec.host_memory_mib, 4096);
  const nlohmann::json doc = JobRequestToJson(*r);
  EXPECT_EQ(doc["gpus"], 0);
  EXPECT_EQ(doc["cpus"], 6);
  EXPECT_EQ(doc["host_memory_mib"], 4096);
  Result<JobRequest> again = ParseJobRequestJson(doc, "ann");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(JobRequestToJson(*again), doc);
  // Unstated: no key, as stored before these fields existed.
  Result<JobRequest> plain = ParseJobRequest(R"({"script": "t"})", "ann");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(JobRequestToJson(*plain).contains("cpus"));
  EXPECT_FALSE(JobRequestToJson(*plain).contains("host_memory_mib"));
}

TEST(JobRequestTest, ChecksTheNodesCanEverHoldItsCpusAndMemory) {
  Cluster cluster = testing::MakeCluster("2x4xV100");
  Cluster stated;
  for (const NodeSpec& node : cluster.nodes()) {
    NodeSpec copy = node;
    copy.cpus = 16;
    copy.memory_mib = 65536;
    copy.gpus.clear();
    for (int g = 0; g < 4; ++g) copy.gpus.push_back({stated.InternGpuType("V100"), 16384, 0});
    copy.rack = stated.InternRack(cluster.rack_name(node.rack));
    ASSERT_TRUE(stated.AddNode(copy).ok());
  }
  stated.set_host_defaults({.cpus_per_gpu = 5, .memory_mib_per_gpu = 0});
  struct Case {
    std::string name;
    std::string body;
    std::string message;  // empty: fits
    bool multi_node = false;
  };
  const std::vector<Case> cases = {
      {"fits", R"({"command": ["a"], "gpus": 2, "cpus": 16, "host_memory_mib": 65536})", ""},
      {"too many cpus", R"({"command": ["a"], "gpus": 0, "cpus": 17})",
       "cpus: asks for 17 CPUs; the largest node has 16"},
      {"the default per GPU", R"({"command": ["a"], "gpus": 4})",
       "cpus: asks for 20 CPUs (the cluster's default per GPU); the largest node has 16"},
      {"across nodes", R"({"command": ["a"], "gpus": 4})", "", true},
      {"too much memory", R"({"command": ["a"], "cpus": 1, "host_memory_mib": 70000})",
       "host_memory_mib: asks for 70000 MiB; the largest node has 65536 MiB"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<JobRequest> r = ParseJobRequest(c.body, "u");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Status fits = CheckFitsCluster(*r, stated, c.multi_node);
    EXPECT_EQ(fits.ok() ? "" : fits.message(), c.message);
  }
  // Nodes that state nothing never limit.
  Result<JobRequest> big = ParseJobRequest(R"({"command": ["a"], "gpus": 0, "cpus": 999})", "u");
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(CheckFitsCluster(*big, cluster).ok());
}

TEST(JobRequestTest, MemorySizes) {
  EXPECT_EQ(ParseMemoryMib("512m").value(), 512);
  EXPECT_EQ(ParseMemoryMib("64g").value(), 65536);
  EXPECT_EQ(ParseMemoryMib("64G").value(), 65536);
  EXPECT_EQ(ParseMemoryMib("1t").value(), 1 << 20);
  EXPECT_EQ(ParseMemoryMib("2048").value(), 2048);
  EXPECT_EQ(ParseMemoryMib("0").value(), 0);
  EXPECT_EQ(ParseMemoryMib("1024t").value(), kMaxRequestHostMemoryMib);
  for (const char* bad : {"", "g", "-1g", "1.5g", "64k", "64gb", "1025t", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseMemoryMib(bad).ok());
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

// Whatever is accepted must come back from the store: the canonical form parses again (as the
// daemon's restore reads it) to the same request, for requests at the edges of every range.
TEST(JobRequestTest, AcceptedRequestsReparseToTheSameRequest) {
  const std::string long_name(kMaxNameBytes, 'n');
  const std::vector<std::string> bodies = {
      R"({"command": ["true"]})",
      R"({"name": "", "script": "echo hi\n\tthere", "user": "ann", "queue": "q", "model": "m",
          "batch_size": 1073741824, "workdir": "/tmp", "env": {"A": "1", "B_2": "x=y\n"},
          "gpus": 8, "gpu_type": "V100", "memory_mib": 1099511627776, "priority": -1000000,
          "qos": "strict", "framework": "horovod", "iterations": 1e-300})",
      R"({"command": ["a"], "deadline": "1970-01-01T00:00:00Z", "priority": 1000000})",
      R"({"command": ["a"], "deadline": "9999-12-31T23:59:59.999999Z"})",
      R"({"command": ["a"], "deadline": "9999-12-31T23:59:59.9999999Z"})",
      R"({"command": ["a"], "deadline": "2016-12-31T23:59:60Z"})",
      R"({"command": ["a"], "deadline": "2024-02-29T01:00:00+01:00"})",
      R"({"command": ["a"], "deadline": "1970-01-01T01:00:00.000001+01:00"})",
      R"({"command": ["a"], "deadline": "2024-05-01T12:00:00-23:59"})",
      R"({"command": ["a"], "deadline": 0})",
      R"({"command": ["a"], "deadline": 1700000000.1234567})",
      R"({"command": ["a"], "deadline": 253402300799.5})",
      R"({"command": ["a"], "deadline": "1714564800.5"})",
      R"({"command": ["a"], "max_run_time_s": 0.000001})",
      R"({"command": ["a"], "max_run_time_s": 0.0000014, "runtime_estimate_s": 0.0000015})",
      R"({"command": ["a"], "max_run_time_s": 1e9, "runtime_estimate_s": 0.3})",
      R"({"command": ["a"], "iterations": 1e300})",
      R"({"command": ["a"], "gpus": 2.0, "priority": 5.0})",
      R"({"command": ["a"], "selector": {"nvlink": "true"}, "prefer": {"rack": "r1"}})",
      R"({"script": "s", "gpus": 4, "kind": "service", "service_load": "0:1;28800:4"})",
      R"({"command": ["a"], "idempotency_key": "retry-7 ~!"})",
      R"({"command": ["a"], "name": "r\u00e9sum\u00e9 \u6a21\u578b"})",
      R"({"command": ["a"], "name": ")" + long_name + R"("})",
  };
  for (const std::string& body : bodies) {
    SCOPED_TRACE(body.substr(0, 200));
    Result<JobRequest> r = ParseJobRequest(body, "someone");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const nlohmann::json stored = JobRequestToJson(*r);
    Result<JobRequest> again = ParseJobRequestJson(nlohmann::json::parse(stored.dump()), "other");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(JobRequestToJson(*again), stored);
    EXPECT_EQ(again->spec.name, r->spec.name);
    EXPECT_EQ(again->spec.user, r->spec.user);
    EXPECT_EQ(again->spec.deadline, r->spec.deadline);
    EXPECT_EQ(again->spec.runtime_estimate, r->spec.runtime_estimate);
    EXPECT_EQ(again->spec.priority, r->spec.priority);
    EXPECT_EQ(again->max_run_time, r->max_run_time);
    EXPECT_EQ(again->spec.iterations, r->spec.iterations);
    EXPECT_EQ(again->total_iterations, r->total_iterations);
    EXPECT_EQ(again->command, r->command);
    EXPECT_EQ(again->env, r->env);
    EXPECT_EQ(again->idempotency_key, r->idempotency_key);
  }
}

TEST(JobRequestTest, RejectsWhatCouldNotBeStoredRunOrRestored) {
  struct Case {
    std::string name;
    std::string body;
    std::string field;
  };
  const std::string big_name(kMaxNameBytes + 1, 'n');
  std::string many_args = R"({"command": [)";
  for (size_t i = 0; i <= kMaxArgs; ++i) many_args += i == 0 ? R"("a")" : R"(,"a")";
  many_args += "]}";
  std::string many_env = R"({"command": ["a"], "env": {)";
  for (size_t i = 0; i <= kMaxEnvVars; ++i) {
    many_env += (i == 0 ? R"("V)" : R"(,"V)") + std::to_string(i) + R"(": "")";
  }
  many_env += "}}";
  std::string deep = R"({"command": ["a"], "env": )";
  for (int i = 0; i < kMaxJsonDepth; ++i) deep += "[";
  for (int i = 0; i < kMaxJsonDepth; ++i) deep += "]";
  deep += "}";
  const std::vector<Case> cases = {
      // Stored, they would stop the next start (year 10000, beyond int64, year 0, 0 us).
      {"leap second into year 10000", R"({"command": ["a"], "deadline": "9999-12-31T23:59:60Z"})",
       "deadline"},
      {"huge seconds as text", R"({"command": ["a"], "deadline": "1e300"})", "deadline"},
      {"huge seconds", R"({"command": ["a"], "deadline": 1e300})", "deadline"},
      {"year 0", R"({"command": ["a"], "deadline": "0000-01-01T00:00:00+01:00"})", "deadline"},
      {"before 1970", R"({"command": ["a"], "deadline": "1969-12-31T23:59:59Z"})", "deadline"},
      {"before 1970 by its offset",
       R"({"command": ["a"], "deadline": "1970-01-01T00:30:00+01:00"})", "deadline"},
      {"negative seconds", R"({"command": ["a"], "deadline": -1})", "deadline"},
      {"past 9999", R"({"command": ["a"], "deadline": 253402300800})", "deadline"},
      {"nanosecond limit", R"({"command": ["a"], "max_run_time_s": 1e-9})", "max_run_time_s"},
      {"sub-microsecond estimate", R"({"command": ["a"], "runtime_estimate_s": 4e-7})",
       "runtime_estimate_s"},
      // Impossible calendar dates and times.
      {"February 31", R"({"command": ["a"], "deadline": "2024-02-31T00:00:00Z"})", "deadline"},
      {"February 29 of 2023", R"({"command": ["a"], "deadline": "2023-02-29T00:00:00Z"})",
       "deadline"},
      {"April 31", R"({"command": ["a"], "deadline": "2024-04-31T00:00:00Z"})", "deadline"},
      {"second 60 mid-day", R"({"command": ["a"], "deadline": "2024-05-01T12:00:60Z"})",
       "deadline"},
      {"offset 24h", R"({"command": ["a"], "deadline": "2024-05-01T12:00:00+24:00"})", "deadline"},
      {"no fraction digits", R"({"command": ["a"], "deadline": "2024-05-01T12:00:00.Z"})",
       "deadline"},
      // Integers beyond int64 (kept by the parser as unsigned) and beyond the field's range.
      {"priority 2^64-1", R"({"command": ["a"], "priority": 18446744073709551615})", "priority"},
      {"priority 2^63", R"({"command": ["a"], "priority": 9223372036854775808})", "priority"},
      {"gpus 2^64-1", R"({"command": ["a"], "gpus": 18446744073709551615})", "gpus"},
      {"memory 2^63", R"({"command": ["a"], "memory_mib": 9223372036854775808})", "memory_mib"},
      {"batch size 2^64-1", R"({"command": ["a"], "batch_size": 18446744073709551615})",
       "batch_size"},
      // Unbounded strings and bytes that make no sense in them.
      {"long name", R"({"command": ["a"], "name": ")" + big_name + R"("})", "name"},
      {"NUL in name", R"({"command": ["a"], "name": "a\u0000b"})", "name"},
      {"newline in name", R"({"command": ["a"], "name": "a\nb"})", "name"},
      {"NUL in user", R"({"command": ["a"], "user": "ann\u0000"})", "user"},
      {"DEL in user", R"({"command": ["a"], "user": "ann\u007f"})", "user"},
      {"long user",
       R"({"command": ["a"], "user": ")" + std::string(kMaxIdentBytes + 1, 'u') + R"("})", "user"},
      {"control in queue", R"({"command": ["a"], "queue": "q\t"})", "queue"},
      {"control in model", R"({"command": ["a"], "model": "m\r"})", "model"},
      {"control in gpu type", R"({"command": ["a"], "gpu_type": "V100\u0001"})", "gpu_type"},
      {"long workdir",
       R"({"command": ["a"], "workdir": "/)" + std::string(kMaxWorkdirBytes, 'w') + R"("})",
       "workdir"},
      {"newline in workdir", R"({"command": ["a"], "workdir": "/tmp\n"})", "workdir"},
      {"NUL in an argument", R"({"command": ["a", "b\u0000"]})", "command"},
      {"NUL in the script", R"({"script": "echo\u0000"})", "script"},
      {"too many arguments", many_args, "command"},
      {"too many env variables", many_env, "env"},
      {"long env name",
       R"({"command": ["a"], "env": {")" + std::string(kMaxIdentBytes + 1, 'E') + R"(": ""}})",
       "env"},
      {"control in a label", R"({"command": ["a"], "selector": {"k": "v\n"}})", "selector.k"},
      {"long label key",
       R"({"command": ["a"], "prefer": {")" + std::string(kMaxLabelBytes + 1, 'k') + R"(": "v"}})",
       "prefer"},
      {"empty idempotency key", R"({"command": ["a"], "idempotency_key": ""})", "idempotency_key"},
      {"control in idempotency key", R"({"command": ["a"], "idempotency_key": "a\tb"})",
       "idempotency_key"},
      {"long idempotency key",
       R"({"command": ["a"], "idempotency_key": ")" +
           std::string(kMaxIdempotencyKeyBytes + 1, 'k') + R"("})",
       "idempotency_key"},
      // Duplicate keys (the parser alone keeps the last) and malformed bodies.
      {"duplicate priority", R"({"command": ["a"], "priority": 1, "priority": 9})", "priority"},
      {"duplicate env variable", R"({"command": ["a"], "env": {"A": "1", "A": "2"}})", "env.A"},
      {"nested too deep", deep, "body"},
      {"invalid UTF-8", "{\"command\": [\"a\"], \"name\": \"\xff\xfe\"}", "body"},
      {"truncated UTF-8", "{\"command\": [\"\xe6\x97\"]}", "body"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<JobRequest> r = ParseJobRequest(c.body, "u");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(c.field + ":", 0), 0u) << r.status().message();
  }
}

bool PrintableAscii(const std::string& text) {
  return std::ranges::all_of(text, [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Error messages reach a JSON body, which cannot carry invalid UTF-8: they never echo raw bytes,
// and they stay short however long the offending value is.
TEST(JobRequestTest, ErrorsNeverEchoRawBytes) {
  const std::vector<std::string> bodies = {
      "{\"command\": [\"a\"], \"name\": \"\xff\"}",
      "{\"\xc3\x28\": 1}",
      "{\"command\": [\"a\"], \"" + std::string(100000, 'k') + "\": 1}",
      "{\"command\": [\"a\"], \"framework\": \"\\u00e9\\u0001" + std::string(100000, 'j') + "\"}",
      "{\"command\": [\"a\"], \"deadline\": \"\\u0000" + std::string(1000, '9') + "\"}",
      "\x01\x02\x03",
  };
  for (const std::string& body : bodies) {
    SCOPED_TRACE(Escaped(body, 80));
    Result<JobRequest> r = ParseJobRequest(body, "u");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(PrintableAscii(r.status().message())) << Escaped(r.status().message(), 400);
    EXPECT_LT(r.status().message().size(), 1200u);
    EXPECT_NO_THROW(nlohmann::json(r.status().message()).dump());
  }
  // A document built in code holds whatever bytes it was given.
  nlohmann::json doc = {{"command", {"a"}}, {"kind", "\xff\xfe"}};
  Result<JobRequest> r = ParseJobRequestJson(doc, "u");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(PrintableAscii(r.status().message())) << Escaped(r.status().message(), 400);
  EXPECT_EQ(Escaped("a\xff\n", 100), "a\\xFF\\x0A");
  EXPECT_EQ(Escaped("abcdef", 3), "abc...");
}

// ParseJobRequest takes arbitrary bytes: every prefix of a valid body, and the body with each
// byte replaced by a few others, parse or fail without throwing.
TEST(JobRequestTest, ArbitraryBytesNeverThrow) {
  const std::string body =
      R"({"name": "x", "command": ["a", "b"], "env": {"A": "1"}, "deadline": "2024-02-29T00:00:00Z",)"
      R"( "priority": 5, "max_run_time_s": 1.5, "selector": {"k": "v"}, "iterations": 10})";
  ASSERT_TRUE(ParseJobRequest(body, "u").ok());
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_NO_THROW((void)ParseJobRequest(body.substr(0, n), "u"));
    for (char c : {'\0', '\xff', '"', '{', '[', '9', '-', '\\'}) {
      std::string mutated = body;
      mutated[n] = c;
      Result<JobRequest> r(InvalidArgument("unset"));
      EXPECT_NO_THROW(r = ParseJobRequest(mutated, "u"));
      if (!r.ok()) EXPECT_TRUE(PrintableAscii(r.status().message()));
    }
  }
}

TEST(JobRequestTest, IdempotencyKeys) {
  EXPECT_TRUE(ValidateIdempotencyKey("a").ok());
  EXPECT_TRUE(ValidateIdempotencyKey(std::string(kMaxIdempotencyKeyBytes, '~')).ok());
  for (const std::string& bad :
       {std::string(), std::string(kMaxIdempotencyKeyBytes + 1, 'k'), std::string("a\nb"),
        std::string("caf\xc3\xa9"), std::string("a\0b", 3)}) {
    const Status s = ValidateIdempotencyKey(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().rfind("Idempotency-Key:", 0), 0u) << s.message();
  }
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
      {"2016-12-31T23:59:60Z", 1483228800000000},  // a leap second: the next second
      {"2024-02-29T00:00:00Z", 1709164800000000},
      {"9999-12-31T23:59:59.999999Z", 253402300799999999},
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
