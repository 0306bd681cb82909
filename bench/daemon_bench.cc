// Benchmarks of the live daemon through its REST API (docs/api/README.md, "Performance"). Each
// starts the real `dlsched serve` on port 0 with fake GPUs and a temporary SQLite file, drives it
// with HTTP clients on keep-alive connections, and stops it (killing its jobs). The binary is
// this build's dlsched, or $DLSCHED_BENCH_BINARY (to compare two builds with one command).
//
// Each runs with --durability full (fsync=1: fsync per commit) and process (fsync=0).
//
// BM_DaemonSubmit/clients:<n>/fsync:<0|1>: submissions per second. A 4-GPU job holds the only
//   node, so the submitted 1-GPU jobs queue behind it (strict FIFO): the cost measured is the
//   API, validation, the durable SQLite commit (synchronous=FULL, one per batch) and a
//   scheduling cycle.
// BM_DaemonSubmitToStart/fsync:<0|1>: on an idle node, the round trip of POST /v1/jobs for a job
//   that starts at once. The reply is sent after the launch has committed and the job has been
//   handed to its wrapper process, so this bounds the submit-to-start latency seen by a client;
//   p50 and p99 over 500 submissions, 20 ms apart so that each finds the daemon idle.
// BM_DaemonHistory: the daemon's resident memory with DLSCHED_BENCH_HISTORY (default 100,000)
//   jobs in its history (submitted, then cancelled), and again after a restart that restores
//   them all from SQLite (with the restore time).

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[i];
}

// A `dlsched serve` process with its own temporary directory.
class Daemon {
 public:
  explicit Daemon(std::string gpus, std::string durability = "full")
      : gpus_(std::move(gpus)), durability_(std::move(durability)) {
    dir_ = fs::temp_directory_path() / ("dlsched_bench_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Daemon() {
    Stop();
    fs::remove_all(dir_);
  }

  // Starts (or restarts) the daemon on the same state; returns false if it did not come up.
  bool Start() {
    const char* binary = std::getenv("DLSCHED_BENCH_BINARY");
    const std::vector<std::string> args = {binary ? binary : DLSCHED_BINARY,
                                           "serve",
                                           "--listen",
                                           "127.0.0.1:0",
                                           "--gpus",
                                           gpus_,
                                           "--profile",
                                           "fifo",
                                           "--durability",
                                           durability_,
                                           "--workdir",
                                           (dir_ / "work").string(),
                                           "--grace",
                                           "1",
                                           "--http-threads",
                                           "32",
                                           "--kill-jobs-on-exit"};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = (dir_ / "out").string();
    const std::string err = (dir_ / "err").string();
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    started_ = Clock::now();
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < deadline) {
      const std::string text = ReadFile(out);
      const size_t at = text.find("listening on http://");
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        ready_ = Clock::now();
        url_ = text.substr(at + 13, text.find('\n', at) - at - 13);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Resident set size of the daemon process, MiB.
  double RssMib() const {
    std::istringstream status(ReadFile("/proc/" + std::to_string(pid_) + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
  }

  std::unique_ptr<httplib::Client> Client() const {
    auto client = std::make_unique<httplib::Client>(url_);
    client->set_keep_alive(true);
    // httplib writes headers and body separately: without TCP_NODELAY, Nagle's algorithm and
    // the server's delayed ACK add ~40 ms to every POST.
    client->set_tcp_nodelay(true);
    client->set_read_timeout(std::chrono::seconds(60));
    return client;
  }
  double StartupMs() const { return Millis(ready_ - started_); }

 private:
  std::string gpus_;
  std::string durability_;
  fs::path dir_;
  pid_t pid_ = -1;
  std::string url_;
  Clock::time_point started_;
  Clock::time_point ready_;
};

const std::string kBlocker = R"({"script": "sleep 600", "gpus": 4})";
const std::string kQueued = R"({"command": ["true"], "gpus": 1, "name": "bench"})";

// Submits `count` jobs from `clients` threads; returns the per-request latencies (ms), or an
// empty vector after a failed request.
std::vector<double> SubmitMany(const Daemon& daemon, int clients, int count,
                               const std::string& body) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = daemon.Client();
      while (next.fetch_add(1) < count && !failed) {
        const auto t0 = Clock::now();
        auto res = client->Post("/v1/jobs", body, "application/json");
        if (!res || res->status != 201) {
          if (!failed.exchange(true)) {
            std::cerr << "submission failed after " << latencies[c].size()
                      << " on this connection, "
                      << std::chrono::duration<double>(Clock::now() - t0).count() << " s: "
                      << (res ? std::to_string(res->status) + " " + res->body
                              : httplib::to_string(res.error()))
                      << "\n";
          }
          return;
        }
        latencies[c].push_back(Millis(Clock::now() - t0));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  if (failed) return all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  return all;
}

const char* DurabilityArg(int64_t full) { return full ? "full" : "process"; }

void BM_DaemonSubmit(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  const int count = clients == 1 ? 2000 : 20000;
  Daemon daemon("1x4xV100", DurabilityArg(state.range(1)));
  if (!daemon.Start()) return state.SkipWithError("the daemon did not start");
  auto client = daemon.Client();
  auto blocker = client->Post("/v1/jobs", kBlocker, "application/json");
  if (!blocker || blocker->status != 201) return state.SkipWithError("blocker refused");
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const std::vector<double> latencies = SubmitMany(daemon, clients, count, kQueued);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (latencies.empty()) return state.SkipWithError("a submission failed");
    state.SetIterationTime(seconds);
    state.counters["submit_per_s"] = count / seconds;
    state.counters["p50_ms"] = Percentile(latencies, 0.50);
    state.counters["p99_ms"] = Percentile(latencies, 0.99);
  }
  state.SetItemsProcessed(count);
}
BENCHMARK(BM_DaemonSubmit)
    ->ArgNames({"clients", "fsync"})
    ->ArgsProduct({{1, 8, 32}, {1, 0}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_DaemonSubmitToStart(benchmark::State& state) {
  const int count = 500;
  Daemon daemon("1x4xV100", DurabilityArg(state.range(0)));
  if (!daemon.Start()) return state.SkipWithError("the daemon did not start");
  auto client = daemon.Client();
  for (auto _ : state) {
    std::vector<double> latencies;
    for (int i = 0; i < count; ++i) {
      // Idle between submissions: the previous job has ended and been recorded.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const auto t0 = Clock::now();
      auto res = client->Post("/v1/jobs", kQueued, "application/json");
      const double ms = Millis(Clock::now() - t0);
      if (!res || res->status != 201) return state.SkipWithError("a submission failed");
      // Only jobs that started within their own request count (the node is idle, so all do
      // unless four earlier `true`s are still being reaped).
      if (res->body.find("\"state\":\"running\"") != std::string::npos) latencies.push_back(ms);
    }
    state.counters["started_in_reply"] = static_cast<double>(latencies.size()) / count;
    state.counters["p50_ms"] = Percentile(latencies, 0.50);
    state.counters["p99_ms"] = Percentile(latencies, 0.99);
  }
}
BENCHMARK(BM_DaemonSubmitToStart)
    ->ArgName("fsync")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_DaemonHistory(benchmark::State& state) {
  const char* env = std::getenv("DLSCHED_BENCH_HISTORY");
  const int count = env ? std::atoi(env) : 100000;
  Daemon daemon("1x4xV100");
  if (!daemon.Start()) return state.SkipWithError("the daemon did not start");
  auto client = daemon.Client();
  const double idle_mib = daemon.RssMib();
  auto blocker = client->Post("/v1/jobs", kBlocker, "application/json");
  if (!blocker || blocker->status != 201) return state.SkipWithError("blocker refused");
  for (auto _ : state) {
    if (SubmitMany(daemon, 8, count, kQueued).empty()) {
      return state.SkipWithError("a submission failed");
    }
    // Cancel them all (waiting jobs end at once): 100,000 jobs of history, none running.
    std::atomic<int> next{1};
    std::vector<std::thread> threads;
    for (int c = 0; c < 8; ++c) {
      threads.emplace_back([&] {
        auto cancel_client = daemon.Client();
        for (int id; (id = next.fetch_add(1)) <= count;) {
          cancel_client->Delete("/v1/jobs/" + std::to_string(id));
        }
      });
    }
    for (std::thread& t : threads) t.join();
    state.counters["jobs"] = count + 1;
    state.counters["rss_idle_mib"] = idle_mib;
    state.counters["rss_mib"] = daemon.RssMib();
    daemon.Stop();
    if (!daemon.Start()) return state.SkipWithError("the daemon did not restart");
    state.counters["restart_ms"] = daemon.StartupMs();
    state.counters["rss_restarted_mib"] = daemon.RssMib();
  }
}
BENCHMARK(BM_DaemonHistory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
