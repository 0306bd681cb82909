#include "io/sharing_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/profile.h"

namespace dlsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A profile file in a fresh directory, removed afterwards.
class TempProfile {
 public:
  explicit TempProfile(const std::string& content) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("dlsched_sharing_profile_" + std::string(info->name()) +
                                        "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "profile.json").string();
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempProfile() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  fs::path dir_;
  std::string path_;
};

std::string_view BuiltinText(std::string_view name) {
  for (const auto& [builtin, text] : BuiltinProfiles()) {
    if (builtin == name) return text;
  }
  return {};
}

TEST(SharingProfileTest, TheBuiltinSharingProfilesLoad) {
  struct Case {
    std::string name;
    SharingPolicyConfig::Packer packer;
    ShareMode mode;
    bool interference_aware;
    bool migrate;
    std::string base = "las";
  };
  const std::vector<Case> cases = {
      {"greedy-share", SharingPolicyConfig::Packer::kGreedy, ShareMode::kPacked, true, true},
      {"heuristic-share", SharingPolicyConfig::Packer::kHeuristic, ShareMode::kPacked, true, true},
      {"naive-share", SharingPolicyConfig::Packer::kGreedy, ShareMode::kPacked, false, false},
      {"gandiva", SharingPolicyConfig::Packer::kGreedy, ShareMode::kTimeSliced, true, true},
      {"srtf-share", SharingPolicyConfig::Packer::kHeuristic, ShareMode::kPacked, true, true,
       "srtf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(c.name);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), c.name);

    const std::string_view text = BuiltinText(c.name);
    ASSERT_FALSE(text.empty());
    const nlohmann::json doc = nlohmann::json::parse(text);
    EXPECT_TRUE(IsSharingProfile(doc));
    EXPECT_FALSE(IsPipelineProfileText(text));
    EXPECT_FALSE(IsRoundProfileText(text));
    Result<SharingProfile> profile = ParseSharingProfile(doc);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    EXPECT_EQ(profile->config.name, c.name);
    EXPECT_EQ(profile->base, c.base);
    EXPECT_FALSE(profile->config.description.empty());
    EXPECT_EQ(profile->config.packer, c.packer);
    EXPECT_EQ(profile->config.mode, c.mode);
    EXPECT_EQ(profile->config.interference_aware, c.interference_aware);
    EXPECT_EQ(profile->config.migrate, c.migrate);
    EXPECT_EQ(profile->config.max_jobs_per_gpu, 2);

    // The daemon and --replay take pipelines only, and say why.
    Result<PipelineConfig> pipeline = LoadProfile(c.name);
    ASSERT_FALSE(pipeline.ok());
    EXPECT_THAT(pipeline.status().message(), HasSubstr("GPU-sharing profile"));
    Result<std::string> description = ProfileDescription(text, c.name);
    ASSERT_TRUE(description.ok()) << description.status().ToString();
    EXPECT_EQ(*description, profile->config.description);
  }
  EXPECT_TRUE(IsPipelineProfileText(BuiltinText("fifo")));
  EXPECT_FALSE(IsPipelineProfileText("not json"));
  EXPECT_FALSE(IsPipelineProfileText("[1, 2]"));
}

TEST(SharingProfileTest, ParsesEveryField) {
  Result<SharingProfile> profile = ParseSharingProfile(nlohmann::json::parse(R"({
    "name": "x", "description": "d", "base": "fifo",
    "share": {"packer": "heuristic", "mode": "time-sliced", "interference_aware": false,
              "max_jobs_per_gpu": 3, "memory_percentile": 90.5, "max_slowdown": 2,
              "max_candidates": 16,
              "migration": {"enabled": false, "max_per_job": 4, "min_residence_s": 30.5,
                            "min_slowdown": 1.7}}})"));
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const SharingPolicyConfig& c = profile->config;
  EXPECT_EQ(profile->base, "fifo");
  EXPECT_EQ(c.name, "x");
  EXPECT_EQ(c.description, "d");
  EXPECT_EQ(c.packer, SharingPolicyConfig::Packer::kHeuristic);
  EXPECT_EQ(c.mode, ShareMode::kTimeSliced);
  EXPECT_FALSE(c.interference_aware);
  EXPECT_EQ(c.max_jobs_per_gpu, 3);
  EXPECT_DOUBLE_EQ(c.memory_percentile, 90.5);
  EXPECT_DOUBLE_EQ(c.max_slowdown, 2.0);
  EXPECT_EQ(c.max_candidates, 16);
  EXPECT_FALSE(c.migrate);
  EXPECT_EQ(c.max_migrations_per_job, 4);
  EXPECT_EQ(c.min_residence, std::chrono::milliseconds(30500));
  EXPECT_DOUBLE_EQ(c.min_slowdown_to_migrate, 1.7);

  // Keys left out keep the defaults.
  Result<SharingProfile> minimal =
      ParseSharingProfile(nlohmann::json::parse(R"({"name": "y", "base": "las", "share": {}})"));
  ASSERT_TRUE(minimal.ok()) << minimal.status().ToString();
  const SharingPolicyConfig defaults;
  EXPECT_EQ(minimal->config.packer, defaults.packer);
  EXPECT_EQ(minimal->config.mode, defaults.mode);
  EXPECT_EQ(minimal->config.max_jobs_per_gpu, defaults.max_jobs_per_gpu);
  EXPECT_EQ(minimal->config.min_residence, defaults.min_residence);
}

TEST(SharingProfileTest, BadProfilesNameWhatIsWrong) {
  struct Case {
    std::string name;
    std::string share;  // the "share" object
    std::string want;
    std::string top = R"("name": "x", "base": "las")";
  };
  const std::vector<Case> cases = {
      {"unknown top-level key", "{}", "'rounds'", R"("name": "x", "base": "las", "rounds": 3)"},
      {"unknown share key", R"({"packers": "greedy"})",
       "'packers' or a value of the wrong type in \"share\""},
      {"unknown migration key", R"({"migration": {"enable": true}})",
       "'enable' or a value of the wrong type in \"migration\""},
      {"wrong value type", R"({"max_jobs_per_gpu": "2"})", "'max_jobs_per_gpu'"},
      {"fractional count", R"({"max_jobs_per_gpu": 2.5})", "'max_jobs_per_gpu'"},
      {"share not an object", "[]", "\"share\" must be an object"},
      {"migration not an object", R"({"migration": true})", "\"migration\" must be an object"},
      {"bad packer", R"({"packer": "optimal"})", "unknown packer 'optimal'"},
      {"bad mode", R"({"mode": "exclusive"})", "unknown mode 'exclusive'"},
      {"no name", "{}", "no \"name\"", R"("base": "las")"},
      {"no base", "{}", "no \"base\"", R"("name": "x")"},
      {"k of 0", R"({"max_jobs_per_gpu": 0})", "max_jobs_per_gpu must be >= 1"},
      {"percentile", R"({"memory_percentile": 101})", "memory_percentile"},
      {"slowdown", R"({"max_slowdown": 0.5})", "max_slowdown"},
      {"candidates", R"({"max_candidates": 0})", "max_candidates"},
      {"residence", R"({"migration": {"min_residence_s": -1}})", "min_residence_s"},
      {"huge residence", R"({"migration": {"min_residence_s": 1e300}})", "min_residence_s"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string text = "{" + c.top + R"(, "share": )" + c.share + "}";
    const nlohmann::json doc = nlohmann::json::parse(text);
    ASSERT_TRUE(IsSharingProfile(doc));
    Result<SharingProfile> profile = ParseSharingProfile(doc);
    ASSERT_FALSE(profile.ok());
    EXPECT_EQ(profile.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(profile.status().message(), HasSubstr(c.want));
    // LoadPolicy reports the same, prefixed by where the profile came from.
    const TempProfile file(text);
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr(c.want));
    EXPECT_THAT(policy.status().message(), HasSubstr(file.path()));
  }
}

TEST(SharingProfileTest, TheBaseIsAnyKindButASharingProfile) {
  {
    const TempProfile file(R"({"name": "x", "base": "fifo", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), "x");
  }
  {
    const TempProfile file(R"({"name": "x", "base": "hetero-las", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  }
  {
    const TempProfile file(R"({"name": "x", "base": "greedy-share", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot be another's base"));
    EXPECT_THAT(policy.status().message(), HasSubstr("base profile 'greedy-share'"));
  }
  {
    // A sharing profile as its own base, by path: refused, not recursed into.
    const TempProfile file(R"({"name": "x", "base": "PATH", "share": {}})");
    std::ofstream(file.path(), std::ios::binary)
        << R"({"name": "x", "base": ")" << file.path() << R"(", "share": {}})";
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot be another's base"));
  }
  {
    const TempProfile file(R"({"name": "x", "base": "no-such-policy", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(policy.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(policy.status().message(), HasSubstr("base profile 'no-such-policy'"));
    EXPECT_THAT(policy.status().message(), HasSubstr("no policy named 'no-such-policy'"));
  }
  {
    const TempProfile file(R"({"name": "x", "base": "/no/such/profile.json", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot open profile /no/such/profile.json"));
  }
}

}  // namespace
}  // namespace dlsched
