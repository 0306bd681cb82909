#include "daemon/store/ownership.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

// The byte of the database file the daemon locks: 1 TiB, far beyond SQLite's lock bytes (from
// 1 GiB, 0x40000000, for 514 bytes). A record lock beyond the end of a file does not grow it,
// and record locks are advisory, so the byte needs no data behind it.
constexpr off_t kDbLockByte = off_t{1} << 40;

std::string Errno(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string Utc(Timestamp t) {
  const time_t seconds = static_cast<time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// "pid=P host=H since=T" -> "pid P on host H since T"; anything else as it is.
std::string DescribeHolder(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::istringstream in(text);
  std::string pid, host, since, word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = word.substr(0, eq);
    const std::string value = word.substr(eq + 1);
    if (key == "pid") pid = value;
    if (key == "host") host = value;
    if (key == "since") since = value;
  }
  if (pid.empty() || host.empty() || since.empty()) {
    return text.empty() ? "holder unknown: it has not named itself yet" : text;
  }
  return "pid " + pid + " on host " + host + " since " + since;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[512];
  ssize_t n;
  off_t at = 0;
  while ((n = pread(fd, buffer, sizeof(buffer), at)) > 0) {
    text.append(buffer, static_cast<size_t>(n));
    at += n;
    if (text.size() > 4096) break;
  }
  return text;
}

// The holder a database names in its meta table ("" when it cannot be read).
std::string DatabaseHolder(const std::string& db_path) {
  Result<std::unique_ptr<Store>> store = Store::OpenReadOnly(db_path);
  if (!store.ok()) return "";
  Result<std::optional<std::string>> owner = (*store)->GetMeta(kOwnerKey);
  if (!owner.ok() || !*owner) return "";
  return **owner;
}

std::string NewStoreId() {
  std::random_device random;
  std::ostringstream id;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof(part), "%08x", static_cast<unsigned>(random()));
    id << part;
  }
  return id.str();
}

bool IsStoreId(std::string_view id) {
  if (id.size() != 32) return false;
  for (const char c : id) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The id in <workdir>/.dlsched-store-id; nullopt when there is no such file.
Result<std::optional<std::string>> ReadIdFile(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::optional<std::string>();
  std::ifstream file(path);
  std::string id;
  if (!file || !(file >> id)) return IoError("cannot read " + path.string());
  if (!IsStoreId(id)) {
    return FailedPrecondition(path.string() + " does not hold a store id (32 hex digits)");
  }
  return std::optional<std::string>(id);
}

// Written whole or not at all (a temporary file renamed over it).
Status WriteIdFile(const fs::path& path, const std::string& id) {
  const fs::path temp = path.string() + ".tmp";
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(Errno("cannot write", temp.string()));
  const std::string line = id + "\n";
  const bool written =
      write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  close(fd);
  if (!written || rename(temp.c_str(), path.c_str()) != 0) {
    return IoError(Errno("cannot write", path.string()));
  }
  return Status::Ok();
}

bool HasEntries(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  return !ec && it != fs::directory_iterator();
}

// Calls `try_lock` until it succeeds, a failure other than "held by another process" (errno
// EWOULDBLOCK, EAGAIN or EACCES) occurs, or kLockWait has passed; true when it succeeded, else
// errno is try_lock's. The wait covers a daemon killed a moment ago whose lock the kernel has
// not let go of yet (seen under load right after kill -9 and waitpid); a daemon that is really
// running keeps its lock, and the caller fails after the wait.
template <typename TryLock>
bool RetryWhileHeld(TryLock try_lock) {
  constexpr auto kLockWait = std::chrono::seconds(3);
  const auto give_up = std::chrono::steady_clock::now() + kLockWait;
  while (!try_lock()) {
    const int error = errno;
    if ((error != EWOULDBLOCK && error != EAGAIN && error != EACCES) ||
        std::chrono::steady_clock::now() >= give_up) {
      errno = error;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    errno = error;
  }
  return true;
}

}  // namespace

Result<StateLock> StateLock::Acquire(const std::string& workdir, const std::string& db_path,
                                     Timestamp now) {
  StateLock lock;
  lock.holder_ = "pid=" + std::to_string(getpid()) + " host=" + HostName() + " since=" + Utc(now);
  const std::string lock_path = workdir + "/dlsched.lock";
  lock.workdir_fd_ = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.workdir_fd_ < 0) return IoError(Errno("cannot open lock file", lock_path));
  if (!RetryWhileHeld([&] { return flock(lock.workdir_fd_, LOCK_EX | LOCK_NB) == 0; })) {
    if (errno != EWOULDBLOCK) return IoError(Errno("cannot lock", lock_path));
    return FailedPrecondition("workdir " + workdir + " is in use by another dlsched daemon (" +
                              DescribeHolder(ReadAll(lock.workdir_fd_)) + "; lock file " +
                              lock_path +
                              "): stop that daemon first, or give this one its own "
                              "--workdir and --db");
  }
  lock.db_fd_ = open(db_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock.db_fd_ < 0) return IoError(Errno("cannot open database", db_path));
  struct flock range {};
  range.l_type = F_WRLCK;
  range.l_whence = SEEK_SET;
  range.l_start = kDbLockByte;
  range.l_len = 1;
  if (!RetryWhileHeld([&] { return fcntl(lock.db_fd_, F_OFD_SETLK, &range) == 0; })) {
    if (errno != EAGAIN && errno != EACCES) return IoError(Errno("cannot lock", db_path));
    return FailedPrecondition("database " + db_path + " is in use by another dlsched daemon (" +
                              DescribeHolder(DatabaseHolder(db_path)) +
                              "): stop that daemon first; two daemons on one database would "
                              "run every job twice");
  }
  const std::string line = lock.holder_ + "\n";
  if (ftruncate(lock.workdir_fd_, 0) != 0 ||
      pwrite(lock.workdir_fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return IoError(Errno("cannot write", lock_path));
  }
  return lock;
}

StateLock::~StateLock() { Release(); }

StateLock::StateLock(StateLock&& other) noexcept
    : workdir_fd_(std::exchange(other.workdir_fd_, -1)),
      db_fd_(std::exchange(other.db_fd_, -1)),
      holder_(std::move(other.holder_)) {}

StateLock& StateLock::operator=(StateLock&& other) noexcept {
  if (this != &other) {
    Release();
    workdir_fd_ = std::exchange(other.workdir_fd_, -1);
    db_fd_ = std::exchange(other.db_fd_, -1);
    holder_ = std::move(other.holder_);
  }
  return *this;
}

void StateLock::Release() {
  // Closing the descriptors drops the locks. The lock file keeps its last holder's line: a
  // refused daemon reads it only while the lock is held, when it is current.
  if (db_fd_ >= 0) close(db_fd_);
  if (workdir_fd_ >= 0) close(workdir_fd_);
  db_fd_ = -1;
  workdir_fd_ = -1;
}

Status BindWorkdir(StateStore& store, const std::string& db_path, const std::string& workdir) {
  const fs::path id_file = fs::path(workdir) / kStoreIdFile;
  DS_ASSIGN_OR_RETURN(const std::optional<std::string> db_id, store.GetMeta(kStoreIdKey));
  DS_ASSIGN_OR_RETURN(const std::optional<std::string> dir_id, ReadIdFile(id_file));
  const std::string afresh = "; to start afresh instead, give a new --workdir (or move " + workdir +
                             "/jobs and " + id_file.string() +
                             " away), so that no new job reads an old job's log or checkpoint";
  if (db_id && dir_id) {
    if (*db_id == *dir_id) return Status::Ok();
    return FailedPrecondition("workdir " + workdir + " belongs to another database: its store id " +
                              "is " + *dir_id + " (" + id_file.string() + "), database " + db_path +
                              " has " + *db_id +
                              ". Start with the --db this workdir was used with, or give " +
                              db_path + " its own --workdir");
  }
  DS_ASSIGN_OR_RETURN(const int64_t jobs, store.CountJobs());
  const bool job_dirs = HasEntries(fs::path(workdir) / "jobs");
  if (dir_id) {
    return FailedPrecondition(
        "workdir " + workdir + " belongs to the database with store id " + *dir_id + " (" +
        id_file.string() + "), but database " + db_path +
        (jobs == 0 ? " is new: the database this workdir was used with is lost or replaced. "
                   : " has no store id (it is not that database). ") +
        "Start with --db pointing at the database this workdir was used with" + afresh);
  }
  if (db_id) {
    if (job_dirs) {
      return FailedPrecondition("database " + db_path + " has store id " + *db_id +
                                ", but workdir " + workdir +
                                " has job directories and no store id: they are not this "
                                "database's jobs. Give the database the workdir it was used "
                                "with" +
                                afresh);
    }
    return WriteIdFile(id_file, *db_id);
  }
  if (jobs == 0 && job_dirs) {
    return FailedPrecondition("workdir " + workdir + " has job directories (" + workdir +
                              "/jobs) but database " + db_path +
                              " is new: they belong to a database that is lost or replaced. "
                              "Start with --db pointing at that database" +
                              afresh);
  }
  // A new pair, or one from before store ids (the database's jobs are the workdir's).
  const std::string id = NewStoreId();
  DS_RETURN_IF_ERROR(store.Begin());
  if (Status set = store.SetMeta(kStoreIdKey, id); !set.ok()) {
    store.Rollback();
    return set;
  }
  DS_RETURN_IF_ERROR(store.Commit());
  return WriteIdFile(id_file, id);
}

Result<std::string> SetAsideJobDir(const std::string& workdir, const std::string& job_dir,
                                   Timestamp now) {
  struct stat st {};
  if (lstat(job_dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::string();
    return IoError(Errno("cannot inspect", job_dir));
  }
  // A plain file in the way holds no job's files: the launch fails on it, as on any lasting fault.
  if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) return std::string();
  // Private: the directories it receives held another job's files.
  const std::string orphaned = workdir + "/orphaned";
  if (mkdir(orphaned.c_str(), 0700) != 0 && errno != EEXIST) {
    return IoError(Errno("cannot create", orphaned));
  }
  const std::string to = orphaned + "/" + fs::path(job_dir).filename().string() + "-" +
                         std::to_string(now.time_since_epoch().count());
  if (rename(job_dir.c_str(), to.c_str()) != 0) {
    return IoError(Errno("cannot move " + job_dir + " to", to));
  }
  return to;
}

}  // namespace dlsched::daemon
