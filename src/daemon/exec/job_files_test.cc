#include "daemon/exec/job_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

TEST(JobFilesTest, SmallFilesRoundTripWithTheirMode) {
  const fs::path dir =
      fs::temp_directory_path() / ("dlsched_job_files_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "f").string();
  EXPECT_EQ(ReadSmallFile(path), "");
  ASSERT_TRUE(WriteSmallFile(path, "one\n"));
  ASSERT_TRUE(WriteSmallFile(path, "two\n", 0755));
  EXPECT_EQ(ReadSmallFile(path), "two\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(WriteSmallFile((dir / "no" / "such").string(), "x"));
  fs::remove_all(dir);
}

TEST(JobFilesTest, StopIntentNamesRoundTrip) {
  for (StopIntent intent : {StopIntent::kPreempt, StopIntent::kKill, StopIntent::kTimeout,
                            StopIntent::kNodeLost, StopIntent::kNotStarted}) {
    SCOPED_TRACE(StopIntentName(intent));
    EXPECT_FALSE(StopIntentName(intent).empty());
    EXPECT_EQ(ParseStopIntent(StopIntentName(intent)), intent);
  }
  EXPECT_EQ(StopIntentName(StopIntent::kNone), "");
  EXPECT_EQ(ParseStopIntent(""), StopIntent::kNone);
  EXPECT_EQ(ParseStopIntent("preempt\n"), StopIntent::kNone);
}

TEST(JobFilesTest, ShellQuote) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$(x) `y` \"z\""), "'$(x) `y` \"z\"'");
}

}  // namespace
}  // namespace dlsched::daemon
