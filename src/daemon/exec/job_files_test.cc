#include "daemon/exec/job_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_FALSE(WriteSmallFile((dir / "no" / "such").string(), "x"));
  fs::remove_all(dir);
}

TEST(JobFilesTest, WhatAJobPlantedIsNeverFollowed) {
  const fs::path dir =
      fs::temp_directory_path() / ("dlsched_job_files_x_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path secret = dir / "secret";
  std::ofstream(secret) << "token";
  // Reading: a link is not followed, a FIFO does not block, a big file is read in part.
  fs::create_symlink(secret, dir / "link");
  EXPECT_EQ(ReadSmallFile((dir / "link").string()), "");
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(ReadSmallFile((dir / "fifo").string()), "");
  std::ofstream(dir / "big") << std::string(100000, 'b');
  EXPECT_EQ(ReadSmallFile((dir / "big").string(), 10), "bbbbbbbbbb");
  // Writing over a link replaces the link, never the file it points to.
  ASSERT_TRUE(WriteSmallFile((dir / "link").string(), "mine"));
  EXPECT_EQ(ReadSmallFile(secret.string()), "token");
  EXPECT_FALSE(fs::is_symlink(dir / "link"));
  // A log that is a link, a hard link or a FIFO is replaced by a fresh file of our own.
  fs::create_symlink(secret, dir / "a.log");
  fs::create_hard_link(secret, dir / "b.log");
  ASSERT_EQ(mkfifo((dir / "c.log").c_str(), 0600), 0);
  for (const char* name : {"a.log", "b.log", "c.log"}) {
    SCOPED_TRACE(name);
    Result<int> fd = OpenLog((dir / name).string());
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    ASSERT_EQ(write(*fd, "x", 1), 1);
    close(*fd);
    EXPECT_EQ(ReadSmallFile((dir / name).string()), "x");
  }
  EXPECT_EQ(ReadSmallFile(secret.string()), "token");
  // Serving a log: ranges of a regular file; a link (symbolic or hard) is refused.
  std::ofstream(dir / "d.log") << "0123456789";
  EXPECT_EQ(*ReadLogRange((dir / "d.log").string(), 2, 3), "234");
  EXPECT_EQ(*ReadLogRange((dir / "d.log").string(), 8, 100), "89");
  EXPECT_EQ(*ReadLogRange((dir / "d.log").string(), 20, 100), "");
  EXPECT_EQ(*ReadLogRange((dir / "none.log").string(), 0, 100), "");
  fs::create_symlink(secret, dir / "e.log");
  EXPECT_EQ(ReadLogRange((dir / "e.log").string(), 0, 100).status().code(),
            StatusCode::kFailedPrecondition);
  fs::create_hard_link(secret, dir / "f.log");
  EXPECT_EQ(ReadLogRange((dir / "f.log").string(), 0, 100).status().code(),
            StatusCode::kFailedPrecondition);
  // The database is private.
  ASSERT_TRUE(MakePrivateFile((dir / "db").string()).ok());
  std::ofstream(dir / "db-wal") << "";
  chmod((dir / "db").c_str(), 0644);
  ASSERT_TRUE(MakePrivateFile((dir / "db").string()).ok());
  fs::create_symlink(secret, dir / "db-shm");  // planted: SQLite would write through it
  ASSERT_TRUE(MakePrivateFile((dir / "db").string()).ok());
  for (const char* name : {"db", "db-wal"}) {
    struct stat st {};
    ASSERT_EQ(stat((dir / name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "db-shm")));
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  EXPECT_EQ(DirectoryOthersMayWrite((dir / "db").string()), "");
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  EXPECT_EQ(DirectoryOthersMayWrite((dir / "db").string()), dir.string());
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
