#include "daemon/exec/slurm_parse.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "dlsched/common/text.h"
#include "io/cluster_spec.h"

namespace dlsched::daemon {
namespace {

// "Key=" at the start of a token: a letter, then letters, digits, '_', '/', ':' or '.'.
size_t KeyLength(std::string_view token) {
  if (token.empty() || !std::isalpha(static_cast<unsigned char>(token[0]))) return 0;
  for (size_t i = 1; i < token.size(); ++i) {
    const char c = token[i];
    if (c == '=') return i;
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/' && c != ':' &&
        c != '.') {
      return 0;
    }
  }
  return 0;
}

std::string Value(const SlurmRecord& record, std::string_view key) {
  const auto it = record.find(key);
  if (it == record.end() || it->second == "(null)" || it->second == "N/A") return {};
  return it->second;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<SlurmRecord> ParseScontrolRecords(std::string_view text) {
  std::vector<SlurmRecord> records;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    SlurmRecord record;
    std::string* last = nullptr;
    for (std::string_view token : Split(line, ' ')) {
      if (token.empty()) continue;
      const size_t key = KeyLength(token);
      if (key == 0) {
        if (last != nullptr) *last += " " + std::string(token);
        continue;
      }
      std::string& value = record[std::string(token.substr(0, key))];
      value = std::string(token.substr(key + 1));
      last = &value;
    }
    if (!record.empty()) records.push_back(std::move(record));
  }
  return records;
}

Result<std::vector<SlurmGres>> ParseGres(std::string_view text) {
  std::vector<SlurmGres> out;
  text = Trim(text);
  if (text.empty() || text == "(null)") return out;
  // Commas also appear inside "(S:0-1,3)": split only outside parentheses.
  std::vector<std::string_view> entries;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      entries.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  for (std::string_view entry : entries) {
    entry = entry.substr(0, entry.find('('));
    std::vector<std::string_view> parts = Split(entry, ':');
    // "no_consume" may sit between the type and the count.
    std::erase(parts, std::string_view("no_consume"));
    SlurmGres gres;
    gres.name = std::string(parts.front());
    std::optional<int64_t> count;
    if (parts.size() >= 2) count = ParseInt(parts.back());
    if (gres.name.empty() || !count || *count < 0 || *count > 1 << 20) {
      return InvalidArgument("gres '" + std::string(entry) + "': want NAME[:TYPE]:COUNT");
    }
    gres.count = static_cast<int>(*count);
    if (parts.size() >= 3) gres.type = std::string(parts[1]);
    out.push_back(std::move(gres));
  }
  return out;
}

NodeHealth ClassifyNodeState(std::string_view state) {
  static constexpr std::string_view kOutFlags[] = {
      "DRAIN",        "DRAINED",    "DRAINING",      "FAIL",          "FAILING",
      "POWERED_DOWN", "POWER_DOWN", "POWERING_DOWN", "REBOOT_ISSUED", "INVALID_REG"};
  static constexpr std::string_view kUnreachableFlags[] = {
      "NOT_RESPONDING", "MAINT", "RESERVED", "POWERING_UP", "REBOOT_REQUESTED", "UNKNOWN"};
  const std::vector<std::string_view> parts = Split(Trim(state), '+');
  const std::string_view base = parts.front();
  if (base == "DOWN" || base == "ERROR" || base == "FUTURE") return NodeHealth::kOut;
  NodeHealth health = NodeHealth::kUp;
  if (base != "IDLE" && base != "ALLOCATED" && base != "ALLOC" && base != "MIXED" &&
      base != "COMPLETING") {
    health = NodeHealth::kUnreachable;
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    if (std::find(std::begin(kOutFlags), std::end(kOutFlags), parts[i]) != std::end(kOutFlags)) {
      return NodeHealth::kOut;
    }
    if (std::find(std::begin(kUnreachableFlags), std::end(kUnreachableFlags), parts[i]) !=
        std::end(kUnreachableFlags)) {
      health = NodeHealth::kUnreachable;
    }
  }
  return health;
}

Result<std::vector<SlurmNode>> ParseNodes(std::string_view scontrol_output) {
  std::vector<SlurmNode> nodes;
  for (const SlurmRecord& record : ParseScontrolRecords(scontrol_output)) {
    SlurmNode node;
    node.name = Value(record, "NodeName");
    if (node.name.empty()) return InvalidArgument("scontrol show node: a record without NodeName");
    node.addr = Value(record, "NodeAddr");
    if (node.addr.empty()) node.addr = Value(record, "NodeHostName");
    if (node.addr.empty()) node.addr = node.name;
    node.state = Value(record, "State");
    node.reason = Value(record, "Reason");
    for (std::string_view p : Split(Value(record, "Partitions"), ',')) {
      if (!p.empty()) node.partitions.emplace_back(p);
    }
    Result<std::vector<SlurmGres>> gres = ParseGres(Value(record, "Gres"));
    if (!gres.ok()) return gres.status().WithPrefix("node " + node.name);
    node.gres = std::move(gres).value();
    for (std::string_view f : Split(Value(record, "AvailableFeatures"), ',')) {
      if (!f.empty()) node.features.emplace_back(f);
    }
    node.cpus = static_cast<int>(ParseInt(Value(record, "CPUTot")).value_or(0));
    node.memory_mib = ParseInt(Value(record, "RealMemory")).value_or(0);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::string> DefaultPartition(std::string_view scontrol_output) {
  for (const SlurmRecord& record : ParseScontrolRecords(scontrol_output)) {
    if (Value(record, "Default") == "YES") {
      const std::string name = Value(record, "PartitionName");
      if (!name.empty()) return name;
    }
  }
  return NotFound("Slurm has no default partition (give --slurm-partition)");
}

Result<SlurmCluster> BuildSlurmCluster(const std::vector<SlurmNode>& nodes,
                                       std::string_view partition) {
  SlurmCluster out;
  for (const SlurmNode& node : nodes) {
    if (std::find(node.partitions.begin(), node.partitions.end(), partition) ==
        node.partitions.end()) {
      continue;
    }
    NodeSpec spec;
    spec.name = node.name;
    spec.cpus = node.cpus;
    spec.memory_mib = node.memory_mib;
    SlurmNodeSite site{node.name, node.addr, {}, node.state, node.reason};
    for (const SlurmGres& gres : node.gres) {
      if (gres.name == "shard") site.shards += gres.count;
      if (gres.name != "gpu") continue;
      const std::string type = gres.type.empty() ? "GPU" : Upper(gres.type);
      const GpuTypeId id = out.cluster.InternGpuType(type);
      for (int g = 0; g < gres.count; ++g) {
        spec.gpus.push_back(GpuSpec{id, DefaultGpuMemoryMib(type), 0});
        site.gres_types.push_back(gres.type);
      }
    }
    if (spec.gpus.empty()) continue;
    for (const std::string& feature : node.features) {
      const size_t eq = feature.find('=');
      if (eq == std::string::npos) {
        spec.labels.emplace(feature, "true");
      } else {
        spec.labels.emplace(feature.substr(0, eq), feature.substr(eq + 1));
      }
    }
    spec.labels.emplace("gpu", out.cluster.gpu_type_name(spec.gpus.front().type));
    spec.labels.emplace("rack", std::string(partition));
    spec.rack = out.cluster.InternRack(spec.labels.at("rack"));
    Result<NodeId> added = out.cluster.AddNode(std::move(spec));
    if (!added.ok()) return added.status().WithPrefix("Slurm node " + node.name);
    out.sites.push_back(std::move(site));
  }
  if (out.sites.empty()) {
    return FailedPrecondition("Slurm partition '" + std::string(partition) +
                              "' has no node with GPUs (gres 'gpu'); dlsched schedules GPUs");
  }
  return out;
}

Status CheckSlurmShards(const std::vector<SlurmNodeSite>& sites, int jobs_per_gpu,
                        std::string_view profile) {
  const std::string k = std::to_string(jobs_per_gpu);
  std::vector<std::string> none, few;
  for (const SlurmNodeSite& site : sites) {
    const int gpus = static_cast<int>(site.gres_types.size());
    const std::string n = std::to_string(gpus);
    if (site.shards == 0) {
      none.push_back(site.name + " (" + n + " GPUs: shard:" + std::to_string(gpus * jobs_per_gpu) +
                     " or more)");
    } else if (site.shards < gpus * jobs_per_gpu) {
      few.push_back(site.name + " declares shard:" + std::to_string(site.shards) + " for " + n +
                    " GPUs");
    }
  }
  if (none.empty() && few.empty()) return Status::Ok();
  std::ostringstream message;
  message << "profile '" << profile << "' shares GPUs (up to " << k
          << " jobs on one), which dlsched does through Slurm's shard GRES, one shard per job; ";
  const auto join = [&](const std::vector<std::string>& items) {
    for (size_t i = 0; i < items.size(); ++i) message << (i > 0 ? ", " : "") << items[i];
  };
  if (!none.empty()) {
    message << "the Slurm nodes ";
    join(none);
    message << " declare no shard GRES";
  }
  if (!few.empty()) {
    if (!none.empty()) message << "; ";
    join(few);
  }
  message << ". Add GresTypes=gpu,shard and Gres=gpu:...,shard:N (N = GPUs x " << k
          << ") to the nodes in slurm.conf, and Name=shard Count=" << k
          << " File=<the GPU's device> per GPU in gres.conf, or run a non-sharing profile";
  return FailedPrecondition(message.str());
}

std::vector<SlurmQueueEntry> ParseSqueue(std::string_view text) {
  std::vector<SlurmQueueEntry> out;
  for (std::string_view line : Split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // id|state|reason|name|comment: the name ends at the first '|' after the reason, and the
    // comment is everything after it.
    std::vector<std::string_view> head;
    std::string_view rest = line;
    for (int i = 0; i < 4; ++i) {
      const size_t bar = rest.find('|');
      if (bar == std::string_view::npos) break;
      head.push_back(rest.substr(0, bar));
      rest.remove_prefix(bar + 1);
    }
    if (head.size() < 4) continue;
    SlurmQueueEntry entry;
    std::string_view id = Trim(head[0]);
    const size_t plus = id.find('+');
    if (plus != std::string_view::npos) {
      entry.component = static_cast<int>(ParseInt(id.substr(plus + 1)).value_or(0));
      id = id.substr(0, plus);
    }
    id = id.substr(0, id.find('_'));
    if (id.empty() || !ParseInt(id)) continue;
    entry.job_id = std::string(id);
    entry.state = std::string(Trim(head[1]));
    entry.reason = std::string(Trim(head[2]));
    entry.name = std::string(head[3]);
    entry.comment = rest == "(null)" ? std::string() : std::string(rest);
    out.push_back(std::move(entry));
  }
  return out;
}

bool IsTerminalJobState(std::string_view state) {
  static constexpr std::string_view kTerminal[] = {
      "COMPLETED", "FAILED",   "CANCELLED",     "TIMEOUT", "NODE_FAIL",   "PREEMPTED",
      "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"};
  // "CANCELLED by 0" in some versions' scontrol output.
  state = state.substr(0, state.find(' '));
  return std::find(std::begin(kTerminal), std::end(kTerminal), state) != std::end(kTerminal);
}

std::optional<int> ParseExitCode(std::string_view exit_code) {
  const size_t colon = exit_code.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::optional<int64_t> code = ParseInt(exit_code.substr(0, colon));
  const std::optional<int64_t> signal = ParseInt(exit_code.substr(colon + 1));
  if (!code || !signal || *code < 0 || *code > 255 || *signal < 0 || *signal > 127) {
    return std::nullopt;
  }
  return *signal != 0 ? static_cast<int>(128 + *signal) : static_cast<int>(*code);
}

Result<std::string> ParseSbatchJobId(std::string_view output) {
  std::string_view id = Trim(output);
  id = id.substr(0, id.find(';'));
  if (id.empty() || !ParseInt(id) || *ParseInt(id) <= 0) {
    return InvalidArgument("sbatch printed '" + std::string(Trim(output)) + "', not a job id");
  }
  return std::string(id);
}

}  // namespace dlsched::daemon
