#include "daemon/api/dashboard.h"

#include <algorithm>
#include <map>

#include "daemon/api/render.h"
#include "dlsched/common/status.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The GPUs a share of the cluster comes to, rounded down as the pipeline policy rounds it
// (src/policy/pipeline.cc, ShareToGpus).
int ShareToGpus(double share, int total_gpus) {
  return static_cast<int>(share * total_gpus + 1e-9);
}

}  // namespace

const WebAsset* FindWebAsset(std::string_view path) {
  std::string_view name;
  if (path == "/" || path == "/ui" || path == "/ui/") {
    name = "index.html";
  } else if (path.starts_with("/ui/")) {
    name = path.substr(4);
  } else {
    return nullptr;
  }
  for (const WebAsset& asset : WebAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

std::string_view WebContentType(std::string_view name) {
  if (EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (EndsWith(name, ".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

std::span<const std::pair<std::string_view, std::string_view>> WebHeaders() {
  static constexpr std::pair<std::string_view, std::string_view> kHeaders[] = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-cache"},
  };
  return kHeaders;
}

HistorySample SampleOf(const Snapshot& s, Timestamp at) {
  HistorySample sample{at,
                       s.count(JobState::kQueued) + s.count(JobState::kSuspended),
                       s.count(JobState::kPending),
                       s.count(JobState::kRunning),
                       s.gpus_allocated,
                       s.cluster->total_gpus()};
  if (s.gpu_devices && !s.gpu_devices->devices.empty()) {
    double sum = 0;
    for (const GpuDeviceSample& d : s.gpu_devices->devices) sum += d.utilization;
    sample.gpu_utilization = sum / static_cast<double>(s.gpu_devices->devices.size());
  }
  return sample;
}

History::History(Source source, Duration interval, size_t capacity)
    : source_(std::move(source)), interval_(interval), capacity_(capacity) {
  DS_CHECK(interval > Duration(0)) << "history interval must be positive";
  DS_CHECK(capacity > 0) << "history capacity must be positive";
}

History::~History() { Stop(); }

void History::Start() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (thread_.joinable()) return;
  static const SystemClock clock;
  auto sample = [this] {
    if (const std::shared_ptr<const Snapshot> s = source_()) Add(SampleOf(*s, clock.Now()));
  };
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  sample();  // the first, before Start returns
  thread_ = std::thread([this, sample] {
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      sample();
      lock.lock();
    }
  });
}

void History::Stop() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void History::Add(const HistorySample& sample) {
  std::lock_guard lock(mu_);
  samples_.push_back(sample);
  while (samples_.size() > capacity_) samples_.pop_front();
}

std::vector<HistorySample> History::Samples() const {
  std::lock_guard lock(mu_);
  return {samples_.begin(), samples_.end()};
}

json HistoryJson(const History& history) {
  json samples = json::array();
  for (const HistorySample& h : history.Samples()) {
    samples.push_back(
        {{"at", TimeJson(h.at)},
         {"queue_length", h.queued},
         {"pending", h.pending},
         {"running", h.running},
         {"gpus_allocated", h.gpus_allocated},
         {"gpus_total", h.gpus_total},
         {"gpu_utilization", h.gpu_utilization ? json(*h.gpu_utilization) : json(nullptr)}});
  }
  return {{"interval_s", ToSeconds(history.interval())},
          {"capacity", history.capacity()},
          {"samples", samples}};
}

json TenantsJson(const Snapshot& s,
                 const std::map<std::string, PipelineConfig::Quota, std::less<>>& quotas) {
  struct Use {
    int gpus_held = 0;
    int64_t running = 0;
    int64_t waiting = 0;
  };
  std::map<std::string, Use, std::less<>> tenants;
  for (const auto& [name, quota] : quotas) {
    if (name != "*") tenants[name];
  }
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    const JobRecord& job = s.jobs.at(i);
    if (IsTerminal(job.state)) continue;
    Use& use = tenants[job.request->spec.queue];
    if (job.state == JobState::kRunning) {
      ++use.running;
      use.gpus_held += job.request->spec.num_gpus;
    } else {
      ++use.waiting;
    }
  }
  const int total = s.cluster->total_gpus();
  json list = json::array();
  for (const auto& [name, use] : tenants) {
    const PipelineConfig::Quota* quota = nullptr;
    if (auto it = quotas.find(name); it != quotas.end()) {
      quota = &it->second;
    } else if (auto star = quotas.find("*"); star != quotas.end()) {
      quota = &star->second;
    }
    json t = {{"name", name},
              {"guaranteed_share", nullptr},
              {"max_share", nullptr},
              {"guaranteed_gpus", nullptr},
              {"cap_gpus", nullptr},
              {"gpus_held", use.gpus_held},
              {"gpus_borrowed", nullptr},
              {"jobs_running", use.running},
              {"jobs_waiting", use.waiting}};
    if (quota != nullptr) {
      const int guaranteed = ShareToGpus(quota->guaranteed_share, total);
      t["guaranteed_share"] = quota->guaranteed_share;
      t["max_share"] = quota->max_share;
      t["guaranteed_gpus"] = guaranteed;
      t["cap_gpus"] = ShareToGpus(quota->max_share, total);
      t["gpus_borrowed"] = std::max(0, use.gpus_held - guaranteed);
    }
    list.push_back(std::move(t));
  }
  return {{"policy", s.profile}, {"gpus_total", total}, {"tenants", list}};
}

}  // namespace dlsched::daemon
