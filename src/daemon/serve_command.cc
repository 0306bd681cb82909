#include "daemon/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <thread>

#include "daemon/api/auth.h"
#include "daemon/api/http_api.h"
#include "daemon/core/daemon.h"
#include "daemon/exec/gpu_monitor.h"
#include "daemon/exec/host_enforcer.h"
#include "daemon/exec/job_files.h"
#include "daemon/exec/nvml.h"
#include "daemon/exec/share_env.h"
#include "daemon/exec/slurm_executor.h"
#include "daemon/exec/unix_account.h"
#include "io/cluster_spec.h"
#include "io/profile.h"
#include "io/profile_store.h"

namespace dlsched::daemon {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntimeError = 1;
constexpr int kExitUsage = 2;

// The reason the jobs killed by --kill-jobs-on-exit record.
constexpr const char* kKilledOnExitReason = "daemon shut down with --kill-jobs-on-exit";

struct HostPort {
  std::string host;
  int port = 0;
};

Result<HostPort> ParseListen(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgument("--listen: want HOST:PORT, got '" + std::string(text) + "'");
  }
  HostPort hp;
  hp.host = std::string(text.substr(0, colon));
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  const std::string_view port = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), hp.port);
  if (ec != std::errc() || end != port.data() + port.size() || hp.port < 0 || hp.port > 65535) {
    return InvalidArgument("--listen: bad port '" + std::string(port) + "'");
  }
  return hp;
}

}  // namespace

void AddServeFlags(CLI::App& command, ServeFlags& flags) {
  command
      .add_option("--listen", flags.listen,
                  "HOST:PORT to serve the REST API on; port 0 picks a free one.")
      ->capture_default_str();
  command.add_option("--db", flags.db, "SQLite database (default: <workdir>/dlsched.db).");
  command
      .add_option("--profile", flags.profile,
                  "Policy profile of any kind (`dlsched policies`): a built-in name or a .json "
                  "file. Sharing profiles (greedy-share, gandiva, ...) put jobs on shared GPUs, "
                  "knowing each job's observed GPU memory from the GPU monitor.")
      ->capture_default_str();
  command
      .add_option("--round", flags.round_s,
                  "Seconds per round of a round-based profile (hetero-*), instead of its "
                  "round_s: a short round for a demo or a test.")
      ->check(CLI::Range(0.001, 86400.0));
  command
      .add_option("--gpus", flags.gpus,
                  "GPUs to schedule: 'auto' (discover through NVML) or a cluster spec such as "
                  "'1x8xV100' (or '8xV100', one node of eight) or a cluster .json file (fake "
                  "GPUs, for machines without them).")
      ->capture_default_str();
  command.add_option("--workdir", flags.workdir, "Directory for job logs and checkpoints.")
      ->capture_default_str();
  command.add_option("--tokens", flags.tokens,
                     "Tokens file (token,user,role lines). Without it there is no "
                     "authentication and only loopback addresses are allowed.");
  command
      .add_option("--grace", flags.grace_s,
                  "Seconds between SIGTERM and SIGKILL when stopping a job.")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  command.add_option("--seed", flags.seed, "Seed of the policy's random numbers.")
      ->capture_default_str();
  command.add_option("--http-threads", flags.http_threads, "HTTP worker threads.")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  command.add_option("--max-body-bytes", flags.max_body_bytes, "Largest request body accepted.")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  command
      .add_option("--request-timeout", flags.request_timeout_s,
                  "Seconds a client has to send one request (headers and body) from its first "
                  "byte; slower ones get 408 and are disconnected.")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  command
      .add_option("--durability", flags.durability,
                  "'full': every acknowledged change is fsynced (survives power loss); "
                  "'process': no fsync at commit (survives a crash or kill -9 of the daemon, "
                  "not of the machine; several times the submission rate on slow disks).")
      ->capture_default_str()
      ->check(CLI::IsMember({"full", "process"}));
  command
      .add_option("--executor", flags.executor,
                  "Where jobs run: 'local' (processes on this machine) or 'slurm' (batch jobs on "
                  "the nodes and GPUs dlsched chose; the cluster comes from Slurm, so --gpus "
                  "stays 'auto').")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "slurm"}));
  command.add_option("--slurm-partition", flags.slurm_partition,
                     "Slurm partition whose GPU nodes dlsched schedules (default: Slurm's "
                     "default partition).");
  command
      .add_option("--slurm-poll", flags.slurm_poll_s,
                  "Seconds between polls of squeue and scontrol (job and node states).")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  command.add_option("--predictor", flags.predictor,
                     "Policies estimate speed with a predictor fitted to this profile store (the "
                     "file `dlsched profile` writes; jobs it cannot predict use the built-in "
                     "model), corrected online by the running jobs' progress reports, which also "
                     "gives their ETAs.");
  command
      .add_option("--max-log-bytes", flags.max_log_bytes,
                  "Largest size of each log of a job (stdout, stderr); past it the log is "
                  "rotated, keeping one older file (0: no cap).")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--min-free-mib", flags.min_free_mib,
                  "Launches wait while the file system of the database or of the workdir has "
                  "less free space than this, so the store keeps room (0: never).")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max() >> 20));  // MiB << 20 fits
  command.add_option("--nvml-library", flags.nvml_library,
                     "The NVML library for --gpus auto and the GPU monitor (default: "
                     "$DLSCHED_NVML_LIBRARY, else libnvidia-ml.so.1; tests name the fake NVML "
                     "of test/fake_nvml).");
  command
      .add_option("--monitor-period", flags.monitor_period_s,
                  "Seconds between samples of the GPUs through NVML (each job's GPU memory and "
                  "utilisation, shown by GET /v1/jobs/{id} and /metrics and kept in the "
                  "store); at least 0.05, or 0: no monitor. Default: 5 with --gpus auto, else no "
                  "monitor.")
      ->check(CLI::Range(0.0, 3600.0));
  command
      .add_option("--sharing-data", flags.sharing_data,
                  "Job types and interference for a sharing profile: builtin, or a traces folder "
                  "with Lucid's and Gavel's measurements (as `simulate --sharing-data`).")
      ->capture_default_str();
  command
      .add_option("--share-enforcer", flags.share_enforcer,
                  "How jobs sharing a GPU are held to their part of it: 'none' (accounting "
                  "only: each is told its memory bound in DLSCHED_GPU_MEMORY_LIMIT_MIB) or 'mps' "
                  "(NVIDIA MPS: one control daemon per GPU, a pinned memory limit and an SM "
                  "share per job, and no two users' jobs on one GPU; needs "
                  "nvidia-cuda-mps-control on PATH). See docs/sharing.md.")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "mps"}));
  command
      .add_option("--oom-slack-mib", flags.oom.slack_mib,
                  "The OOM watchdog stops (and requeues as out of memory) a job whose processes "
                  "hold more than its memory_mib plus this many MiB on a GPU ...")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  command
      .add_option("--oom-samples", flags.oom.samples,
                  "... in this many GPU monitor samples in a row (0: no watchdog; a job exiting "
                  "with a CUDA out-of-memory message is requeued all the same).")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  command
      .add_option("--host-enforcer", flags.host_enforcer,
                  "How the local executor holds each job to its CPUs and host memory: 'cgroup' "
                  "(a cgroup per job, v2 or v1: cpuset, CPU quota, memory limit; the kernel "
                  "kills a job over its memory), 'affinity' (CPU affinity and a watchdog that "
                  "kills a job whose processes hold more resident memory than it asked), 'none', "
                  "or 'auto': cgroup where usable, else affinity. The start-up log, GET /v1/nodes "
                  "and /metrics say which runs. See docs/multi-resource.md.")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cgroup", "affinity", "none"}));
  command
      .add_option("--cpus-per-gpu", flags.cpus_per_gpu,
                  "CPUs a job that states none gets per GPU (Slurm's DefCpuPerGPU); 0: none.")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  command
      .add_option("--mem-per-gpu", flags.mem_per_gpu,
                  "Host memory a job that states none gets per GPU (Slurm's DefMemPerGPU), e.g. "
                  "16g or 512m (bare numbers are MiB); 0: none.")
      ->capture_default_str();
  command.add_flag("--kill-jobs-on-exit", flags.kill_jobs_on_exit,
                   "Kill running jobs when the daemon stops: SIGTERM, --grace seconds, then "
                   "SIGKILL, and each is recorded as killed, so a restart does not run it again "
                   "(by default they keep running and a restarted daemon re-adopts them).");
  command.footer(
      "Signals: SIGTERM or SIGINT stops the daemon (running jobs keep running unless "
      "--kill-jobs-on-exit); SIGHUP is logged and ignored, so a closing terminal does not stop "
      "it.\n"
      "Ownership: one daemon at a time holds a --workdir and its --db (a lock file, "
      "<workdir>/dlsched.lock, and a lock on the database); a second one exits with status 1 "
      "naming the holder's pid, host and start time. The workdir and the database share a "
      "store id (<workdir>/.dlsched-store-id): a daemon refuses to start on a workdir that "
      "belongs to another, lost or replaced database, so no new job reads an old job's files.\n");
}

int RunServe(const ServeFlags& flags, std::ostream& out, std::ostream& err) {
  Result<HostPort> listen = ParseListen(flags.listen);
  if (!listen.ok()) {
    err << "dlsched serve: " << listen.status().message() << "\n";
    return kExitUsage;
  }
  std::unique_ptr<TokenTable> tokens;
  if (!flags.tokens.empty()) {
    std::string warning;
    if (Status safe = CheckTokensFileMode(flags.tokens, warning); !safe.ok()) {
      err << "dlsched serve: --tokens: " << safe.message() << "\n";
      return kExitUsage;
    }
    if (!warning.empty()) err << "dlsched serve: " << warning << "\n";
    Result<TokenTable> table = TokenTable::Load(flags.tokens);
    if (!table.ok()) {
      err << "dlsched serve: " << table.status().message() << "\n";
      return kExitUsage;
    }
    tokens = std::make_unique<TokenTable>(std::move(table).value());
  } else if (!IsLoopbackHost(listen->host)) {
    err << "dlsched serve: without --tokens the API has no authentication, so it listens on "
           "loopback addresses only (127.0.0.1, ::1, localhost); got '"
        << listen->host << "'\n";
    return kExitUsage;
  }

  const bool slurm = flags.executor == "slurm";
  if (slurm && flags.gpus != "auto") {
    err << "dlsched serve: --gpus: with --executor slurm the cluster comes from Slurm; leave "
           "--gpus at 'auto'\n";
    return kExitUsage;
  }
  std::optional<SlurmDiscovery> discovery;
  if (slurm) {
    Result<SlurmDiscovery> found = DiscoverSlurmCluster(flags.slurm_partition);
    if (!found.ok()) {
      err << "dlsched serve: --executor slurm: " << found.status().message() << "\n";
      return kExitRuntimeError;
    }
    discovery = std::move(found).value();
  }
  Result<Cluster> cluster = slurm                  ? Result<Cluster>(discovery->cluster.cluster)
                            : flags.gpus == "auto" ? DiscoverNvidiaGpus(flags.nvml_library)
                                                   : ParseClusterSpec(flags.gpus, "");
  if (!cluster.ok()) {
    err << "dlsched serve: --gpus: " << cluster.status().message() << "\n";
    return cluster.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitRuntimeError;
  }
  if (!slurm && flags.gpus != "auto") {
    // A typed type the models do not know is often a typo ("8xV1000") that no --gpu-type names.
    if (const std::string unknown = DescribeUnknownGpuTypes(*cluster); !unknown.empty()) {
      err << "dlsched serve: --gpus: warning: " << unknown << "\n";
    }
  }
  Result<int64_t> mem_per_gpu = ParseMemoryMib(flags.mem_per_gpu);
  if (!mem_per_gpu.ok()) {
    err << "dlsched serve: --mem-per-gpu: " << mem_per_gpu.status().message() << "\n";
    return kExitUsage;
  }
  if (!slurm) {
    // Every node of the local executor is this machine: where the spec states no CPUs or
    // memory, the machine's count.
    const bool unstated = std::ranges::any_of(cluster->nodes(), [](const NodeSpec& node) {
      return node.cpus == 0 || node.memory_mib == 0;
    });
    if (unstated) {
      const LocalHost host = DetectLocalHost();
      *cluster = WithLocalHost(*cluster, host);
      err << "dlsched serve: nodes that state no CPUs or host memory get this machine's: "
          << host.cpus << " CPUs, " << host.memory_mib << " MiB\n";
    }
  }
  cluster->set_host_defaults(
      {.cpus_per_gpu = flags.cpus_per_gpu, .memory_mib_per_gpu = *mem_per_gpu});
  Result<PolicyProfile> profile = LoadPolicyProfile(flags.profile);
  if (!profile.ok()) {
    err << "dlsched serve: --profile: " << profile.status().message() << "\n";
    return kExitUsage;
  }
  if (flags.round_s > 0) {
    if (Status set = SetRoundLength(*profile, Seconds(flags.round_s)); !set.ok()) {
      err << "dlsched serve: --round: " << set.message() << "\n";
      return kExitUsage;
    }
  }
  if (const auto* sharing = std::get_if<SharingProfile>(&profile->kind); slurm && sharing) {
    const Status shards = CheckSlurmShards(discovery->cluster.sites,
                                           sharing->config.max_jobs_per_gpu, profile->name());
    if (!shards.ok() && flags.profile != ServeFlags{}.profile) {
      err << "dlsched serve: --executor slurm: " << shards.message() << "\n";
      return kExitRuntimeError;
    }
    if (!shards.ok()) {
      // The default profile runs on any Slurm cluster: without shards, as its whole-GPU base.
      PolicyProfile base =
          std::visit([](const auto& whole_gpu) { return PolicyProfile{whole_gpu}; }, sharing->base);
      err << "dlsched serve: warning: --executor slurm: the default profile '" << profile->name()
          << "' runs without GPU sharing, as its base '" << base.name() << "': " << shards.message()
          << "\n";
      profile = std::move(base);
    }
  }
  const bool shares_gpus = std::holds_alternative<SharingProfile>(profile->kind);
  std::shared_ptr<const PerfPredictor> predictor;
  if (!flags.predictor.empty()) {
    Result<PerfPredictor> fitted = FitProfileStore(flags.predictor);
    if (!fitted.ok()) {
      err << "dlsched serve: --predictor: " << fitted.status().message() << "\n";
      return kExitUsage;
    }
    predictor = std::make_shared<const PerfPredictor>(std::move(fitted).value());
    err << "dlsched serve: predictor fitted to " << predictor->num_cells() << " measured cells of "
        << predictor->models().size() << " models from " << flags.predictor << "\n";
  }

  // The monitor sees this machine's GPUs only, so not the nodes of a Slurm cluster.
  const double monitor_period_s = flags.monitor_period_s >= 0
                                      ? flags.monitor_period_s
                                      : (flags.gpus == "auto" && !slurm ? 5 : 0);
  // Each sample is a store transaction: a shorter period would spend the scheduler thread on them.
  if (monitor_period_s > 0 && monitor_period_s < 0.05) {
    err << "dlsched serve: --monitor-period: at least 0.05 seconds (or 0: no monitor)\n";
    return kExitUsage;
  }
  if (slurm && monitor_period_s > 0) {
    err << "dlsched serve: --monitor-period: the GPU monitor samples this machine's GPUs, not a "
           "Slurm cluster's; leave it out with --executor slurm\n";
    return kExitUsage;
  }
  const ShareEnforcer share_enforcer =
      flags.share_enforcer == "mps" ? ShareEnforcer::kMps : ShareEnforcer::kNone;
  std::string mps_control;
  if (share_enforcer == ShareEnforcer::kMps) {
    if (slurm) {
      err << "dlsched serve: --share-enforcer mps: MPS is run on this machine's GPUs, not a Slurm "
             "cluster's; leave it at 'none' with --executor slurm\n";
      return kExitUsage;
    }
    const char* path = std::getenv("PATH");
    mps_control = FindOnPath(kMpsControlProgram, path != nullptr ? path : "");
    if (mps_control.empty()) {
      err << "dlsched serve: --share-enforcer mps: " << kMpsControlProgram
          << " is not on PATH (it comes with the NVIDIA driver's compute utilities); install it, "
             "or use --share-enforcer none (accounting only)\n";
      return kExitRuntimeError;
    }
  }
  std::shared_ptr<GpuMonitor> gpu_monitor;
  if (monitor_period_s > 0) {
    Result<std::unique_ptr<NvmlGpuMonitor>> opened = NvmlGpuMonitor::Open(flags.nvml_library);
    if (!opened.ok()) {
      err << "dlsched serve: --monitor-period: " << opened.status().message()
          << " (--monitor-period 0 runs without the GPU monitor)\n";
      return kExitRuntimeError;
    }
    gpu_monitor = std::move(opened).value();
  }

  std::error_code ec;
  std::filesystem::create_directories(flags.workdir, ec);
  DaemonOptions options;
  options.workdir = std::filesystem::absolute(flags.workdir, ec).lexically_normal().string();
  options.db_path = flags.db.empty() ? options.workdir + "/dlsched.db" : flags.db;
  options.profile = std::move(profile).value();
  options.grace = Seconds(flags.grace_s);
  options.seed = flags.seed;
  options.predictor = std::move(predictor);
  options.predictor_source = flags.predictor.empty()
                                 ? std::string()
                                 : std::filesystem::absolute(flags.predictor, ec).string();
  options.durability = flags.durability == "full" ? Durability::kFull : Durability::kProcessCrash;
  // Isolation (docs/security.md): jobs run through this binary's `__job-exec`, as their users'
  // accounts when the daemon is root; the database is the daemon's alone.
  options.job_exec = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  options.max_log_bytes = flags.max_log_bytes;
  options.min_free_bytes = flags.min_free_mib << 20;
  options.gpu_monitor = std::move(gpu_monitor);
  if (options.gpu_monitor) options.monitor_period = Seconds(monitor_period_s);
  if (flags.sharing_data != "builtin") {
    options.sharing_data = std::filesystem::absolute(flags.sharing_data, ec).string();
  }
  options.share_enforcer = share_enforcer;
  options.oom = flags.oom;
  if (!slurm) {
    HostEnforcer::Options host;
    host.choice = ParseHostEnforcerChoice(flags.host_enforcer).value();
    host.group_name = HostGroupName(options.workdir);
    if (host.choice != HostEnforcerChoice::kNone) {
      // The cores near each GPU, so a job's cores are those of its GPUs' NUMA node.
      Result<GpuTopology> topology = DiscoverGpuTopology(flags.nvml_library);
      if (topology.ok() && topology->known()) {
        err << "dlsched serve: CPU topology known, jobs get the cores near their GPUs first: "
            << topology->description << "\n";
        host.gpu_cores = std::move(topology->cores);
      } else {
        err << "dlsched serve: CPU topology unknown, cores are not chosen by GPU ("
            << (topology.ok() ? topology->description : topology.status().message()) << ")\n";
      }
    }
    Result<std::unique_ptr<HostEnforcer>> enforcer = HostEnforcer::Create(host);
    if (!enforcer.ok()) {
      err << "dlsched serve: --host-enforcer: " << enforcer.status().message()
          << " (--host-enforcer affinity or auto runs without cgroups)\n";
      return kExitRuntimeError;
    }
    err << "dlsched serve: host enforcement " << (*enforcer)->Describe() << "\n";
    options.host_enforcer = std::move(enforcer).value();
  }
  if (RunningAsRoot() && tokens && !slurm) {
    options.account_for = [table = tokens.get()](std::string_view user) {
      return ResolveUnixAccount(table->AccountSpec(user));
    };
  }
  if (const std::string dir = DirectoryOthersMayWrite(options.db_path); !dir.empty()) {
    err << "dlsched serve: WARNING: other users may write " << dir
        << ", the directory of the database: they could plant files beside it or replace it; "
           "keep it where only the daemon's user may write (see docs/security.md)\n";
  }
  if (slurm) {
    SlurmExecutor::Options slurm_options;
    slurm_options.partition = discovery->partition;
    slurm_options.jobs_dir = options.workdir + "/jobs";
    slurm_options.grace = options.grace;
    slurm_options.poll_interval = Seconds(flags.slurm_poll_s);
    slurm_options.shards = shares_gpus;
    if (const char* conf = std::getenv("SLURM_CONF")) {
      slurm_options.extra_env.push_back(std::string("SLURM_CONF=") + conf);
    }
    options.multi_node_gangs = true;
    options.executor_factory =
        [slurm_options, sites = discovery->cluster.sites](
            JobExecutor::Sink sink,
            JobExecutor::NodeSink node_sink) -> Result<std::unique_ptr<JobExecutor>> {
      return std::unique_ptr<JobExecutor>(std::make_unique<SlurmExecutor>(
          slurm_options, sites, std::move(sink), std::move(node_sink)));
    };
  }

  // Signals are taken synchronously by this thread (sigtimedwait below): block them before any
  // thread starts, so every thread inherits the mask. Job processes get a clean mask (see
  // ProcessExecutor). A write to a closed client socket must not kill the daemon.
  // SIGHUP is taken too, and ignored: the daemon has no file to reopen (its log is stderr) and
  // no configuration to re-read, and a closing terminal must not stop it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  static const SystemClock clock;
  Result<std::unique_ptr<Daemon>> daemon =
      Daemon::Create(std::move(cluster).value(), std::move(options), clock);
  if (!daemon.ok()) {
    err << "dlsched serve: " << daemon.status().ToString() << "\n";
    return kExitRuntimeError;
  }
  Daemon& d = **daemon;
  std::optional<MpsControlDaemons> mps;
  if (!mps_control.empty()) {
    const char* path = std::getenv("PATH");
    mps.emplace(mps_control, d.workdir(), path != nullptr ? path : "");
    if (Status started = mps->Start(d.cluster()); !started.ok()) {
      err << "dlsched serve: --share-enforcer mps: " << started.message() << "\n";
      return kExitRuntimeError;
    }
  }
  ApiOptions api_options;
  api_options.tokens = tokens.get();
  api_options.threads = flags.http_threads;
  api_options.max_body_bytes = flags.max_body_bytes;
  api_options.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.request_timeout_s * 1000));
  ApiServer api(d, api_options);
  Result<int> port = api.Bind(listen->host, listen->port);
  if (!port.ok()) {
    err << "dlsched serve: " << port.status().message() << "\n";
    return kExitRuntimeError;
  }
  if (Status started = d.Start(); !started.ok()) {
    err << "dlsched serve: " << started.ToString() << "\n";
    return kExitRuntimeError;
  }
  std::thread http([&api] { api.Serve(); });

  const std::shared_ptr<const Snapshot> first = d.snapshot();
  err << "dlsched serve: " << first->cluster->Describe() << ", policy " << first->profile << ", "
      << first->jobs.size() << " jobs restored from " << d.workdir() << "\n";
  if (!tokens) {
    err << "dlsched serve: no --tokens: authentication is off; listening on loopback only\n";
  }
  if (!slurm && !RunningAsRoot()) {
    err << "dlsched serve: running as uid " << geteuid()
        << " (not root): every job runs as this one Unix user, so jobs are not isolated from "
           "each other or from the daemon: any job can read and change other jobs' directories, "
           "logs and progress, the database and the tokens file (see docs/security.md)\n";
  } else if (!slurm && !tokens) {
    err << "dlsched serve: WARNING: running as root without --tokens: every job runs as root, "
           "for anyone who can reach "
        << listen->host << " (see docs/security.md)\n";
  } else if (!slurm) {
    err << "dlsched serve: jobs run as their users' Unix accounts (the tokens file's 4th column, "
           "else the Unix user of the same name); users without one are refused\n";
  }
  const std::string shown_host =
      listen->host.find(':') != std::string::npos ? "[" + listen->host + "]" : listen->host;
  err << "dlsched serve: dashboard at http://" << shown_host << ":" << *port << "/\n";
  out << "listening on http://" << shown_host << ":" << *port << std::endl;

  while (!d.failure()) {
    const timespec tick{0, 200 * 1000 * 1000};
    const int received = sigtimedwait(&stop_signals, nullptr, &tick);
    if (received == SIGHUP) {
      err << "dlsched serve: SIGHUP ignored (SIGTERM or SIGINT stops the daemon)" << std::endl;
      continue;
    }
    if (received > 0) break;
  }
  api.Stop();
  http.join();
  const int64_t running = d.snapshot()->count(JobState::kRunning);
  int64_t unrecorded = 0;
  if (flags.kill_jobs_on_exit && !d.failure()) {
    // The executor's grace, then time for the outcomes to arrive (a Slurm poll or two).
    const Duration wait =
        Seconds(flags.grace_s) + std::chrono::seconds(10) + 2 * Seconds(flags.slurm_poll_s);
    Result<int64_t> left = d.KillRunningJobs(kKilledOnExitReason, wait);
    unrecorded = left.ok() ? *left : running;
  }
  d.Stop();
  const std::optional<Status> failure = d.failure();
  if (flags.kill_jobs_on_exit) {
    if (failure) unrecorded = running;
    // Whatever has not ended (or could not be recorded) gets SIGKILL now.
    if (unrecorded > 0) d.KillAllJobs();
    err << "dlsched serve: stopped; killed " << running << " running jobs (" << running - unrecorded
        << " recorded as killed";
    if (unrecorded > 0) err << ", " << unrecorded << " sent SIGKILL before their end was recorded";
    err << ")\n";
  } else {
    err << "dlsched serve: stopped; " << running
        << " jobs left running (a restarted daemon re-adopts them)\n";
  }
  // Jobs left running (and re-adopted by a restart) keep their MPS servers.
  if (mps && (flags.kill_jobs_on_exit || running == 0)) {
    if (Status stopped = mps->Stop(); !stopped.ok()) {
      err << "dlsched serve: stopping MPS: " << stopped.message() << "\n";
    }
  }
  if (failure) {
    err << "dlsched serve: " << failure->ToString() << "\n";
    return kExitRuntimeError;
  }
  return kExitOk;
}

}  // namespace dlsched::daemon
