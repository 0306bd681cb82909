#include "io/hetero_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/profile.h"
#include "policy/hetero/round_policy.h"

namespace dlsched {
namespace {

using ::testing::HasSubstr;

TEST(HeteroProfileTest, TheBuiltinRoundProfilesLoadAsRoundPolicies) {
  struct Case {
    std::string name;
    bool agnostic;
  };
  const std::vector<Case> cases = {{"hetero-las", false},
                                   {"hetero-minjct", false},
                                   {"hetero-greedy", false},
                                   {"hetero-las-agnostic", true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::unique_ptr<SchedulingPolicy>> policy = LoadPolicy(c.name);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), c.name);
    const auto* round = dynamic_cast<const hetero::RoundPolicy*>(policy->get());
    ASSERT_NE(round, nullptr);
    EXPECT_EQ(round->options().round, std::chrono::seconds(360));
    EXPECT_EQ(round->options().agnostic, c.agnostic);
    EXPECT_FALSE(round->options().description.empty());
    // The daemon and --replay take pipelines only, and say why.
    Result<PipelineConfig> pipeline = LoadProfile(c.name);
    ASSERT_FALSE(pipeline.ok());
    EXPECT_THAT(pipeline.status().message(), HasSubstr("round-based"));
  }
}

TEST(HeteroProfileTest, DescriptionsOfBothKinds) {
  for (const auto& [name, text] : BuiltinProfiles()) {
    SCOPED_TRACE(std::string(name));
    Result<std::string> description = ProfileDescription(text, name);
    ASSERT_TRUE(description.ok()) << description.status().ToString();
    EXPECT_FALSE(description->empty());
  }
  // Found by fuzz/profile: a null description threw out of ProfileDescription.
  Result<std::string> null_description =
      ProfileDescription(R"({"name": "h", "description": null, "allocator": "greedy"})", "h.json");
  ASSERT_FALSE(null_description.ok());
  EXPECT_THAT(null_description.status().message(), HasSubstr("h.json: \"description\""));
}

TEST(HeteroProfileTest, BadProfilesNameWhatIsWrong) {
  struct Case {
    std::string name;
    std::string json;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"unknown allocator", R"({"name": "x", "allocator": "magic"})", "unknown allocator 'magic'"},
      {"unknown key", R"({"name": "x", "allocator": "greedy", "rounds": 3})", "'rounds'"},
      {"bad round", R"({"name": "x", "allocator": "greedy", "round_s": 0})", "'round_s'"},
      // Found by fuzz/profile: the round overflowed to a negative duration, a failed check.
      {"huge round", R"({"name": "x", "allocator": "greedy", "round_s": 1e308})", "'round_s'"},
      {"no name", R"({"allocator": "greedy"})", "no \"name\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const nlohmann::json doc = nlohmann::json::parse(c.json);
    ASSERT_TRUE(IsRoundProfile(doc));
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildRoundPolicy(doc);
    ASSERT_FALSE(policy.ok());
    EXPECT_THAT(policy.status().message(), HasSubstr(c.want));
  }
  const nlohmann::json custom =
      nlohmann::json::parse(R"({"name": "x", "allocator": "min-jct", "round_s": 60})");
  Result<std::unique_ptr<SchedulingPolicy>> policy = BuildRoundPolicy(custom);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ(dynamic_cast<const hetero::RoundPolicy&>(**policy).options().round,
            std::chrono::seconds(60));
  EXPECT_FALSE(IsRoundProfileText(R"({"name": "fifo"})"));
  EXPECT_FALSE(IsRoundProfileText("not json"));
}

}  // namespace
}  // namespace dlsched
