#include "cli/usage_errors.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace dlsched::cli {
namespace {

TEST(UnknownOptionMessageTest, NamesTheUnknownOptionAndTheClosestKnownOne) {
  CLI::App app;
  CLI::App* submit = app.add_subcommand("submit");
  std::string name;
  int gpus = 1;
  bool json = false;
  std::vector<std::string> command;
  submit->add_option("--name", name);
  submit->add_option("--gpus", gpus);
  submit->add_flag("--json,-j", json);
  submit->add_option("command", command);
  struct Case {
    std::vector<std::string> args;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {{"--nmae", "x", "--", "true"}, "unknown option --nmae; did you mean --name?"},
      {{"--nmae=x", "--", "true"}, "unknown option --nmae; did you mean --name?"},
      {{"--gpus", "2", "--jsno"}, "unknown option --jsno; did you mean --json?"},
      {{"--name", "--weird-name", "--verbose"},
       "unknown option --verbose"},  // a value is no option
      {{"-k"}, "unknown option -k"},
      {{"-J"}, "unknown option -J; did you mean -j?"},
      {{"--gpus", "-5", "x"}, std::nullopt},  // a negative number is a value
      {{"--help"}, std::nullopt},             // the app's own option
      {{"--", "--nmae"}, std::nullopt},       // after --: the job's command
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args.front());
    EXPECT_EQ(UnknownOptionMessage(*submit, c.args), c.want);
  }
}

}  // namespace
}  // namespace dlsched::cli
