#include "io/cluster_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/common/text.h"
#include "dlsched/perf/throughput_model.h"
#include "io/suggest.h"

namespace dlsched {
namespace {

using nlohmann::json;

constexpr int kNodesPerShorthandRack = 8;
constexpr int64_t kMaxNodesPerTerm = 1'000'000;
// GPUs in a whole cluster: keeps counts within int and a spec's memory within reason.
constexpr int64_t kMaxClusterGpus = 1'000'000;
constexpr std::string_view kShorthandForm =
    "want NODESxGPUSxTYPE or GPUSxTYPE (one node), e.g. 64x8xV100 or 8xA100, optionally with "
    "host resources :Nc (CPU cores) and :Ng or :Nm (memory in GiB or MiB) as in "
    "64x8xV100:96c:1024g; NODESxcpu:Nc[:Ng] for CPU-only nodes; per-gpu:Nc[:Ng] for the "
    "per-GPU defaults (terms joined by '+', GPUS in 1..64)";
// Host resources, per node and per GPU (the per-GPU defaults).
constexpr int64_t kMaxNodeCpus = 1'000'000;
constexpr int64_t kMaxNodeMemoryMib = int64_t{1} << 50;
constexpr int64_t kMaxCpusPerGpu = 1024;
constexpr int64_t kMaxMemoryMibPerGpu = int64_t{1} << 30;
// The shorthand's reserved names: the "type" of CPU-only nodes and the per-GPU defaults term.
constexpr std::string_view kCpuOnlyType = "cpu";
constexpr std::string_view kPerGpuTerm = "per-gpu";

std::string NodeName(int index) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "n%04d", index);
  return buffer;
}

std::string RackName(int index) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "r%03d", index);
  return buffer;
}

// InvalidArgument when adding `nodes` nodes of `gpus` GPUs would take the cluster past
// kMaxClusterGpus; `what` prefixes the message.
Status CheckClusterSize(const Cluster& cluster, int64_t nodes, int64_t gpus,
                        std::string_view what) {
  if (nodes * gpus > kMaxClusterGpus - cluster.total_gpus()) {
    return InvalidArgument(std::string(what) + "the cluster would have more than " +
                           std::to_string(kMaxClusterGpus) + " GPUs");
  }
  return Status::Ok();
}

bool IsTypeName(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// A known type spelt in another case ("v100") is refused: jobs' gpu_type and the throughput
// models match type names exactly, so "v100" would be a type of its own that no V100 job asks
// for and that runs at the unknown-type speed.
Status CheckTypeCase(std::string_view type) {
  for (const std::string& known : KnownGpuTypes()) {
    if (known != type && EditDistanceIgnoringCase(known, type) == 0) {
      return InvalidArgument("GPU type '" + std::string(type) + "' is spelt '" + known +
                             "' (type names are case-sensitive)");
    }
  }
  return Status::Ok();
}

// CPU cores and host memory (MiB) a shorthand term states; 0 = not stated.
struct HostSuffixes {
  int64_t cpus = 0;
  int64_t memory_mib = 0;
};

// Parses the ':'-joined suffixes of a shorthand term (`text` is what follows its first ':'):
// "96c", "1024g", "512m", each kind at most once. `per_gpu` picks the per-GPU bounds instead of
// the per-node ones. Errors say what is wrong with which suffix (the caller names the term).
Result<HostSuffixes> ParseHostSuffixes(std::string_view text, bool per_gpu) {
  const int64_t max_cpus = per_gpu ? kMaxCpusPerGpu : kMaxNodeCpus;
  const int64_t max_memory = per_gpu ? kMaxMemoryMibPerGpu : kMaxNodeMemoryMib;
  HostSuffixes host;
  bool memory_seen = false;
  while (true) {
    const size_t colon = text.find(':');
    const std::string_view suffix = Trim(text.substr(0, colon));
    const char unit = suffix.empty() ? '\0' : suffix.back();
    const std::optional<int64_t> value =
        suffix.size() < 2 ? std::nullopt : ParseInt(suffix.substr(0, suffix.size() - 1));
    if (unit != 'c' && unit != 'g' && unit != 'm') {
      return InvalidArgument("bad suffix '" + std::string(suffix) +
                             "': want Nc (CPU cores), Ng or Nm (host memory in GiB or MiB)");
    }
    if (unit == 'c') {
      if (host.cpus != 0) return InvalidArgument("CPUs given twice");
      if (!value || *value < 1 || *value > max_cpus) {
        return InvalidArgument("bad suffix '" + std::string(suffix) +
                               "': CPU cores must be in [1, " + std::to_string(max_cpus) + "]" +
                               (per_gpu ? " per GPU" : ""));
      }
      host.cpus = *value;
    } else {
      if (memory_seen) return InvalidArgument("memory given twice");
      memory_seen = true;
      const int64_t scale = unit == 'g' ? 1024 : 1;
      if (!value || *value < 1 || *value > max_memory / scale) {
        return InvalidArgument("bad suffix '" + std::string(suffix) + "': memory must be in [1, " +
                               std::to_string(max_memory / scale) + "] " +
                               (unit == 'g' ? "GiB" : "MiB") + (per_gpu ? " per GPU" : ""));
      }
      host.memory_mib = *value * scale;
    }
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  return host;
}

// InvalidArgument naming the first node for whose GPUs the cluster's per-GPU defaults ask more
// CPUs or memory than it states (a node that states none is not limited).
Status CheckHostDefaults(const Cluster& cluster) {
  const HostDefaults& defaults = cluster.host_defaults();
  for (const NodeSpec& node : cluster.nodes()) {
    const int64_t gpus = static_cast<int64_t>(node.gpus.size());
    if (node.cpus > 0 && defaults.cpus_per_gpu * gpus > node.cpus) {
      return InvalidArgument(std::to_string(defaults.cpus_per_gpu) + " CPUs per GPU ask " +
                             std::to_string(defaults.cpus_per_gpu * gpus) + " of node '" +
                             node.name + "' for its " + std::to_string(gpus) + " GPUs; it has " +
                             std::to_string(node.cpus));
    }
    if (node.memory_mib > 0 && defaults.memory_mib_per_gpu * gpus > node.memory_mib) {
      return InvalidArgument(std::to_string(defaults.memory_mib_per_gpu) + " MiB per GPU ask " +
                             std::to_string(defaults.memory_mib_per_gpu * gpus) + " MiB of node '" +
                             node.name + "' for its " + std::to_string(gpus) + " GPUs; it has " +
                             std::to_string(node.memory_mib) + " MiB");
    }
  }
  return Status::Ok();
}

// One homogeneous node: `gpus` GPUs of `type` split into `groups` interconnect groups.
NodeSpec MakeNode(std::string name, RackId rack, GpuTypeId type, int gpus, int64_t memory_mib,
                  int groups) {
  NodeSpec node;
  node.name = std::move(name);
  node.rack = rack;
  node.gpus.resize(static_cast<size_t>(gpus));
  const int per_group = gpus / groups;
  for (int i = 0; i < gpus; ++i) {
    node.gpus[static_cast<size_t>(i)] = GpuSpec{type, memory_mib, i / per_group};
  }
  return node;
}

// The Philly virtual clusters and their node counts as in HeliosArtifact's
// framework/QSSF Service/data/philly_vc.csv (352 nodes). Used when the traces folder is not
// there, so that the preset still works in a bare checkout.
struct VcSize {
  const char* vc;
  int nodes;
};
constexpr std::array<VcSize, 11> kBuiltinPhillyVcs = {{{"6214e9", 64},
                                                       {"7f04ca", 32},
                                                       {"11cb48", 16},
                                                       {"b436b2", 64},
                                                       {"ee9e8c", 64},
                                                       {"e13805", 16},
                                                       {"6c71a0", 32},
                                                       {"2869ce", 16},
                                                       {"ed69ec", 8},
                                                       {"103959", 8},
                                                       {"0e4a51", 32}}};
constexpr int kPhillyGpusPerNode = 8;
constexpr std::string_view kPhillyGpuType = "V100";

// Reads `vc,node num` rows. Returns the VC sizes in file order.
Result<std::vector<std::pair<std::string, int>>> ReadPhillyVcFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open file");
  std::vector<std::pair<std::string, int>> vcs;
  std::string line;
  int line_no = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string_view text = Trim(line);
    if (text.empty()) continue;
    const auto where = [&] { return path + ":" + std::to_string(line_no) + ": "; };
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos) {
      return InvalidArgument(where() + "want 2 comma-separated fields (vc,node num)");
    }
    const std::string_view vc = Trim(text.substr(0, comma));
    const std::string_view count = Trim(text.substr(comma + 1));
    if (!header_seen) {
      header_seen = true;
      if (vc != "vc") return InvalidArgument(where() + "want the header 'vc,node num'");
      continue;
    }
    const std::optional<int64_t> nodes = ParseInt(count);
    if (vc.empty()) return InvalidArgument(where() + "empty vc name");
    if (!nodes || *nodes < 1 || *nodes > kMaxNodesPerTerm) {
      return InvalidArgument(where() + "bad node count '" + std::string(count) +
                             "': want an integer >= 1");
    }
    vcs.emplace_back(std::string(vc), static_cast<int>(*nodes));
  }
  if (vcs.empty()) return InvalidArgument(path + ": no virtual clusters listed");
  return vcs;
}

// ---------------------------------------------------------------------------------------------
// JSON

// Typed getters over a JSON object that remember which keys were read, so leftovers are
// reported as unknown. Errors name the element's path ("racks[0].nodes[1].gpus").
class JsonObject {
 public:
  static Result<JsonObject> Of(const json& value, std::string where) {
    if (!value.is_object()) return InvalidArgument(where + ": want a JSON object");
    return JsonObject(value, std::move(where));
  }

  const std::string& where() const { return where_; }
  std::string At(std::string_view key) const { return where_ + "." + std::string(key); }

  // nullptr when absent.
  const json* Find(std::string_view key) {
    read_.emplace_back(key);
    const auto it = value_->find(std::string(key));
    return it == value_->end() ? nullptr : &*it;
  }

  Result<int64_t> Int(std::string_view key, int64_t fallback, int64_t lo, int64_t hi) {
    const json* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      return InvalidArgument(At(key) + ": want an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
    }
    return v->get<int64_t>();
  }

  Result<std::string> String(std::string_view key, std::string fallback) {
    const json* v = Find(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) return InvalidArgument(At(key) + ": want a string");
    return v->get<std::string>();
  }

  // Call after reading every known key.
  Status CheckNoUnknownKeys() const {
    for (auto it = value_->begin(); it != value_->end(); ++it) {
      bool known = false;
      for (const std::string& key : read_) known = known || key == it.key();
      if (!known) return InvalidArgument(where_ + ": unknown key '" + it.key() + "'");
    }
    return Status::Ok();
  }

 private:
  JsonObject(const json& value, std::string where) : value_(&value), where_(std::move(where)) {}

  const json* value_;
  std::string where_;
  std::vector<std::string> read_;
};

// Adds the nodes of one "nodes" entry of rack `rack`.
Status AddJsonNodes(const json& value, const std::string& where, RackId rack,
                    const std::string& rack_name, Cluster& cluster) {
  DS_ASSIGN_OR_RETURN(JsonObject entry, JsonObject::Of(value, where));
  DS_ASSIGN_OR_RETURN(const std::string name, entry.String("name", ""));
  DS_ASSIGN_OR_RETURN(const int64_t count, entry.Int("count", 1, 1, kMaxNodesPerTerm));
  if (entry.Find("gpus") == nullptr) return InvalidArgument(entry.At("gpus") + ": required");
  DS_ASSIGN_OR_RETURN(const int64_t gpus, entry.Int("gpus", 0, 0, kMaxGpusPerNode));
  DS_ASSIGN_OR_RETURN(const int64_t cpus, entry.Int("cpus", 0, 0, kMaxNodeCpus));
  DS_ASSIGN_OR_RETURN(const int64_t node_memory, entry.Int("memory_mib", 0, 0, kMaxNodeMemoryMib));
  std::string type;
  int64_t memory = 0;
  int64_t groups = 1;
  if (gpus == 0) {
    for (const std::string_view key : {"gpu_type", "gpu_memory_mib", "nvlink_groups"}) {
      if (entry.Find(key) != nullptr) {
        return InvalidArgument(entry.At(key) +
                               ": a CPU-only node (gpus 0) has no GPUs to describe");
      }
    }
    if (cpus == 0) {
      return InvalidArgument(entry.At("cpus") + ": a CPU-only node (gpus 0) must state its CPUs");
    }
  } else {
    DS_ASSIGN_OR_RETURN(type, entry.String("gpu_type", "V100"));
    if (!IsTypeName(type)) {
      return InvalidArgument(entry.At("gpu_type") +
                             ": want a name of letters, digits, '-', '_', '.'");
    }
    DS_RETURN_IF_ERROR(CheckTypeCase(type).WithPrefix(entry.At("gpu_type")));
    DS_ASSIGN_OR_RETURN(
        memory, entry.Int("gpu_memory_mib", DefaultGpuMemoryMib(type), 1, int64_t{1} << 40));
    DS_ASSIGN_OR_RETURN(groups, entry.Int("nvlink_groups", 1, 1, gpus));
    if (gpus % groups != 0) {
      return InvalidArgument(entry.At("nvlink_groups") + ": " + std::to_string(groups) +
                             " groups do not divide " + std::to_string(gpus) + " GPUs evenly");
    }
  }
  Labels labels;
  if (const json* l = entry.Find("labels"); l != nullptr) {
    if (!l->is_object()) return InvalidArgument(entry.At("labels") + ": want an object");
    for (auto it = l->begin(); it != l->end(); ++it) {
      if (!it.value().is_string()) {
        return InvalidArgument(entry.At("labels") + "." + it.key() + ": want a string value");
      }
      labels[it.key()] = it.value().get<std::string>();
    }
  }
  if (gpus > 0) labels.emplace("gpu", type);  // emplace: a label given explicitly wins
  labels.emplace("rack", rack_name);
  DS_RETURN_IF_ERROR(entry.CheckNoUnknownKeys());
  DS_RETURN_IF_ERROR(CheckClusterSize(cluster, count, gpus, where + ": "));

  const GpuTypeId type_id = gpus > 0 ? cluster.InternGpuType(type) : GpuTypeId();
  for (int64_t i = 0; i < count; ++i) {
    std::string node_name = name.empty() ? NodeName(cluster.num_nodes())
                            : count == 1 ? name
                                         : name + "-" + std::to_string(i);
    NodeSpec node = MakeNode(std::move(node_name), rack, type_id, static_cast<int>(gpus), memory,
                             static_cast<int>(groups));
    node.labels = labels;
    node.cpus = static_cast<int>(cpus);
    node.memory_mib = node_memory;
    Result<NodeId> added = cluster.AddNode(std::move(node));
    if (!added.ok()) return added.status().WithPrefix(where);
  }
  return Status::Ok();
}

Result<Cluster> BuildClusterFromJson(const json& doc) {
  DS_ASSIGN_OR_RETURN(JsonObject top, JsonObject::Of(doc, "(top level)"));
  if (const json* d = top.Find("description"); d != nullptr && !d->is_string()) {
    return InvalidArgument("description: want a string");
  }
  const json* racks = top.Find("racks");
  if (racks == nullptr || !racks->is_array() || racks->empty()) {
    return InvalidArgument("racks: want a non-empty array of racks");
  }
  HostDefaults defaults;
  DS_ASSIGN_OR_RETURN(const int64_t cpus_per_gpu, top.Int("cpus_per_gpu", 0, 0, kMaxCpusPerGpu));
  defaults.cpus_per_gpu = static_cast<int>(cpus_per_gpu);
  DS_ASSIGN_OR_RETURN(defaults.memory_mib_per_gpu,
                      top.Int("memory_mib_per_gpu", 0, 0, kMaxMemoryMibPerGpu));
  DS_RETURN_IF_ERROR(top.CheckNoUnknownKeys());
  Cluster cluster;
  cluster.set_host_defaults(defaults);
  for (size_t r = 0; r < racks->size(); ++r) {
    const std::string where = "racks[" + std::to_string(r) + "]";
    DS_ASSIGN_OR_RETURN(JsonObject rack, JsonObject::Of((*racks)[r], where));
    DS_ASSIGN_OR_RETURN(const std::string rack_name,
                        rack.String("name", RackName(static_cast<int>(r))));
    if (rack_name.empty()) return InvalidArgument(rack.At("name") + ": must not be empty");
    if (cluster.num_racks() > 0) {
      for (int i = 0; i < cluster.num_racks(); ++i) {
        if (cluster.rack_name(RackId(static_cast<uint32_t>(i))) == rack_name) {
          return InvalidArgument(rack.At("name") + ": duplicate rack name '" + rack_name + "'");
        }
      }
    }
    const json* nodes = rack.Find("nodes");
    if (nodes == nullptr || !nodes->is_array() || nodes->empty()) {
      return InvalidArgument(rack.At("nodes") + ": want a non-empty array of node entries");
    }
    DS_RETURN_IF_ERROR(rack.CheckNoUnknownKeys());
    const RackId rack_id = cluster.InternRack(rack_name);
    for (size_t n = 0; n < nodes->size(); ++n) {
      DS_RETURN_IF_ERROR(AddJsonNodes((*nodes)[n], rack.At("nodes") + "[" + std::to_string(n) + "]",
                                      rack_id, rack_name, cluster));
    }
  }
  DS_RETURN_IF_ERROR(CheckHostDefaults(cluster).WithPrefix("cpus_per_gpu/memory_mib_per_gpu"));
  return cluster;
}

}  // namespace

const std::vector<std::string>& KnownGpuTypes() {
  static const std::vector<std::string> kTypes = [] {
    std::vector<std::string> types;
    for (const auto& [type, speed] : SimpleThroughputModel::DefaultOptions().type_speed) {
      types.push_back(type);
    }
    return types;
  }();
  return kTypes;
}

std::string DescribeUnknownGpuTypes(const Cluster& cluster) {
  const std::vector<std::string>& known = KnownGpuTypes();
  std::string known_list;
  for (const std::string& type : known) known_list += (known_list.empty() ? "" : ", ") + type;
  std::string text;
  for (uint32_t t = 0; t < static_cast<uint32_t>(cluster.num_gpu_types()); ++t) {
    const std::string type(cluster.gpu_type_name(GpuTypeId(t)));
    if (std::find(known.begin(), known.end(), type) != known.end()) continue;
    if (!text.empty()) text += "; ";
    text += "GPU type '" + type + "' has no throughput data (known: " + known_list + ")";
    if (const std::optional<std::string> close = ClosestName(type, known)) {
      text += "; did you mean " + *close + "?";
    }
  }
  return text;
}

int64_t DefaultGpuMemoryMib(std::string_view gpu_type) {
  struct Entry {
    std::string_view type;
    int64_t memory_mib;
  };
  static constexpr std::array<Entry, 6> kTable = {{{"V100", 32768},
                                                   {"A100", 81920},
                                                   {"H100", 81920},
                                                   {"K80", 12288},
                                                   {"P100", 16384},
                                                   {"T4", 16384}}};
  for (const Entry& e : kTable) {
    if (e.type.size() != gpu_type.size()) continue;
    bool same = true;
    for (size_t i = 0; i < gpu_type.size() && same; ++i) {
      same = std::toupper(static_cast<unsigned char>(gpu_type[i])) == e.type[i];
    }
    if (same) return e.memory_mib;
  }
  return 16384;
}

Result<Cluster> ParseClusterShorthand(std::string_view shorthand) {
  if (Trim(shorthand).empty()) {
    return InvalidArgument("empty cluster shorthand: " + std::string(kShorthandForm));
  }
  Cluster cluster;
  HostDefaults defaults;
  bool defaults_seen = false;
  std::string_view rest = shorthand;
  while (true) {
    const size_t plus = rest.find('+');
    const std::string_view term = Trim(rest.substr(0, plus));
    rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
    const auto bad = [&](std::string_view what) {
      return InvalidArgument("bad cluster term '" + std::string(term) + "' in '" +
                             std::string(shorthand) + "': " + std::string(what) +
                             (what.empty() ? "" : "; ") + std::string(kShorthandForm));
    };
    const size_t colon = term.find(':');
    const std::string_view head = Trim(term.substr(0, colon));
    HostSuffixes host;
    if (colon != std::string_view::npos) {
      Result<HostSuffixes> parsed = ParseHostSuffixes(term.substr(colon + 1), head == kPerGpuTerm);
      if (!parsed.ok()) return bad(parsed.status().message());
      host = *parsed;
    }
    if (head == kPerGpuTerm) {
      if (colon == std::string_view::npos) return bad("per-gpu needs CPUs or memory");
      if (defaults_seen) return bad("per-gpu given twice");
      defaults_seen = true;
      defaults.cpus_per_gpu = static_cast<int>(host.cpus);
      defaults.memory_mib_per_gpu = host.memory_mib;
      if (plus == std::string_view::npos) break;
      continue;
    }
    // NODESxGPUSxTYPE, or GPUSxTYPE (one node) when what follows the first 'x' is not
    // digits and another 'x'. TYPE may itself contain an 'x' ("RTX6000"). NODESxcpu and cpu
    // are CPU-only nodes.
    const size_t x1 = head.find('x');
    const std::string_view after_x = x1 == std::string_view::npos ? head : head.substr(x1 + 1);
    const bool cpu_only = after_x == kCpuOnlyType;
    if (!cpu_only && EditDistanceIgnoringCase(after_x, kCpuOnlyType) == 0) {
      return bad("CPU-only nodes are spelt 'cpu'");
    }
    if (x1 == std::string_view::npos && !cpu_only) return bad("");
    size_t digits_end = x1 + 1;
    while (!cpu_only && digits_end < head.size() &&
           std::isdigit(static_cast<unsigned char>(head[digits_end]))) {
      ++digits_end;
    }
    const bool one_node =
        !cpu_only && (digits_end == x1 + 1 || digits_end == head.size() || head[digits_end] != 'x');
    const std::optional<int64_t> nodes = one_node || (cpu_only && x1 == std::string_view::npos)
                                             ? std::optional<int64_t>(1)
                                             : ParseInt(Trim(head.substr(0, x1)));
    const std::optional<int64_t> gpus =
        cpu_only   ? std::optional<int64_t>(0)
        : one_node ? ParseInt(Trim(head.substr(0, x1)))
                   : ParseInt(Trim(head.substr(x1 + 1, digits_end - x1 - 1)));
    const std::string_view type =
        cpu_only ? kCpuOnlyType : head.substr(one_node ? x1 + 1 : digits_end + 1);
    if (!nodes || *nodes < 1 || *nodes > kMaxNodesPerTerm) {
      return bad("NODES must be an integer in [1, " + std::to_string(kMaxNodesPerTerm) + "]");
    }
    if (cpu_only && host.cpus == 0) return bad("CPU-only nodes must state their CPUs (Nc)");
    if (!cpu_only) {
      if (!gpus || *gpus < 1 || *gpus > kMaxGpusPerNode) {
        return bad("GPUS must be an integer in [1, " + std::to_string(kMaxGpusPerNode) + "]");
      }
      if (!IsTypeName(type) || !std::isalpha(static_cast<unsigned char>(type.front()))) {
        return bad(
            "TYPE must be a name of letters, digits, '-', '_', '.' that starts with a letter");
      }
      if (EditDistanceIgnoringCase(type, kCpuOnlyType) == 0) {
        return bad("TYPE 'cpu' is reserved for CPU-only nodes (NODESxcpu:Nc)");
      }
      DS_RETURN_IF_ERROR(
          CheckTypeCase(type).WithPrefix("cluster term '" + std::string(term) + "'"));
    }
    if (!CheckClusterSize(cluster, *nodes, *gpus, "").ok()) {
      return bad("the cluster would have more than " + std::to_string(kMaxClusterGpus) + " GPUs");
    }

    const GpuTypeId type_id = cpu_only ? GpuTypeId() : cluster.InternGpuType(type);
    const int64_t memory = cpu_only ? 0 : DefaultGpuMemoryMib(type);
    RackId rack;
    std::string rack_name;
    for (int64_t i = 0; i < *nodes; ++i) {
      if (i % kNodesPerShorthandRack == 0) {  // a new term always starts a new rack
        rack_name = RackName(cluster.num_racks());
        rack = cluster.InternRack(rack_name);
      }
      NodeSpec node = MakeNode(NodeName(cluster.num_nodes()), rack, type_id,
                               static_cast<int>(*gpus), memory, 1);
      if (!cpu_only) node.labels.emplace("gpu", std::string(type));
      node.labels.emplace("rack", rack_name);
      node.cpus = static_cast<int>(host.cpus);
      node.memory_mib = host.memory_mib;
      Result<NodeId> added = cluster.AddNode(std::move(node));
      if (!added.ok()) return added.status();
    }
    if (plus == std::string_view::npos) break;
  }
  if (cluster.num_nodes() == 0) {
    return InvalidArgument("cluster shorthand '" + std::string(Trim(shorthand)) +
                           "' has no nodes: " + std::string(kShorthandForm));
  }
  cluster.set_host_defaults(defaults);
  DS_RETURN_IF_ERROR(CheckHostDefaults(cluster).WithPrefix(
      "cluster '" + std::string(Trim(shorthand)) + "': per-gpu defaults"));
  return cluster;
}

Result<Cluster> PhillyCluster(std::string_view traces_dir) {
  std::vector<std::pair<std::string, int>> vcs;
  const std::filesystem::path path =
      std::filesystem::path(std::string(traces_dir)) / "helios" / "philly_vc.csv";
  std::error_code ec;
  if (!traces_dir.empty() && std::filesystem::is_regular_file(path, ec)) {
    DS_ASSIGN_OR_RETURN(vcs, ReadPhillyVcFile(path.string()));
  } else {
    // No traces folder: the same 11 VC sizes, built in (see kBuiltinPhillyVcs).
    for (const VcSize& vc : kBuiltinPhillyVcs) vcs.emplace_back(vc.vc, vc.nodes);
  }
  Cluster cluster;
  const GpuTypeId type = cluster.InternGpuType(kPhillyGpuType);
  const int64_t memory = DefaultGpuMemoryMib(kPhillyGpuType);
  for (const auto& [vc, nodes] : vcs) {
    for (int i = 0; i < cluster.num_racks(); ++i) {
      if (cluster.rack_name(RackId(static_cast<uint32_t>(i))) == vc) {
        return InvalidArgument(path.string() + ": virtual cluster '" + vc + "' listed twice");
      }
    }
    DS_RETURN_IF_ERROR(CheckClusterSize(cluster, nodes, kPhillyGpusPerNode, path.string() + ": "));
    const RackId rack = cluster.InternRack(vc);
    for (int i = 0; i < nodes; ++i) {
      NodeSpec node =
          MakeNode(NodeName(cluster.num_nodes()), rack, type, kPhillyGpusPerNode, memory, 1);
      node.labels.emplace("gpu", std::string(kPhillyGpuType));
      node.labels.emplace("rack", vc);
      node.labels.emplace("vc", vc);
      Result<NodeId> added = cluster.AddNode(std::move(node));
      if (!added.ok()) return added.status();
    }
  }
  return cluster;
}

Result<Cluster> ParseClusterJson(std::string_view json_text, std::string_view origin) {
  const std::string prefix = std::string(origin) + ": ";
  try {
    const json doc = json::parse(json_text);
    Result<Cluster> cluster = BuildClusterFromJson(doc);
    if (!cluster.ok()) return InvalidArgument(prefix + cluster.status().message());
    return cluster;
  } catch (const json::exception& e) {
    // parse errors name the byte offset; type errors should not happen (types are checked).
    return InvalidArgument(prefix + "invalid JSON: " + e.what());
  }
}

Result<Cluster> ParseClusterSpec(std::string_view spec, std::string_view traces_dir) {
  const std::string_view text = Trim(spec);
  if (text.empty()) {
    return InvalidArgument(
        "empty cluster spec: want NODESxGPUSxTYPE[+...], 'philly', or a .json file");
  }
  if (text == "philly") return PhillyCluster(traces_dir);
  if (text.size() > 5 && text.substr(text.size() - 5) == ".json") {
    const std::string path(text);
    const FileText file = ReadFileText(path);
    if (file.fault != FileFault::kNone) return NotFound(path + ": cannot open cluster spec file");
    return ParseClusterJson(file.text, path);
  }
  return ParseClusterShorthand(text);
}

}  // namespace dlsched
