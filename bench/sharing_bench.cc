// Benchmarks of the static GPU-sharing allocators (include/dlsched/sharing/packing.h; see
// BENCHMARKS.md and docs/sharing.md). Run with bench/run.sh --benchmark_filter=Pack.
//
// BM_GreedyPack/<n>, BM_HeuristicPack/<n>: pack n jobs (1k to 8k) of a synthetic mix of 56 job
// types (Lucid-sized: SM utilisation, memory bandwidth and memory drawn per type from a seeded
// Rng), 85% of the type pairs "measured" and the rest answered by a fitted model, onto 32 GiB
// GPUs with k = 2 jobs per GPU and a slowdown bound of 1.5. The complexity fit is O(n log n) for
// the greedy and O(n^2 log n) for the heuristic, the algorithms' stated bounds.

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"
#include "dlsched/sharing/interference.h"
#include "dlsched/sharing/packing.h"

namespace dlsched::sharing {
namespace {

constexpr int kNumTypes = 56;

struct Instance {
  JobTypeCatalog catalog;
  std::unique_ptr<TableInterferenceModel> model;
  std::vector<PackJob> jobs;
  PackOptions options;
};

const Instance& MakeInstance(int n) {
  static std::vector<std::unique_ptr<Instance>> cache;
  for (const auto& instance : cache) {
    if (static_cast<int>(instance->jobs.size()) == n) return *instance;
  }
  auto instance = std::make_unique<Instance>();
  Rng rng(2026);
  for (int t = 0; t < kNumTypes; ++t) {
    const double sm = rng.Uniform(0.05, 1.0);
    DS_CHECK(instance->catalog
                 .Add({{"model" + std::to_string(t), 32, false},
                       sm,
                       sm * rng.Uniform(0.1, 0.9),
                       2048 + static_cast<int64_t>(rng.Below(18000))})
                 .ok());
  }
  // Pair speeds from a Lucid-like fitted model plus noise; 15% of the pairs left unmeasured.
  const auto fitted = std::make_shared<FittedInterferenceModel>(
      FittedInterferenceModel::Weights{0.0, 0.05, 0.15, 0.3, 0.05, 0.15, 0.02});
  std::vector<MeasuredPair> pairs;
  for (int a = 0; a < kNumTypes; ++a) {
    for (int b = a; b < kNumTypes; ++b) {
      if (rng.Uniform() < 0.15) continue;
      const SharingJob ja = instance->catalog.Job(a);
      const SharingJob jb = instance->catalog.Job(b);
      pairs.push_back({"", a, b, fitted->PairSpeed(ja, jb) + 0.03 * rng.Normal(),
                       fitted->PairSpeed(jb, ja) + 0.03 * rng.Normal()});
    }
  }
  instance->model = std::make_unique<TableInterferenceModel>(kNumTypes, pairs, "V100", fitted);
  for (int i = 0; i < n; ++i) {
    const int type = static_cast<int>(rng.Below(kNumTypes));
    const SharingJob job = instance->catalog.Job(type);
    // The percentile demand: within 60-100% of the type's measured memory.
    const int64_t memory = static_cast<int64_t>(job.memory_mib * rng.Uniform(0.6, 1.0));
    instance->jobs.push_back({job, memory});
  }
  instance->options.gpu_memory_mib = 32768;
  instance->options.max_jobs_per_gpu = 2;
  instance->options.max_slowdown = 1.5;
  cache.push_back(std::move(instance));
  return *cache.back();
}

void Run(benchmark::State& state, bool heuristic) {
  const Instance& instance = MakeInstance(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Result<Packing> packing = heuristic
                                  ? HeuristicPack(instance.jobs, *instance.model, instance.options)
                                  : GreedyPack(instance.jobs, *instance.model, instance.options);
    DS_CHECK(packing.ok()) << packing.status().ToString();
    state.counters["gpus"] = static_cast<double>(packing->gpus.size());
    state.counters["rounds"] = packing->rounds;
    state.counters["mean_slowdown"] =
        packing->total_slowdown / static_cast<double>(instance.jobs.size());
    benchmark::DoNotOptimize(packing);
  }
  state.SetComplexityN(state.range(0));
}

void BM_GreedyPack(benchmark::State& state) { Run(state, false); }
void BM_HeuristicPack(benchmark::State& state) { Run(state, true); }

BENCHMARK(BM_GreedyPack)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 13)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_HeuristicPack)
    ->RangeMultiplier(2)
    ->Range(1 << 10, 1 << 13)
    ->Unit(benchmark::kMillisecond)
    ->Complexity([](benchmark::IterationCount n) {
      const double x = static_cast<double>(n);
      return x * x * std::log2(x);
    });

}  // namespace
}  // namespace dlsched::sharing
