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
// BM_DaemonScale/<profile>: 10,000 fake GPUs and 100,000 queued jobs (issue 19; see the function),
//   run only with DLSCHED_BENCH_SCALE_JOBS set.

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
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
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
  // `extra`: further `serve` arguments.
  explicit Daemon(std::string gpus, std::string durability = "full", std::string profile = "fifo",
                  std::vector<std::string> extra = {})
      : gpus_(std::move(gpus)),
        durability_(std::move(durability)),
        profile_(std::move(profile)),
        extra_(std::move(extra)) {
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
    std::vector<std::string> args = {binary ? binary : DLSCHED_BINARY,
                                     "serve",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--gpus",
                                     gpus_,
                                     "--profile",
                                     profile_,
                                     "--durability",
                                     durability_,
                                     "--workdir",
                                     (dir_ / "work").string(),
                                     "--grace",
                                     "1",
                                     "--http-threads",
                                     "32",
                                     "--kill-jobs-on-exit"};
    args.insert(args.end(), extra_.begin(), extra_.end());
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

  void Stop() { Signal(SIGTERM); }
  // A crash: SIGKILL, so the jobs' processes live on and nothing is written at exit.
  void Kill() { Signal(SIGKILL); }

  // Resident set size of the daemon process, MiB.
  double RssMib() const {
    std::istringstream status(ReadFile("/proc/" + std::to_string(pid_) + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
  }

  // Bytes of the SQLite database with its write-ahead log.
  int64_t StoreBytes() const {
    int64_t bytes = 0;
    for (const char* suffix : {"", "-wal"}) {
      std::error_code ec;
      const auto size = fs::file_size(dir_ / ("work/dlsched.db" + std::string(suffix)), ec);
      if (!ec) bytes += static_cast<int64_t>(size);
    }
    return bytes;
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
  void Signal(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string gpus_;
  std::string durability_;
  std::string profile_;
  std::vector<std::string> extra_;
  fs::path dir_;
  pid_t pid_ = -1;
  std::string url_;
  Clock::time_point started_;
  Clock::time_point ready_;
};

const std::string kBlocker = R"({"script": "sleep 600", "gpus": 4})";
const std::string kQueued = R"({"command": ["true"], "gpus": 1, "name": "bench"})";

// Submits `count` jobs from `clients` threads, the i-th with body(i); returns the per-request
// latencies (ms), or an empty vector after a failed request.
std::vector<double> SubmitMany(const Daemon& daemon, int clients, int count,
                               const std::function<std::string(int)>& body) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto client = daemon.Client();
      for (int i; (i = next.fetch_add(1)) < count && !failed;) {
        const auto t0 = Clock::now();
        auto res = client->Post("/v1/jobs", body(i), "application/json");
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

std::vector<double> SubmitMany(const Daemon& daemon, int clients, int count,
                               const std::string& body) {
  return SubmitMany(daemon, clients, count, [&](int) { return body; });
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

// /metrics as name (with labels) -> value; empty when the request failed.
std::map<std::string, double> Metrics(const Daemon& daemon) {
  std::map<std::string, double> values;
  auto res = daemon.Client()->Get("/metrics");
  if (!res || res->status != 200) return values;
  std::istringstream text(res->body);
  std::string line;
  while (std::getline(text, line)) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    values[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return values;
}

// The value of `name` in a scrape, 0 when absent (a binary from before the metric).
double Metric(const std::map<std::string, double>& metrics, const std::string& name) {
  const auto it = metrics.find(name);
  return it == metrics.end() ? 0 : it->second;
}

// The cycles of dlsched_scheduling_cycle_seconds between two scrapes of one process.
struct CycleWindow {
  std::vector<std::pair<double, double>> buckets;  // (upper bound, cycles in it); +Inf last
  double count = 0;
  double sum_s = 0;

  CycleWindow(const std::map<std::string, double>& before,
              const std::map<std::string, double>& after) {
    const std::string prefix = "dlsched_scheduling_cycle_seconds_bucket{le=\"";
    double below = 0;
    for (auto it = after.lower_bound(prefix); it != after.end() && it->first.starts_with(prefix);
         ++it) {
      const std::string le = it->first.substr(prefix.size(), it->first.size() - prefix.size() - 2);
      const auto old = before.find(it->first);
      const double cumulative = it->second - (old == before.end() ? 0 : old->second);
      buckets.emplace_back(le == "+Inf" ? INFINITY : std::stod(le), cumulative);
    }
    // The map orders the bounds as text; the histogram's order is numeric.
    std::sort(buckets.begin(), buckets.end());
    for (auto& [bound, n] : buckets) {
      const double cumulative = n;
      n -= below;
      below = cumulative;
    }
    const auto delta = [&](const std::string& name) {
      const auto a = after.find(name);
      const auto b = before.find(name);
      return (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
    };
    count = delta("dlsched_scheduling_cycle_seconds_count");
    sum_s = delta("dlsched_scheduling_cycle_seconds_sum");
  }

  // Upper bound (ms) of the bucket holding the p-quantile cycle (nearest rank); for p = 1, of
  // the slowest cycle's bucket. 0 without cycles.
  double QuantileBoundMs(double p) const {
    const double rank = std::max(1.0, std::ceil(p * count));
    double seen = 0;
    for (const auto& [bound, n] : buckets) {
      seen += n;
      if (n > 0 && seen >= rank) return 1e3 * bound;
    }
    return 0;
  }
  double MeanMs() const { return count > 0 ? 1e3 * sum_s / count : 0; }

  void Report(benchmark::State& state, const std::string& phase) const {
    state.counters[phase + "_cycles"] = count;
    state.counters[phase + "_cycle_mean_ms"] = MeanMs();
    state.counters[phase + "_cycle_p50_le_ms"] = QuantileBoundMs(0.50);
    state.counters[phase + "_cycle_p99_le_ms"] = QuantileBoundMs(0.99);
    state.counters[phase + "_cycle_max_le_ms"] = QuantileBoundMs(1.0);
  }
};

// Polls /metrics until `name` reaches `value` or `timeout` passes; returns whether it did.
bool WaitForMetric(const Daemon& daemon, const std::string& name, double value,
                   std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    const std::map<std::string, double> m = Metrics(daemon);
    if (const auto it = m.find(name); it != m.end() && it->second >= value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// BM_DaemonScale/<profile>: issue 19's cluster scale, live. `serve --gpus 1250x8xV100` (10,000
// fake GPUs) under the profile, --durability full:
//   fill: 1,250 eight-GPU `sleep 3600` jobs take every GPU, 125 in each of ten queues (tenants
//     team0..team9, each at exactly a tenth of the GPUs, so no quota reclaims GPUs; every profile's
//     preemption guard, 10 minutes or more, outlasts the benchmark);
//   submit: DLSCHED_BENCH_SCALE_JOBS (100,000 for BENCHMARKS.md; unset: skipped) `true` jobs
//     of 1, 2, 4 or 8 GPUs (half of them one GPU) spread over the ten queues, from 32 keep-alive
//     clients: submissions/s, the request latency, and the cycles run meanwhile, the queue
//     growing to 100,000;
//   queue: 500 more submissions from one client, each answered after the cycle it causes, with
//     100,000 jobs waiting: the cycle cost at that queue and the round trip a user sees;
//     then the daemon's RSS and the store's size;
//   restart: kill -9 and a restart on the same state (100,000 queued jobs restored, 1,250
//     running ones re-adopted), the time until it listens;
//   drain: the blockers cancelled (8 clients), so waiting jobs start (and end at once), until
//     20,000 have launched (or all of them) or 60 s have passed: the blockers cancelled by then,
//     launches/s and the cycles meanwhile (these are the local executor's process spawns: each
//     launch forks a wrapper, the dlsched binary, on this machine).
// fill_s: the time the blockers took to submit and start.
// Cycle times come from /metrics (dlsched_scheduling_cycle_seconds): per phase the count, the
// mean (the histogram's sum) and the upper bounds of the buckets holding p50, p99 and the slowest
// cycle (`_le_ms`); cycle_max_ms is the daemon's own slowest cycle (the gauge
// dlsched_scheduling_cycle_max_seconds) over fill, submit and queue.
void BM_DaemonScale(benchmark::State& state, const std::string& profile) {
  // Minutes and thousands of processes: only on request.
  const char* env = std::getenv("DLSCHED_BENCH_SCALE_JOBS");
  if (env == nullptr) {
    return state.SkipWithError("set DLSCHED_BENCH_SCALE_JOBS (100000 for issue 19's figures)");
  }
  const int count = std::atoi(env);
  constexpr int kNodes = 1250;
  constexpr int kQueues = 10;
  // 1,250 nodes on one machine: no cgroup per job (the host's CPUs are not the nodes').
  Daemon daemon(std::to_string(kNodes) + "x8xV100", "full", profile, {"--host-enforcer", "none"});
  if (!daemon.Start()) return state.SkipWithError("the daemon did not start");
  const auto blocker = [](int i) {
    return R"({"command": ["sleep", "3600"], "gpus": 8, "name": "blocker", "queue": "team)" +
           std::to_string(i % kQueues) + "\"}";
  };
  const auto queued = [](int i) {
    static constexpr int kGpus[] = {1, 1, 1, 1, 2, 2, 4, 8};
    return R"({"command": ["true"], "name": "scale", "gpus": )" + std::to_string(kGpus[i % 8]) +
           R"(, "queue": "team)" + std::to_string(i % kQueues) + "\"}";
  };
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (SubmitMany(daemon, 32, kNodes, blocker).empty()) {
      return state.SkipWithError("a blocker was refused");
    }
    if (!WaitForMetric(daemon, "dlsched_running_jobs", kNodes, std::chrono::seconds(300))) {
      return state.SkipWithError("the blockers did not all start");
    }
    const std::map<std::string, double> filled = Metrics(daemon);
    state.counters["fill_s"] = std::chrono::duration<double>(Clock::now() - t0).count();

    t0 = Clock::now();
    std::vector<double> latencies = SubmitMany(daemon, 32, count, queued);
    const double submit_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (latencies.empty()) return state.SkipWithError("a submission failed");
    const std::map<std::string, double> submitted = Metrics(daemon);
    state.counters["submit_per_s"] = count / submit_s;
    state.counters["submit_p50_ms"] = Percentile(latencies, 0.50);
    state.counters["submit_p99_ms"] = Percentile(latencies, 0.99);
    CycleWindow(filled, submitted).Report(state, "submit");

    latencies = SubmitMany(daemon, 1, 500, [&](int i) { return queued(count + i); });
    if (latencies.empty()) return state.SkipWithError("a submission failed");
    const std::map<std::string, double> queue = Metrics(daemon);
    state.counters["queue_length"] = Metric(queue, "dlsched_queue_length");
    state.counters["queue_submit_p50_ms"] = Percentile(latencies, 0.50);
    state.counters["queue_submit_p99_ms"] = Percentile(latencies, 0.99);
    CycleWindow(submitted, queue).Report(state, "queue");
    state.counters["cycle_max_ms"] = 1e3 * Metric(queue, "dlsched_scheduling_cycle_max_seconds");
    state.counters["rss_mib"] = daemon.RssMib();
    state.counters["store_mib"] = static_cast<double>(daemon.StoreBytes()) / (1 << 20);

    daemon.Kill();
    if (!daemon.Start()) return state.SkipWithError("the daemon did not restart");
    state.counters["restart_ms"] = daemon.StartupMs();
    state.counters["rss_restarted_mib"] = daemon.RssMib();
    const std::map<std::string, double> restarted = Metrics(daemon);
    state.counters["restarted_running"] = Metric(restarted, "dlsched_running_jobs");

    t0 = Clock::now();
    const auto drain_end = t0 + std::chrono::seconds(60);
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < 8; ++c) {
      threads.emplace_back([&] {
        auto client = daemon.Client();
        for (int id; Clock::now() < drain_end && (id = next.fetch_add(1)) < kNodes;) {
          client->Delete("/v1/jobs/" + std::to_string(id));
        }
      });
    }
    for (std::thread& t : threads) t.join();
    state.counters["drain_cancelled"] = std::min(next.load(), kNodes);
    const double launches_before = Metric(restarted, "dlsched_launches_total");
    WaitForMetric(daemon, "dlsched_launches_total", launches_before + std::min(20000, count + 500),
                  std::chrono::duration_cast<std::chrono::seconds>(drain_end - Clock::now()));
    const double drain_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::map<std::string, double> drained = Metrics(daemon);
    state.counters["drain_launches_per_s"] =
        (Metric(drained, "dlsched_launches_total") - launches_before) / drain_s;
    CycleWindow(restarted, drained).Report(state, "drain");
  }
}
BENCHMARK_CAPTURE(BM_DaemonScale, fifo, std::string("fifo"))
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DaemonScale, las, std::string("las"))->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DaemonScale, priority_quota, std::string("priority-quota"))
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DaemonScale, dlsched, std::string("dlsched"))
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
