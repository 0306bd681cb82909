#include "daemon/exec/slurm_batch.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daemon/exec/job_files.h"

namespace dlsched::daemon {
namespace {

bool IsSlurmInputVariable(std::string_view name) {
  for (std::string_view prefix : {"SLURM_", "SBATCH_", "SRUN_", "SALLOC_"}) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

// The gres type (Slurm's spelling) of the GPUs of one placement part; a gang never mixes types.
std::string PartGresType(const NodeGpus& part, std::span<const SlurmNodeSite> sites) {
  const SlurmNodeSite& site = sites[part.node.index()];
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if ((part.gpus >> g) & 1) return site.gres_types.at(g);
  }
  return {};
}

// A POSIX shell variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsShellName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

struct Component {
  std::string gres_type;
  int gpus_per_node = 0;
  int cpus_per_node = 0;            // 0: none stated (Slurm's default)
  int64_t memory_mib_per_node = 0;  // 0: none stated
  std::vector<std::string> nodes;
};

}  // namespace

std::string SlurmJobName(JobId job) { return "dlsched-" + std::to_string(job.value()); }

std::string SlurmJobComment(const std::string& job_dir) { return "dlsched:" + job_dir; }

SlurmSubmission BuildSlurmSubmission(const LaunchSpec& spec, const Placement& placement,
                                     std::span<const SlurmNodeSite> sites,
                                     std::string_view partition, bool shard) {
  DS_CHECK(!shard || placement.num_gpus() == 1) << "a shard is one GPU's";
  SlurmSubmission sub;
  sub.batch_path = spec.job_dir + "/slurm-batch.sh";
  sub.task_path = spec.job_dir + "/slurm-task.sh";
  sub.command_in_batch_step =
      spec.framework == Framework::kMpi || spec.framework == Framework::kHorovod;
  const int num_nodes = placement.num_nodes();
  const bool multi_node = num_nodes > 1;
  const std::string& master = sites[placement.parts.front().node.index()].addr;

  // --- the environment, the same on every node ---
  std::map<std::string, std::string> env;
  for (const std::string& entry : spec.env) {
    const size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (IsSlurmInputVariable(name) || !IsShellName(name)) continue;
    env[name] = eq == std::string::npos ? std::string() : entry.substr(eq + 1);
  }
  if (spec.framework == Framework::kPyTorch) {
    env["WORLD_SIZE"] = std::to_string(num_nodes);
    if (multi_node) env["MASTER_ADDR"] = master;
  }
  std::vector<std::string> workers;
  for (const NodeGpus& part : placement.parts) {
    workers.push_back((multi_node ? sites[part.node.index()].addr : std::string("127.0.0.1")) +
                      ":" + std::to_string(spec.port));
  }
  std::string exports;
  for (const auto& [name, value] : env)
    exports += "export " + name + "=" + ShellQuote(value) + "\n";

  // --- per node ---
  std::string cases;
  for (int i = 0; i < num_nodes; ++i) {
    const NodeGpus& part = placement.parts[i];
    std::vector<std::pair<std::string, std::string>> vars = {
        {"CUDA_VISIBLE_DEVICES", GpuList(part.gpus)},
        {"DLSCHED_NODE_RANK", std::to_string(i)},
        {"DLSCHED_NODE_NUM_GPUS", std::to_string(CountGpus(part.gpus))},
    };
    if (spec.framework == Framework::kPyTorch) {
      vars.emplace_back("RANK", std::to_string(i));
      vars.emplace_back("NODE_RANK", std::to_string(i));
      vars.emplace_back("LOCAL_RANK", "0");
    }
    if (spec.framework == Framework::kTensorFlow) {
      const nlohmann::json tf = {{"cluster", {{"worker", workers}}},
                                 {"task", {{"type", "worker"}, {"index", i}}}};
      vars.emplace_back("TF_CONFIG", tf.dump());
    }
    cases += "  " + ShellQuote(sites[part.node.index()].name) + ")\n    export";
    for (const auto& [name, value] : vars) cases += " " + name + "=" + ShellQuote(value);
    cases += "\n    ;;\n";
  }
  sub.task_script =
      "#!/bin/sh\n"
      "# dlsched job " +
      std::to_string(spec.job.value()) +
      ": the per-node environment of one task, then the job's command (written by dlsched).\n"
      "case \"$SLURMD_NODENAME\" in\n" +
      cases +
      "  *)\n"
      "    echo \"dlsched: task on node '$SLURMD_NODENAME', which is not in its placement\" >&2\n"
      "    exit 125\n"
      "    ;;\n"
      "esac\n"
      "cd " +
      ShellQuote(spec.workdir) +
      " || {\n"
      "  echo \"dlsched: cannot enter working directory \"" +
      ShellQuote(spec.workdir) +
      " >&2\n"
      "  exit 126\n"
      "}\n"
      "exec \"$@\"\n";

  // --- components: nodes grouped by (gres type, GPUs, CPUs, memory per node), in placement
  // order ---
  std::vector<Component> components;
  for (const NodeGpus& part : placement.parts) {
    const std::string type = PartGresType(part, sites);
    const int gpus = CountGpus(part.gpus);
    Component* into = nullptr;
    for (Component& c : components) {
      if (c.gres_type == type && c.gpus_per_node == gpus && c.cpus_per_node == part.cpus &&
          c.memory_mib_per_node == part.memory_mib) {
        into = &c;
      }
    }
    if (into == nullptr) {
      into = &components.emplace_back(Component{type, gpus, part.cpus, part.memory_mib, {}});
    }
    into->nodes.push_back(sites[part.node.index()].name);
  }

  const std::string run_task = ShellQuote(sub.task_path) + " \"$@\"";
  std::string launch;
  if (sub.command_in_batch_step) {
    launch = run_task;
  } else {
    launch = "srun --kill-on-bad-exit=1";
    if (components.size() > 1) {
      launch += " --het-group=0-" + std::to_string(components.size() - 1);
    }
    launch += " " + run_task;
  }
  sub.batch_script =
      "#!/bin/sh\n"
      "# dlsched job " +
      std::to_string(spec.job.value()) +
      ": one run segment as a Slurm batch job (written by dlsched).\n"
      "# The shell outlives a preemption's SIGTERM (trap :) to record the exit status.\n"
      "trap : TERM INT HUP\n"
      "# The job's environment (sbatch ran with --export=NONE); every srun passes it on.\n" +
      exports + "export SLURM_EXPORT_ENV=ALL\n" + launch + "\n" +
      "c=$?\n"
      "echo \"$c\" > " +
      ShellQuote(spec.job_dir + "/exit") + "\n" + "exit \"$c\"\n";

  // --- sbatch ---
  sub.argv = {"sbatch",
              "--parsable",
              "--job-name=" + SlurmJobName(spec.job),
              "--comment=" + SlurmJobComment(spec.job_dir),
              "--no-requeue",
              "--chdir=" + spec.job_dir,
              "--output=" + spec.job_dir + "/stdout.log",
              "--error=" + spec.job_dir + "/stderr.log",
              "--open-mode=append",
              "--export=NONE"};
  for (size_t c = 0; c < components.size(); ++c) {
    const Component& comp = components[c];
    if (c > 0) sub.argv.push_back(":");
    std::string nodelist;
    for (const std::string& n : comp.nodes) nodelist += (nodelist.empty() ? "" : ",") + n;
    sub.argv.push_back("--partition=" + std::string(partition));
    sub.argv.push_back("--nodes=" + std::to_string(comp.nodes.size()));
    sub.argv.push_back("--nodelist=" + nodelist);
    sub.argv.push_back("--ntasks-per-node=1");
    if (shard) {
      sub.argv.push_back("--gres=shard:1");
    } else if (comp.gpus_per_node > 0) {
      sub.argv.push_back("--gres=gpu:" + (comp.gres_type.empty() ? "" : comp.gres_type + ":") +
                         std::to_string(comp.gpus_per_node));
    }
    // One task per node: its CPUs are the node's part; --mem is per node.
    if (comp.cpus_per_node > 0) {
      sub.argv.push_back("--cpus-per-task=" + std::to_string(comp.cpus_per_node));
    }
    if (comp.memory_mib_per_node > 0) {
      sub.argv.push_back("--mem=" + std::to_string(comp.memory_mib_per_node) + "M");
    }
  }
  sub.argv.push_back(sub.batch_path);
  sub.argv.insert(sub.argv.end(), spec.argv.begin(), spec.argv.end());
  return sub;
}

std::string FormatSlurmJobRecord(const SlurmJobRecord& record) {
  std::string nodes;
  for (const std::string& n : record.nodes) nodes += (nodes.empty() ? "" : ",") + n;
  std::string line = (record.slurm_id.empty() ? "-" : record.slurm_id) + " " + nodes;
  if (record.command_in_batch_step) line += *record.command_in_batch_step ? " batch" : " srun";
  return line + "\n";
}

SlurmJobRecord ParseSlurmJobRecord(std::string_view text) {
  SlurmJobRecord record;
  std::istringstream line{std::string(text)};
  std::string nodes, mode;
  line >> record.slurm_id >> nodes >> mode;
  if (record.slurm_id == "-") record.slurm_id.clear();
  std::istringstream names(nodes);
  for (std::string name; std::getline(names, name, ',');) {
    if (!name.empty()) record.nodes.push_back(name);
  }
  if (mode == "batch" || mode == "srun") record.command_in_batch_step = mode == "batch";
  return record;
}

}  // namespace dlsched::daemon
