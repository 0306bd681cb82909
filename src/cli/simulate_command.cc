#include "cli/simulate_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "daemon/core/replay.h"
#include "dlsched/perf/predictor.h"
#include "dlsched/perf/throughput_model.h"
#include "io/cluster_spec.h"
#include "io/gavel_throughputs.h"
#include "io/profile.h"
#include "io/profile_store.h"
#include "sim/deadline_rule.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace dlsched::cli {
namespace {

std::vector<std::string> SplitPolicies(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

// Where the third-party traces live: --traces-dir, $DLSCHED_TRACES, else ../shared/traces.
std::string TracesDir(const SimulateFlags& flags) {
  if (!flags.traces_dir.empty()) return flags.traces_dir;
  if (const char* env = std::getenv("DLSCHED_TRACES")) return env;
  return "../shared/traces";
}

// A cluster sized for the trace when --cluster is not given: the synthetic generator's default
// load refers to 128 GPUs; real traces get 64 nodes x 8 V100 (512 GPUs).
std::string DefaultCluster(const SimulateFlags& flags) {
  if (!flags.cluster.empty()) return flags.cluster;
  if (flags.trace.starts_with("synthetic")) return "16x8xV100";
  return "64x8xV100";
}

Status WriteFile(const std::string& path, const std::string& what,
                 const std::function<Status(std::ostream&)>& write) {
  std::ofstream file(path, std::ios::binary);
  if (!file) return IoError("cannot write " + what + " to " + path);
  DS_RETURN_IF_ERROR(write(file));
  file.flush();
  if (!file) return IoError("writing " + what + " to " + path + " failed");
  return Status::Ok();
}

struct Prepared {
  Cluster cluster;
  sim::Workload workload;
  std::vector<std::unique_ptr<SchedulingPolicy>> policies;  // moved into their runs
  std::unique_ptr<ThroughputModel> truth;
  std::unique_ptr<ThroughputModel> estimator;
  std::optional<sim::DeadlineRule> deadlines;  // --deadlines
  std::unique_ptr<sim::SharingWorld> sharing;  // each run copies it
};

// "auto" picks Gavel's measured table for Gavel traces (their work is in Gavel steps) and the
// built-in model otherwise.
std::string ResolveThroughput(const SimulateFlags& flags) {
  if (flags.throughput != "auto") return flags.throughput;
  return flags.trace.starts_with("gavel:") ? "gavel" : "builtin";
}

// The ground truth: "builtin", or "gavel[:PATH]" (Gavel's measured table; jobs it does not know
// fall back to the built-in model). For Gavel, each known job's reference speed is set from the
// table so that ideal durations are in seconds.
Result<std::unique_ptr<ThroughputModel>> MakeTruth(const std::string& spec,
                                                   const std::string& traces_dir,
                                                   sim::Workload& workload) {
  if (spec == "builtin") {
    return std::unique_ptr<ThroughputModel>(std::make_unique<SimpleThroughputModel>());
  }
  if (spec == "gavel" || spec.starts_with("gavel:")) {
    const std::string path = spec == "gavel" ? traces_dir + "/gavel/simulation_throughputs.json"
                                             : spec.substr(std::string_view("gavel:").size());
    DS_ASSIGN_OR_RETURN(GavelThroughputTable table, GavelThroughputTable::Load(path));
    auto model = std::make_unique<GavelThroughputModel>(
        std::make_shared<const GavelThroughputTable>(std::move(table)),
        std::make_shared<const SimpleThroughputModel>());
    for (JobSpec& job : workload.jobs) {
      if (auto rate = model->ReferenceItersPerSecond(job)) job.ref_iters_per_s = *rate;
    }
    return std::unique_ptr<ThroughputModel>(std::move(model));
  }
  return InvalidArgument("unknown --throughput '" + spec + "' (want auto, builtin, gavel[:PATH])");
}

// The policies' estimator: the built-in model, or with --predictor a PerfPredictor fitted to a
// profile store (falling back to the built-in model for jobs the profiles do not cover).
Result<std::unique_ptr<ThroughputModel>> MakeEstimator(const std::string& store_path) {
  if (store_path.empty()) {
    return std::unique_ptr<ThroughputModel>(std::make_unique<SimpleThroughputModel>());
  }
  DS_ASSIGN_OR_RETURN(PerfPredictor predictor, FitProfileStore(store_path));
  return std::unique_ptr<ThroughputModel>(std::make_unique<PerfPredictor>(std::move(predictor)));
}

// The flags themselves: policies and cluster. A failure here is a usage error.
Result<Prepared> PrepareSetup(const SimulateFlags& flags) {
  Prepared p;
  for (const std::string& name : SplitPolicies(flags.policies)) {
    // Build every policy now, so a typo fails before any run starts.
    DS_ASSIGN_OR_RETURN(std::unique_ptr<SchedulingPolicy> policy, LoadPolicy(name));
    p.policies.push_back(std::move(policy));
  }
  if (p.policies.empty()) return InvalidArgument("--policy names no policy");
  DS_ASSIGN_OR_RETURN(p.cluster, ParseClusterSpec(DefaultCluster(flags), TracesDir(flags)));
  if (!flags.deadlines.empty()) {
    DS_ASSIGN_OR_RETURN(p.deadlines, sim::ParseDeadlineRule(flags.deadlines));
  }
  return p;
}

// The data: the workload and the ground-truth model. A failure here is a runtime error.
Status LoadData(const SimulateFlags& flags, Prepared& p, std::ostream& err) {
  sim::ReadOptions read_options;
  read_options.skip_bad_rows = flags.skip_bad_rows;
  read_options.max_jobs = flags.max_jobs;
  DS_ASSIGN_OR_RETURN(p.workload, sim::LoadWorkload(flags.trace, read_options));
  if (p.workload.skipped_rows > 0) {
    err << "dlsched: skipped " << p.workload.skipped_rows << " malformed rows of " << flags.trace
        << "\n";
  }
  if (p.workload.excluded_rows > 0) {
    err << "dlsched: left out " << p.workload.excluded_rows << " rows of " << flags.trace
        << " by the format's rules (alibaba: CPU-only and never-run pods)\n";
  }
  DS_ASSIGN_OR_RETURN(p.truth, MakeTruth(ResolveThroughput(flags), TracesDir(flags), p.workload));
  // After MakeTruth: a deadline follows the ideal run time, which the truth may have set.
  if (p.deadlines) sim::ApplyDeadlineRule(*p.deadlines, p.workload.jobs);
  // Policies predict with the built-in model or a predictor fitted to profiles, never the truth.
  DS_ASSIGN_OR_RETURN(p.estimator, MakeEstimator(flags.predictor));
  sim::SharingOptions sharing;
  sharing.traces_dir = flags.sharing_data == "auto"      ? TracesDir(flags)
                       : flags.sharing_data == "builtin" ? ""
                                                         : flags.sharing_data;
  sharing.seed = flags.seed;
  DS_ASSIGN_OR_RETURN(p.sharing, sim::SharingWorld::Build(p.workload.jobs, p.cluster, sharing));
  if (!flags.quiet) err << "dlsched: GPU sharing model: " << p.sharing->source() << "\n";
  return Status::Ok();
}

sim::SimOptions MakeOptions(const SimulateFlags& flags) {
  sim::SimOptions options;
  options.seed = flags.seed;
  options.checkpoint_delay = Seconds(flags.checkpoint_s);
  options.restore_delay = Seconds(flags.restore_s);
  options.estimate_error = flags.estimate_error;
  if (flags.stop_at_s > 0) options.stop_at = AtSeconds(flags.stop_at_s);
  options.explain_every = Seconds(flags.explain_every_s);
  options.lend_service_gpus = !flags.no_service_lending;
  return options;
}

// Runs each policy on its own thread (at most `threads` at once); results in --policy order.
std::vector<sim::RunResult> RunAll(Prepared& p, const SimulateFlags& flags, std::ostream& err) {
  std::vector<sim::RunResult> runs(p.policies.size());
  std::mutex err_mutex;
  auto run_one = [&](size_t i) {
    sim::SharingWorld sharing = *p.sharing;  // a run feeds its histories
    const sim::SimInputs inputs{p.cluster, p.workload, *p.truth, *p.estimator, &sharing};
    sim::SimOptions options = MakeOptions(flags);
    const std::string name(p.policies[i]->Name());
    if (!flags.quiet) {
      options.on_progress = [&err, &err_mutex, name](const sim::SimProgress& s) {
        std::lock_guard lock(err_mutex);
        err << fmt::format("  {:<14} {:>6.1f}% of {} jobs done, simulated {:.1f} days, {:.1f}s\n",
                           name, 100.0 * s.jobs_done / std::max<size_t>(1, s.jobs_total),
                           s.jobs_total, ToSeconds(s.sim_time) / 86400, s.wall_s);
      };
    }
    runs[i] = sim::Simulate(inputs, std::move(p.policies[i]), options);
    if (!flags.quiet) {
      std::lock_guard lock(err_mutex);
      err << fmt::format("  {:<14} done in {:.2f}s\n", name, runs[i].summary.wall_s);
    }
  };
  const size_t threads = flags.threads > 0
                             ? static_cast<size_t>(flags.threads)
                             : std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t start = 0; start < runs.size(); start += threads) {
    std::vector<std::jthread> batch;
    for (size_t i = start; i < std::min(runs.size(), start + threads); ++i) {
      batch.emplace_back(run_one, i);
    }
  }
  return runs;
}

Status WriteOutputs(const std::vector<sim::RunResult>& runs, const Prepared& p,
                    const SimulateFlags& flags) {
  const std::string cluster = p.cluster.Describe();
  if (!flags.json_path.empty()) {
    DS_RETURN_IF_ERROR(WriteFile(flags.json_path, "JSON results", [&](std::ostream& out) {
      out << sim::RunsToJson(runs, {flags.trace, cluster, flags.seed}) << "\n";
      return Status::Ok();
    }));
  }
  if (!flags.report_path.empty()) {
    DS_RETURN_IF_ERROR(WriteFile(flags.report_path, "HTML report", [&](std::ostream& out) {
      return sim::WriteHtmlReport(runs, {"dlsched simulation", flags.trace, cluster, flags.seed},
                                  out);
    }));
  }
  if (!flags.jobs_csv_prefix.empty()) {
    for (const sim::RunResult& run : runs) {
      const std::string path = flags.jobs_csv_prefix + run.policy + ".csv";
      DS_RETURN_IF_ERROR(WriteFile(path, "per-job CSV",
                                   [&](std::ostream& out) { return sim::WriteJobsCsv(run, out); }));
    }
  }
  return Status::Ok();
}

}  // namespace

void AddSimulateFlags(CLI::App& command, SimulateFlags& flags) {
  command
      .add_option("--trace", flags.trace,
                  "Workload: philly:PATH, gavel:PATH, tiresias:PATH, chronus:PATH, "
                  "csv:PATH (native CSV), or synthetic[:jobs=N,seed=S,load=X,gpus=G,users=U]")
      ->capture_default_str();
  command.add_option("--cluster", flags.cluster,
                     "Cluster: NODESxGPUSxTYPE terms joined by '+' (64x8xV100, "
                     "9x4xK80+9x4xP100), 'philly', or a .json spec. Default: 16x8xV100 for "
                     "synthetic workloads, 64x8xV100 for traces");
  command
      .add_option("--policy", flags.policies,
                  "Comma-separated policy names (see 'dlsched policies') or .json profiles")
      ->capture_default_str()
      ->each([&flags](const std::string&) { flags.policy_given = true; });
  command.add_option("--replay", flags.replay,
                     "Replay the event log of a 'dlsched serve' database (DB_PATH) in a fresh "
                     "scheduler and compare its decisions with the logged ones; --policy NAME "
                     "replays with another profile. Exit 0: identical, 1: diverged");
  command.add_option("--json", flags.json_path, "Write per-run results as JSON to FILE");
  command.add_option("--report", flags.report_path,
                     "Write a self-contained HTML report (JCT CDF, utilisation, queue) to FILE");
  command.add_option("--jobs-csv", flags.jobs_csv_prefix,
                     "Write per-job CSVs to PREFIX<policy>.csv");
  command.add_option("--seed", flags.seed, "Seed of policies' RNG and estimate noise")
      ->capture_default_str();
  command
      .add_option("--throughput", flags.throughput,
                  "Ground-truth throughput model: auto (gavel for gavel: traces, else builtin), "
                  "builtin, or gavel[:PATH] (Gavel's measured table)")
      ->capture_default_str();
  command.add_option("--predictor", flags.predictor,
                     "Policies estimate speed with a predictor fitted to this profile store "
                     "(from 'dlsched profile') instead of the built-in model");
  command
      .add_option("--checkpoint-s", flags.checkpoint_s,
                  "Seconds a preempted job holds its GPUs while it checkpoints")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--restore-s", flags.restore_s,
                  "Seconds a resumed job holds its GPUs before it makes progress")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--estimate-error", flags.estimate_error,
                  "Sigma of the lognormal error in users' runtime estimates (0 = exact)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--stop-at-s", flags.stop_at_s,
                  "Stop at this simulated second; report the rest as unfinished")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--explain-every-s", flags.explain_every_s,
                  "Sample why waiting jobs wait this often (simulated seconds) for the "
                  "pending_s_by_cause / fragmentation_blocked_s figures and the jobs CSV's "
                  "wait_cause; 0 = off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command.add_option("--deadlines", flags.deadlines,
                     "Give jobs without a deadline one by a rule: 'slack=LO:HI,strict=S,soft=F,"
                     "seed=N' (deadline = submit + slack x ideal run time, slack uniform in "
                     "[LO, HI]; a share S strict, F soft, the rest best-effort; defaults "
                     "slack=1.5:3,strict=1,soft=0,seed=1)");
  command.add_flag("--no-service-lending", flags.no_service_lending,
                   "Online services keep the GPUs their load leaves idle (static reservations) "
                   "instead of lending them to training jobs");
  command.add_option("--max-jobs", flags.max_jobs, "Use only the first N jobs of the trace");
  command.add_flag("--skip-bad-rows", flags.skip_bad_rows,
                   "Skip and count malformed trace rows instead of failing");
  command.add_option("--sharing-data", flags.sharing_data,
                     "Job types and interference for GPU sharing: auto (the traces folder's "
                     "Lucid and Gavel measurements, else built-in), builtin, or a traces folder");
  command.add_option("--traces-dir", flags.traces_dir,
                     "Folder of third-party traces (for the 'philly' cluster preset); default "
                     "$DLSCHED_TRACES or ../shared/traces");
  command
      .add_option("--threads", flags.threads, "Policies simulated at once (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  command.add_flag("-q,--quiet", flags.quiet, "No progress on stderr");
}

namespace {

// `--replay DB`: the daemon's event log through a fresh Scheduler (daemon/core/replay.h).
int RunReplay(const SimulateFlags& flags, std::ostream& out, std::ostream& err) {
  daemon::ReplayOptions options;
  if (flags.policy_given) {
    const std::vector<std::string> names = SplitPolicies(flags.policies);
    if (names.size() != 1) {
      err << "dlsched simulate: --replay takes one --policy\n";
      return kExitUsage;
    }
    Result<PipelineConfig> profile = LoadProfile(names[0]);
    if (!profile.ok()) {
      err << "dlsched simulate: --policy: " << profile.status().message() << "\n";
      return kExitUsage;
    }
    options.profile = std::move(profile).value();
  }
  const Result<daemon::ReplayReport> report = daemon::ReplayEventLog(flags.replay, options);
  if (!report.ok()) {
    err << "dlsched simulate: --replay: " << report.status().message() << "\n";
    return kExitUsage;
  }
  out << daemon::FormatReplayReport(*report, flags.replay);
  return report->divergence ? kExitRuntimeError : kExitOk;
}

}  // namespace

int RunSimulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err) {
  if (!flags.replay.empty()) return RunReplay(flags, out, err);
  Result<Prepared> prepared = PrepareSetup(flags);
  if (!prepared.ok()) {
    err << "dlsched simulate: " << prepared.status().message() << "\n";
    return kExitUsage;
  }
  if (const Status loaded = LoadData(flags, *prepared, err); !loaded.ok()) {
    err << "dlsched simulate: " << loaded.message() << "\n";
    return kExitRuntimeError;
  }
  Prepared& p = *prepared;
  if (!flags.quiet) {
    err << "dlsched: " << p.workload.jobs.size() << " jobs from " << flags.trace << " on "
        << p.cluster.Describe() << ", " << p.policies.size() << " policies\n";
  }
  const std::vector<sim::RunResult> runs = RunAll(p, flags, err);
  sim::WriteComparisonTable(runs, out);
  const Status written = WriteOutputs(runs, p, flags);
  if (!written.ok()) {
    err << "dlsched simulate: " << written.message() << "\n";
    return kExitRuntimeError;
  }
  return kExitOk;
}

}  // namespace dlsched::cli
