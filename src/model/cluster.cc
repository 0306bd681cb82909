#include "dlsched/model/cluster.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace dlsched {

int Placement::num_gpus() const {
  int n = 0;
  for (const NodeGpus& part : parts) n += CountGpus(part.gpus);
  return n;
}

bool MatchesSelector(const Labels& labels, const Labels& selector) {
  for (const auto& [key, value] : selector) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

int CountMatches(const Labels& labels, const Labels& wanted) {
  int n = 0;
  for (const auto& [key, value] : wanted) {
    const auto it = labels.find(key);
    n += it != labels.end() && it->second == value;
  }
  return n;
}

namespace {

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

}  // namespace

Result<Labels> ParseLabels(std::string_view text) {
  Labels labels;
  while (!text.empty()) {
    const size_t end = text.find_first_of(";,");
    const std::string_view item = TrimSpaces(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("label '" + std::string(item) + "': want key=value");
    }
    const std::string_view key = TrimSpaces(item.substr(0, eq));
    if (key.empty()) return InvalidArgument("label '" + std::string(item) + "': empty key");
    if (!labels.emplace(key, TrimSpaces(item.substr(eq + 1))).second) {
      return InvalidArgument("label key '" + std::string(key) + "' given twice");
    }
  }
  return labels;
}

std::string FormatLabels(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out += ';';
    out += key + "=" + value;
  }
  return out;
}

GpuTypeId Cluster::InternGpuType(std::string_view name) {
  GpuTypeId found = FindGpuType(name);
  if (found.valid()) return found;
  gpu_type_names_.emplace_back(name);
  gpus_per_type_.push_back(0);
  max_per_node_of_type_.push_back(0);
  return GpuTypeId(static_cast<uint32_t>(gpu_type_names_.size() - 1));
}

RackId Cluster::InternRack(std::string_view name) {
  if (const auto it = rack_ids_.find(name); it != rack_ids_.end()) return it->second;
  rack_names_.emplace_back(name);
  const RackId id(static_cast<uint32_t>(rack_names_.size() - 1));
  rack_ids_.emplace(std::string(name), id);
  return id;
}

GpuTypeId Cluster::FindGpuType(std::string_view name) const {
  for (size_t i = 0; i < gpu_type_names_.size(); ++i) {
    if (gpu_type_names_[i] == name) return GpuTypeId(static_cast<uint32_t>(i));
  }
  return GpuTypeId();
}

Result<NodeId> Cluster::AddNode(NodeSpec spec) {
  if (spec.gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return InvalidArgument("node '" + spec.name + "' has " + std::to_string(spec.gpus.size()) +
                           " GPUs; at most " + std::to_string(kMaxGpusPerNode) + " are supported");
  }
  if (!spec.rack.valid() || spec.rack.index() >= rack_names_.size()) {
    return InvalidArgument("node '" + spec.name + "' names an unknown rack");
  }
  if (node_names_.contains(spec.name)) {
    return InvalidArgument("duplicate node name '" + spec.name + "'");
  }
  std::vector<int> per_type(gpu_type_names_.size(), 0);
  for (const GpuSpec& gpu : spec.gpus) {
    if (!gpu.type.valid() || gpu.type.index() >= gpu_type_names_.size()) {
      return InvalidArgument("node '" + spec.name + "' has a GPU of unknown type");
    }
    ++per_type[gpu.type.index()];
  }
  for (size_t t = 0; t < per_type.size(); ++t) {
    gpus_per_type_[t] += per_type[t];
    max_per_node_of_type_[t] = std::max(max_per_node_of_type_[t], per_type[t]);
  }
  first_gpu_.push_back(total_gpus_);
  total_gpus_ += static_cast<int>(spec.gpus.size());
  total_cpus_ += spec.cpus;
  total_host_memory_mib_ += spec.memory_mib;
  max_gpus_per_node_ = std::max(max_gpus_per_node_, static_cast<int>(spec.gpus.size()));
  const GpuTypeId type = spec.gpus.empty() ? GpuTypeId() : spec.gpus.front().type;
  if (type.valid()) spec.labels.emplace("gpu", gpu_type_names_[type.index()]);
  spec.labels.emplace("rack", rack_names_[spec.rack.index()]);
  node_gpu_type_.push_back(type);
  node_homogeneous_.push_back(
      std::ranges::all_of(spec.gpus, [type](const GpuSpec& gpu) { return gpu.type == type; }));
  node_class_.push_back(InternLabelClass(type, spec.labels, static_cast<int>(spec.gpus.size())));
  node_names_.insert(spec.name);
  nodes_.push_back(std::move(spec));
  return NodeId(static_cast<uint32_t>(nodes_.size() - 1));
}

LabelClassId Cluster::InternLabelClass(GpuTypeId type, const Labels& labels, int gpus) {
  const auto [it, added] =
      class_ids_.try_emplace({type, labels}, LabelClassId(static_cast<uint32_t>(classes_.size())));
  if (added) {
    classes_.push_back({type, labels, 0});
  }
  classes_[it->second.index()].gpus += gpus;
  return it->second;
}

namespace {

// ":96c:1024g"-style host suffixes of the cluster shorthand; "" when neither is stated.
std::string HostSuffix(int64_t cpus, int64_t memory_mib) {
  std::string out;
  if (cpus > 0) out += ":" + std::to_string(cpus) + "c";
  if (memory_mib > 0) {
    out += memory_mib % 1024 == 0 ? ":" + std::to_string(memory_mib / 1024) + "g"
                                  : ":" + std::to_string(memory_mib) + "m";
  }
  return out;
}

}  // namespace

std::string Cluster::Describe() const {
  // Group consecutive nodes with the same GPU count, type and host resources, in the shorthand:
  // "64x8xV100+8x4xT4", "4x8xA100:96c:1024g+2xcpu:64c:256g+per-gpu:12c:96g". Host resources
  // appear only where stated, so clusters without them read as before.
  std::ostringstream out;
  size_t i = 0;
  bool first = true;
  while (i < nodes_.size()) {
    size_t j = i;
    const NodeSpec& node = nodes_[i];
    const size_t gpus = node.gpus.size();
    const GpuTypeId type = node_gpu_type_[i];
    while (j < nodes_.size() && nodes_[j].gpus.size() == gpus && node_gpu_type_[j] == type &&
           nodes_[j].cpus == node.cpus && nodes_[j].memory_mib == node.memory_mib) {
      ++j;
    }
    if (!first) out << "+";
    first = false;
    out << (j - i) << "x";
    if (gpus == 0) {
      out << "cpu";
    } else {
      out << gpus << "x" << gpu_type_names_[type.index()];  // a node with GPUs has a type
    }
    out << HostSuffix(node.cpus, node.memory_mib);
    i = j;
  }
  if (host_defaults_.cpus_per_gpu > 0 || host_defaults_.memory_mib_per_gpu > 0) {
    out << "+per-gpu" << HostSuffix(host_defaults_.cpus_per_gpu, host_defaults_.memory_mib_per_gpu);
  }
  out << " (" << total_gpus_ << " GPUs, " << nodes_.size() << " nodes, " << rack_names_.size()
      << " racks";
  if (total_cpus_ > 0) out << ", " << total_cpus_ << " CPUs";
  if (total_host_memory_mib_ > 0) {
    out << ", "
        << (total_host_memory_mib_ % 1024 == 0
                ? std::to_string(total_host_memory_mib_ / 1024) + " GiB"
                : std::to_string(total_host_memory_mib_) + " MiB")
        << " host memory";
  }
  out << ")";
  return out.str();
}

}  // namespace dlsched
