#include "plugins/preempt/priority_preempt.h"

#include <gtest/gtest.h>

namespace dlsched {
namespace {

// The pipeline stops a victim search at the job's own rank only where the plugin says so.
TEST(PriorityPreemptTest, LowerRankOnlyFollowsItsArgument) {
  auto plugin = PriorityPreempt::Create(PluginArgs({{"lower_rank_only", "true"}}));
  ASSERT_TRUE(plugin.ok());
  EXPECT_TRUE(static_cast<const PreemptPlugin&>(**plugin).LowerRankOnly());
  plugin = PriorityPreempt::Create(PluginArgs({}));
  ASSERT_TRUE(plugin.ok());
  EXPECT_FALSE(static_cast<const PreemptPlugin&>(**plugin).LowerRankOnly());
}

}  // namespace
}  // namespace dlsched
