#include "io/hetero_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
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
    Result<PolicyProfile> profile = LoadPolicyProfile(c.name);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    ASSERT_TRUE(std::holds_alternative<RoundProfile>(profile->kind));
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*profile);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), c.name);
    const auto* round = dynamic_cast<const hetero::RoundPolicy*>(policy->get());
    ASSERT_NE(round, nullptr);
    EXPECT_EQ(round->options().round, std::chrono::seconds(360));
    EXPECT_EQ(round->options().agnostic, c.agnostic);
    // Changes coalesced above 2,000 active jobs (docs/hetero.md).
    EXPECT_EQ(round->options().coalesce_above_jobs, 2000);
    EXPECT_EQ(round->options().coalesce_fraction, 0.05);
    EXPECT_FALSE(round->options().description.empty());
    EXPECT_EQ(profile->description(), round->options().description);
  }
}

TEST(HeteroProfileTest, TheGavelProfilesSetItsReallocInterval) {
  for (const std::string name :
       {"gavel-max-min-perf", "gavel-max-min", "gavel-finish-time-fairness"}) {
    SCOPED_TRACE(name);
    Result<PolicyProfile> profile = LoadPolicyProfile(name);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    const RoundProfile& round = std::get<RoundProfile>(profile->kind);
    EXPECT_EQ(round.options.realloc_interval, std::chrono::seconds(1920));
    EXPECT_EQ(round.options.coalesce_above_jobs, 0);
    EXPECT_EQ(round.options.agnostic, name == "gavel-max-min");
    EXPECT_FALSE(round.options.backfill_between_rounds);
    EXPECT_TRUE(round.options.reset_counts_at_allocation);
    // Gavel's lease lists and its interior-point optimum (docs/fidelity.md).
    EXPECT_TRUE(round.options.deficit_ties);
    EXPECT_TRUE(round.options.zero_entries);
    EXPECT_EQ(round.options.initial_rounds_received, 0.5);
    EXPECT_EQ(round.allocator, name == "gavel-finish-time-fairness" ? "finish-time-fairness-centre"
                                                                    : "max-min-gavel");
    Result<PolicyProfile> back = ParsePolicyProfile(PolicyProfileToJson(*profile), "round trip");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(std::get<RoundProfile>(back->kind).options.realloc_interval,
              std::chrono::seconds(1920));
  }
  // The default: at every change, and the key is not written.
  const RoundProfile& las = std::get<RoundProfile>(LoadPolicyProfile("hetero-las")->kind);
  EXPECT_EQ(las.options.realloc_interval, Duration::zero());
  EXPECT_THAT(PolicyProfileToJson(*LoadPolicyProfile("hetero-las")),
              ::testing::Not(HasSubstr("realloc_interval_s")));
  EXPECT_FALSE(ParsePolicyProfile(
                   R"({"name": "x", "allocator": "max-min", "realloc_interval_s": -1})", "x.json")
                   .ok());
  for (const std::string bad :
       {R"("coalesce_above_jobs": -1)", R"("coalesce_above_jobs": 2.5)",
        R"("coalesce_above_jobs": 1e12)", R"("coalesce_fraction": 0)",
        R"("coalesce_fraction": 1.5)", R"("coalesce_fraction": "half")"}) {
    SCOPED_TRACE(bad);
    const Result<PolicyProfile> parsed =
        ParsePolicyProfile(R"({"name": "x", "allocator": "max-min", )" + bad + "}", "x.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), HasSubstr("coalesce_"));
  }
}

TEST(HeteroProfileTest, MaxMinGlpkIsAnAllocator) {
  EXPECT_TRUE(AllocatorByName("max-min-glpk").ok());
  EXPECT_TRUE(
      ParsePolicyProfile(R"({"name": "x", "allocator": "max-min-glpk"})", "x.json").ok());
}

TEST(HeteroProfileTest, ItsJsonReadsBackEqual) {
  Result<PolicyProfile> custom = ParsePolicyProfile(
      R"({"name": "x", "description": "d", "allocator": "finish-time-fairness", "round_s": 0.25,
          "agnostic": true, "type_walk": "shuffled", "spread_tied_types": true,
          "initial_rounds_received": 0.5, "deficit_ties": true, "zero_entries": true,
          "coalesce_above_jobs": 700, "coalesce_fraction": 0.25})",
      "x.json");
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  const std::string text = PolicyProfileToJson(*custom);
  Result<PolicyProfile> back = ParsePolicyProfile(text, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const RoundProfile& round = std::get<RoundProfile>(back->kind);
  EXPECT_EQ(round.options.name, "x");
  EXPECT_EQ(round.options.description, "d");
  EXPECT_EQ(round.allocator, "finish-time-fairness");
  EXPECT_EQ(round.options.round, std::chrono::milliseconds(250));
  EXPECT_TRUE(round.options.spread_tied_types);
  EXPECT_EQ(round.options.coalesce_above_jobs, 700);
  EXPECT_EQ(round.options.coalesce_fraction, 0.25);
  EXPECT_EQ(round.options.initial_rounds_received, 0.5);
  EXPECT_TRUE(round.options.deficit_ties);
  EXPECT_TRUE(round.options.zero_entries);
  EXPECT_TRUE(round.options.agnostic);
  EXPECT_EQ(round.options.type_walk, hetero::RoundPolicyOptions::TypeWalk::kShuffled);
  EXPECT_EQ(PolicyProfileToJson(*back), text);
  // Found by fuzz/profile: a null description threw out of the description reader.
  Result<PolicyProfile> null_description =
      ParsePolicyProfile(R"({"name": "h", "description": null, "allocator": "greedy"})", "h.json");
  ASSERT_FALSE(null_description.ok());
  EXPECT_THAT(null_description.status().message(), HasSubstr("h.json"));
  EXPECT_THAT(null_description.status().message(), HasSubstr("'description'"));
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
      {"unknown type walk", R"({"name": "x", "allocator": "greedy", "type_walk": "random"})",
       "'type_walk'"},
      {"no name", R"({"allocator": "greedy"})", "no \"name\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const nlohmann::json doc = nlohmann::json::parse(c.json);
    ASSERT_TRUE(IsRoundProfile(doc));
    Result<RoundProfile> profile = ParseRoundProfile(doc);
    ASSERT_FALSE(profile.ok());
    EXPECT_THAT(profile.status().message(), HasSubstr(c.want));
  }
  Result<RoundProfile> custom = ParseRoundProfile(
      nlohmann::json::parse(R"({"name": "x", "allocator": "min-jct", "round_s": 60})"));
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  Result<std::unique_ptr<SchedulingPolicy>> policy = BuildRoundPolicy(*custom);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ(dynamic_cast<const hetero::RoundPolicy&>(**policy).options().round,
            std::chrono::seconds(60));
  EXPECT_FALSE(IsRoundProfile(nlohmann::json::parse(R"({"name": "fifo"})")));
}

}  // namespace
}  // namespace dlsched
