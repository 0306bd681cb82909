#include "daemon/core/event_log.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "daemon/core/oom_watchdog.h"
#include "dlsched/common/overloaded.h"
#include "io/profile.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

constexpr std::string_view kIterationsDone = "iterations_done=";

std::string ShortestNumber(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

Status Malformed(std::string_view kind, std::string_view what) {
  return InvalidArgument("malformed '" + std::string(kind) + "' event: " + std::string(what));
}

}  // namespace

std::string_view EventKind(const Event& event) {
  return std::visit(Overloaded{
                        [](const JobFinished&) { return event_kind::kFinished; },
                        [](const JobSuspended&) { return event_kind::kSuspended; },
                        [](const JobLaunchFailed&) { return event_kind::kLaunchFailed; },
                        [](const JobCancelRequested&) { return event_kind::kCancel; },
                    },
                    event);
}

std::string EventDetail(const Event& event) {
  return std::visit(Overloaded{
                        [](const JobFinished& e) {
                          return std::string(JobStateName(e.final_state)) + ": " + e.detail;
                        },
                        [](const JobSuspended& e) {
                          return std::string(kIterationsDone) + ShortestNumber(e.iterations_done);
                        },
                        [](const JobLaunchFailed& e) { return e.reason; },
                        [](const JobCancelRequested&) { return std::string(); },
                    },
                    event);
}

Result<Event> ParseEvent(std::string_view kind, JobId job, std::string_view detail) {
  if (kind == event_kind::kFinished) {
    const size_t colon = detail.find(": ");
    if (colon == std::string_view::npos) return Malformed(kind, "want '<state>: <detail>'");
    Result<JobState> state = ParseJobState(detail.substr(0, colon));
    if (!state.ok() || !IsTerminal(*state) || *state == JobState::kRejected) {
      return Malformed(kind, "'" + std::string(detail.substr(0, colon)) + "' is not a final state");
    }
    return Event(JobFinished{job, *state, std::string(detail.substr(colon + 2))});
  }
  if (kind == event_kind::kSuspended) {
    if (!detail.starts_with(kIterationsDone)) return Malformed(kind, "want 'iterations_done=N'");
    const std::string_view number = detail.substr(kIterationsDone.size());
    double done = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), done);
    if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(done)) {
      return Malformed(kind, "'" + std::string(number) + "' is not a number");
    }
    return Event(JobSuspended{job, done});
  }
  if (kind == event_kind::kLaunchFailed) {
    return Event(JobLaunchFailed{job, std::string(detail), /*never_started=*/false,
                                 /*out_of_memory=*/detail.starts_with(kOutOfMemoryReason)});
  }
  if (kind == event_kind::kCancel) return Event(JobCancelRequested{job});
  return InvalidArgument("'" + std::string(kind) + "' is not an executor report or cancellation");
}

json ClusterLogJson(const Cluster& cluster) {
  json types = json::array();
  for (int t = 0; t < cluster.num_gpu_types(); ++t)
    types.push_back(cluster.gpu_type_name(GpuTypeId(t)));
  json racks = json::array();
  for (int r = 0; r < cluster.num_racks(); ++r) racks.push_back(cluster.rack_name(RackId(r)));
  json nodes = json::array();
  for (const NodeSpec& node : cluster.nodes()) {
    json gpus = json::array();
    for (const GpuSpec& gpu : node.gpus) {
      gpus.push_back({gpu.type.value(), gpu.memory_mib, gpu.interconnect_group});
    }
    json labels = json::object();
    for (const auto& [key, value] : node.labels) labels[key] = value;
    nodes.push_back({{"name", node.name},
                     {"rack", node.rack.value()},
                     {"labels", std::move(labels)},
                     {"cpus", node.cpus},
                     {"memory_mib", node.memory_mib},
                     {"gpus", std::move(gpus)}});
  }
  return {
      {"gpu_types", std::move(types)}, {"racks", std::move(racks)}, {"nodes", std::move(nodes)}};
}

Result<Cluster> ParseClusterLogJson(const json& doc) {
  // Third-party exceptions stop here: a malformed document is an InvalidArgument.
  try {
    Cluster cluster;
    for (const json& type : doc.at("gpu_types")) cluster.InternGpuType(type.get<std::string>());
    for (const json& rack : doc.at("racks")) cluster.InternRack(rack.get<std::string>());
    for (const json& n : doc.at("nodes")) {
      NodeSpec node;
      node.name = n.at("name").get<std::string>();
      const int rack = n.at("rack").get<int>();
      if (rack < 0 || rack >= cluster.num_racks()) {
        return InvalidArgument("cluster: node " + node.name + " names rack " +
                               std::to_string(rack) + ", which is not listed");
      }
      node.rack = RackId(static_cast<uint32_t>(rack));
      for (const auto& [key, value] : n.at("labels").items()) {
        node.labels.emplace(key, value.get<std::string>());
      }
      node.cpus = n.at("cpus").get<int>();
      node.memory_mib = n.at("memory_mib").get<int64_t>();
      for (const json& g : n.at("gpus")) {
        const int type = g.at(0).get<int>();
        if (type < 0 || type >= cluster.num_gpu_types()) {
          return InvalidArgument("cluster: node " + node.name + " names GPU type " +
                                 std::to_string(type) + ", which is not listed");
        }
        node.gpus.push_back(
            {GpuTypeId(static_cast<uint32_t>(type)), g.at(1).get<int64_t>(), g.at(2).get<int>()});
      }
      DS_RETURN_IF_ERROR(cluster.AddNode(std::move(node)).status().WithPrefix("cluster"));
    }
    return cluster;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("cluster: ") + e.what());
  }
}

std::string StartDetail(const PolicyProfile& profile, const Cluster& cluster, uint64_t seed,
                        int64_t jobs, int64_t running, std::string_view policy_state,
                        std::string_view predictor) {
  return json{{"profile", json::parse(PolicyProfileToJson(profile))},
              {"cluster", ClusterLogJson(cluster)},
              {"seed", seed},
              {"jobs", jobs},
              {"running", running},
              {"policy_state", policy_state},
              {"predictor", predictor}}
      .dump();
}

Result<StartRecord> ParseStartDetail(std::string_view detail) {
  json doc;
  try {
    doc = json::parse(detail.begin(), detail.end());
  } catch (const json::exception& e) {
    return Malformed(event_kind::kStart, e.what());
  }
  if (!doc.is_object() || !doc.contains("profile") || !doc.contains("cluster") ||
      !doc.contains("seed") || !doc.contains("jobs") || !doc.contains("running")) {
    return Malformed(event_kind::kStart, "want profile, cluster, seed, jobs and running");
  }
  StartRecord record;
  DS_ASSIGN_OR_RETURN(record.profile, ParsePolicyProfile(doc["profile"].dump(), "logged profile"));
  DS_ASSIGN_OR_RETURN(record.cluster, ParseClusterLogJson(doc["cluster"]));
  if (!doc["seed"].is_number_unsigned() || !doc["jobs"].is_number_integer() ||
      !doc["running"].is_number_integer()) {
    return Malformed(event_kind::kStart, "seed, jobs and running must be integers");
  }
  record.seed = doc["seed"].get<uint64_t>();
  record.jobs = doc["jobs"].get<int64_t>();
  record.running = doc["running"].get<int64_t>();
  for (const auto& [key, field] : {std::pair{"policy_state", &record.policy_state},
                                   std::pair{"predictor", &record.predictor}}) {
    const auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_string()) return Malformed(event_kind::kStart, std::string(key) + " must be text");
    *field = it->get<std::string>();
  }
  return record;
}

}  // namespace dlsched::daemon
