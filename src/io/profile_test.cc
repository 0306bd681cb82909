#include "io/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <variant>
#include <vector>

#include "dlsched/policy/registry.h"

namespace dlsched {
namespace {

using ::testing::HasSubstr;

TEST(ProfileTest, EveryBuiltinProfileParsesAndBuilds) {
  ASSERT_GE(BuiltinProfiles().size(), 7u);
  for (const auto& [name, text] : BuiltinProfiles()) {
    SCOPED_TRACE(std::string(name));
    Result<PolicyProfile> profile = LoadPolicyProfile(name);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    EXPECT_EQ(profile->name(), name);
    EXPECT_FALSE(profile->description().empty());
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*profile);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), name);
    // The other kinds: io/{hetero,sharing}_profile_test.cc.
    const auto* config = std::get_if<PipelineConfig>(&profile->kind);
    if (config == nullptr) continue;
    EXPECT_EQ(config->name, name);  // file name and "name" agree
    EXPECT_FALSE(config->description.empty());
    ASSERT_FALSE(config->admit.empty());
    EXPECT_EQ(config->admit[0].name, "feasibility");  // no job ever waits forever
    EXPECT_TRUE(BuildPipeline(*config, InTreeRegistry()).ok());
  }
}

TEST(ProfileTest, ItsJsonTextReadsBackToTheSameProfile) {
  Result<PolicyProfile> custom = ParsePolicyProfile(R"({
    "name": "x", "description": "d", "admit": ["feasibility"],
    "queue_sort": {"name": "tiresias", "args": {"thresholds_gpu_s": [10, 20]}},
    "score": [{"name": "consolidate", "weight": 0.1}],
    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 60}}],
    "backfill": false, "starvation_limit_s": 3600.5, "max_preemption_attempts": 3,
    "share_measure": "gpu", "tenant_order": "rank"})",
                                                    "test");
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  std::vector<PolicyProfile> all = {*custom};
  for (const auto& [name, text] : BuiltinProfiles()) all.push_back(*LoadPolicyProfile(name));
  for (const PolicyProfile& any : all) {
    SCOPED_TRACE(any.name());
    const std::string text = PolicyProfileToJson(any);
    Result<PolicyProfile> read = ParsePolicyProfile(text, "round trip");
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(PolicyProfileToJson(*read), text);
    EXPECT_EQ(read->kind.index(), any.kind.index());
    const auto* pipeline = std::get_if<PipelineConfig>(&any.kind);
    if (pipeline == nullptr) continue;
    const PipelineConfig& profile = *pipeline;
    const PipelineConfig* back = &std::get<PipelineConfig>(read->kind);
    EXPECT_EQ(back->starvation_limit, profile.starvation_limit);
    EXPECT_EQ(back->backfill, profile.backfill);
    EXPECT_EQ(back->share_measure, profile.share_measure);
    EXPECT_EQ(back->tenant_order, profile.tenant_order);
    ASSERT_EQ(back->score.size(), profile.score.size());
    for (size_t i = 0; i < profile.score.size(); ++i) {
      EXPECT_EQ(back->score[i].weight, profile.score[i].weight);
      EXPECT_EQ(back->score[i].args.values(), profile.score[i].args.values());
    }
    EXPECT_EQ(back->queue_sort.args.values(), profile.queue_sort.args.values());
  }
}

TEST(ProfileTest, ParsesEveryField) {
  Result<PolicyProfile> profile = ParsePolicyProfile(R"({
    "name": "x", "description": "d", "admit": ["feasibility"],
    "queue_sort": {"name": "tiresias", "args": {"thresholds_gpu_s": [10, 20]}},
    "score": [{"name": "consolidate", "weight": 2.5}],
    "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 60}}],
    "backfill": false, "starvation_limit_s": 3600, "max_preemption_attempts": 3,
    "share_measure": "gpu"})",
                                                     "test");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  const PipelineConfig* config = std::get_if<PipelineConfig>(&profile->kind);
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->share_measure, PipelineConfig::ShareMeasure::kGpu);
  EXPECT_EQ(config->tenant_order, PipelineConfig::TenantOrder::kRank);
  EXPECT_EQ(config->queue_sort.name, "tiresias");
  EXPECT_EQ(config->queue_sort.args.values().at("thresholds_gpu_s"), "10,20");
  EXPECT_DOUBLE_EQ(config->score[0].weight, 2.5);
  EXPECT_FALSE(config->backfill);
  EXPECT_EQ(config->starvation_limit, std::chrono::hours(1));
  EXPECT_EQ(config->max_preemption_attempts, 3);
  EXPECT_TRUE(BuildPipeline(*config, InTreeRegistry()).ok());
}

TEST(ProfileTest, SetRoundLengthShortensTheRoundsOfARoundBasedProfileOrBase) {
  Result<PolicyProfile> las = LoadPolicyProfile("hetero-las");
  ASSERT_TRUE(las.ok()) << las.status().ToString();
  ASSERT_TRUE(SetRoundLength(*las, std::chrono::seconds(2)).ok());
  EXPECT_EQ(std::get<RoundProfile>(las->kind).options.round, std::chrono::seconds(2));
  EXPECT_EQ(las->name(), "hetero-las");
  // The log's copy of the profile carries the new round.
  Result<PolicyProfile> logged = ParsePolicyProfile(PolicyProfileToJson(*las), "log");
  ASSERT_TRUE(logged.ok()) << logged.status().ToString();
  EXPECT_EQ(std::get<RoundProfile>(logged->kind).options.round, std::chrono::seconds(2));

  Result<PolicyProfile> shared = ParsePolicyProfile(
      R"({"name": "s", "share": {"packer": "greedy"}, "base": "hetero-minjct"})", "test");
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  ASSERT_TRUE(SetRoundLength(*shared, std::chrono::seconds(5)).ok());
  EXPECT_EQ(std::get<RoundProfile>(std::get<SharingProfile>(shared->kind).base).options.round,
            std::chrono::seconds(5));

  EXPECT_THAT(SetRoundLength(*las, Duration(0)).message(), HasSubstr("longer than 0"));
  Result<PolicyProfile> fifo = LoadPolicyProfile("fifo");
  ASSERT_TRUE(fifo.ok());
  EXPECT_THAT(SetRoundLength(*fifo, std::chrono::seconds(2)).message(),
              HasSubstr("profile 'fifo' is not round-based"));
  Result<PolicyProfile> greedy_share = LoadPolicyProfile("greedy-share");
  ASSERT_TRUE(greedy_share.ok());
  EXPECT_FALSE(SetRoundLength(*greedy_share, std::chrono::seconds(2)).ok());
}

TEST(ProfileTest, ErrorsNameTheProblem) {
  struct Case {
    std::string name;
    std::string json;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"bad json", "{", "not valid JSON"},
      {"unknown key", R"({"name": "x", "backfil": true})", "backfil"},
      {"no name", R"({"backfill": true})", "no \"name\""},
      {"wrong type", R"({"name": "x", "backfill": "yes"})", "backfill"},
      // Seconds beyond kMaxInputSeconds would overflow a Duration.
      // Found by fuzz/profile: an empty name was accepted, and ProfileToJson's text refused.
      {"empty plugin name", R"({"name": "x", "queue_sort": ""})", "queue_sort: plugin without"},
      // A limit that rounds to zero microseconds would be written out as 0, which is refused.
      {"tiny limit", R"({"name": "x", "starvation_limit_s": 5e-324})", "starvation_limit_s"},
      {"huge limit", R"({"name": "x", "starvation_limit_s": 1e300})", "starvation_limit_s"},
      {"huge relaxation", R"({"name": "x", "placement": {"relax_after_s": 1e13}})",
       "relax_after_s"},
      {"unknown share measure", R"({"name": "x", "share_measure": "cpu"})", "share_measure"},
      {"unknown tenant order", R"({"name": "x", "tenant_order": "drf"})", "tenant_order"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<PolicyProfile> config = ParsePolicyProfile(c.json, "my.json");
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.status().message(), HasSubstr("my.json"));
    EXPECT_THAT(config.status().message(), HasSubstr(c.want));
  }
}

TEST(ProfileTest, UnknownPluginOrArgumentFailsToBuild) {
  auto unknown = ParsePolicyProfile(R"({"name": "x", "queue_sort": "fastest"})", "t");
  ASSERT_TRUE(unknown.ok());
  auto built = BuildPolicy(*unknown);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("fastest"));
  EXPECT_THAT(built.status().message(), HasSubstr("fifo"));  // lists what exists

  auto bad_arg = ParsePolicyProfile(
      R"({"name": "x", "preempt": [{"name": "priority_preempt", "args": {"min_run": 1}}]})", "t");
  ASSERT_TRUE(bad_arg.ok());
  built = BuildPolicy(*bad_arg);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("min_run"));
  EXPECT_THAT(built.status().message(), HasSubstr("profile 'x'"));
}

TEST(ProfileTest, TheFairTenantOrderNeedsBackfill) {
  auto fair = ParsePolicyProfile(
      R"({"name": "x", "backfill": false, "tenant_order": "fair", "quotas": {"*": {}}})", "t");
  ASSERT_TRUE(fair.ok()) << fair.status().ToString();
  auto built = BuildPolicy(*fair);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("needs backfill"));
}

TEST(ProfileTest, UnknownNameListsTheBuiltins) {
  auto missing = LoadPolicyProfile("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("tiresias"));
}

TEST(RegistryTest, RegisteringANameTwiceIsAnError) {
  PluginRegistry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  EXPECT_EQ(RegisterInTreePlugins(registry).code(), StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace dlsched
