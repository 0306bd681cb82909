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

// Without lower_rank_only it accepts every victim, so a victim search may leave victims out
// without asking about them (PipelinePolicy's dead victims); with it, the answer is the victim's.
TEST(PriorityPreemptTest, VictimBlindWithoutLowerRankOnly) {
  auto plugin = PriorityPreempt::Create(PluginArgs({{"min_run_s", "1800"}}));
  ASSERT_TRUE(plugin.ok());
  EXPECT_TRUE(static_cast<const PreemptPlugin&>(**plugin).VictimBlind());
  plugin = PriorityPreempt::Create(PluginArgs({{"lower_rank_only", "true"}}));
  ASSERT_TRUE(plugin.ok());
  EXPECT_FALSE(static_cast<const PreemptPlugin&>(**plugin).VictimBlind());
}

}  // namespace
}  // namespace dlsched
