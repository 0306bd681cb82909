// The JSON summary of `dlsched simulate` (RunsToJson, declared in sim/report.h).

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/common/version.h"
#include "sim/report.h"
#include "sim/report_table.h"

namespace dlsched::sim {

std::string RunsToJson(const std::vector<RunResult>& runs, const JsonMeta& meta, bool timings) {
  using Json = nlohmann::ordered_json;
  Json doc = Json::object();
  doc["trace"] = meta.trace;
  doc["cluster"] = meta.cluster;
  doc["seed"] = meta.seed;
  if (!meta.host_allocation.empty()) doc["host_allocation"] = meta.host_allocation;
  doc["dlsched_version"] = kVersion;
  Json& list = doc["runs"] = Json::array();
  const bool with_qos = AnyQos(runs);
  for (const RunResult& run : runs) {
    const RunSummary& s = run.summary;
    Json r = Json::object();
    r["policy"] = run.policy;
    r["oracle"] = run.oracle;
    r["runtime_estimator"] = run.runtime_estimator;
    r["speed_estimator"] = run.speed_estimator;
    r["jobs"] = s.jobs;
    if (s.cpu_jobs > 0) r["cpu_jobs"] = s.cpu_jobs;  // (absent from GPU-only runs, as before)
    r["completed"] = s.completed;
    r["rejected"] = s.rejected;
    r["unfinished"] = s.unfinished;
    r["avg_jct_s"] = s.avg_jct_s;
    r["p50_jct_s"] = s.p50_jct_s;
    r["p95_jct_s"] = s.p95_jct_s;
    r["p99_jct_s"] = s.p99_jct_s;
    r["avg_queue_s"] = s.avg_queue_s;
    r["makespan_s"] = s.makespan_s;
    r["gpu_utilization"] = s.gpu_utilization;
    r["preemptions"] = s.preemptions;
    r["avg_slowdown"] = s.avg_slowdown;
    r["p95_slowdown"] = s.p95_slowdown;
    r["avg_ftf"] = s.avg_ftf;
    r["max_ftf"] = s.max_ftf;
    r["fragmentation_blocked_s"] = s.fragmentation_blocked_s;
    const SharingSummary& sharing = run.sharing;
    r["gpu_mem_utilization"] = sharing.gpu_mem_utilization;
    r["migrations"] = sharing.migrations;
    r["oom_restarts"] = sharing.oom_restarts;
    r["sharing"] = {{"gpu_sm_utilization", sharing.gpu_sm_utilization},
                    {"shared_gpu_s", sharing.shared_gpu_s},
                    {"jobs_shared", sharing.jobs_shared},
                    {"max_slowdown", sharing.max_slowdown},
                    {"p95_slowdown", sharing.p95_slowdown},
                    {"oom_lost_gpu_s", sharing.oom_lost_gpu_s}};
    Json& causes = r["pending_s_by_cause"] = Json::object();
    for (int c = 0; c < kNumPendingCauses; ++c) {
      // The host-resource causes appear only where they occurred (clusters stating CPUs), so
      // GPU-only runs report as they did before the causes existed.
      const auto cause = static_cast<PendingCause>(c);
      if (cause >= PendingCause::kHostShort && s.pending_s_by_cause[c] == 0) continue;
      causes[std::string(PendingCauseName(cause))] = s.pending_s_by_cause[c];
    }
    Json& tenants = r["tenant_share"] = Json::object();
    for (const auto& [tenant, share] : s.tenant_share) tenants[tenant] = share;
    Json& types = r["gpu_type_utilization"] = Json::object();
    for (const auto& [type, utilization] : s.gpu_type_utilization) types[type] = utilization;
    if (s.host_blocked_gpu_share) r["host_blocked_gpu_share"] = *s.host_blocked_gpu_share;
    r["wall_s"] = s.wall_s;
    if (timings) {
      r["cycles"] = s.cycle_times.cycles;
      r["cycle_p50_s"] = s.cycle_times.p50_s;
      r["cycle_p99_s"] = s.cycle_times.p99_s;
      r["cycle_max_s"] = s.cycle_times.max_s;
    }
    if (run.services.services > 0) {
      r["services"] = {{"services", run.services.services},
                       {"reserved_gpus", run.services.reserved_gpus},
                       {"lent_gpu_s", run.services.lent_gpu_s},
                       {"yields", run.services.yields},
                       {"shortfall_gpu_s", run.services.shortfall_gpu_s}};
    }
    if (with_qos) {
      r["qos_jobs"] = s.qos_jobs;
      r["qos_met_rate"] = s.qos_met_rate;
      r["qos_met_rate_strict"] = s.qos_met_rate_strict;
      r["qos_met_rate_soft"] = s.qos_met_rate_soft;
      r["best_effort_avg_jct_s"] = s.best_effort_avg_jct_s;
    }
    list.push_back(std::move(r));
  }
  // With error_handler_t::replace, dump() cannot throw on bad UTF-8 (its only input-driven
  // exception), so nothing escapes this boundary.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace dlsched::sim
