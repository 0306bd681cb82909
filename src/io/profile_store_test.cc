#include "io/profile_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dlsched/perf/throughput_model.h"
#include "support/builders.h"

namespace dlsched {
namespace {

ProfileStore SampleStore() {
  ProfileStore store;
  store.about = {{"cluster", "2x4xV100"}, {"seed", "7"}};
  store.profiles = {
      {"gavel", "ResNet-50", 64, "V100", 4, true, 12.062151939316287, {}},
      {"sia", "cifar10", 32, "T4", 8, false, 1e-05, {}},
      {"gavel", "A3C", 0, "V100", 1, true, 0.0, PerfJobType{"LM \"quoted\"", 20}},
  };
  return store;
}

std::string ToJson(const ProfileStore& store) {
  std::ostringstream out;
  WriteProfileStore(store, out);
  return out.str();
}

TEST(ProfileStoreTest, RoundTripsExactly) {
  const ProfileStore store = SampleStore();
  const std::string json = ToJson(store);
  Result<ProfileStore> parsed = ParseProfileStore(json, "store.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->about, store.about);
  ASSERT_EQ(parsed->profiles.size(), store.profiles.size());
  for (size_t i = 0; i < store.profiles.size(); ++i) {
    SCOPED_TRACE(i);
    const PerfProfile& a = parsed->profiles[i];
    const PerfProfile& b = store.profiles[i];
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.model, b.model);
    EXPECT_EQ(a.batch_size, b.batch_size);
    EXPECT_EQ(a.gpu_type, b.gpu_type);
    EXPECT_EQ(a.num_gpus, b.num_gpus);
    EXPECT_EQ(a.consolidated, b.consolidated);
    EXPECT_EQ(a.iters_per_s, b.iters_per_s);  // shortest round-trip form is exact
    EXPECT_EQ(a.colocated_with, b.colocated_with);
  }
  EXPECT_EQ(ToJson(*parsed), json);  // byte-identical
  EXPECT_NE(json.find("\n  {\"source\": \"sia\""), std::string::npos) << "one profile per line";
}

TEST(ProfileStoreTest, OptionalFieldsDefault) {
  Result<ProfileStore> parsed = ParseProfileStore(
      R"({"format": "dlsched-perf-profiles", "version": 1, "profiles": [
            {"source": "x", "model": "M", "gpu_type": "V100", "num_gpus": 1, "iters_per_s": 2}]})",
      "s.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->profiles.size(), 1u);
  EXPECT_EQ(parsed->profiles[0].batch_size, 0);
  EXPECT_TRUE(parsed->profiles[0].consolidated);
  EXPECT_FALSE(parsed->profiles[0].colocated_with.has_value());
  EXPECT_TRUE(parsed->about.empty());
}

TEST(ProfileStoreTest, RejectsBadStores) {
  const std::string head = R"({"format": "dlsched-perf-profiles", "version": 1, )";
  const std::string good =
      R"("source": "x", "model": "M", "gpu_type": "V100", "num_gpus": 2, "iters_per_s": 2)";
  struct Case {
    std::string name;
    std::string json;
    std::string want_in_message;
  };
  const std::vector<Case> cases = {
      {"not json", "{", "not valid JSON"},
      {"not object", "[]", "expected an object"},
      {"wrong format", R"({"format": "gavel", "version": 1, "profiles": []})", "\"format\""},
      {"wrong version", R"({"format": "dlsched-perf-profiles", "version": 2, "profiles": []})",
       "version"},
      {"unknown top key", head + R"("profiles": [], "extra": 1})", "unknown key \"extra\""},
      {"no profiles", head + R"("about": {}})", "\"profiles\" must be an array"},
      {"about not strings", head + R"("about": {"seed": 1}, "profiles": []})",
       "about \"seed\" must be a string"},
      {"profile not object", head + R"("profiles": [3]})", "profile 0: expected an object"},
      {"unknown profile key", head + R"("profiles": [{)" + good + R"(, "speed": 1}]})",
       "profile 0: unknown key \"speed\""},
      {"missing model", head + R"("profiles": [{"source": "x", "gpu_type": "V100",
            "num_gpus": 1, "iters_per_s": 1}]})",
       "\"model\" must be a string"},
      {"fractional gpus", head + R"("profiles": [{"source": "x", "model": "M", "gpu_type": "V",
            "num_gpus": 1.5, "iters_per_s": 1}]})",
       "\"num_gpus\" must be an integer"},
      {"rate not number", head + R"("profiles": [{"source": "x", "model": "M", "gpu_type": "V",
            "num_gpus": 1, "iters_per_s": "fast"}]})",
       "\"iters_per_s\" must be a number"},
      {"consolidated not bool", head + R"("profiles": [{)" + good + R"(, "consolidated": 1}]})",
       "true or false"},
      {"invalid profile", head + R"("profiles": [{)" + good + R"(}, {"source": "x", "model": "M",
            "gpu_type": "V", "num_gpus": 0, "iters_per_s": 1}]})",
       "profile 1: num_gpus"},
      {"bad partner", head + R"("profiles": [{)" + good + R"(, "colocated_with": {"b": 1}}]})",
       "colocated_with: unknown key \"b\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ProfileStore> parsed = ParseProfileStore(c.json, "s.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("s.json"), std::string::npos);
    EXPECT_NE(parsed.status().message().find(c.want_in_message), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ProfileStoreTest, LoadsFiles) {
  const std::string path = ::testing::TempDir() + "/profile_store_test.json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << ToJson(SampleStore());
  Result<ProfileStore> loaded = LoadProfileStore(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->profiles.size(), 3u);
  std::filesystem::remove(path);
  EXPECT_EQ(LoadProfileStore(path).status().code(), StatusCode::kNotFound);
}

TEST(ProfileStoreTest, FitsAPredictorWithTheBuiltInFallback) {
  const std::string path = ::testing::TempDir() + "/profile_store_fit_test.json";
  ProfileStore store;
  store.profiles = {
      {"test", "m", 8, "V100", 1, true, 10, {}},
      {"test", "m", 8, "V100", 2, true, 18, {}},
  };
  std::ofstream(path, std::ios::binary | std::ios::trunc) << ToJson(store);
  Result<PerfPredictor> predictor = FitProfileStore(path);
  ASSERT_TRUE(predictor.ok()) << predictor.status().ToString();
  EXPECT_EQ(predictor->Predict("m", 8, {"V100", 2, true}), 18);

  // A job the profiles do not know runs at the built-in model's speed.
  const Cluster cluster = testing::MakeCluster("1x2xV100");
  JobSpec unknown = testing::MakeJob(1).Spec();
  unknown.model = "other";
  Placement placement;
  placement.parts.push_back(NodeGpus{NodeId(0), 0b1});
  EXPECT_EQ(predictor->ItersPerSecond(unknown, cluster, placement),
            SimpleThroughputModel().ItersPerSecond(unknown, cluster, placement));

  // Only co-location records: nothing to fit, and the error names the file.
  store.profiles = {{"test", "m", 8, "V100", 1, true, 5, PerfJobType{"m", 8}}};
  std::ofstream(path, std::ios::binary | std::ios::trunc) << ToJson(store);
  const Result<PerfPredictor> empty = FitProfileStore(path);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find(path), std::string::npos) << empty.status().message();
  std::filesystem::remove(path);
  EXPECT_EQ(FitProfileStore(path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dlsched
