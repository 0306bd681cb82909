#include "sim/workload_csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlsched::sim::workload_internal {
namespace {

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

}  // namespace
}  // namespace dlsched::sim::workload_internal
