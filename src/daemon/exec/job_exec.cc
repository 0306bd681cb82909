#include "daemon/exec/job_exec.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/exec/job_files.h"
#include "dlsched/common/text.h"

namespace dlsched::daemon {
namespace {

std::string JoinIds(const std::vector<gid_t>& ids) {
  std::string out;
  for (gid_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// Writes `text` to fd 2 (the job's stderr pipe, in the child).
void Complain(const std::string& text) {
  const std::string line = "dlsched: " + text + "\n";
  [[maybe_unused]] const ssize_t n = write(2, line.data(), line.size());
}

// The job's process, after fork: never returns.
[[noreturn]] void ExecJob(const JobExecRequest& request, int out, int err) {
  dup2(out, 1);
  dup2(err, 2);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
  if (const std::optional<UnixAccount>& a = request.account) {
    // Groups first, then the gid, then the uid: once the uid is dropped nothing else can be.
    const bool dropped = setgroups(a->groups.size(), a->groups.data()) == 0 &&
                         setresgid(a->gid, a->gid, a->gid) == 0 &&
                         setresuid(a->uid, a->uid, a->uid) == 0;
    // And it must hold: the ids are the account's, and root's cannot be taken back.
    const bool held = dropped && getuid() == a->uid && geteuid() == a->uid && getgid() == a->gid &&
                      getegid() == a->gid && (a->uid == 0 || setuid(0) != 0);
    if (!held) {
      Complain("cannot switch to Unix account " + a->name + " (uid " + std::to_string(a->uid) +
               ", gid " + std::to_string(a->gid) + "): " + std::strerror(errno));
      _exit(126);
    }
  }
  if (chdir(request.workdir.c_str()) != 0) {
    Complain("cannot enter working directory " + request.workdir + ": " + std::strerror(errno));
    _exit(126);
  }
  clearenv();
  for (const std::string& e : request.env) {
    const size_t eq = e.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    setenv(e.substr(0, eq).c_str(), e.c_str() + eq + 1, 1);
  }
  setenv("PWD", request.workdir.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  const int why = errno;
  Complain("cannot run " + request.argv[0] + ": " + std::strerror(why));
  _exit(why == ENOENT ? 127 : 126);
}

// Reads what `fd` has now into `log`; false at end of file (or a read error).
bool Drain(int fd, CappedLog& log) {
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    // A log that cannot be written (its disk is full) drops output; the job goes on.
    (void)log.Append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

}  // namespace

std::vector<std::string> JobExecArgs(const JobExecRequest& request) {
  std::vector<std::string> args = {std::string(kJobExecCommand),
                                   "--job-dir",
                                   request.job_dir,
                                   "--workdir",
                                   request.workdir,
                                   "--max-log-bytes",
                                   std::to_string(request.max_log_bytes)};
  if (request.account) {
    args.insert(args.end(), {"--uid", std::to_string(request.account->uid), "--gid",
                             std::to_string(request.account->gid), "--groups",
                             JoinIds(request.account->groups)});
  }
  args.push_back("--");
  args.insert(args.end(), request.argv.begin(), request.argv.end());
  return args;
}

Result<JobExecRequest> ParseJobExecArgs(std::span<const std::string> args) {
  if (args.empty() || args[0] != kJobExecCommand) {
    return InvalidArgument("want " + std::string(kJobExecCommand) + " first");
  }
  JobExecRequest request;
  std::optional<int64_t> uid, gid;
  std::optional<std::string> groups;
  size_t i = 1;
  for (; i < args.size() && args[i] != "--"; i += 2) {
    if (i + 1 >= args.size()) return InvalidArgument(args[i] + ": missing value");
    const std::string& flag = args[i];
    const std::string& value = args[i + 1];
    if (flag == "--job-dir") {
      request.job_dir = value;
    } else if (flag == "--workdir") {
      request.workdir = value;
    } else if (flag == "--max-log-bytes") {
      const std::optional<int64_t> bytes = ParseInt(value);
      if (!bytes || *bytes < 0) return InvalidArgument("--max-log-bytes: want bytes >= 0");
      request.max_log_bytes = *bytes;
    } else if (flag == "--uid" || flag == "--gid") {
      const std::optional<int64_t> id = ParseInt(value);
      if (!id || *id < 0 || *id >= UINT32_MAX) return InvalidArgument(flag + ": want an id");
      (flag == "--uid" ? uid : gid) = id;
    } else if (flag == "--groups") {
      groups = value;

    } else {
      return InvalidArgument("unknown flag " + flag);
    }
  }
  if (i >= args.size() || i + 1 == args.size()) return InvalidArgument("want -- ARGV...");
  request.argv.assign(args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
  if (request.job_dir.empty() || request.workdir.empty()) {
    return InvalidArgument("--job-dir and --workdir are required");
  }
  if (uid.has_value() != gid.has_value() || uid.has_value() != groups.has_value()) {
    return InvalidArgument("--uid, --gid and --groups go together");
  }
  if (uid) {
    UnixAccount account;
    account.uid = static_cast<uid_t>(*uid);
    account.gid = static_cast<gid_t>(*gid);
    account.name = std::to_string(*uid);
    std::string_view list = *groups;
    while (!list.empty()) {
      const size_t comma = std::min(list.find(','), list.size());
      const std::optional<int64_t> g = ParseInt(list.substr(0, comma));
      if (!g || *g < 0 || *g >= UINT32_MAX) return InvalidArgument("--groups: want ids");
      account.groups.push_back(static_cast<gid_t>(*g));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
    request.account = std::move(account);
  }
  return request;
}

CappedLog::CappedLog(std::string path, int64_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes) {}

CappedLog::~CappedLog() {
  if (fd_ >= 0) close(fd_);
}

Status CappedLog::Open() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  DS_ASSIGN_OR_RETURN(fd_, OpenLog(path_));
  struct stat st {};
  size_ = fstat(fd_, &st) == 0 ? st.st_size : 0;
  return Status::Ok();
}

Status CappedLog::Rotate() {
  if (rename(path_.c_str(), (path_ + ".1").c_str()) != 0) {
    return IoError("cannot rotate " + path_ + ": " + std::strerror(errno));
  }
  return Open();
}

Status CappedLog::Append(std::string_view data) {
  if (fd_ < 0) return FailedPrecondition(path_ + " is not open");
  while (!data.empty()) {
    if (max_bytes_ > 0 && size_ >= max_bytes_) DS_RETURN_IF_ERROR(Rotate());
    size_t chunk = data.size();
    if (max_bytes_ > 0) chunk = std::min<size_t>(chunk, static_cast<size_t>(max_bytes_ - size_));
    const ssize_t n = write(fd_, data.data(), chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError("cannot write " + path_ + ": " + std::strerror(errno));
    size_ += n;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

int RunJobExec(const JobExecRequest& request) {
  // The group's SIGTERM is for the job: this process stays to record how it ended.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) signal(sig, SIG_IGN);
  const std::string exit_path = request.job_dir + "/exit";
  auto finish = [&](int code) {
    WriteSmallFile(exit_path, std::to_string(code) + "\n");
    return code;
  };
  if (chdir(request.job_dir.c_str()) != 0) return finish(126);
  CappedLog out(request.job_dir + "/stdout.log", request.max_log_bytes);
  CappedLog err(request.job_dir + "/stderr.log", request.max_log_bytes);
  if (!out.Open().ok() || !err.Open().ok()) return finish(126);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return finish(126);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return finish(126);
  const pid_t pid = fork();
  if (pid < 0) {
    (void)err.Append(std::string("dlsched: cannot start the job: ") + std::strerror(errno) + "\n");
    return finish(126);
  }
  if (pid == 0) ExecJob(request, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  for (int fd : {out_pipe[0], err_pipe[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);

  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  CappedLog* logs[2] = {&out, &err};
  int status = 0;
  bool exited = false;
  while (!exited) {
    // Wakes at least every 100 ms to notice the job's exit even if a process it left behind
    // keeps the pipes open.
    poll(fds, 2, 100);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!Drain(fds[i].fd, *logs[i])) {
          close(fds[i].fd);
          fds[i].fd = -1;  // poll ignores negative descriptors
        }
      }
    }
    const bool both_closed = fds[0].fd < 0 && fds[1].fd < 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, both_closed ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    exited = r == pid || (r < 0 && errno == ECHILD);
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd >= 0) {
      Drain(fds[i].fd, *logs[i]);
      close(fds[i].fd);
    }
  }
  int code = 126;
  if (WIFEXITED(status)) code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
  return finish(code);
}

std::string EncodeEnvironment(const std::vector<std::string>& env) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (const std::string& e : env) {
    for (unsigned char c : e) {
      text += kHex[c >> 4];
      text += kHex[c & 15];
    }
    text += '\n';
  }
  return text;
}

Result<std::vector<std::string>> DecodeEnvironment(std::string_view text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<std::string> env;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) return InvalidArgument("environment: unterminated line");
    const std::string_view line = text.substr(0, end);
    if (line.size() % 2 != 0) return InvalidArgument("environment: odd line");
    std::string entry;
    for (size_t i = 0; i < line.size(); i += 2) {
      const int hi = nibble(line[i]);
      const int lo = nibble(line[i + 1]);
      if (hi < 0 || lo < 0) return InvalidArgument("environment: not hex");
      entry += static_cast<char>(hi * 16 + lo);
    }
    env.push_back(std::move(entry));
    text.remove_prefix(end + 1);
  }
  return env;
}

int JobExecMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Result<JobExecRequest> request = ParseJobExecArgs(args);
  auto usage = [](const Status& status) {
    std::fprintf(stderr, "dlsched %s: %s\n", std::string(kJobExecCommand).c_str(),
                 status.message().c_str());
    return 2;
  };
  if (!request.ok()) return usage(request.status());
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(0, buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return usage(IoError(std::string("stdin: ") + std::strerror(errno)));
    text.append(buf, static_cast<size_t>(n));
  }
  Result<std::vector<std::string>> env = DecodeEnvironment(text);
  if (!env.ok()) return usage(env.status());
  request->env = std::move(env).value();
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0) return usage(IoError("cannot open /dev/null"));
  close(null);
  return RunJobExec(*request);
}

}  // namespace dlsched::daemon
