#include "dlsched/sharing/packing.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dlsched/common/rng.h"

namespace dlsched::sharing {
namespace {

// Two job types: A beside A and B beside B slow down a lot, A beside B little.
class TwoTypeModel final : public InterferenceModel {
 public:
  double PairSpeed(const SharingJob& self, const SharingJob& other) const override {
    return self.type == other.type ? 1.0 / 1.4 : 1.0 / 1.05;
  }
};

PackJob Job(int type, int64_t memory_mib, double sm = 0.5) {
  return {{type, sm, 0.2, memory_mib}, memory_mib};
}

PackOptions Options(int k, int64_t gpu_memory_mib = 16000, double max_slowdown = 1.5) {
  PackOptions o;
  o.gpu_memory_mib = gpu_memory_mib;
  o.max_jobs_per_gpu = k;
  o.max_slowdown = max_slowdown;
  return o;
}

TEST(PackingTest, RejectsBadOptions) {
  const TwoTypeModel model;
  const std::vector<PackJob> jobs = {Job(0, 100)};
  struct Case {
    std::string name;
    PackOptions options;
    std::string want;
  };
  std::vector<Case> cases = {{"no memory", Options(2, 0), "gpu_memory_mib"},
                             {"k = 0", Options(0), "max_jobs_per_gpu"},
                             {"bound < 1", Options(2, 100, 0.9), "max_slowdown"}};
  cases.push_back({"no probes", Options(2), "max_probes"});
  cases.back().options.max_probes = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (const auto& pack : {GreedyPack, HeuristicPack}) {
      const Result<Packing> p = pack(jobs, model, c.options);
      ASSERT_FALSE(p.ok());
      EXPECT_NE(p.status().message().find(c.want), std::string::npos) << p.status().ToString();
    }
  }
}

TEST(PackingTest, GreedyIsFirstFitDecreasing) {
  const TwoTypeModel model;
  // Memory 9000, 7000, 6000, 5000, 3000 on 16000 MiB GPUs, k = 3, types all different enough.
  const std::vector<PackJob> jobs = {Job(0, 5000), Job(1, 9000), Job(0, 3000), Job(1, 6000),
                                     Job(0, 7000)};
  const Result<Packing> p = GreedyPack(jobs, model, Options(3, 16000, 2.0));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // 9000 -> GPU0; 7000 -> GPU0 (16000); 6000 -> GPU1; 5000 -> GPU1; 3000 -> GPU1 (14000).
  const std::vector<std::vector<int>> want = {{1, 4}, {0, 2, 3}};
  EXPECT_EQ(p->gpus, want);
  EXPECT_TRUE(p->unplaced.empty());
  EXPECT_TRUE(CheckPacking(*p, jobs, model, Options(3, 16000, 2.0)).ok());
}

TEST(PackingTest, InterferenceBoundOpensANewGpu) {
  const TwoTypeModel model;
  const std::vector<PackJob> jobs = {Job(0, 1000), Job(0, 1000), Job(1, 1000)};
  // A beside A (1.4) breaks a 1.3 bound, A beside B (1.05) does not.
  const Result<Packing> p = GreedyPack(jobs, model, Options(2, 16000, 1.3));
  ASSERT_TRUE(p.ok());
  const std::vector<std::vector<int>> want = {{0, 2}, {1}};
  EXPECT_EQ(p->gpus, want);
  EXPECT_NEAR(p->total_slowdown, 1.05 * 2 + 1.0, 1e-9);
}

TEST(PackingTest, UnplacedWhenTooBigOrOutOfGpus) {
  const TwoTypeModel model;
  const std::vector<PackJob> jobs = {Job(0, 20000), Job(1, 9000), Job(0, 9000), Job(1, 9000)};
  PackOptions options = Options(2);
  options.max_gpus = 2;
  for (const auto& pack : {GreedyPack, HeuristicPack}) {
    const Result<Packing> p = pack(jobs, model, options);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->gpus.size(), 2u);
    const std::vector<int> want = {0, 3};  // too big; no GPU left for the last 9000
    EXPECT_EQ(p->unplaced, want);
    EXPECT_EQ(p->slowdown[0], 0.0);
    EXPECT_TRUE(CheckPacking(*p, jobs, model, options).ok());
  }
}

TEST(PackingTest, HeuristicRepairsGreedyPairing) {
  const TwoTypeModel model;
  // Equal memory: FFD takes the jobs in index order and pairs A with A and B with B.
  const std::vector<PackJob> jobs = {Job(0, 8000), Job(0, 8000), Job(1, 8000), Job(1, 8000)};
  const PackOptions options = Options(2);
  const Result<Packing> greedy = GreedyPack(jobs, model, options);
  const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
  ASSERT_TRUE(greedy.ok());
  ASSERT_TRUE(heuristic.ok());
  EXPECT_NEAR(greedy->total_slowdown, 4 * 1.4, 1e-9);
  EXPECT_NEAR(heuristic->total_slowdown, 4 * 1.05, 1e-9);
  EXPECT_EQ(greedy->rounds, 0);
  EXPECT_EQ(heuristic->rounds, 2);  // one that re-pairs, one that finds nothing more
  EXPECT_EQ(heuristic->gpus.size(), greedy->gpus.size());
  for (const std::vector<int>& gpu : heuristic->gpus) {
    ASSERT_EQ(gpu.size(), 2u);
    EXPECT_NE(jobs[gpu[0]].job.type, jobs[gpu[1]].job.type);
  }
  // With a spare GPU the heuristic may also spread jobs out.
  PackOptions spare = options;
  spare.max_gpus = 4;
  const Result<Packing> spread = HeuristicPack(jobs, model, spare);
  ASSERT_TRUE(spread.ok());
  EXPECT_NEAR(spread->total_slowdown, 4.0, 1e-9);
}

// A model from features only: jobs that both use the SMs heavily slow down most.
class FeatureModel final : public InterferenceModel {
 public:
  double PairSpeed(const SharingJob& self, const SharingJob& other) const override {
    return 1.0 / (1.0 + 0.6 * other.sm_util * (0.3 + self.sm_util));
  }
};

TEST(PackingTest, RandomInstancesKeepTheInvariants) {
  const FeatureModel model;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Rng rng(seed);
    std::vector<PackJob> jobs;
    const int n = 20 + static_cast<int>(rng.Below(60));
    for (int i = 0; i < n; ++i) {
      jobs.push_back(Job(static_cast<int>(rng.Below(5)),
                         1000 + static_cast<int64_t>(rng.Below(15000)), rng.Uniform()));
    }
    PackOptions options =
        Options(1 + static_cast<int>(rng.Below(4)), 16384, 1.2 + rng.Uniform(0.0, 0.8));
    options.max_probes = 1 + static_cast<int>(rng.Below(4));
    SCOPED_TRACE(testing::Message()
                 << "seed " << seed << " n " << n << " k " << options.max_jobs_per_gpu);
    const Result<Packing> greedy = GreedyPack(jobs, model, options);
    const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
    ASSERT_TRUE(greedy.ok());
    ASSERT_TRUE(heuristic.ok());
    EXPECT_TRUE(CheckPacking(*greedy, jobs, model, options).ok())
        << CheckPacking(*greedy, jobs, model, options).ToString();
    EXPECT_TRUE(CheckPacking(*heuristic, jobs, model, options).ok())
        << CheckPacking(*heuristic, jobs, model, options).ToString();
    EXPECT_TRUE(greedy->unplaced.empty());
    EXPECT_LE(heuristic->gpus.size(), greedy->gpus.size());
    EXPECT_LE(heuristic->total_slowdown, greedy->total_slowdown + 1e-9);
    // Deterministic.
    EXPECT_EQ(HeuristicPack(jobs, model, options)->gpus, heuristic->gpus);
  }
}

TEST(PackingTest, CheckPackingCatchesBrokenRules) {
  const TwoTypeModel model;
  const std::vector<PackJob> jobs = {Job(0, 9000), Job(0, 9000), Job(1, 1000), Job(0, 1000)};
  const PackOptions options = Options(2, 16000, 1.3);
  Packing good;
  good.gpus = {{0, 2}, {1}, {3}};
  good.slowdown = {1.05, 1.0, 1.05, 1.0};
  good.total_slowdown = 4.1;
  ASSERT_TRUE(CheckPacking(good, jobs, model, options).ok());
  struct Case {
    std::string name;
    std::vector<std::vector<int>> gpus;
    std::vector<int> unplaced;
    std::string want;
  };
  const std::vector<Case> cases = {{"twice", {{0, 2}, {1, 2}, {3}}, {}, "placed twice"},
                                   {"placed and unplaced", {{0, 2}, {1}, {3}}, {3}, "listed twice"},
                                   {"missing", {{0, 2}, {3}}, {}, "job 1 missing"},
                                   {"over memory", {{0, 1}, {2}, {3}}, {}, "MiB over"},
                                   {"over k", {{0, 2, 3}, {1}}, {}, "3 jobs"},
                                   {"over bound", {{0, 3}, {1}, {2}}, {}, "over the bound"},
                                   {"stale slowdown", {{0}, {1}, {2, 3}}, {}, "slowdown mismatch"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Packing p = good;
    p.gpus = c.gpus;
    p.unplaced = c.unplaced;
    const Status s = CheckPacking(p, jobs, model, options);
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace dlsched::sharing
