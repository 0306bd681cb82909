#include "io/sharing_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "io/profile.h"

namespace dlsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

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

Result<std::unique_ptr<SchedulingPolicy>> LoadAndBuild(const std::string& path) {
  DS_ASSIGN_OR_RETURN(const PolicyProfile profile, LoadPolicyProfile(path));
  return BuildPolicy(profile);
}

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
    Result<PolicyProfile> loaded = LoadPolicyProfile(c.name);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*loaded);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), c.name);
    const SharingProfile* typed = std::get_if<SharingProfile>(&loaded->kind);
    ASSERT_NE(typed, nullptr);
    EXPECT_EQ(std::get<PipelineConfig>(typed->base).name, c.base);

    const std::string_view text = BuiltinText(c.name);
    ASSERT_FALSE(text.empty());
    const nlohmann::json doc = nlohmann::json::parse(text);
    EXPECT_TRUE(IsSharingProfile(doc));
    Result<SharingProfileDoc> profile = ParseSharingProfile(doc);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    EXPECT_EQ(profile->config.name, c.name);
    EXPECT_EQ(profile->base, c.base);
    EXPECT_FALSE(profile->config.description.empty());
    EXPECT_EQ(profile->config.packer, c.packer);
    EXPECT_EQ(profile->config.mode, c.mode);
    EXPECT_EQ(profile->config.interference_aware, c.interference_aware);
    EXPECT_EQ(profile->config.migrate, c.migrate);
    EXPECT_EQ(profile->config.max_jobs_per_gpu, 2);
    EXPECT_EQ(loaded->description(), profile->config.description);
  }
}

TEST(SharingProfileTest, ItsJsonEmbedsTheBaseAndReadsBackEqual) {
  const TempProfile file("");
  const std::string base = file.path() + ".base.json";
  std::ofstream(base, std::ios::binary)
      << R"({"name": "my-base", "allocator": "greedy", "round_s": 30})";
  std::ofstream(file.path(), std::ios::binary)
      << R"({"name": "x", "base": ")" << base
      << R"(", "share": {"mode": "time-sliced", "migration": {"min_residence_s": 7.5}}})";
  Result<PolicyProfile> profile = LoadPolicyProfile(file.path());
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const std::string text = PolicyProfileToJson(*profile);
  EXPECT_THAT(text, HasSubstr(R"("base":{)"));  // the file's content, not its path
  EXPECT_THAT(text, Not(HasSubstr(base)));
  Result<PolicyProfile> back = ParsePolicyProfile(text, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(PolicyProfileToJson(*back), text);
  const SharingProfile& sharing = std::get<SharingProfile>(back->kind);
  EXPECT_EQ(sharing.config.mode, ShareMode::kTimeSliced);
  EXPECT_EQ(sharing.config.min_residence, std::chrono::milliseconds(7500));
  const RoundProfile& round = std::get<RoundProfile>(sharing.base);
  EXPECT_EQ(round.options.name, "my-base");
  EXPECT_EQ(round.options.round, std::chrono::seconds(30));
  Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*back);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ((*policy)->Name(), "x");
  // An embedded base may not be a sharing profile either.
  Result<PolicyProfile> nested = ParsePolicyProfile(
      R"({"name": "y", "base": {"name": "z", "base": "las", "share": {}}, "share": {}})", "n");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(), HasSubstr("cannot be another's base"));
}

TEST(SharingProfileTest, ParsesEveryField) {
  Result<SharingProfileDoc> profile = ParseSharingProfile(nlohmann::json::parse(R"({
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
  Result<SharingProfileDoc> minimal =
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
    Result<SharingProfileDoc> profile = ParseSharingProfile(doc);
    ASSERT_FALSE(profile.ok());
    EXPECT_EQ(profile.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(profile.status().message(), HasSubstr(c.want));
    // LoadPolicyProfile reports the same, prefixed by where the profile came from.
    const TempProfile file(text);
    Result<PolicyProfile> policy = LoadPolicyProfile(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr(c.want));
    EXPECT_THAT(policy.status().message(), HasSubstr(file.path()));
  }
}

TEST(SharingProfileTest, TheBaseIsAnyKindButASharingProfile) {
  {
    const TempProfile file(R"({"name": "x", "base": "fifo", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), "x");
  }
  {
    const TempProfile file(R"({"name": "x", "base": "hetero-las", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  }
  {
    const TempProfile file(R"({"name": "x", "base": "greedy-share", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot be another's base"));
    EXPECT_THAT(policy.status().message(), HasSubstr("base profile 'greedy-share'"));
  }
  {
    // A sharing profile as its own base, by path: refused, not recursed into.
    const TempProfile file(R"({"name": "x", "base": "PATH", "share": {}})");
    std::ofstream(file.path(), std::ios::binary)
        << R"({"name": "x", "base": ")" << file.path() << R"(", "share": {}})";
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot be another's base"));
  }
  {
    const TempProfile file(R"({"name": "x", "base": "no-such-policy", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(policy.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(policy.status().message(), HasSubstr("base profile 'no-such-policy'"));
    EXPECT_THAT(policy.status().message(), HasSubstr("no policy named 'no-such-policy'"));
  }
  {
    const TempProfile file(R"({"name": "x", "base": "/no/such/profile.json", "share": {}})");
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadAndBuild(file.path());
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr("cannot open profile /no/such/profile.json"));
  }
}

}  // namespace
}  // namespace dlsched
