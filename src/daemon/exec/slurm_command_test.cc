#include "daemon/exec/slurm_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlsched::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SlurmCommandTest, CapturesOutputsAndExitStatus) {
  Result<CommandOutput> out = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3", "ignored"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->out, "out\n");
  EXPECT_EQ(out->err, "err\n");
}

TEST(SlurmCommandTest, ArgumentsAreNeverInterpretedByAShell) {
  Result<std::string> out = RunChecked({"echo", "$(id)", "; rm -rf /", "a'b"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "$(id) ; rm -rf / a'b\n");
}

TEST(SlurmCommandTest, EnvironmentIsReplacedWhenGiven) {
  CommandOptions options;
  options.env = {"ONLY=this"};
  Result<std::string> out = RunChecked({"env"}, options);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "ONLY=this\n");
}

TEST(SlurmCommandTest, FailuresNameTheCommandAndQuoteItsStderr) {
  const Result<std::string> failed =
      RunChecked({"sh", "-c", "echo 'sbatch: error: Invalid partition name' >&2; exit 1"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(failed.status().message(), StartsWith("sh -c "));
  EXPECT_THAT(failed.status().message(),
              HasSubstr("failed (exit 1): sbatch: error: Invalid partition name"));

  const Result<CommandOutput> missing = RunCommand({"dlsched-no-such-command"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("dlsched-no-such-command: cannot run"));
}

TEST(SlurmCommandTest, ATimeoutKillsTheCommand) {
  CommandOptions options;
  options.timeout = std::chrono::milliseconds(100);
  const auto start = std::chrono::steady_clock::now();
  const Result<CommandOutput> out = RunCommand({"sleep", "5"}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("no answer within"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace dlsched::daemon
