#include "cli/profile_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "dlsched/common/rng.h"
#include "dlsched/common/text.h"
#include "io/cluster_spec.h"
#include "io/profile_tables.h"
#include "perf/predictor_accuracy.h"

namespace dlsched::cli {
namespace {

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string TracesDir(const ProfileFlags& flags) {
  if (!flags.traces_dir.empty()) return flags.traces_dir;
  if (const char* env = std::getenv("DLSCHED_TRACES")) return env;
  return "../shared/traces";
}

// What the cluster offers of one GPU type.
struct TypeCapacity {
  std::string name;  // the cluster's spelling
  int gpus = 0;
  int max_per_node = 0;
  int nodes = 0;
};

// (source, model, batch, upper type, count, consolidated, partner).
using ConfigKey =
    std::tuple<std::string, std::string, int, std::string, int, bool, std::optional<PerfJobType>>;

// Checks --tables and --models against what exists; a usage error otherwise.
Status CheckModels(const std::vector<std::string>& wanted, std::span<const PerfProfile> truth) {
  std::set<std::string> known;
  for (const PerfProfile& p : truth) known.insert(ToUpper(p.model));
  for (const std::string& name : wanted) {
    if (known.contains(ToUpper(name))) continue;
    std::set<std::string> spelled;
    for (const PerfProfile& p : truth) spelled.insert(p.model);
    std::string list;
    for (const std::string& s : spelled) list += (list.empty() ? "" : ", ") + s;
    return InvalidArgument(
        fmt::format("unknown model \"{}\" in --models (the tables have: {})", name, list));
  }
  return Status::Ok();
}

void PrintRows(const std::vector<AccuracyRow>& rows, std::string_view group_name,
               std::ostream& out) {
  out << fmt::format("{:<8} {:<20} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7}\n", "source", group_name,
                     "held_out", "predicted", "mape%", "p50%", "p90%", "max%");
  for (const AccuracyRow& r : rows) {
    out << fmt::format("{:<8} {:<20} {:>9} {:>9} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.1f}\n", r.source,
                       r.group, r.held_out, r.predicted, r.mape_pct, r.p50_ape_pct, r.p90_ape_pct,
                       r.max_ape_pct);
  }
}

nlohmann::json RowsToJson(const std::vector<AccuracyRow>& rows, std::string_view group_key) {
  nlohmann::json list = nlohmann::json::array();
  for (const AccuracyRow& r : rows) {
    list.push_back({{"source", r.source},
                    {std::string(group_key), r.group},
                    {"held_out", r.held_out},
                    {"predicted", r.predicted},
                    {"mape_pct", r.mape_pct},
                    {"p50_ape_pct", r.p50_ape_pct},
                    {"p90_ape_pct", r.p90_ape_pct},
                    {"max_ape_pct", r.max_ape_pct}});
  }
  return list;
}

int RunEvaluate(const ProfileFlags& flags, const std::vector<std::string>& tables,
                std::ostream& out, std::ostream& err) {
  std::vector<PerfProfile> profiles;
  std::string what;
  if (!flags.in_path.empty()) {
    Result<ProfileStore> store = LoadProfileStore(flags.in_path);
    if (!store.ok()) {
      err << "dlsched profile: " << store.status().message() << "\n";
      return kExitRuntimeError;
    }
    profiles = std::move(store->profiles);
    what = flags.in_path;
  } else {
    Result<std::vector<PerfProfile>> loaded =
        LoadProfileTables(TracesDir(flags), tables, /*gavel_colocation=*/false);
    if (!loaded.ok()) {
      err << "dlsched profile: " << loaded.status().message() << "\n";
      return kExitRuntimeError;
    }
    profiles = std::move(loaded).value();
    what = "tables " + flags.tables;
  }
  HoldoutOptions options;
  options.holdout = flags.holdout;
  options.seed = flags.seed;
  options.repeats = flags.repeats;
  Result<AccuracyReport> report = EvaluateHoldout(profiles, options);
  if (!report.ok()) {
    err << "dlsched profile: " << report.status().message() << "\n";
    return kExitRuntimeError;
  }
  if (flags.json) {
    const nlohmann::json json = {{"evaluated", what},
                                 {"holdout", options.holdout},
                                 {"seed", options.seed},
                                 {"repeats", options.repeats},
                                 {"by_gpu_type", RowsToJson(report->by_type, "gpu_type")},
                                 {"by_rule", RowsToJson(report->by_method, "rule")},
                                 {"cannot_run",
                                  {{"held_out", report->cannot_run_held_out},
                                   {"predicted_cannot_run", report->cannot_run_predicted}}}};
    out << json.dump(2) << "\n";
    return kExitOk;
  }
  out << fmt::format(
      "Predictor accuracy on {}: {:.0f}% of measured cells held back, seed {}, {} split(s)\n\n",
      what, 100 * options.holdout, options.seed, options.repeats);
  PrintRows(report->by_type, "gpu_type", out);
  out << "\n";
  PrintRows(report->by_method, "rule", out);
  out << fmt::format("\nheld-back cells measured as cannot run: {} ({} predicted so)\n",
                     report->cannot_run_held_out, report->cannot_run_predicted);
  return kExitOk;
}

Status WriteStoreFile(const ProfileStore& store, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return IoError("cannot write the profile store to " + path);
  WriteProfileStore(store, file);
  file.flush();
  if (!file) return IoError("writing the profile store to " + path + " failed");
  return Status::Ok();
}

}  // namespace

ProfileRun ProfileCluster(const Cluster& cluster, std::span<const PerfProfile> truth,
                          const ProfileRunOptions& options) {
  std::map<std::string, TypeCapacity> capacity;  // by upper-case type name
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(t);
    TypeCapacity& c = capacity[ToUpper(cluster.gpu_type_name(type))];
    c.name = cluster.gpu_type_name(type);
    c.gpus = cluster.gpus_of_type(type);
    c.max_per_node = cluster.max_gpus_of_type_per_node(type);
  }
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const NodeId node(n);
    if (!cluster.node(node).gpus.empty()) {
      ++capacity[ToUpper(cluster.gpu_type_name(cluster.node_gpu_type(node)))].nodes;
    }
  }
  std::set<std::string> models;
  for (const std::string& m : options.models) models.insert(ToUpper(m));

  ProfileRun run;
  std::set<std::string> measured_types;
  std::map<ConfigKey, std::vector<double>> configs;
  for (const PerfProfile& p : truth) {
    if (!models.empty() && !models.contains(ToUpper(p.model))) continue;
    const std::string type = ToUpper(p.gpu_type);
    const auto cap = capacity.find(type);
    if (cap == capacity.end() || cap->second.gpus == 0) continue;
    measured_types.insert(type);
    const TypeCapacity& c = cap->second;
    const bool consolidated = p.consolidated || p.num_gpus == 1;
    const bool fits =
        consolidated ? p.num_gpus <= c.max_per_node : c.nodes >= 2 && p.num_gpus <= c.gpus;
    if (!fits) {
      ++run.infeasible;
      continue;
    }
    configs[{p.source, p.model, p.batch_size, type, p.num_gpus, consolidated, p.colocated_with}]
        .push_back(p.iters_per_s);
  }
  for (const auto& [type, c] : capacity) {
    if (c.gpus > 0 && !measured_types.contains(type)) run.unknown_types.push_back(c.name);
  }
  Rng rng(options.seed);
  for (const auto& [key, values] : configs) {
    const auto& [source, model, batch, type, n, consolidated, partner] = key;
    const double noise = std::exp(options.noise * rng.Normal());
    run.profiles.push_back({source, model, batch, capacity.at(type).name, n, consolidated,
                            PoolMeasurements(values) * noise, partner});
  }
  return run;
}

void AddProfileFlags(CLI::App& command, ProfileFlags& flags) {
  command.add_option("--cluster", flags.cluster,
                     "Cluster to profile: NODESxGPUSxTYPE terms joined by '+', 'philly', or a "
                     ".json spec (required unless --evaluate)");
  command
      .add_option("--models", flags.models,
                  "'all' or a comma-separated list of the tables' model names (case-insensitive)")
      ->capture_default_str();
  command
      .add_option("--tables", flags.tables,
                  "Measured tables that are the ground truth: any of gavel, sia, pollux")
      ->capture_default_str();
  command.add_option("--out", flags.out_path,
                     "Write the profile store (JSON, see docs/qos.md) to FILE (required unless "
                     "--evaluate)");
  command.add_option("--seed", flags.seed, "Seed of the measurement noise / the holdout split")
      ->capture_default_str();
  command
      .add_option("--noise", flags.noise,
                  "Sigma of the multiplicative lognormal error of each measurement (0 = exact)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command.add_flag("--colocation", flags.colocation,
                   "Also measure Gavel's co-location pairs (jobs sharing GPUs)");
  command.add_flag("--evaluate", flags.evaluate,
                   "Report the predictor's accuracy (MAPE per table and GPU type) on held-back "
                   "cells of the tables instead of profiling");
  command
      .add_option("--holdout", flags.holdout,
                  "With --evaluate: share of measured cells held back, in (0, 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command
      .add_option("--repeats", flags.repeats,
                  "With --evaluate: number of splits (seeds seed, seed+1, ...), errors pooled")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command.add_option("--in", flags.in_path,
                     "With --evaluate: evaluate on a profile store FILE instead of the tables");
  command.add_flag("--json", flags.json, "With --evaluate: print the report as JSON");
  command.add_option("--traces-dir", flags.traces_dir,
                     "Folder of third-party traces; default $DLSCHED_TRACES or ../shared/traces");
}

int RunProfile(const ProfileFlags& flags, std::ostream& out, std::ostream& err) {
  const auto usage = [&](std::string_view message) {
    err << "dlsched profile: " << message << "\nRun 'dlsched profile --help' for usage.\n";
    return kExitUsage;
  };
  const std::vector<std::string> tables = SplitNonEmpty(flags.tables, ',');
  if (tables.empty()) return usage("--tables names no table");
  for (const std::string& t : tables) {
    if (std::find(kProfileTableNames.begin(), kProfileTableNames.end(), t) ==
        kProfileTableNames.end()) {
      return usage(fmt::format("unknown table \"{}\" in --tables (known: gavel, sia, pollux)", t));
    }
  }
  if (flags.evaluate) {
    if (!flags.cluster.empty() || !flags.out_path.empty() || flags.colocation) {
      return usage("--evaluate takes no --cluster, --out or --colocation");
    }
    if (!(flags.holdout > 0 && flags.holdout < 1)) return usage("--holdout must be in (0, 1)");
    return RunEvaluate(flags, tables, out, err);
  }
  if (!flags.in_path.empty() || flags.json) return usage("--in and --json need --evaluate");
  if (flags.cluster.empty()) return usage("--cluster is required (or use --evaluate)");
  if (flags.out_path.empty()) return usage("--out is required (or use --evaluate)");
  Result<Cluster> cluster = ParseClusterSpec(flags.cluster, TracesDir(flags));
  if (!cluster.ok()) return usage(cluster.status().message());

  Result<std::vector<PerfProfile>> truth =
      LoadProfileTables(TracesDir(flags), tables, flags.colocation);
  if (!truth.ok()) {
    err << "dlsched profile: " << truth.status().message() << "\n";
    return kExitRuntimeError;
  }
  ProfileRunOptions options;
  if (flags.models != "all") options.models = SplitNonEmpty(flags.models, ',');
  if (const Status known = CheckModels(options.models, *truth); !known.ok()) {
    return usage(known.message());
  }
  options.seed = flags.seed;
  options.noise = flags.noise;
  const ProfileRun run = ProfileCluster(*cluster, *truth, options);
  if (run.profiles.empty()) {
    err << "dlsched profile: no GPU type of " << cluster->Describe() << " is in tables "
        << flags.tables << " (they measure K80, P100, V100, T4, A100, RTX6000, RTX2080Ti)\n";
    return kExitRuntimeError;
  }
  ProfileStore store;
  store.about = {{"command", "dlsched profile"},
                 {"cluster", flags.cluster},
                 {"tables", flags.tables},
                 {"models", flags.models},
                 {"seed", std::to_string(flags.seed)},
                 {"noise", fmt::format("{}", flags.noise)}};
  store.profiles = run.profiles;
  if (const Status written = WriteStoreFile(store, flags.out_path); !written.ok()) {
    err << "dlsched profile: " << written.message() << "\n";
    return kExitRuntimeError;
  }
  std::set<std::pair<std::string, int>> job_types;
  for (const PerfProfile& p : run.profiles) job_types.insert({p.model, p.batch_size});
  out << fmt::format("profiled {} configurations of {} job types on {}; wrote {}\n",
                     run.profiles.size(), job_types.size(), cluster->Describe(), flags.out_path);
  if (run.infeasible > 0) {
    out << fmt::format("skipped {} measured configurations the cluster cannot host\n",
                       run.infeasible);
  }
  for (const std::string& type : run.unknown_types) {
    out << "no table measures GPU type " << type << ": the predictor will fall back for it\n";
  }
  return kExitOk;
}

}  // namespace dlsched::cli
