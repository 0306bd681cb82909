// Benchmarks of the scheduling core and the simulator. Run with bench/run.sh (see BENCHMARKS.md).
//
// BM_ReplayPhilly/<policy>: the full 82,247-job Philly trace on 64x8xV100 (one core).
// BM_CycleWithQueue/<policy>/<q>: one scheduling cycle with q waiting jobs that all fit the free
//   GPUs by count but none by type (they need V100s; only K80s are free), so a backfilling
//   policy examines every one of them: the worst case of a cycle's queue walk.
// BM_SubmitAndStart/<q>: submit one job into a queue of q, admit and start it in a cycle.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "dlsched/policy/pipeline.h"
#include "dlsched/runtime/scheduler.h"
#include "io/cluster_spec.h"
#include "io/profile.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace dlsched {
namespace {

const std::string kTracesDir = DLSCHED_TRACES_DIR;

std::unique_ptr<SchedulingPolicy> Policy(const std::string& name) {
  auto profile = LoadPolicyProfile(name);
  DS_CHECK(profile.ok()) << profile.status().ToString();
  auto policy = BuildPolicy(*profile);
  DS_CHECK(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

Cluster ClusterOf(const std::string& spec) {
  auto cluster = ParseClusterSpec(spec, kTracesDir);
  DS_CHECK(cluster.ok()) << cluster.status().ToString();
  return std::move(cluster).value();
}

const sim::Workload* PhillyWorkload() {
  static const sim::Workload* workload = [] {
    const std::string path = kTracesDir + "/pollux/philly.csv";
    static sim::Workload loaded;
    if (!std::filesystem::exists(path)) return static_cast<const sim::Workload*>(nullptr);
    auto result = sim::LoadWorkload("philly:" + path, {});
    DS_CHECK(result.ok()) << result.status().ToString();
    loaded = std::move(result).value();
    return static_cast<const sim::Workload*>(&loaded);
  }();
  return workload;
}

void BM_ReplayPhilly(benchmark::State& state, const std::string& policy) {
  const sim::Workload* workload = PhillyWorkload();
  if (workload == nullptr) {
    state.SkipWithError("traces not found at ../shared/traces/pollux/philly.csv");
    return;
  }
  const Cluster cluster = ClusterOf("64x8xV100");
  SimpleThroughputModel model;
  // The oracle's run times (and the truth as the policies' model), as when BENCHMARKS.md's
  // figures were taken, so that they stay comparable; `simulate` defaults to history estimates.
  sim::SimOptions options;
  options.runtime_estimates = sim::RuntimeEstimates::kOracle;
  for (auto _ : state) {
    sim::RunResult run = sim::Simulate({cluster, *workload, model, model}, Policy(policy), options);
    state.counters["avg_jct_h"] = run.summary.avg_jct_s / 3600;
    state.counters["preemptions"] = run.summary.preemptions;
    benchmark::DoNotOptimize(run);
  }
}

// Does nothing: the benchmark plays no executor events back.
class NullExecutor final : public Executor {
 public:
  void Launch(const Job&, const Placement&, Timestamp) override {}
  void Preempt(const Job&, Timestamp) override {}
  void Kill(const Job&, Timestamp) override {}
};

JobSpec Spec(int gpus, double submit_s, double work_s, std::string gpu_type = "V100") {
  JobSpec spec;
  spec.num_gpus = gpus;
  spec.gpu_type = std::move(gpu_type);
  spec.submit_time = AtSeconds(submit_s);
  spec.iterations = work_s;
  return spec;
}

// 64x8 V100 plus 8 K80: 511 V100s busy (one-GPU jobs), 1 V100 and 8 K80 free, and `queued`
// waiting two-GPU V100 jobs.
struct FullCluster {
  FullCluster(const std::string& policy, int queued)
      : cluster(ClusterOf("64x8xV100+1x8xK80")),
        scheduler(cluster, Policy(policy), executor, model, 1) {
    scheduler.ReserveJobs(512 + queued + 1);
    for (int i = 0; i < 511; ++i) DS_CHECK(scheduler.Submit(Spec(1, 0, 1e6), kTimeZero).ok());
    scheduler.RunCycle(kTimeZero);
    for (int i = 0; i < queued; ++i) {
      DS_CHECK(scheduler.Submit(Spec(2, 1 + i * 1e-3, 3600), AtSeconds(1)).ok());
    }
    scheduler.RunCycle(AtSeconds(1));
  }
  Cluster cluster;
  NullExecutor executor;
  SimpleThroughputModel model;
  Scheduler scheduler;
};

void BM_CycleWithQueue(benchmark::State& state, const std::string& policy) {
  FullCluster world(policy, static_cast<int>(state.range(0)));
  Timestamp now = AtSeconds(2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(world.scheduler.RunCycle(now));
  }
  state.SetComplexityN(state.range(0));
}

void BM_SubmitAndStart(benchmark::State& state) {
  FullCluster world("fifo-backfill", static_cast<int>(state.range(0)));
  // One GPU is free: each iteration submits a 1-GPU job, starts it, and finishes it.
  double t = 10;
  for (auto _ : state) {
    auto id = world.scheduler.Submit(Spec(1, t, 1), AtSeconds(t));
    world.scheduler.RunCycle(AtSeconds(t));
    benchmark::DoNotOptimize(
        world.scheduler.Handle(JobFinished{*id, JobState::kSucceeded, ""}, AtSeconds(t + 0.5)));
    t += 1;
  }
  state.SetComplexityN(state.range(0));
}

void RegisterAll() {
  for (const char* policy : {"fifo", "fifo-backfill", "sjf", "srtf", "las", "tiresias"}) {
    benchmark::RegisterBenchmark((std::string("BM_ReplayPhilly/") + policy).c_str(),
                                 BM_ReplayPhilly, std::string(policy))
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  for (const char* policy : {"fifo-backfill", "las", "tiresias"}) {
    benchmark::RegisterBenchmark((std::string("BM_CycleWithQueue/") + policy).c_str(),
                                 BM_CycleWithQueue, std::string(policy))
        ->Arg(1000)
        ->Arg(10000)
        ->Arg(100000)
        ->Unit(benchmark::kMicrosecond)
        ->Complexity();
  }
  benchmark::RegisterBenchmark("BM_SubmitAndStart", BM_SubmitAndStart)
      ->Arg(1000)
      ->Arg(10000)
      ->Arg(100000)
      ->Unit(benchmark::kMicrosecond)
      ->Complexity();
}

}  // namespace
}  // namespace dlsched

int main(int argc, char** argv) {
  dlsched::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
