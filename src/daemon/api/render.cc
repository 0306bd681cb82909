#include "daemon/api/render.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "daemon/api/render_gpu.h"
#include "daemon/job/job_request.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

// Shortest round-trippable-enough text for a metric value ("0.00025", not 0.000250000...01).
std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// The time a running job with progress has left, and its basis (JobJson's ETA); nullopt when
// there is none.
std::optional<std::pair<double, const char*>> TimeLeft(const JobRecord& job, Timestamp now,
                                                       const std::optional<Progress>& progress,
                                                       const JobPrediction* prediction) {
  if (!progress || job.state != JobState::kRunning) return std::nullopt;
  const JobSpec& spec = job.request->spec;
  const double total = progress->total > 0 ? progress->total : job.request->total_iterations;
  if (total <= 0) return std::nullopt;
  const double fraction = std::clamp(progress->done / total, 0.0, 1.0);
  if (prediction != nullptr && prediction->iters_per_s > 0) {
    // The predictor works in JobSpec units (spec.iterations for the whole job).
    return std::pair{(1 - fraction) * spec.iterations / prediction->iters_per_s, "predictor"};
  }
  const Duration run_time = job.run_time + std::max(Duration(0), now - job.segment_start);
  if (fraction > 0 && fraction < 1 && run_time > Duration(0)) {
    // Remaining wall time at the job's observed rate so far.
    return std::pair{ToSeconds(run_time) * (1 - fraction) / fraction, "observed"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<Timestamp> EstimatedEnd(const JobRecord& job, Timestamp now,
                                      const std::optional<Progress>& progress,
                                      const JobPrediction* prediction) {
  const auto left = TimeLeft(job, now, progress, prediction);
  if (!left) return std::nullopt;
  return now + Seconds(left->first);
}

std::vector<std::optional<Timestamp>> EstimateStarts(const std::vector<int>& waiting_gpus,
                                                     int free_now,
                                                     std::vector<std::pair<Timestamp, int>> ends) {
  std::sort(ends.begin(), ends.end());
  std::vector<std::optional<Timestamp>> starts;
  starts.reserve(waiting_gpus.size());
  int64_t needed = 0;  // this job's GPUs and those of every job ahead of it
  size_t ended = 0;    // ends[0, ended) are counted in `free`
  int64_t free = free_now;
  for (int gpus : waiting_gpus) {
    needed += gpus;
    // The earliest end at which enough is free; the first job's start is never before one.
    while (ended < ends.size() && (ended == 0 || free < needed)) free += ends[ended++].second;
    starts.push_back(ended > 0 && free >= needed ? std::optional(ends[ended - 1].first)
                                                 : std::nullopt);
  }
  return starts;
}

json TimeJson(Timestamp t) { return t == kTimeNever ? json(nullptr) : json(FormatTime(t)); }

json JobJson(const JobRecord& job, Timestamp now, const std::optional<Progress>& progress,
             const PendingReason* pending, const JobPrediction* prediction) {
  const JobRequest& request = *job.request;
  const JobSpec& spec = request.spec;
  const bool running = job.state == JobState::kRunning;
  const Duration segment = running ? std::max(Duration(0), now - job.segment_start) : Duration(0);
  const Duration run_time = job.run_time + segment;
  json j = {
      {"id", job.id.value()},
      {"name", spec.name},
      {"user", spec.user},
      {"state", std::string(JobStateName(job.state))},
      {"kind", spec.is_service() ? "service" : "training"},
      {"gpus", spec.num_gpus},
      {"gpu_type", spec.gpu_type},
      {"cpus", spec.cpus},
      {"host_memory_mib", spec.host_memory_mib},
      {"selector", spec.selector},
      {"prefer", spec.preferences},
      {"framework", std::string(FrameworkName(request.framework))},
      {"priority", spec.priority},
      {"qos", std::string(QosClassName(spec.qos))},
      {"submit_time", TimeJson(spec.submit_time)},
      {"queued_since",
       IsTerminal(job.state) || running ? json(nullptr) : TimeJson(job.queued_since)},
      {"first_start", TimeJson(job.first_start)},
      {"finish_time", TimeJson(job.finish_time)},
      {"run_time_s", ToSeconds(run_time)},
      {"attained_gpu_s", ToSeconds(job.attained_gpu_time + segment * spec.num_gpus)},
      {"preemptions", job.preemptions},
      {"migrations", job.migrations},
      {"oom_restarts", job.oom_restarts},
      {"placement", json(nullptr)},
      {"pid", json(nullptr)},
      {"stopping", json(nullptr)},
      {"exit_code", job.exit_code ? json(*job.exit_code) : json(nullptr)},
      {"reason", job.reason},
      {"progress", json(nullptr)},
      {"spec", JobRequestToJson(request)},
  };
  j["deadline"] = spec.deadline ? TimeJson(*spec.deadline) : json(nullptr);
  if (running) {
    j["segment_start"] = TimeJson(job.segment_start);
    if (!job.placement_text.empty()) j["placement"] = job.placement_text;
    if (job.pid > 0) j["pid"] = job.pid;
    if (!job.stopping.empty()) j["stopping"] = job.stopping;
  }
  if (progress) {
    const double total = progress->total > 0 ? progress->total : request.total_iterations;
    json p = {{"iterations_done", progress->done},
              {"iterations_total", total > 0 ? json(total) : json(nullptr)},
              {"fraction", json(nullptr)},
              {"eta", json(nullptr)},
              {"eta_basis", json(nullptr)},
              {"predicted_iters_per_s", json(nullptr)},
              {"correction", json(nullptr)}};
    if (running && prediction != nullptr) p["correction"] = prediction->correction;
    if (total > 0) {
      const double fraction = std::clamp(progress->done / total, 0.0, 1.0);
      p["fraction"] = fraction;
      if (running && prediction != nullptr && prediction->iters_per_s > 0) {
        // The report is in the job's own iterations (total for the whole job).
        p["predicted_iters_per_s"] = prediction->iters_per_s * total / spec.iterations;
      }
      if (const auto left = TimeLeft(job, now, progress, prediction)) {
        p["eta"] = TimeJson(now + Seconds(left->first));
        p["eta_basis"] = left->second;
      }
    }
    j["progress"] = p;
  }
  if (pending) {
    j["pending_reason"] = pending->reason;
    j["pending_cause"] = std::string(PendingCauseName(pending->cause));
  }
  return j;
}

json JobTimelineJson(const JobRecord& job) {
  json events = json::array();
  if (job.timeline) {
    for (const JobTimelineEvent& e : *job.timeline) {
      events.push_back({{"at", TimeJson(e.at)}, {"kind", e.kind}, {"detail", e.detail}});
    }
  }
  return events;
}

json NodesJson(const Snapshot& s, const Principal& viewer) {
  const Cluster& cluster = *s.cluster;
  auto visible = [&](JobId id) -> const JobRecord* {
    const JobRecord* job = s.jobs.Find(id);
    return job != nullptr && viewer.MayAccess(job->user()) ? job : nullptr;
  };
  const NodeHoldings& holdings = *s.nodes;
  json nodes = json::array();
  int total_allocated = 0;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const NodeSpec& node = cluster.node(NodeId(n));
    const bool offline = n < static_cast<int>(holdings.offline.size()) && holdings.offline[n];
    json gpus = json::array();
    int allocated = 0;
    for (size_t g = 0; g < node.gpus.size(); ++g) {
      static const GpuHolding kFree;
      const GpuHolding& gpu =
          n < static_cast<int>(holdings.gpus.size()) ? holdings.gpus[n][g] : kFree;
      json holder = nullptr;
      json id = nullptr;
      json ids = json::array();
      for (size_t i = 0; i < gpu.holders.size(); ++i) {
        const JobId h = gpu.holders[i];
        const JobRecord* job = visible(h);
        if (job != nullptr) ids.push_back(h.value());
        if (i > 0) continue;
        // The first holder names the GPU's holder kind.
        if (job != nullptr) {
          holder = job->request->spec.is_service() ? "service" : "training";
          id = h.value();
        } else {
          holder = "other";
        }
      }
      if (!gpu.holders.empty()) ++allocated;
      const char* state = offline                  ? "offline"
                          : gpu.lent_by.valid()    ? "lent"
                          : gpu.holders.size() > 1 ? "shared"
                          : !gpu.holders.empty()   ? "allocated"
                                                   : "free";
      gpus.push_back({{"index", g},
                      {"type", cluster.gpu_type_name(node.gpus[g].type)},
                      {"memory_mib", node.gpus[g].memory_mib},
                      {"state", state},
                      {"allocated", !gpu.holders.empty()},
                      {"holder", holder},
                      {"job", id},
                      {"holders", gpu.holders.size()},
                      {"jobs", ids},
                      {"lent_by", gpu.lent_by.valid() && visible(gpu.lent_by) != nullptr
                                      ? json(gpu.lent_by.value())
                                      : json(nullptr)},
                      {"device", GpuDeviceJson(s, n, static_cast<int>(g))}});
    }
    total_allocated += allocated;
    json labels = json::object();
    for (const auto& [k, v] : node.labels) labels[k] = v;
    const NodeHoldings::HostHeld held = static_cast<size_t>(n) < holdings.host_held.size()
                                            ? holdings.host_held[n]
                                            : NodeHoldings::HostHeld{};
    nodes.push_back({{"name", node.name},
                     {"rack", cluster.rack_name(node.rack)},
                     {"labels", labels},
                     {"offline", offline},
                     {"gpus_total", node.gpus.size()},
                     {"gpus_allocated", allocated},
                     {"cpus", node.cpus},
                     {"cpus_allocated", held.cpus},
                     {"memory_mib", node.memory_mib},
                     {"memory_mib_allocated", held.memory_mib},
                     {"gpus", gpus}});
  }
  const int total = cluster.total_gpus();
  return {{"nodes", nodes},
          {"host_enforcement", s.host_enforcement},
          {"gpus_total", total},
          {"gpus_allocated", total_allocated},
          {"allocation", total > 0 ? static_cast<double>(total_allocated) / total : 0.0}};
}

json QueueJson(const std::vector<QueueEntry>& entries, Timestamp at, const Snapshot& s) {
  json jobs = json::array();
  for (const QueueEntry& e : entries) {
    const JobSpec& spec = e.job->request->spec;
    jobs.push_back(
        {{"position", e.position},
         {"id", e.job->id.value()},
         {"name", spec.name},
         {"user", spec.user},
         {"state", std::string(JobStateName(e.job->state))},
         {"gpus", spec.num_gpus},
         {"gpu_type", spec.gpu_type},
         {"priority", spec.priority},
         {"queued_since", TimeJson(e.job->queued_since)},
         {"reason", e.reason},
         {"cause", std::string(PendingCauseName(e.cause))},
         {"estimated_start", e.estimated_start ? TimeJson(*e.estimated_start) : json(nullptr)}});
  }
  return {{"at", TimeJson(at)},
          {"policy", s.profile},
          {"length", s.count(JobState::kQueued) + s.count(JobState::kSuspended)},
          {"pending", s.count(JobState::kPending)},
          {"running", s.count(JobState::kRunning)},
          {"jobs", jobs}};
}

std::string MetricsText(const Snapshot& s, Timestamp now, int64_t resident_bytes) {
  std::ostringstream out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  metric("dlsched_jobs", "gauge", "Jobs the daemon knows, by state.");
  for (size_t i = 0; i < s.jobs_by_state.size(); ++i) {
    out << "dlsched_jobs{state=\"" << JobStateName(static_cast<JobState>(i)) << "\"} "
        << s.jobs_by_state[i] << "\n";
  }
  metric("dlsched_queue_length", "gauge", "Jobs waiting in the queue (queued or suspended).");
  out << "dlsched_queue_length " << s.count(JobState::kQueued) + s.count(JobState::kSuspended)
      << "\n";
  metric("dlsched_running_jobs", "gauge", "Jobs running.");
  out << "dlsched_running_jobs " << s.count(JobState::kRunning) << "\n";
  metric("dlsched_gpus", "gauge", "GPUs the daemon schedules.");
  out << "dlsched_gpus " << s.cluster->total_gpus() << "\n";
  metric("dlsched_gpus_allocated", "gauge", "GPUs allocated to running jobs.");
  out << "dlsched_gpus_allocated " << s.gpus_allocated << "\n";
  metric("dlsched_submissions_total", "counter", "Jobs accepted since the daemon started.");
  out << "dlsched_submissions_total " << s.metrics.submissions << "\n";
  metric("dlsched_launches_total", "counter", "Job run segments started.");
  out << "dlsched_launches_total " << s.metrics.launches << "\n";
  metric("dlsched_preemptions_total", "counter", "Preemptions requested.");
  out << "dlsched_preemptions_total " << s.metrics.preemptions << "\n";
  metric("dlsched_migrations_total", "counter", "Migrations requested (of the preemptions).");
  out << "dlsched_migrations_total " << s.metrics.migrations << "\n";
  metric("dlsched_oom_restarts_total", "counter", "Runs requeued out of GPU memory.");
  out << "dlsched_oom_restarts_total " << s.metrics.oom_restarts << "\n";
  metric("dlsched_host_memory_kills_total", "counter",
         "Runs killed for going over their host memory.");
  out << "dlsched_host_memory_kills_total " << s.metrics.host_memory_kills << "\n";
  metric("dlsched_host_enforcement", "gauge",
         "How jobs are held to their CPUs and host memory (the mode label; always 1).");
  out << "dlsched_host_enforcement{mode=\"" << s.host_enforcement << "\"} 1\n";
  metric("dlsched_executor_events_total", "counter", "Process outcomes handled.");
  out << "dlsched_executor_events_total " << s.metrics.events << "\n";
  metric("dlsched_store_commits_total", "counter", "SQLite transactions committed.");
  out << "dlsched_store_commits_total " << s.metrics.store_commits << "\n";
  metric("dlsched_inbox_length", "gauge", "Requests waiting for the scheduler thread.");
  out << "dlsched_inbox_length " << s.inbox_length << "\n";
  metric("dlsched_scheduling_cycle_seconds", "histogram", "Wall time of scheduling cycles.");
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kCycleBuckets.size(); ++b) {
    cumulative += s.metrics.cycle_buckets[b];
    out << "dlsched_scheduling_cycle_seconds_bucket{le=\"" << Number(kCycleBuckets[b]) << "\"} "
        << cumulative << "\n";
  }
  cumulative += s.metrics.cycle_buckets.back();
  out << "dlsched_scheduling_cycle_seconds_bucket{le=\"+Inf\"} " << cumulative << "\n";
  out << "dlsched_scheduling_cycle_seconds_sum " << Number(s.metrics.cycle_seconds_sum) << "\n";
  out << "dlsched_scheduling_cycle_seconds_count " << s.metrics.cycles << "\n";
  // The histogram's buckets stop at 2.5 s; this says how slow the slowest was.
  metric("dlsched_scheduling_cycle_max_seconds", "gauge",
         "Wall time of the slowest scheduling cycle since the daemon started.");
  out << "dlsched_scheduling_cycle_max_seconds " << Number(s.metrics.cycle_seconds_max) << "\n";
  metric("dlsched_uptime_seconds", "gauge", "Seconds since the daemon started.");
  out << "dlsched_uptime_seconds " << Number(ToSeconds(now - s.started_at)) << "\n";
  if (resident_bytes > 0) {
    metric("process_resident_memory_bytes", "gauge", "Resident memory of the daemon.");
    out << "process_resident_memory_bytes " << resident_bytes << "\n";
  }
  return out.str();
}

int HttpStatus(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

json ErrorJson(const Status& status) {
  json error = {{"code", std::string(StatusCodeName(status.code()))},
                {"message", status.message()}};
  if (status.code() == StatusCode::kInvalidArgument) {
    const std::string& m = status.message();
    const size_t colon = m.find(": ");
    if (colon != std::string::npos && colon > 0 &&
        std::all_of(m.begin(), m.begin() + static_cast<ptrdiff_t>(colon), [](char c) {
          return std::islower(static_cast<unsigned char>(c)) || c == '_' ||
                 std::isdigit(static_cast<unsigned char>(c));
        })) {
      error["field"] = m.substr(0, colon);
    }
  }
  return {{"error", error}};
}

}  // namespace dlsched::daemon
