#include "cli/flag_values.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

namespace dlsched::cli {
namespace {

TEST(ParseDurationSecondsTest, Table) {
  struct Case {
    const char* text;
    std::optional<double> want;
  };
  const Case cases[] = {
      {"90", 90},
      {"1.5", 1.5},
      {"0", 0},
      {"90s", 90},
      {"30m", 1800},
      {"2h", 7200},
      {"1d", 86400},
      {"1h30m", 5400},
      {"1.5h", 5400},
      {"1d2h3m4s", 93784},
      {"", std::nullopt},
      {"-5", std::nullopt},
      {"2w", std::nullopt},
      {"h", std::nullopt},
      {"2h30", std::nullopt},
      {"1..5", std::nullopt},
      {"2 h", std::nullopt},
      {"inf", std::nullopt},
      {"nan", std::nullopt},
      {"1e3", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseDurationSeconds(c.text), c.want);
  }
  EXPECT_TRUE(HasDurationUnit("2h"));
  EXPECT_TRUE(HasDurationUnit("1h30m"));
  EXPECT_FALSE(HasDurationUnit("7200"));
  EXPECT_FALSE(HasDurationUnit("2026-01-01T00:00:00Z"));
}

TEST(DurationFlagTest, EveryDurationFlagTakesTheSameSyntax) {
  CLI::App app;
  double seconds = -1;
  app.add_option("--limit", seconds)->transform(DurationFlag());
  for (const auto& [arg, want] :
       std::vector<std::pair<std::string, double>>{{"2h", 7200}, {"45", 45}, {"1h30m", 5400}}) {
    SCOPED_TRACE(arg);
    app.parse(std::vector<std::string>{arg, "--limit"});  // CLI11 takes argv reversed
    EXPECT_EQ(seconds, want);
  }
  EXPECT_THROW(app.parse(std::vector<std::string>{"-5", "--limit"}), CLI::ParseError);
  EXPECT_THROW(app.parse(std::vector<std::string>{"2 weeks", "--limit"}), CLI::ParseError);
}

TEST(IntegerAtLeastTest, RefusesNegativesThatWouldWrap) {
  CLI::App app;
  uint64_t seed = 7;
  app.add_option("--seed", seed)->check(IntegerAtLeast(0));
  app.parse(std::vector<std::string>{"12", "--seed"});
  EXPECT_EQ(seed, 12u);
  for (const char* bad : {"-1", "1.5", "x", ""}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(app.parse(std::vector<std::string>{bad, "--seed"}), CLI::ParseError);
  }
  size_t jobs = 0;
  app.add_option("--max-jobs", jobs)->check(IntegerAtLeast(1));
  EXPECT_THROW(app.parse(std::vector<std::string>{"0", "--max-jobs"}), CLI::ParseError);
}

}  // namespace
}  // namespace dlsched::cli
