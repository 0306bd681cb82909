#include "support/builders.h"

#include <sstream>

namespace dlsched::testing {

JobBuilder::JobBuilder(uint32_t id) {
  job_.id = JobId(id);
  job_.spec.name = "job" + std::to_string(id);
  job_.spec.iterations = 3600;
  job_.spec.ref_iters_per_s = 1;
  job_.state = JobState::kQueued;
  job_.estimated_total = job_.estimated_remaining = std::chrono::seconds(3600);
}

JobBuilder& JobBuilder::Gpus(int n) {
  job_.spec.num_gpus = n;
  return *this;
}
JobBuilder& JobBuilder::Submit(Duration at) {
  job_.spec.submit_time = Timestamp(at);
  job_.queued_since = Timestamp(at);
  return *this;
}
JobBuilder& JobBuilder::Work(Duration ideal) {
  job_.spec.iterations = ToSeconds(ideal);
  job_.estimated_total = job_.estimated_remaining = ideal;
  return *this;
}
JobBuilder& JobBuilder::Attained(Duration gpu_time) {
  job_.attained_gpu_time = gpu_time;
  return *this;
}
JobBuilder& JobBuilder::Priority(int p) {
  job_.spec.priority = p;
  return *this;
}
JobBuilder& JobBuilder::GpuType(std::string type) {
  job_.spec.gpu_type = std::move(type);
  return *this;
}
JobBuilder& JobBuilder::Selector(std::string_view labels) {
  Result<Labels> parsed = ParseLabels(labels);
  DS_CHECK(parsed.ok()) << parsed.status().ToString();
  job_.spec.selector = *std::move(parsed);
  return *this;
}
JobBuilder& JobBuilder::Prefer(std::string_view labels) {
  Result<Labels> parsed = ParseLabels(labels);
  DS_CHECK(parsed.ok()) << parsed.status().ToString();
  job_.spec.preferences = *std::move(parsed);
  return *this;
}
JobBuilder& JobBuilder::Service(std::string_view load) {
  if (load.empty()) {
    job_.spec.service = ServiceLoad{};
    return *this;
  }
  Result<ServiceLoad> parsed = ParseServiceLoad(load);
  DS_CHECK(parsed.ok()) << parsed.status().ToString();
  job_.spec.service = *std::move(parsed);
  return *this;
}
JobBuilder& JobBuilder::Estimate(Duration total, Duration remaining) {
  job_.estimated_total = total;
  job_.estimated_remaining = remaining;
  return *this;
}
JobBuilder& JobBuilder::Running(Timestamp since) {
  job_.state = JobState::kRunning;
  job_.segment_start = since;
  return *this;
}

Cluster MakeCluster(const std::string& spec, int nodes_per_rack,
                    const std::vector<std::string>& labels) {
  Cluster cluster;
  std::stringstream terms(spec);
  std::string term;
  int node_index = 0;
  while (std::getline(terms, term, '+')) {
    int nodes = 0, gpus = 0;
    char type[32] = {};
    DS_CHECK(std::sscanf(term.c_str(), "%dx%dx%31s", &nodes, &gpus, type) == 3) << term;
    const GpuTypeId type_id = cluster.InternGpuType(type);
    for (int i = 0; i < nodes; ++i, ++node_index) {
      NodeSpec node;
      node.name = "n" + std::to_string(node_index);
      node.rack = cluster.InternRack("r" + std::to_string(node_index / nodes_per_rack));
      for (int g = 0; g < gpus; ++g) node.gpus.push_back({type_id, 16384, g / 4});
      if (static_cast<size_t>(node_index) < labels.size()) {
        Result<Labels> parsed = ParseLabels(labels[node_index]);
        DS_CHECK(parsed.ok()) << parsed.status().ToString();
        node.labels = *std::move(parsed);
      }
      DS_CHECK(cluster.AddNode(std::move(node)).ok());
    }
  }
  return cluster;
}

std::vector<JobId> RecordingExecutor::Launched() const {
  std::vector<JobId> ids;
  for (const Call& c : calls) {
    if (c.kind == Call::kLaunch) ids.push_back(c.job);
  }
  return ids;
}

std::vector<JobId> RecordingExecutor::Preempted() const {
  std::vector<JobId> ids;
  for (const Call& c : calls) {
    if (c.kind == Call::kPreempt) ids.push_back(c.job);
  }
  return ids;
}

}  // namespace dlsched::testing
