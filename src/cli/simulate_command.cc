#include "cli/simulate_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "daemon/core/replay.h"
#include "dlsched/common/text.h"
#include "dlsched/perf/noisy_throughput_model.h"
#include "dlsched/perf/predictor.h"
#include "dlsched/perf/throughput_model.h"
#include "io/cluster_spec.h"
#include "io/gavel_throughputs.h"
#include "io/profile.h"
#include "io/profile_store.h"
#include "io/suggest.h"
#include "sim/cpu_sensitivity.h"
#include "sim/deadline_rule.h"
#include "sim/host_allocation.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/workload.h"
#include "sim/workload_synthetic.h"

namespace dlsched::cli {
namespace {

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

// --json - and --report - write to standard output (the command's `out`).
bool IsStdout(const std::string& path) { return path == "-"; }

Status WriteFile(const std::string& path, const std::string& what,
                 const std::function<Status(std::ostream&)>& write, std::ostream& out) {
  if (IsStdout(path)) {
    DS_RETURN_IF_ERROR(write(out));
    out.flush();
    if (!out) return IoError("writing " + what + " to standard output failed");
    return Status::Ok();
  }
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
  std::unique_ptr<ThroughputModel> estimator;  // unused with --oracle (the truth stands in)
  std::string speed_estimator;                 // what `estimator` is, for the outputs
  std::optional<sim::DeadlineRule> deadlines;  // --deadlines
  sim::HostAllocation host_allocation = sim::HostAllocation::kRequested;  // --host-allocation
  std::unique_ptr<sim::SharingWorld> sharing;                             // each run copies it
};

// "auto" picks Gavel's measured table for Gavel traces and the Gavel synthetic mix (their work is
// in Gavel steps) and the built-in model otherwise.
std::string ResolveThroughput(const SimulateFlags& flags) {
  if (flags.throughput != "auto") return flags.throughput;
  if (flags.trace.starts_with("gavel:")) return "gavel";
  if (flags.trace.starts_with("synthetic:")) {
    const auto synthetic = sim::ParseSyntheticOptions(flags.trace.substr(10));
    if (synthetic.ok() && synthetic->mix == sim::SyntheticOptions::Mix::kGavel) return "gavel";
  }
  return "builtin";
}

// The ground truth: "builtin", "flat" (placement-blind: every job at its reference speed
// wherever it runs, Tiresias' simulator's model), or "gavel[:PATH]" (Gavel's measured table;
// jobs it does not know fall back to the built-in model). For Gavel, each known job's reference
// speed is set from the table so that ideal durations are in seconds.
Result<std::unique_ptr<ThroughputModel>> MakeTruth(const std::string& spec,
                                                   const std::string& traces_dir,
                                                   sim::Workload& workload) {
  if (spec == "builtin") {
    return std::unique_ptr<ThroughputModel>(std::make_unique<SimpleThroughputModel>());
  }
  if (spec == "flat") {
    return std::unique_ptr<ThroughputModel>(
        std::make_unique<SimpleThroughputModel>(SimpleThroughputModel::FlatOptions()));
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
  return InvalidArgument("unknown --throughput '" + spec +
                         "' (want auto, builtin, flat, gavel[:PATH])");
}

// The lognormal sigma of the speed error the policies' built-in model gets when the ground truth
// is the built-in model too: the held-out error of the performance predictor on Gavel's measured
// table (MAPE 9.6%, docs/qos.md, "Accuracy"), since E|exp(sigma z) - 1| ~ 0.8 sigma.
constexpr double kSpeedErrorSigma = 0.12;

// The policies' estimator and what to call it: with --predictor a PerfPredictor fitted to a
// profile store (falling back to the built-in model for jobs the profiles do not cover); else
// the built-in model, made wrong per job (NoisyThroughputModel) when it is also the ground truth,
// so that no policy sees true speeds (docs/estimates.md).
Status MakeEstimator(const SimulateFlags& flags, const std::string& truth, Prepared& p) {
  if (!flags.predictor.empty()) {
    DS_ASSIGN_OR_RETURN(PerfPredictor predictor, FitProfileStore(flags.predictor));
    p.estimator = std::make_unique<PerfPredictor>(std::move(predictor));
    p.speed_estimator = "predictor fitted to " + flags.predictor;
    return Status::Ok();
  }
  if (truth != "builtin") {
    p.estimator = std::make_unique<SimpleThroughputModel>();
    p.speed_estimator = "builtin model (the truth: " + truth + ")";
    return Status::Ok();
  }
  p.estimator = std::make_unique<NoisyThroughputModel>(
      std::make_shared<const SimpleThroughputModel>(), kSpeedErrorSigma, flags.seed);
  p.speed_estimator =
      fmt::format("builtin model with per-job error (lognormal sigma {})", kSpeedErrorSigma);
  return Status::Ok();
}

// The --trace forms sim::LoadWorkload reads (sim/workload.h), checked here so that a typo in
// the form is a usage error, unlike a bad row in the file.
Status CheckTraceSpec(const std::string& spec) {
  static const std::vector<std::string> kFormats = {"philly",  "gavel", "tiresias", "chronus",
                                                    "alibaba", "csv",   "synthetic"};
  const size_t colon = spec.find(':');
  const std::string format = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (std::find(kFormats.begin(), kFormats.end(), format) == kFormats.end()) {
    std::string message = "--trace: unknown workload form '" + format + "' in '" + spec +
                          "': want philly:PATH, gavel:PATH, tiresias:PATH, chronus:PATH, "
                          "alibaba:PATH, csv:PATH or synthetic[:k=v,...]";
    if (const std::optional<std::string> close = ClosestName(format, kFormats)) {
      message += "; did you mean " + *close + ":?";
    }
    return InvalidArgument(message);
  }
  if (format == "synthetic") return sim::ParseSyntheticOptions(rest).status();
  if (rest.empty()) {
    return InvalidArgument("--trace '" + spec + "' names no file: want " + format + ":PATH");
  }
  return Status::Ok();
}

// An output file the run will write: refused before the run when it cannot be written, so that
// hours of simulation are not lost to a typo in the path.
Status CheckWritable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  if (IsStdout(path)) return Status::Ok();
  std::error_code ec;
  const fs::path file(path);
  const auto cannot = [&](const std::string& why) {
    return InvalidArgument(flag + ": cannot write " + path + ": " + why);
  };
  if (fs::is_directory(file, ec)) return cannot("it is a directory");
  if (fs::exists(file, ec)) {
    if (::access(path.c_str(), W_OK) != 0) return cannot(std::strerror(errno));
    return Status::Ok();
  }
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::is_directory(dir, ec)) return cannot("no directory " + dir.string());
  if (::access(dir.c_str(), W_OK) != 0) {
    return cannot(dir.string() + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// The flags themselves: trace form, policies, cluster, output paths. A failure here is a usage
// error. Warnings go to `err`.
Result<Prepared> PrepareSetup(const SimulateFlags& flags, std::ostream& err) {
  Prepared p;
  DS_RETURN_IF_ERROR(CheckTraceSpec(flags.trace));
  for (const std::string& name : SplitNonEmpty(flags.policies, ',')) {
    // Build every policy now, so a typo fails before any run starts.
    DS_ASSIGN_OR_RETURN(const PolicyProfile profile, LoadPolicyProfile(name));
    DS_ASSIGN_OR_RETURN(std::unique_ptr<SchedulingPolicy> policy, BuildPolicy(profile));
    p.policies.push_back(std::move(policy));
  }
  if (p.policies.empty()) return InvalidArgument("--policy names no policy");
  if (flags.oracle && (flags.estimate_error > 0 || !flags.predictor.empty())) {
    return InvalidArgument(
        "--oracle gives the policies true run times and speeds: it takes neither "
        "--estimate-error nor --predictor");
  }
  const std::string cluster_spec = DefaultCluster(flags);
  DS_ASSIGN_OR_RETURN(p.cluster, ParseClusterSpec(cluster_spec, TracesDir(flags)));
  // A type no throughput model knows runs at the reference speed. Typed in the shorthand it is
  // almost always a typo ("2x8xV1000"): refused. A .json spec defines its types on purpose: the
  // assumption is said.
  if (const std::string unknown = DescribeUnknownGpuTypes(p.cluster); !unknown.empty()) {
    if (!cluster_spec.ends_with(".json")) {
      return InvalidArgument("--cluster: " + unknown + (unknown.back() == '?' ? "" : ".") +
                             " To simulate a type of your own (at the V100 reference speed), "
                             "name it in a .json cluster spec");
    }
    err << "dlsched simulate: warning: " << unknown << (unknown.back() == '?' ? "" : ".")
        << " These GPUs are simulated at the V100 reference speed.\n";
  }
  if (!flags.deadlines.empty()) {
    DS_ASSIGN_OR_RETURN(p.deadlines, sim::ParseDeadlineRule(flags.deadlines));
  }
  DS_ASSIGN_OR_RETURN(p.host_allocation, sim::ParseHostAllocation(flags.host_allocation));
  if (IsStdout(flags.json_path) && IsStdout(flags.report_path)) {
    return InvalidArgument("--json - and --report - cannot both write to standard output");
  }
  if (!flags.json_path.empty()) DS_RETURN_IF_ERROR(CheckWritable(flags.json_path, "--json"));
  if (!flags.report_path.empty()) {
    DS_RETURN_IF_ERROR(CheckWritable(flags.report_path, "--report"));
  }
  if (!flags.jobs_csv_prefix.empty()) {
    for (const auto& policy : p.policies) {
      DS_RETURN_IF_ERROR(CheckWritable(flags.jobs_csv_prefix + std::string(policy->Name()) + ".csv",
                                       "--jobs-csv"));
    }
  }
  return p;
}

// The data: the workload and the ground-truth model. A failure here is a runtime error.
Status LoadData(const SimulateFlags& flags, Prepared& p, std::ostream& err) {
  sim::ReadOptions read_options;
  read_options.skip_bad_rows = flags.skip_bad_rows;
  read_options.max_jobs = flags.max_jobs;
  read_options.traces_dir = TracesDir(flags);
  DS_ASSIGN_OR_RETURN(p.workload, sim::LoadWorkload(flags.trace, read_options));
  if (p.workload.skipped_rows > 0) {
    err << "dlsched: skipped " << p.workload.skipped_rows << " malformed rows of " << flags.trace
        << "\n";
  }
  if (p.workload.excluded_rows > 0) {
    err << "dlsched: left out " << p.workload.excluded_rows << " rows of " << flags.trace
        << " by the format's rules (alibaba: pods that never ran)\n";
  }
  sim::ApplyHostAllocation(p.host_allocation, p.cluster, p.workload.jobs);
  if (p.host_allocation == sim::HostAllocation::kCpuAware) {
    err << "dlsched: --host-allocation cpu-aware: GPU jobs ask for the cores the simulator's own "
           "CPU-sensitivity model says they can use (an oracle of their sensitivity; the JSON "
           "says host_allocation)\n";
  }
  const std::string truth = ResolveThroughput(flags);
  DS_ASSIGN_OR_RETURN(p.truth, MakeTruth(truth, TracesDir(flags), p.workload));
  // Where nodes state CPUs, data-loading models run slower with fewer cores than they can use
  // (sim/cpu_sensitivity.h); elsewhere the truth is left as it is, costing nothing.
  if (p.cluster.total_cpus() > 0) {
    p.truth = std::make_unique<sim::CpuSensitiveThroughputModel>(std::move(p.truth));
  }
  // After MakeTruth: a deadline follows the ideal run time, which the truth may have set.
  if (p.deadlines) sim::ApplyDeadlineRule(*p.deadlines, p.workload.jobs);
  // Policies predict with a model that is not the truth, unless --oracle says otherwise.
  if (flags.oracle) {
    p.speed_estimator = "the ground truth (" + truth + ", oracle)";
  } else {
    DS_RETURN_IF_ERROR(MakeEstimator(flags, truth, p));
  }
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
  options.runtime_estimates = flags.oracle               ? sim::RuntimeEstimates::kOracle
                              : flags.estimate_error > 0 ? sim::RuntimeEstimates::kStated
                                                         : sim::RuntimeEstimates::kHistory;
  if (flags.stop_at_s > 0) options.stop_at = AtSeconds(flags.stop_at_s);
  options.explain_every = Seconds(flags.explain_every_s);
  options.lend_service_gpus = !flags.no_service_lending;
  return options;
}

// The runs of one simulate command as they finish: written by the simulating threads, read by
// the interrupt watcher.
struct Runs {
  std::mutex mutex;
  std::vector<sim::RunResult> results;  // in --policy order
  std::vector<bool> done;
  std::vector<std::string> names;
};

// Runs each policy on its own thread (at most `threads` at once); results in --policy order.
void RunAll(Prepared& p, const SimulateFlags& flags, Runs& runs, std::ostream& err) {
  std::mutex err_mutex;
  auto run_one = [&](size_t i) {
    sim::SharingWorld sharing = *p.sharing;  // a run feeds its histories
    const ThroughputModel& estimator = flags.oracle ? *p.truth : *p.estimator;
    const sim::SimInputs inputs{p.cluster, p.workload, *p.truth,
                                estimator, &sharing,   p.speed_estimator};
    sim::SimOptions options = MakeOptions(flags);
    const std::string name = runs.names[i];
    if (!flags.quiet) {
      options.on_progress = [&err, &err_mutex, name](const sim::SimProgress& s) {
        std::lock_guard lock(err_mutex);
        err << fmt::format("  {:<14} {:>6.1f}% of {} jobs done, simulated {:.1f} days, {:.1f}s\n",
                           name, 100.0 * s.jobs_done / std::max<size_t>(1, s.jobs_total),
                           s.jobs_total, ToSeconds(s.sim_time) / 86400, s.wall_s);
      };
    }
    sim::RunResult result = sim::Simulate(inputs, std::move(p.policies[i]), options);
    const double wall_s = result.summary.wall_s;
    {
      std::lock_guard lock(runs.mutex);
      runs.results[i] = std::move(result);
      runs.done[i] = true;
    }
    if (!flags.quiet) {
      std::lock_guard lock(err_mutex);
      err << fmt::format("  {:<14} done in {:.2f}s\n", name, wall_s);
    }
  };
  const size_t threads = flags.threads > 0
                             ? static_cast<size_t>(flags.threads)
                             : std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t start = 0; start < runs.results.size(); start += threads) {
    std::vector<std::jthread> batch;
    for (size_t i = start; i < std::min(runs.results.size(), start + threads); ++i) {
      batch.emplace_back(run_one, i);
    }
  }
}

// What the outputs say when the command was interrupted: the policies that did not finish.
struct Partial {
  std::vector<std::string> unfinished;
};

// The human table goes to `out`, or to `err` when --json or --report writes to stdout.
void WriteTable(const std::vector<sim::RunResult>& runs, const SimulateFlags& flags,
                const std::optional<Partial>& partial, std::ostream& out, std::ostream& err) {
  std::ostream& table = IsStdout(flags.json_path) || IsStdout(flags.report_path) ? err : out;
  sim::WriteComparisonTable(runs, table, flags.timings);
  if (partial) {
    table << fmt::format("Partial: interrupted before {} finished\n",
                         fmt::join(partial->unfinished, ", "));
  }
  table.flush();
}

Status WriteOutputs(const std::vector<sim::RunResult>& runs, const Prepared& p,
                    const SimulateFlags& flags, const std::optional<Partial>& partial,
                    std::ostream& out) {
  const std::string cluster = p.cluster.Describe();
  if (!flags.json_path.empty()) {
    const std::string allocation = p.host_allocation == sim::HostAllocation::kRequested
                                       ? ""
                                       : std::string(sim::HostAllocationName(p.host_allocation));
    std::string json =
        sim::RunsToJson(runs, {flags.trace, cluster, flags.seed, allocation}, flags.timings);
    if (partial) {
      // Marked at the top level; a complete run's JSON has no "partial" key.
      nlohmann::ordered_json doc = nlohmann::ordered_json::parse(json);
      doc["partial"] = true;
      doc["unfinished_policies"] = partial->unfinished;
      json = doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    }
    DS_RETURN_IF_ERROR(WriteFile(
        flags.json_path, "JSON results",
        [&](std::ostream& file) {
          file << json << "\n";
          return Status::Ok();
        },
        out));
  }
  if (!flags.report_path.empty()) {
    const std::string title =
        partial ? "dlsched simulation (partial: interrupted)" : "dlsched simulation";
    DS_RETURN_IF_ERROR(WriteFile(
        flags.report_path, "HTML report",
        [&](std::ostream& file) {
          return sim::WriteHtmlReport(runs, {title, flags.trace, cluster, flags.seed}, file);
        },
        out));
  }
  if (!flags.jobs_csv_prefix.empty()) {
    for (const sim::RunResult& run : runs) {
      const std::string path = flags.jobs_csv_prefix + run.policy + ".csv";
      DS_RETURN_IF_ERROR(WriteFile(
          path, "per-job CSV", [&](std::ostream& file) { return sim::WriteJobsCsv(run, file); },
          out));
    }
  }
  return Status::Ok();
}

// Ctrl-C during the runs: SIGINT is blocked in every thread while this object lives, and its
// thread waits for it. On SIGINT it writes the table and the output files of the policies that
// have finished, marked partial, and ends the process with exit code 130 (128 + SIGINT) without
// waiting for the runs still going.
class InterruptWatcher {
 public:
  InterruptWatcher(Runs& runs, const Prepared& p, const SimulateFlags& flags, std::ostream& out,
                   std::ostream& err) {
    // A process started with SIGINT ignored (a shell's background job, nohup) keeps ignoring it.
    struct sigaction current {};
    if (sigaction(SIGINT, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) return;
    active_ = true;
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    // Before any simulating thread starts, so that they inherit the mask.
    pthread_sigmask(SIG_BLOCK, &sigint, &old_mask_);
    thread_ = std::jthread([sigint, &runs, &p, &flags, &out, &err](std::stop_token stop) {
      const timespec tick{0, 100'000'000};  // 100 ms: how soon a finished command notices
      while (!stop.stop_requested()) {
        if (sigtimedwait(&sigint, nullptr, &tick) != SIGINT) continue;
        std::lock_guard lock(runs.mutex);  // the runs still going cannot publish any more
        std::vector<sim::RunResult> finished;
        Partial partial;
        for (size_t i = 0; i < runs.results.size(); ++i) {
          if (runs.done[i]) {
            finished.push_back(runs.results[i]);
          } else {
            partial.unfinished.push_back(runs.names[i]);
          }
        }
        err << fmt::format("dlsched simulate: interrupted; {} of {} policies finished\n",
                           finished.size(), runs.results.size());
        // Every run may have finished just before the signal: then nothing is partial.
        const std::optional<Partial> marked =
            partial.unfinished.empty() ? std::nullopt : std::optional<Partial>(partial);
        if (!finished.empty()) {
          WriteTable(finished, flags, marked, out, err);
          if (const Status written = WriteOutputs(finished, p, flags, marked, out); !written.ok()) {
            err << "dlsched simulate: " << written.message() << "\n";
          }
        }
        out.flush();
        err.flush();
        std::_Exit(kExitInterrupted);
      }
    });
  }

  ~InterruptWatcher() {
    if (!active_) return;
    thread_.request_stop();
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  bool active_ = false;
  sigset_t old_mask_;
  std::jthread thread_;
};

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
  command.add_option("--json", flags.json_path,
                     "Write per-run results as JSON to FILE ('-': standard output; the table "
                     "then goes to standard error)");
  command.add_option("--report", flags.report_path,
                     "Write a self-contained HTML report (JCT CDF, utilisation, queue) to FILE "
                     "('-': standard output)");
  command.add_option("--jobs-csv", flags.jobs_csv_prefix,
                     "Write per-job CSVs to PREFIX<policy>.csv");
  command.add_option("--seed", flags.seed, "Seed of policies' RNG and estimate noise")
      ->capture_default_str()
      ->check(IntegerAtLeast(0));
  command
      .add_option(
          "--throughput", flags.throughput,
          "Ground-truth throughput model: auto (gavel for gavel: traces and synthetic mix=gavel, "
          "else builtin), "
          "builtin, flat (every job at its reference speed wherever it runs, as in Tiresias' "
          "simulator), or gavel[:PATH] (Gavel's measured table)")
      ->capture_default_str();
  command
      .add_option("--host-allocation", flags.host_allocation,
                  "Host CPUs of GPU jobs: requested (their own requests, the cluster's per-GPU "
                  "defaults where unstated), proportional (per-GPU share for every GPU job) or "
                  "cpu-aware (Synergy-like: data-loading models ask the cores they can use, "
                  "within twice the share; docs/multi-resource.md)")
      ->capture_default_str();
  command.add_option(
      "--predictor", flags.predictor,
      "Policies estimate speed with a predictor fitted to this profile store "
      "(from 'dlsched profile') instead of the built-in model; with --replay, instead "
      "of the estimator the daemon logged");
  command
      .add_option("--checkpoint-s", flags.checkpoint_s,
                  "How long a preempted job holds its GPUs while it checkpoints (seconds, or "
                  "30s, 2m, 1h, 1d)")
      ->capture_default_str()
      ->transform(DurationFlag());
  command
      .add_option("--restore-s", flags.restore_s,
                  "How long a resumed job holds its GPUs before it makes progress (seconds, "
                  "or 30s, 2m, 1h, 1d)")
      ->capture_default_str()
      ->transform(DurationFlag());
  command
      .add_option("--estimate-error", flags.estimate_error,
                  "Policies see users' runtime estimates with this lognormal error (sigma) "
                  "instead of the default history-based estimates (docs/estimates.md)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--oracle", flags.oracle,
                   "Policies see every job's true run time and speed (the oracle; runs are "
                   "labelled '(oracle)' in every output)");
  command
      .add_option("--stop-at-s", flags.stop_at_s,
                  "Stop at this simulated time (seconds, or 12h, 7d); report the rest as "
                  "unfinished")
      ->transform(DurationFlag());
  command
      .add_option("--explain-every-s", flags.explain_every_s,
                  "Sample why waiting jobs wait this often (simulated seconds, or 30m, 1h) for "
                  "the pending_s_by_cause / fragmentation_blocked_s figures and the jobs CSV's "
                  "wait_cause; 0 = off")
      ->capture_default_str()
      ->transform(DurationFlag());
  command.add_option("--deadlines", flags.deadlines,
                     "Give jobs without a deadline one by a rule: 'slack=LO:HI,strict=S,soft=F,"
                     "seed=N' (deadline = submit + slack x ideal run time, slack uniform in "
                     "[LO, HI]; a share S strict, F soft, the rest best-effort; defaults "
                     "slack=1.5:3,strict=1,soft=0,seed=1)");
  command.add_flag("--no-service-lending", flags.no_service_lending,
                   "Online services keep the GPUs their load leaves idle (static reservations) "
                   "instead of lending them to training jobs");
  command.add_option("--max-jobs", flags.max_jobs, "Use only the first N jobs of the trace")
      ->check(IntegerAtLeast(1));
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
  command.add_flag("--timings", flags.timings,
                   "Add each run's scheduling cycles and their wall time (p50, p99, max) to the "
                   "table and the JSON (wall time varies between runs)");
}

namespace {

// `--replay DB`: the daemon's event log through a fresh Scheduler (daemon/core/replay.h).
int RunReplay(const SimulateFlags& flags, std::ostream& out, std::ostream& err) {
  daemon::ReplayOptions options;
  if (flags.policy_given) {
    const std::vector<std::string> names = SplitNonEmpty(flags.policies, ',');
    if (names.size() != 1) {
      err << "dlsched simulate: --replay takes one --policy\n";
      return kExitUsage;
    }
    Result<PolicyProfile> profile = LoadPolicyProfile(names[0]);
    if (!profile.ok()) {
      err << "dlsched simulate: --policy: " << profile.status().message() << "\n";
      return kExitUsage;
    }
    options.profile = std::move(profile).value();
  }
  if (!flags.predictor.empty()) {
    Result<PerfPredictor> predictor = FitProfileStore(flags.predictor);
    if (!predictor.ok()) {
      err << "dlsched simulate: --predictor: " << predictor.status().message() << "\n";
      return kExitUsage;
    }
    options.estimator = std::make_unique<PerfPredictor>(std::move(predictor).value());
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
  Result<Prepared> prepared = PrepareSetup(flags, err);
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
  Runs runs;
  runs.results.resize(p.policies.size());
  runs.done.resize(p.policies.size(), false);
  for (const auto& policy : p.policies) runs.names.emplace_back(policy->Name());
  {
    const InterruptWatcher watcher(runs, p, flags, out, err);
    RunAll(p, flags, runs, err);
  }
  WriteTable(runs.results, flags, std::nullopt, out, err);
  const Status written = WriteOutputs(runs.results, p, flags, std::nullopt, out);
  if (!written.ok()) {
    err << "dlsched simulate: " << written.message() << "\n";
    return kExitRuntimeError;
  }
  return kExitOk;
}

}  // namespace dlsched::cli
