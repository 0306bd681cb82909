#include "daemon/exec/job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dlsched::daemon {
namespace {

constexpr std::string_view kStopIntentNames[] = {"", "preempt", "kill", "timeout", "node", "start"};

}  // namespace

std::string ReadSmallFile(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (and a read returns at once).
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[4096];
    while (text.size() < max_bytes) {
      const ssize_t n = read(fd, buf, std::min(sizeof(buf), max_bytes - text.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return text;
}

bool WriteSmallFile(const std::string& path, const std::string& content, mode_t mode) {
  std::string tmp = path + ".XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);  // O_EXCL: a file of our own
  if (fd < 0) return false;
  bool ok = fchmod(fd, mode) == 0;
  for (size_t done = 0; ok && done < content.size();) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = close(fd) == 0 && ok;
  ok = ok && rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(tmp.c_str());
  return ok;
}

Result<int> OpenLog(const std::string& path, mode_t mode) {
  constexpr int kFlags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  int fd = open(path.c_str(), kFlags, mode);
  struct stat st {};
  const bool ours = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                    st.st_uid == geteuid();
  if (!ours) {
    if (fd >= 0) close(fd);
    // ELOOP (a symbolic link), ENXIO (a FIFO without a reader), or a file not ours: replace it.
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return IoError("cannot replace " + path + ": " + std::strerror(errno));
    }
    fd = open(path.c_str(), kFlags | O_EXCL, mode);
    if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  return fd;
}

Result<std::string> ReadLogRange(const std::string& path, int64_t offset, int64_t limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    if (errno == ELOOP) return FailedPrecondition("the log is a symbolic link; not served");
    return IoError("cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    return FailedPrecondition("the log is not a regular file of its own; not served");
  }
  std::string text;
  if (offset < st.st_size) {
    text.resize(static_cast<size_t>(std::min(limit, static_cast<int64_t>(st.st_size) - offset)));
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = pread(fd, text.data() + done, text.size() - done,
                              static_cast<off_t>(offset + static_cast<int64_t>(done)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    text.resize(done);
  }
  close(fd);
  return text;
}

Status MakePrivateFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  const bool ok = fchmod(fd, 0600) == 0;
  close(fd);
  if (!ok) return IoError("cannot chmod 600 " + path + ": " + std::strerror(errno));
  for (const char* companion : {"-wal", "-shm"}) {
    const std::string other = path + companion;
    struct stat st {};
    if (lstat(other.c_str(), &st) != 0) continue;  // SQLite creates it with the database's mode
    // Someone else's (planted where others may write) or a link: SQLite would write the
    // database's content into it. Removed; SQLite makes a fresh one.
    const bool ours = S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1;
    if (!ours ? unlink(other.c_str()) != 0 : chmod(other.c_str(), 0600) != 0) {
      return IoError("cannot make " + other + " private: " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

std::string DirectoryOthersMayWrite(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return "";
  return st.st_mode & (S_IWGRP | S_IWOTH) ? dir : "";
}

std::string_view StopIntentName(StopIntent intent) {
  return kStopIntentNames[static_cast<int>(intent)];
}

StopIntent ParseStopIntent(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(StopIntent::kNotStarted); ++i) {
    if (name == kStopIntentNames[i]) return static_cast<StopIntent>(i);
  }
  return StopIntent::kNone;
}

std::string ShellQuote(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace dlsched::daemon
