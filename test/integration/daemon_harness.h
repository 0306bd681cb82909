// The harness of the daemon end-to-end tests: the real `dlsched serve` on port 0 with a
// temporary SQLite file and fake GPUs (--gpus 1x4xV100), real short processes, the REST API and
// the CLI. Every wait is a poll with a deadline (no sleep is an assertion), and every test kills
// what it started. Each test file of test/integration derives its fixture from
// DaemonIntegrationTest.

#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

#include "support/test_files.h"

namespace dlsched::integration {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test_support::FreshTestDir;
using test_support::ListeningUrl;
using test_support::ReadTextFile;
using Clock = std::chrono::steady_clock;

inline constexpr auto kDeadline = seconds(10);

// Polls `done` until it holds or the deadline passes.
inline bool Eventually(const std::function<bool()>& done, Clock::duration within = kDeadline) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

// Starts argv with stdout and stderr sent to files; returns the pid.
inline pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

class DaemonIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshTestDir("dlsched_it");
    fs::create_directories(dir_ / "work");
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    KillJobProcesses();
    RemoveHostGroups();
    fs::remove_all(dir_);
  }

  // The cgroups a daemon killed with SIGKILL left (the groups its "host enforcement" start-up
  // line names, and their job groups), what still runs in them killed: a later daemon on the
  // same workdir would remove them, but the test's workdir goes.
  void RemoveHostGroups() {
    std::istringstream err(ReadTextFile(dir_ / "daemon.err"));
    for (std::string line; std::getline(err, line);) {
      const size_t from = line.find("host enforcement cgroup");
      const size_t groups = line.find(": groups ");
      if (from == std::string::npos || groups == std::string::npos) continue;
      std::istringstream dirs(line.substr(groups + 9, line.find(';') - groups - 9));
      for (std::string dir; std::getline(dirs, dir, ',');) {
        if (!dir.empty() && dir[0] == ' ') dir.erase(0, 1);
        std::error_code ec;
        for (const auto& job : fs::directory_iterator(dir, ec)) {
          if (!job.path().filename().string().starts_with("job-")) continue;
          std::istringstream pids(ReadTextFile(job.path() / "cgroup.procs"));
          for (int pid; pids >> pid;) kill(pid, SIGKILL);
          Eventually([&] { return rmdir(job.path().c_str()) == 0 || errno == ENOENT; });
        }
        rmdir(dir.c_str());
      }
    }
  }

  // Every job process group a daemon recorded, if it still runs (pid and start time match).
  void KillJobProcesses() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ / "work" / "jobs", ec)) {
      std::istringstream line(ReadTextFile(entry.path() / "pid"));
      int pid = 0;
      uint64_t start = 0;
      if (!(line >> pid >> start) || pid <= 0) continue;
      const std::string stat = ReadTextFile("/proc/" + std::to_string(pid) + "/stat");
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 2));
      std::string field;
      for (int i = 3; i <= 22 && rest >> field; ++i) {
      }
      if (field == std::to_string(start)) kill(-pid, SIGKILL);
    }
  }

  // Starts the daemon and waits for its "listening on" line.
  void StartDaemon(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--gpus", "1x4xV100"};
    args.insert(args.end(), extra.begin(), extra.end());
    StartServe(args);
  }
  // `dlsched serve` on a loopback port of its choosing, in this test's directory, with `args`
  // (which must name the GPUs); waits for its "listening on" line.
  void StartServe(const std::vector<std::string>& args) {
    std::vector<std::string> command = {DLSCHED_BINARY, "serve",
                                        "--listen",     "127.0.0.1:0",
                                        "--workdir",    (dir_ / "work").string(),
                                        "--db",         (dir_ / "state.db").string(),
                                        "--grace",      "1"};
    command.insert(command.end(), args.begin(), args.end());
    const fs::path out = dir_ / "daemon.out";
    pid_ = Spawn(command, out, dir_ / "daemon.err");
    ASSERT_GT(pid_, 0);
    ASSERT_TRUE(Eventually([&] {
      const std::optional<std::string> url = ListeningUrl(out);
      if (url) url_ = *url;
      return url.has_value();
    })) << "daemon did not start: "
        << ReadTextFile(dir_ / "daemon.err");
    client_ = std::make_unique<httplib::Client>(url_);
    client_->set_read_timeout(seconds(10));
    client_->set_tcp_nodelay(true);
  }

  void Kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int StopDaemon() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  httplib::Headers Auth(const std::string& token) {
    return token.empty() ? httplib::Headers{}
                         : httplib::Headers{{"Authorization", "Bearer " + token}};
  }

  // POSTs a job; returns (status, body).
  std::pair<int, json> Submit(const json& job, const std::string& token = "") {
    auto res = client_->Post("/v1/jobs", Auth(token), job.dump(), "application/json");
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  std::pair<int, json> Get(const std::string& path, const std::string& token = "") {
    auto res = client_->Get(path, Auth(token));
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  std::pair<int, json> Delete(const std::string& path, const std::string& token = "") {
    auto res = client_->Delete(path, Auth(token));
    if (!res) return {0, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  json Job(int64_t id) { return Get("/v1/jobs/" + std::to_string(id) + "?explain=false").second; }

  bool WaitForState(int64_t id, const std::string& state) {
    return Eventually([&] { return Job(id).value("state", "") == state; });
  }

  int64_t StoredJobs() {
    sqlite3* db = nullptr;
    int64_t count = -1;
    if (sqlite3_open_v2((dir_ / "state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM jobs", -1, &stmt, nullptr);
      if (stmt && sqlite3_step(stmt) == SQLITE_ROW) count = sqlite3_column_int64(stmt, 0);
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return count;
  }

  // The rows of `sql` on the daemon's database, opened read-only (as a reader beside a running
  // daemon would), each row's columns joined with '|'.
  std::vector<std::string> StoredRows(const std::string& sql) {
    std::vector<std::string> rows;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir_ / "state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
      while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
        std::string row;
        for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
          if (c > 0) row += "|";
          const unsigned char* text = sqlite3_column_text(stmt, c);
          row += text ? reinterpret_cast<const char*>(text) : "NULL";
        }
        rows.push_back(row);
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return rows;
  }

  // Runs SQL on the daemon's database.
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "state.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  // The detail of the first logged event of `kind` about `job` ("" if none).
  std::string StoredEvent(const std::string& kind, int64_t job) {
    sqlite3* db = nullptr;
    std::string detail;
    if (sqlite3_open_v2((dir_ / "state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db, "SELECT detail FROM events WHERE kind = ?1 AND job = ?2 ORDER BY seq",
                         -1, &stmt, nullptr);
      sqlite3_bind_text(stmt, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(stmt, 2, job);
      if (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
        detail = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return detail;
  }

  // Runs the dlsched CLI against this daemon.
  RunResult Cli(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--server", url_});
    return Dlsched(std::move(args));
  }

  // Runs `dlsched ARGS...`.
  RunResult Dlsched(std::vector<std::string> args) {
    args.insert(args.begin(), DLSCHED_BINARY);
    const fs::path out = dir_ / "cli.out";
    const fs::path err = dir_ / "cli.err";
    const pid_t pid = Spawn(args, out, err);
    int status = 0;
    waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadTextFile(out), ReadTextFile(err)};
  }

  json Script(const std::string& script, int gpus = 1) {
    return {{"script", script}, {"gpus", gpus}, {"workdir", dir_.string()}};
  }
  // A one-GPU job that runs until preempted (exits 0 on SIGTERM, the daemon's preemption), in
  // every run.
  json LongJob() { return Script("trap 'exit 0' TERM; while true; do sleep 0.05; done", 1); }

  // No stop in flight: at least `jobs` jobs were launched, and each one's latest launch, stop or
  // return to the queue is a launch (from the event log). A stop is a preempt; a return is a
  // suspended or launch_failed row, which may come without a preempt: a daemon killed between
  // logging a launch and starting it finds, restarted, the previous segment's stopped process
  // in the job's directory and requeues the job (suspended).
  bool NoStopInFlight(size_t jobs) {
    const std::vector<std::string> rows = StoredRows(
        "SELECT e.kind FROM events e WHERE e.seq = (SELECT MAX(seq) FROM events WHERE job = "
        "e.job AND kind IN ('launch', 'preempt', 'suspended', 'launch_failed')) AND e.job >= 0");
    if (rows.size() < jobs) return false;
    return std::ranges::all_of(rows, [](const std::string& kind) { return kind == "launch"; });
  }
  // The seq of the newest daemon start record; 0 when there is none.
  int64_t LastStartSeq() {
    const std::vector<std::string> rows =
        StoredRows("SELECT MAX(seq) FROM events WHERE kind = 'start'");
    return rows.empty() || rows[0].empty() ? 0 : std::stoll(rows[0]);
  }

  fs::path dir_;
  pid_t pid_ = -1;
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace dlsched::integration
