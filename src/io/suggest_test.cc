#include "io/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlsched {
namespace {

TEST(EditDistanceTest, Table) {
  struct Case {
    const char* a;
    const char* b;
    int want;
  };
  const Case cases[] = {
      {"", "", 0},         {"abc", "", 3},          {"V100", "v100", 0},     {"V1000", "V100", 1},
      {"nmae", "name", 1}, {"gpus", "gpu-type", 5}, {"kitten", "sitting", 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.a) + " / " + c.b);
    EXPECT_EQ(EditDistanceIgnoringCase(c.a, c.b), c.want);
    EXPECT_EQ(EditDistanceIgnoringCase(c.b, c.a), c.want);
  }
}

TEST(ClosestNameTest, SuggestsOnlyLikelyTypos) {
  const std::vector<std::string> types = {"A100", "H100", "K80", "P100", "T4", "V100"};
  struct Case {
    const char* typed;
    std::optional<std::string> want;
  };
  const Case cases[] = {{"v100", "V100"},   {"V1000", "V100"},       {"k80", "K80"},
                        {"A10", "A100"},    {"MI250", std::nullopt}, {"", std::nullopt},
                        {"X", std::nullopt}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.typed);
    EXPECT_EQ(ClosestName(c.typed, types), c.want);
  }
  const std::vector<std::string> flags = {"name", "gpus", "gpu-type", "deadline"};
  EXPECT_EQ(ClosestName("nmae", flags), "name");
  EXPECT_EQ(ClosestName("gpu", flags), "gpus");
  EXPECT_EQ(ClosestName("verbose", flags), std::nullopt);
}

}  // namespace
}  // namespace dlsched
