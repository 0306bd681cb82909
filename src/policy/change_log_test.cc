#include "dlsched/policy/change_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace dlsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Since lists what was recorded after a revision it knows: the current one, the start, the last
// kKeep or more; not another log's, nor one forgotten. A copy shares the revisions until either
// records again.
TEST(ChangeLogTest, SinceListsTheRecordsAfterAKnownRevision) {
  ChangeLog<int> log;
  const ChangeLog<int> other;
  EXPECT_NE(log.revision(), other.revision());
  std::vector<int> items = {9};
  const uint64_t start = log.revision();
  EXPECT_TRUE(log.Since(start, items));
  EXPECT_THAT(items, IsEmpty());
  log.Record(1);
  const uint64_t one = log.revision();
  EXPECT_NE(one, start);
  log.Record(2);
  log.Record(1);
  EXPECT_TRUE(log.Since(start, items));
  EXPECT_THAT(items, ElementsAre(1, 2, 1));
  EXPECT_TRUE(log.Since(one, items));
  EXPECT_THAT(items, ElementsAre(2, 1));
  EXPECT_FALSE(log.Since(other.revision(), items));
  EXPECT_THAT(items, IsEmpty());

  ChangeLog<int> copy = log;
  EXPECT_EQ(copy.revision(), log.revision());
  copy.Record(3);
  log.Record(4);
  EXPECT_NE(copy.revision(), log.revision());
  EXPECT_FALSE(log.Since(copy.revision(), items));

  uint64_t recent = 0;
  for (int i = 0; i < static_cast<int>(2 * ChangeLog<int>::kKeep); ++i) {
    log.Record(100 + i);
    if (i == static_cast<int>(ChangeLog<int>::kKeep)) recent = log.revision();
  }
  EXPECT_FALSE(log.Since(start, items)) << "forgotten";
  ASSERT_TRUE(log.Since(recent, items));
  ASSERT_EQ(items.size(), ChangeLog<int>::kKeep - 1);
  EXPECT_EQ(items.front(), 100 + static_cast<int>(ChangeLog<int>::kKeep) + 1);
  EXPECT_EQ(items.back(), 100 + static_cast<int>(2 * ChangeLog<int>::kKeep) - 1);
}

}  // namespace
}  // namespace dlsched
