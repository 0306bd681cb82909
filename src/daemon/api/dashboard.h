#pragma once

// The web dashboard (issue 22, README "The dashboard"): the page's files, embedded in the binary
// at build time from web/ (cmake/EmbedWeb.cmake) and served at `/` and `/ui/<file>`, and what
// the daemon computes for it beyond the REST API it otherwise reads: a small in-memory history
// of cluster-wide counts (GET /v1/history) and each tenant's quota and use (GET /v1/tenants).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/core/daemon.h"
#include "dlsched/common/time.h"
#include "dlsched/policy/pipeline.h"

namespace dlsched::daemon {

// One embedded file of web/: `name` is its path below web/ ("index.html", "app.js").
struct WebAsset {
  std::string_view name;
  std::string_view bytes;
};

// Every file of web/, sorted by name (generated at build time).
std::span<const WebAsset> WebAssets();

// The asset a request path names: "/", "/ui" and "/ui/" name index.html, "/ui/NAME" names NAME;
// nullptr for anything else.
const WebAsset* FindWebAsset(std::string_view path);

// The Content-Type of an asset, from its name's extension (text types with charset=utf-8;
// application/octet-stream for an unknown one).
std::string_view WebContentType(std::string_view name);

// The response headers every dashboard file is served with (name, value): a Content-Security-
// Policy that lets the page load and fetch from its own origin only (no CDN, no other host,
// no inline script), no framing, no referrer, no MIME sniffing, and revalidation on each load.
std::span<const std::pair<std::string_view, std::string_view>> WebHeaders();

// Cluster-wide counts at one moment, as GET /v1/history lists them.
struct HistorySample {
  Timestamp at;
  int64_t queued = 0;   // waiting in the queue: queued + suspended (the queue's "length")
  int64_t pending = 0;  // not yet admitted
  int64_t running = 0;
  int gpus_allocated = 0;
  int gpus_total = 0;
  // The mean utilisation (0..1) of the GPUs in the GPU monitor's latest sample; none without a
  // monitor or before its first sample.
  std::optional<double> gpu_utilization;
};

// The counts of `snapshot` at `at`.
HistorySample SampleOf(const Snapshot& snapshot, Timestamp at);

// A ring of the last `capacity` samples of the daemon's published snapshot (read from `source`),
// one every `interval` (the first at Start), kept in memory only (a restarted daemon begins a
// new one). With the defaults, 1440 samples every 10 s: the last 4 hours, about 60 KiB.
// Thread-safe (ApiServer starts it on its serving thread and may stop it from another).
class History {
 public:
  static constexpr Duration kDefaultInterval = std::chrono::seconds(10);
  static constexpr size_t kDefaultCapacity = 1440;

  // The latest snapshot, or nullptr before the daemon started (then no sample is taken).
  using Source = std::function<std::shared_ptr<const Snapshot>()>;

  // Precondition: interval > 0, capacity > 0.
  explicit History(Source source, Duration interval = kDefaultInterval,
                   size_t capacity = kDefaultCapacity);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Starts the sampling thread (no-op when started); the daemon must have started.
  void Start();
  // Stops and joins it (no-op when not started).
  void Stop();
  // Appends a sample, dropping the oldest beyond capacity.
  void Add(const HistorySample& sample);

  // The samples, oldest first.
  std::vector<HistorySample> Samples() const;
  Duration interval() const { return interval_; }
  size_t capacity() const { return capacity_; }

 private:
  const Source source_;
  const Duration interval_;
  const size_t capacity_;
  std::mutex lifecycle_mu_;  // Start and Stop, around thread_
  mutable std::mutex mu_;    // the rest
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<HistorySample> samples_;
  std::thread thread_;
};

// GET /v1/history's body: {"interval_s", "capacity", "samples": [{"at", "queue_length",
// "pending", "running", "gpus_allocated", "gpus_total", "gpu_utilization" (null: none)}, ...]}
// (docs/api/openapi.yaml).
nlohmann::json HistoryJson(const History& history);

// GET /v1/tenants's body: one entry per tenant (JobSpec::queue, "" for jobs without one) that
// has a job in `snapshot` or a quota of its own in `quotas`, sorted by name, with the quota as
// the policy applies it (its own entry, else "*"; none: null shares) in shares and in GPUs (the
// share of the cluster's GPUs, rounded down, as the pipeline policy counts it), the GPUs its
// running jobs hold, how many of those are beyond its guarantee ("gpus_borrowed", null without a
// quota), and its jobs
// running and waiting (queued, suspended or pending). Totals over all tenants: every caller
// sees them, as every caller sees how many GPUs are allocated (GET /v1/nodes).
nlohmann::json TenantsJson(const Snapshot& snapshot,
                           const std::map<std::string, PipelineConfig::Quota, std::less<>>& quotas);

}  // namespace dlsched::daemon
