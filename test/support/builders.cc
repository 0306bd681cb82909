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
JobBuilder& JobBuilder::Host(int cpus, int64_t memory_mib) {
  job_.spec.cpus = cpus;
  job_.spec.host_memory_mib = memory_mib;
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
    std::stringstream pieces(term);
    std::string piece;
    std::getline(pieces, piece, ':');
    DS_CHECK(std::sscanf(piece.c_str(), "%dx%dx%31s", &nodes, &gpus, type) == 3) << term;
    // ":<n>c" states CPU cores, ":<n>m" host memory in MiB.
    int cpus = 0;
    int64_t memory_mib = 0;
    while (std::getline(pieces, piece, ':')) {
      DS_CHECK(piece.size() >= 2 && (piece.back() == 'c' || piece.back() == 'm')) << term;
      const int64_t value = std::stoll(piece.substr(0, piece.size() - 1));
      if (piece.back() == 'c') {
        cpus = static_cast<int>(value);
      } else {
        memory_mib = value;
      }
    }
    // A CPU-only term ("2x0xcpu:32c") adds no GPU type.
    const GpuTypeId type_id = gpus > 0 ? cluster.InternGpuType(type) : GpuTypeId();
    for (int i = 0; i < nodes; ++i, ++node_index) {
      NodeSpec node;
      node.name = "n" + std::to_string(node_index);
      node.rack = cluster.InternRack("r" + std::to_string(node_index / nodes_per_rack));
      node.cpus = cpus;
      node.memory_mib = memory_mib;
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
