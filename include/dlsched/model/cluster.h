#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/common/status.h"

namespace dlsched {

// GPUs of one node as a bit set: bit i = GPU i of the node. A node has at most 64 GPUs.
using GpuMask = uint64_t;
inline constexpr int kMaxGpusPerNode = 64;

inline int CountGpus(GpuMask mask) { return std::popcount(mask); }
// The mask of GPUs 0..count-1 (0 <= count <= kMaxGpusPerNode).
inline GpuMask LowestGpus(int count) {
  return count >= kMaxGpusPerNode ? ~GpuMask{0} : (GpuMask{1} << count) - 1;
}

// Node labels, `key=value` (seed 002's "physical labels"). Ordered, so output is deterministic.
using Labels = std::map<std::string, std::string, std::less<>>;

// True when every key=value of `selector` is among `labels` (an empty selector matches all).
bool MatchesSelector(const Labels& labels, const Labels& selector);
// How many key=value pairs of `wanted` are among `labels`.
int CountMatches(const Labels& labels, const Labels& wanted);
// "key=value;key=value" (also accepts ',' between pairs; spaces around items are ignored).
// Fails naming the item without '=' or with an empty key; a repeated key is an error too.
Result<Labels> ParseLabels(std::string_view text);
// The inverse of ParseLabels: "a=1;b=2" in key order; "" for no labels.
std::string FormatLabels(const Labels& labels);

struct GpuSpec {
  GpuTypeId type;
  int64_t memory_mib = 0;
  // GPUs with the same group id in a node share a fast interconnect (an NVLink island).
  int interconnect_group = 0;
};

struct NodeSpec {
  std::string name;
  RackId rack;
  std::vector<GpuSpec> gpus;  // may be empty: a CPU-only node
  // Cluster::AddNode adds `gpu=<type of GPU 0>` and `rack=<rack name>` unless given.
  Labels labels;
  // Host resources: CPU cores and host memory (MiB). 0 = unknown (not scheduled).
  int cpus = 0;
  int64_t memory_mib = 0;
};

// What a job that states no host resources gets, per GPU (Slurm's DefCpuPerGPU and
// DefMemPerGPU). 0 = nothing: such a job asks for no CPUs or memory.
struct HostDefaults {
  int cpus_per_gpu = 0;
  int64_t memory_mib_per_gpu = 0;
  friend bool operator==(const HostDefaults&, const HostDefaults&) = default;
};

// The GPUs of one job on one node, and the node's CPU cores and host memory (MiB) it holds
// there (0 when it asks for none or the node does not state them).
struct NodeGpus {
  NodeId node;
  GpuMask gpus = 0;
  int cpus = 0;
  int64_t memory_mib = 0;
  friend bool operator==(const NodeGpus&, const NodeGpus&) = default;
};

// Where a job runs: one entry per node, in ascending node order. Empty = not placed.
struct Placement {
  std::vector<NodeGpus> parts;

  bool empty() const { return parts.empty(); }
  int num_gpus() const;
  int num_nodes() const { return static_cast<int>(parts.size()); }
  friend bool operator==(const Placement&, const Placement&) = default;
};

// The immutable topology of a cluster: racks -> nodes -> GPUs, GPU type names, labels.
// Built once (from a spec or a shorthand) and shared read-only by everything else.
class Cluster {
 public:
  // Adds a GPU type name if new; returns its id.
  GpuTypeId InternGpuType(std::string_view name);
  // Adds a rack if new; returns its id.
  RackId InternRack(std::string_view name);
  // Adds a node. Fails if the name is taken, it has more than kMaxGpusPerNode GPUs, or its rack
  // or a GPU type id is unknown.
  Result<NodeId> AddNode(NodeSpec spec);

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_racks() const { return static_cast<int>(rack_names_.size()); }
  int num_gpu_types() const { return static_cast<int>(gpu_type_names_.size()); }
  int total_gpus() const { return total_gpus_; }
  // Host resources summed over the nodes (0 where no node states them).
  int64_t total_cpus() const { return total_cpus_; }
  int64_t total_host_memory_mib() const { return total_host_memory_mib_; }
  const HostDefaults& host_defaults() const { return host_defaults_; }
  void set_host_defaults(HostDefaults defaults) { host_defaults_ = defaults; }
  // The index of the node's GPU 0 among all the cluster's GPUs (nodes in id order, GPUs in
  // index order): GPU g of the node is GPU first_gpu(node) + g of the cluster.
  int first_gpu(NodeId id) const { return first_gpu_[id.index()]; }
  int max_gpus_per_node() const { return max_gpus_per_node_; }
  // GPUs of a type across the cluster.
  int gpus_of_type(GpuTypeId type) const { return gpus_per_type_[type.index()]; }

  const NodeSpec& node(NodeId id) const { return nodes_[id.index()]; }
  const std::vector<NodeSpec>& nodes() const { return nodes_; }
  const std::string& gpu_type_name(GpuTypeId id) const { return gpu_type_names_[id.index()]; }
  const std::string& rack_name(RackId id) const { return rack_names_[id.index()]; }
  // Invalid id when the name is unknown.
  GpuTypeId FindGpuType(std::string_view name) const;
  // The GPU type of a node's GPUs, if the node is homogeneous (all nodes built by shorthands
  // are); a mixed node reports the type of its first GPU.
  GpuTypeId node_gpu_type(NodeId id) const { return node_gpu_type_[id.index()]; }
  // Whether all of the node's GPUs are of node_gpu_type.
  bool node_homogeneous(NodeId id) const { return node_homogeneous_[id.index()]; }
  // The largest number of GPUs of one type a single node has.
  int max_gpus_of_type_per_node(GpuTypeId type) const {
    return max_per_node_of_type_[type.index()];
  }

  // Label classes: nodes with the same GPU type and the same labels are interchangeable for
  // selectors, so the aggregate view (ClusterState::free_of_class) counts free GPUs per class.
  // A few classes per cluster (the rack label makes at least one per rack and type).
  int num_label_classes() const { return static_cast<int>(classes_.size()); }
  LabelClassId node_label_class(NodeId id) const { return node_class_[id.index()]; }
  const Labels& label_class_labels(LabelClassId c) const { return classes_[c.index()].labels; }
  GpuTypeId label_class_gpu_type(LabelClassId c) const { return classes_[c.index()].type; }
  // GPUs in the class's nodes.
  int label_class_gpus(LabelClassId c) const { return classes_[c.index()].gpus; }

  // "64x8xV100 (512 GPUs, 64 nodes, 8 racks)"-style one-line summary.
  std::string Describe() const;

 private:
  struct LabelClass {
    GpuTypeId type;
    Labels labels;
    int gpus = 0;
  };
  LabelClassId InternLabelClass(GpuTypeId type, const Labels& labels, int gpus);

  std::vector<NodeSpec> nodes_;
  // Indexes that keep building a cluster linear in its size: node names, rack ids by name,
  // label classes by (GPU type, labels).
  std::unordered_set<std::string> node_names_;
  std::map<std::string, RackId, std::less<>> rack_ids_;
  std::map<std::pair<GpuTypeId, Labels>, LabelClassId> class_ids_;
  std::vector<GpuTypeId> node_gpu_type_;
  std::vector<char> node_homogeneous_;
  std::vector<LabelClassId> node_class_;
  std::vector<int> first_gpu_;  // per node
  std::vector<LabelClass> classes_;
  std::vector<std::string> gpu_type_names_;
  std::vector<std::string> rack_names_;
  std::vector<int> gpus_per_type_;
  std::vector<int> max_per_node_of_type_;
  int total_gpus_ = 0;
  int max_gpus_per_node_ = 0;
  int64_t total_cpus_ = 0;
  int64_t total_host_memory_mib_ = 0;
  HostDefaults host_defaults_;
};

}  // namespace dlsched
