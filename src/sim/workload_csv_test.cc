#include "sim/workload_csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlsched::sim::workload_internal {
namespace {

TEST(DaysFromCivilTest, KnownDates) {
  struct Case {
    int y, m, d;
    int64_t days;
  };
  const std::vector<Case> cases = {
      {1970, 1, 1, 0},      {1969, 12, 31, -1},   {2000, 3, 1, 11017},
      {2017, 10, 9, 17448}, {2016, 2, 29, 16860}, {1600, 1, 1, -135140},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.y) + "-" + std::to_string(c.m) + "-" + std::to_string(c.d));
    EXPECT_EQ(DaysFromCivil(c.y, c.m, c.d), c.days);
  }
}

TEST(ParseUtcDateTimeTest, AcceptsTheLayoutAndChecksRanges) {
  EXPECT_EQ(ParseUtcDateTime("2017-10-09 07:01:55"), int64_t{1507532515});
  EXPECT_EQ(ParseUtcDateTime("2017-10-09T07:01:55"), int64_t{1507532515});
  EXPECT_EQ(ParseUtcDateTime(" 1970-01-01 00:00:00 "), int64_t{0});
  EXPECT_EQ(ParseUtcDateTime("2016-02-29 00:00:00"), int64_t{16860} * 86400);
  for (const char* bad :
       {"2017-02-29 00:00:00", "2017-00-10 00:00:00", "2017-10-09 24:00:00", "2017-10-09 07:61:00",
        "2017-10-09 7:01:55", "2017/10/09 07:01:55", "", "2017-10-09", "2017-10-09 07:01:55.5"}) {
    EXPECT_EQ(ParseUtcDateTime(bad), std::nullopt) << bad;
  }
}

TEST(NumberParsingTest, IsStrict) {
  EXPECT_EQ(ParseInt(" 42 "), int64_t{42});
  EXPECT_EQ(ParseInt("-7"), int64_t{-7});
  for (const char* bad : {"", "4.0", "+4", "4x", "99999999999999999999"}) {
    EXPECT_EQ(ParseInt(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseFiniteDouble("66.0"), 66.0);
  EXPECT_EQ(ParseFiniteDouble("2e3"), 2000.0);
  EXPECT_EQ(ParseFiniteDouble(".5"), 0.5);
  for (const char* bad : {"", "inf", "nan", "-inf", "1e999", "1.0.0", "+1"}) {
    EXPECT_EQ(ParseFiniteDouble(bad), std::nullopt) << bad;
  }
}

TEST(LineCursorTest, NumbersLinesAndStripsCarriageReturns) {
  LineCursor cursor("a\r\n\nb\nc");
  std::vector<std::pair<int, std::string>> got;
  std::string_view line;
  while (cursor.Next(line)) got.emplace_back(cursor.line_number(), std::string(line));
  const std::vector<std::pair<int, std::string>> want = {{1, "a"}, {2, ""}, {3, "b"}, {4, "c"}};
  EXPECT_EQ(got, want);
  LineCursor trailing("x\n");
  ASSERT_TRUE(trailing.Next(line));
  EXPECT_FALSE(trailing.Next(line));
}

TEST(SplitFieldsTest, KeepsEmptyFields) {
  std::vector<std::string_view> fields;
  SplitFields("a,,b,", ',', fields);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"a", "", "b", ""}));
  SplitFields("", ',', fields);
  EXPECT_EQ(fields, (std::vector<std::string_view>{""}));
}

}  // namespace
}  // namespace dlsched::sim::workload_internal
