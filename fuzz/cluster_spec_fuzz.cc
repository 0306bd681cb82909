// Fuzz target: cluster specs (io/cluster_spec.h), as JSON files and as `--cluster` text
// (shorthand, "philly"). Checks that no input crashes or throws, and that a parsed cluster
// written out as a JSON spec (every name, type, memory size, group, label made explicit) parses
// back to the same cluster.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "io/cluster_spec.h"

namespace {

using dlsched::Cluster;
using dlsched::NodeSpec;
using nlohmann::json;

// The JSON spec of `cluster`. Racks in order of their first node; each rack's nodes must be
// consecutive, as every spec form builds them.
json RenderCluster(const Cluster& cluster) {
  json racks = json::array();
  for (const NodeSpec& node : cluster.nodes()) {
    const std::string& rack = cluster.rack_name(node.rack);
    if (racks.empty() || racks.back()["name"] != rack) {
      racks.push_back({{"name", rack}, {"nodes", json::array()}});
    }
    int groups = 0;
    for (const dlsched::GpuSpec& gpu : node.gpus) {
      groups = std::max(groups, gpu.interconnect_group + 1);
    }
    json labels = json::object();
    for (const auto& [key, value] : node.labels) labels[key] = value;
    racks.back()["nodes"].push_back({{"name", node.name},
                                     {"gpus", node.gpus.size()},
                                     {"gpu_type", cluster.gpu_type_name(node.gpus[0].type)},
                                     {"gpu_memory_mib", node.gpus[0].memory_mib},
                                     {"nvlink_groups", groups},
                                     {"cpus", node.cpus},
                                     {"memory_mib", node.memory_mib},
                                     {"labels", labels}});
  }
  return {{"racks", racks}};
}

void CheckSame(const Cluster& want, const Cluster& got, const std::string& text) {
  DS_CHECK(got.num_nodes() == want.num_nodes() && got.num_racks() == want.num_racks() &&
           got.total_gpus() == want.total_gpus() && got.Describe() == want.Describe())
      << "re-rendered cluster differs: " << want.Describe() << " vs " << got.Describe() << " from "
      << text;
  for (int i = 0; i < want.num_nodes(); ++i) {
    const dlsched::NodeId id(static_cast<uint32_t>(i));
    const NodeSpec& a = want.node(id);
    const NodeSpec& b = got.node(id);
    DS_CHECK(a.name == b.name && want.rack_name(a.rack) == got.rack_name(b.rack) &&
             a.labels == b.labels && a.cpus == b.cpus && a.memory_mib == b.memory_mib &&
             a.gpus.size() == b.gpus.size())
        << "node " << a.name << " differs after re-rendering " << text;
    for (size_t g = 0; g < a.gpus.size(); ++g) {
      DS_CHECK(want.gpu_type_name(a.gpus[g].type) == got.gpu_type_name(b.gpus[g].type) &&
               a.gpus[g].memory_mib == b.gpus[g].memory_mib &&
               a.gpus[g].interconnect_group == b.gpus[g].interconnect_group)
          << "GPU " << g << " of node " << a.name << " differs after re-rendering " << text;
    }
  }
}

// Round trip through the JSON form, for clusters small enough to render cheaply.
void CheckRoundTrip(const Cluster& cluster) {
  if (cluster.num_nodes() > 256) return;
  const std::string text = RenderCluster(cluster).dump();
  const dlsched::Result<Cluster> again = dlsched::ParseClusterJson(text, "rendered");
  DS_CHECK(again.ok()) << "re-rendered cluster does not parse: " << again.status().message() << "\n"
                       << text;
  CheckSame(cluster, *again, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (dlsched::Result<Cluster> cluster = dlsched::ParseClusterJson(text, "fuzz.json");
      cluster.ok()) {
    CheckRoundTrip(*cluster);
  }
  // `--cluster` text, except a path to a .json file (that would read whatever file it names).
  if (!text.ends_with(".json")) {
    if (dlsched::Result<Cluster> cluster = dlsched::ParseClusterSpec(text, ""); cluster.ok()) {
      CheckRoundTrip(*cluster);
    }
  }
  return 0;
}
