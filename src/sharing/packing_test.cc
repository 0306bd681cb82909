#include "dlsched/sharing/packing.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <optional>
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

PackJob Pinned(int type, int64_t memory_mib, int slot) {
  PackJob job = Job(type, memory_mib);
  job.pinned_gpu = slot;
  return job;
}

// Pair speeds from a small table: speed[self.type][other.type].
class SpeedTableModel final : public InterferenceModel {
 public:
  explicit SpeedTableModel(std::vector<std::vector<double>> speed) : speed_(std::move(speed)) {}
  double PairSpeed(const SharingJob& self, const SharingJob& other) const override {
    return speed_[static_cast<size_t>(self.type)][static_cast<size_t>(other.type)];
  }

 private:
  std::vector<std::vector<double>> speed_;
};

// gpu_of as `gpus` implies when slot g is list g (a job listed twice keeps its first slot).
std::vector<int> GpuOfLists(const std::vector<std::vector<int>>& gpus, size_t num_jobs) {
  std::vector<int> gpu_of(num_jobs, -1);
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (int j : gpus[g]) {
      if (j >= 0 && static_cast<size_t>(j) < num_jobs && gpu_of[j] < 0) {
        gpu_of[j] = static_cast<int>(g);
      }
    }
  }
  return gpu_of;
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
  EXPECT_EQ(p->gpu_of, (std::vector<int>{1, 0, 1, 1, 0}));
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
    EXPECT_EQ(p->gpu_of[0], -1);
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
  good.gpu_of = {0, 1, 0, 2};
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
    p.gpu_of = GpuOfLists(c.gpus, jobs.size());
    p.unplaced = c.unplaced;
    const Status s = CheckPacking(p, jobs, model, options);
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
  }
}

TEST(PackingTest, CheckPackingCatchesBadSlots) {
  const TwoTypeModel model;
  // Job 0 pinned to slot 2; job 1 free; job 2 pinned to slot 0 with job 3.
  const std::vector<PackJob> jobs = {Pinned(0, 1000, 2), Job(1, 1000), Pinned(0, 1000, 0),
                                     Job(1, 1000)};
  PackOptions options = Options(2, 16000, 1.3);
  options.max_gpus = 4;
  Packing good;
  good.gpus = {{2, 3}, {1}, {0}};
  good.gpu_of = {2, 1, 0, 0};
  good.slowdown = {1.0, 1.0, 1.05, 1.05};
  good.total_slowdown = 4.1;
  ASSERT_TRUE(CheckPacking(good, jobs, model, options).ok())
      << CheckPacking(good, jobs, model, options).ToString();
  struct Case {
    std::string name;
    std::vector<std::vector<int>> gpus;
    std::vector<int> gpu_of;
    std::vector<int> unplaced;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"gpu_of short", good.gpus, {2, 1, 0}, {}, "gpu_of has the wrong size"},
      {"disagrees", good.gpus, {2, 1, 0, 3}, {}, "gpu_of of job 3 disagrees"},
      {"descending", {{1}, {2, 3}, {0}}, {2, 1, 0, 0}, {}, "slots not ascending"},
      {"same slot twice", {{2, 3}, {1}, {0}}, {1, 1, 0, 0}, {}, "slots not ascending"},
      {"outside max_gpus", {{2, 3}, {1}, {0}}, {4, 1, 0, 0}, {}, "outside max_gpus"},
      {"pinned moved", {{2, 3}, {1}, {0}}, {3, 1, 0, 0}, {}, "job 0 is pinned to slot 2"},
      {"pinned unplaced", {{2, 3}, {1}}, {-1, 1, 0, 0}, {0}, "pinned job 0 unplaced"},
      {"unplaced on a slot", {{2, 3}, {0}}, {2, 1, 0, 0}, {1}, "unplaced job 1 is not -1"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Packing p = good;
    p.gpus = c.gpus;
    p.gpu_of = c.gpu_of;
    p.unplaced = c.unplaced;
    const Status s = CheckPacking(p, jobs, model, options);
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
  }
  // A pinned group alone may break the rules; once a free job joins it, it may not.
  const std::vector<PackJob> crowded = {Pinned(0, 9000, 0), Pinned(0, 9000, 0), Job(1, 10)};
  Packing alone;
  alone.gpus = {{0, 1}, {2}};
  alone.gpu_of = {0, 0, 1};
  alone.slowdown = {1.4, 1.4, 1.0};
  EXPECT_TRUE(CheckPacking(alone, crowded, model, options).ok())
      << CheckPacking(alone, crowded, model, options).ToString();
  PackOptions roomy = options;
  roomy.max_jobs_per_gpu = 3;
  roomy.max_slowdown = 2.0;
  Packing joined;
  joined.gpus = {{0, 1, 2}};
  joined.gpu_of = {0, 0, 0};
  joined.slowdown = {1.4 * 1.05, 1.4 * 1.05, 1.05 * 1.05};
  EXPECT_NE(CheckPacking(joined, crowded, model, roomy).message().find("MiB over"),
            std::string::npos);
}

TEST(PackingTest, RejectsBadPins) {
  const TwoTypeModel model;
  struct Case {
    std::string name;
    PackJob job;
    int max_gpus;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"slot = max_gpus", Pinned(0, 100, 2), 2, "pinned_gpu 2 must be < max_gpus 2"},
      {"below -1", Pinned(0, 100, -2), 2, "pinned_gpu must be -1 or a slot"},
      {"overflows new slots", Pinned(0, 100, std::numeric_limits<int>::max()), 0, "too large"},
      {"negative memory", Job(0, -1), 0, "memory_mib must be >= 0"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<PackJob> jobs = {Job(1, 100), c.job};
    PackOptions options = Options(2);
    options.max_gpus = c.max_gpus;
    for (const auto& pack : {GreedyPack, HeuristicPack}) {
      const Result<Packing> p = pack(jobs, model, options);
      ASSERT_FALSE(p.ok());
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(p.status().message().find("job 1: "), std::string::npos);
      EXPECT_NE(p.status().message().find(c.want), std::string::npos) << p.status().ToString();
    }
  }
}

TEST(PackingTest, PinnedJobsStayPutWithStableSlots) {
  const TwoTypeModel model;
  // Slots 0..3; A pinned on slot 1, B on slot 3; free jobs B 8000, A 7000, A 6000, B 5000.
  const std::vector<PackJob> jobs = {Job(1, 8000),       Pinned(0, 4000, 1), Job(0, 7000),
                                     Pinned(1, 4000, 3), Job(0, 6000),       Job(1, 5000)};
  PackOptions options = Options(2);
  options.max_gpus = 4;
  const Result<Packing> greedy = GreedyPack(jobs, model, options);
  ASSERT_TRUE(greedy.ok()) << greedy.status().ToString();
  // The pinned slots are open: B 8000 joins slot 1, A 7000 slot 3; then both are full and A 6000
  // opens the lowest unused slot, 0, where B 5000 joins it. Slot 2 stays empty.
  EXPECT_EQ(greedy->gpu_of, (std::vector<int>{1, 1, 3, 3, 0, 0}));
  EXPECT_EQ(greedy->gpus, (std::vector<std::vector<int>>{{4, 5}, {0, 1}, {2, 3}}));
  EXPECT_NEAR(greedy->total_slowdown, 6 * 1.05, 1e-9);
  EXPECT_TRUE(CheckPacking(*greedy, jobs, model, options).ok());

  // The heuristic spreads onto the empty slot 2 but leaves the pinned jobs where they are.
  const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
  ASSERT_TRUE(heuristic.ok());
  EXPECT_TRUE(CheckPacking(*heuristic, jobs, model, options).ok())
      << CheckPacking(*heuristic, jobs, model, options).ToString();
  EXPECT_EQ(heuristic->gpu_of[1], 1);
  EXPECT_EQ(heuristic->gpu_of[3], 3);
  EXPECT_EQ(heuristic->gpus.size(), 4u);
  EXPECT_LT(heuristic->total_slowdown, greedy->total_slowdown);

  // Without max_gpus the pinned slots keep their indices and new ones come after slot 3.
  options.max_gpus = 0;
  for (const auto& pack : {GreedyPack, HeuristicPack}) {
    const Result<Packing> p = pack(jobs, model, options);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->gpu_of, (std::vector<int>{1, 1, 3, 3, 4, 4}));
    EXPECT_EQ(p->gpus, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}}));
    EXPECT_TRUE(CheckPacking(*p, jobs, model, options).ok());
  }
}

TEST(PackingTest, FreeJobDoesNotSlowAPinnedJobBeyondTheBound) {
  // Type 0 is sensitive: beside type 1 it runs at 1/1.6; type 1 beside type 0 at 1/1.1.
  const SpeedTableModel model({{1.0 / 1.2, 1.0 / 1.6}, {1.0 / 1.1, 1.0 / 1.2}});
  struct Case {
    std::string name;
    int pinned_type;
    int free_type;
    double bound;
    int max_gpus;
    std::vector<int> want_gpu_of;  // {pinned job, free job}
  };
  const std::vector<Case> cases = {
      {"would slow the pinned job to 1.6", 0, 1, 1.5, 2, {0, 1}},
      {"no other GPU", 0, 1, 1.5, 1, {0, -1}},
      {"bound allows 1.6", 0, 1, 1.7, 1, {0, 0}},
      {"would itself slow to 1.6", 1, 0, 1.5, 2, {0, 1}},
      {"same type, 1.2 each", 1, 1, 1.5, 1, {0, 0}},
  };
  // With max_gpus 1 the heuristic cannot spread the pair out either.
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<PackJob> jobs = {Pinned(c.pinned_type, 4000, 0), Job(c.free_type, 4000)};
    PackOptions options = Options(2, 16000, c.bound);
    options.max_gpus = c.max_gpus;
    for (const auto& pack : {GreedyPack, HeuristicPack}) {
      const Result<Packing> p = pack(jobs, model, options);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->gpu_of, c.want_gpu_of);
      EXPECT_TRUE(CheckPacking(*p, jobs, model, options).ok());
    }
  }
}

TEST(PackingTest, PinnedSlotThatBreaksARuleGetsNoJobs) {
  // Types A and B as in TwoTypeModel, and C: A and B run 1.2x faster beside it (a measured speed
  // above 1, as noisy tables give), so only the rule keeps it off a broken slot.
  const SpeedTableModel model(
      {{1.0 / 1.4, 1.0 / 1.05, 1.2}, {1.0 / 1.05, 1.0 / 1.4, 1.2}, {1.0, 1.0, 1.0}});
  struct Case {
    std::string name;
    std::vector<PackJob> pinned;  // all on slot 0
    double bound;
  };
  const std::vector<Case> cases = {
      {"over memory", {Pinned(0, 9000, 0), Pinned(1, 9000, 0)}, 1.5},
      {"one job over memory", {Pinned(0, 20000, 0)}, 1.5},
      {"over k",
       {Pinned(0, 1000, 0), Pinned(1, 1000, 0), Pinned(1, 1000, 0), Pinned(0, 1, 0)},
       2.0},
      {"over the bound", {Pinned(0, 1000, 0), Pinned(0, 1000, 0)}, 1.3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // A small free job of type C: with the pinned group over the bound, joining it would even
    // bring the pinned jobs back within the bound.
    std::vector<PackJob> jobs = c.pinned;
    jobs.push_back(Job(2, 10));
    const int free_job = static_cast<int>(jobs.size()) - 1;
    PackOptions options = Options(3, 16000, c.bound);
    for (int max_gpus : {0, 1, 2}) {
      SCOPED_TRACE(testing::Message() << "max_gpus " << max_gpus);
      options.max_gpus = max_gpus;
      for (const auto& pack : {GreedyPack, HeuristicPack}) {
        const Result<Packing> p = pack(jobs, model, options);
        ASSERT_TRUE(p.ok()) << p.status().ToString();
        EXPECT_TRUE(CheckPacking(*p, jobs, model, options).ok())
            << CheckPacking(*p, jobs, model, options).ToString();
        for (int j = 0; j < free_job; ++j) EXPECT_EQ(p->gpu_of[j], 0);
        EXPECT_EQ(p->gpu_of[free_job], max_gpus == 1 ? -1 : 1);
        EXPECT_EQ(p->slowdown[free_job], max_gpus == 1 ? 0.0 : 1.0);
      }
    }
  }
}

TEST(PackingTest, HeuristicRepairsPairingAroundPinnedJobs) {
  const TwoTypeModel model;
  // A pinned on slot 0, B on slot 1; free A and B. The greedy puts the free A beside the pinned
  // A (1.4 each, within 1.5) and B beside B; only swapping the free jobs repairs it.
  const std::vector<PackJob> jobs = {Pinned(0, 8000, 0), Pinned(1, 8000, 1), Job(0, 8000),
                                     Job(1, 8000)};
  PackOptions options = Options(2);
  options.max_gpus = 2;
  const Result<Packing> greedy = GreedyPack(jobs, model, options);
  const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
  ASSERT_TRUE(greedy.ok());
  ASSERT_TRUE(heuristic.ok());
  EXPECT_EQ(greedy->gpu_of, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_NEAR(greedy->total_slowdown, 4 * 1.4, 1e-9);
  EXPECT_EQ(heuristic->gpu_of, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_NEAR(heuristic->total_slowdown, 4 * 1.05, 1e-9);
  EXPECT_TRUE(CheckPacking(*heuristic, jobs, model, options).ok());
}

TEST(PackingTest, RandomPinnedInstancesKeepTheInvariants) {
  const FeatureModel model;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Rng rng(seed);
    const int n = 20 + static_cast<int>(rng.Below(60));
    const int max_gpus = seed % 3 == 0 ? 0 : n / 2 + static_cast<int>(rng.Below(n / 2));
    const int pin_slots = max_gpus > 0 ? max_gpus : 2 * n;
    std::vector<PackJob> jobs;
    for (int i = 0; i < n; ++i) {
      jobs.push_back(Job(static_cast<int>(rng.Below(5)),
                         1000 + static_cast<int64_t>(rng.Below(15000)), rng.Uniform()));
      if (rng.Uniform() < 0.3) jobs.back().pinned_gpu = static_cast<int>(rng.Below(pin_slots));
    }
    PackOptions options =
        Options(1 + static_cast<int>(rng.Below(4)), 16384, 1.2 + rng.Uniform(0.0, 0.8));
    options.max_probes = 1 + static_cast<int>(rng.Below(4));
    options.max_gpus = max_gpus;
    SCOPED_TRACE(testing::Message() << "seed " << seed << " n " << n << " k "
                                    << options.max_jobs_per_gpu << " max_gpus " << max_gpus);
    const Result<Packing> greedy = GreedyPack(jobs, model, options);
    const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
    ASSERT_TRUE(greedy.ok()) << greedy.status().ToString();
    ASSERT_TRUE(heuristic.ok());
    EXPECT_TRUE(CheckPacking(*greedy, jobs, model, options).ok())
        << CheckPacking(*greedy, jobs, model, options).ToString();
    EXPECT_TRUE(CheckPacking(*heuristic, jobs, model, options).ok())
        << CheckPacking(*heuristic, jobs, model, options).ToString();
    if (max_gpus == 0) {
      EXPECT_TRUE(greedy->unplaced.empty());
      EXPECT_LE(heuristic->gpus.size(), greedy->gpus.size());
    }
    EXPECT_LE(heuristic->total_slowdown, greedy->total_slowdown + 1e-9);
    EXPECT_EQ(HeuristicPack(jobs, model, options)->gpu_of, heuristic->gpu_of);
  }
}

// The placement entries answer what the packers' Packing says, with one scratch reused across
// calls of growing and shrinking inputs (nothing of a call leaks into the next).
TEST(PackingTest, PlaceMatchesPackWithOneScratchAcrossCalls) {
  const FeatureModel model;
  PackScratch scratch;
  std::vector<int> gpu_of;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Rng rng(seed);
    const int n = 2 + static_cast<int>(rng.Below(seed % 2 == 0 ? 80 : 12));
    const int max_gpus = seed % 3 == 0 ? 0 : 1 + n / 2 + static_cast<int>(rng.Below(n / 2 + 1));
    const int pin_slots = max_gpus > 0 ? max_gpus : 2 * n;
    std::vector<PackJob> jobs;
    for (int i = 0; i < n; ++i) {
      jobs.push_back(Job(static_cast<int>(rng.Below(5)),
                         1000 + static_cast<int64_t>(rng.Below(15000)), rng.Uniform()));
      if (rng.Uniform() < 0.4) jobs.back().pinned_gpu = static_cast<int>(rng.Below(pin_slots));
    }
    PackOptions options =
        Options(1 + static_cast<int>(rng.Below(4)), 16384, 1.2 + rng.Uniform(0.0, 0.8));
    options.max_gpus = max_gpus;
    SCOPED_TRACE(testing::Message() << "seed " << seed << " n " << n << " k "
                                    << options.max_jobs_per_gpu << " max_gpus " << max_gpus);
    const Result<Packing> greedy = GreedyPack(jobs, model, options);
    ASSERT_TRUE(greedy.ok());
    ASSERT_TRUE(GreedyPlace(jobs, model, options, scratch, gpu_of).ok());
    EXPECT_EQ(gpu_of, greedy->gpu_of);
    const Result<Packing> heuristic = HeuristicPack(jobs, model, options);
    ASSERT_TRUE(heuristic.ok());
    ASSERT_TRUE(HeuristicPlace(jobs, model, options, scratch, gpu_of).ok());
    EXPECT_EQ(gpu_of, heuristic->gpu_of);
  }
}

TEST(PackingTest, PlaceRefusesWhatPackRefuses) {
  const FeatureModel model;
  PackScratch scratch;
  std::vector<int> gpu_of;
  const std::vector<PackJob> jobs = {Job(0, 1000), Pinned(0, 1000, 3)};
  PackOptions options = Options(2);
  options.max_gpus = 2;  // the pinned slot 3 is outside
  EXPECT_EQ(GreedyPlace(jobs, model, options, scratch, gpu_of).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(HeuristicPlace(jobs, model, options, scratch, gpu_of).code(),
            StatusCode::kInvalidArgument);
  options.max_gpus = 0;
  options.max_jobs_per_gpu = 0;
  EXPECT_EQ(HeuristicPlace(jobs, model, options, scratch, gpu_of).code(),
            StatusCode::kInvalidArgument);
}

// The greedy's contract for the placement entries' case (max_gpus, pinned holders), written
// plainly: every unpinned job in the order, full sort and no early stop.
std::vector<int> PlainFirstFitDecreasing(const std::vector<PackJob>& jobs,
                                         const InterferenceModel& model,
                                         const PackOptions& options) {
  const size_t slots = static_cast<size_t>(options.max_gpus);
  std::vector<std::vector<int>> members(slots);
  std::vector<int64_t> used(slots, 0);
  std::vector<int> gpu_of(jobs.size(), -1);
  std::vector<int> order;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].pinned_gpu >= 0) {
      members[static_cast<size_t>(jobs[j].pinned_gpu)].push_back(static_cast<int>(j));
      used[static_cast<size_t>(jobs[j].pinned_gpu)] += jobs[j].memory_mib;
      gpu_of[j] = jobs[j].pinned_gpu;
    } else {
      order.push_back(static_cast<int>(j));
    }
  }
  const auto within_bound = [&](const std::vector<int>& group) {
    std::vector<SharingJob> features;
    for (int j : group) features.push_back(jobs[j].job);
    std::vector<double> speeds(features.size());
    GroupSpeeds(model, features, speeds);
    for (double speed : speeds) {
      if (SlowdownOf(speed) > options.max_slowdown + 1e-9) return false;
    }
    return true;
  };
  std::vector<bool> closed(slots, false);
  for (size_t s = 0; s < slots; ++s) {
    closed[s] =
        !members[s].empty() && (members[s].size() > static_cast<size_t>(options.max_jobs_per_gpu) ||
                                used[s] > options.gpu_memory_mib || !within_bound(members[s]));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (jobs[a].memory_mib != jobs[b].memory_mib) return jobs[a].memory_mib > jobs[b].memory_mib;
    if (jobs[a].job.sm_util != jobs[b].job.sm_util)
      return jobs[a].job.sm_util > jobs[b].job.sm_util;
    return a < b;
  });
  for (int j : order) {
    if (jobs[j].memory_mib > options.gpu_memory_mib) continue;
    int chosen = -1;
    int probes = 0;
    for (size_t s = 0; s < slots && chosen < 0 && probes < options.max_probes; ++s) {
      if (members[s].empty() || closed[s] ||
          members[s].size() >= static_cast<size_t>(options.max_jobs_per_gpu) ||
          used[s] + jobs[j].memory_mib > options.gpu_memory_mib) {
        continue;
      }
      std::vector<int> joined = members[s];
      joined.push_back(j);
      if (within_bound(joined)) {
        chosen = static_cast<int>(s);
      } else {
        ++probes;
      }
    }
    for (size_t s = 0; s < slots && chosen < 0; ++s) {
      if (members[s].empty()) chosen = static_cast<int>(s);
    }
    if (chosen < 0) continue;
    members[static_cast<size_t>(chosen)].push_back(j);
    used[static_cast<size_t>(chosen)] += jobs[j].memory_mib;
    gpu_of[j] = chosen;
  }
  return gpu_of;
}

// The greedy takes its order one job at a time (a scan for the first picks, a heap after) and
// stops once no open GPU has room for the least demanding job left: the same placements as the
// plain first-fit-decreasing, including where a job fits after larger ones did not.
TEST(PackingTest, GreedyMatchesPlainFirstFitDecreasing) {
  const FeatureModel model;
  {
    // Free memory 3000 and 1000 beside the holders; k = 3.
    const std::vector<PackJob> jobs = {Pinned(0, 13000, 0), Pinned(1, 15000, 1), Job(0, 5000),
                                       Job(1, 4000),        Job(0, 2500),        Job(1, 900),
                                       Job(0, 800)};
    PackOptions options = Options(3, 16000, 2.0);
    options.max_gpus = 2;
    const Result<Packing> p = GreedyPack(jobs, model, options);
    ASSERT_TRUE(p.ok());
    // 5000 and 4000 fit nowhere; 2500 beside the first holder, 900 beside the second; then the
    // most free is 500, under the last job's 800.
    EXPECT_EQ(p->gpu_of, (std::vector<int>{0, 1, -1, -1, 0, 1, -1}));
    EXPECT_EQ(p->unplaced, (std::vector<int>{2, 3, 6}));
    EXPECT_EQ(p->gpu_of, PlainFirstFitDecreasing(jobs, model, options));
  }
  PackScratch scratch;
  std::vector<int> gpu_of;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    const int slots = 1 + static_cast<int>(rng.Below(12));
    const int free_jobs = 1 + static_cast<int>(rng.Below(40));
    std::vector<PackJob> jobs;
    for (int s = 0; s < slots; ++s) {
      // Most slots held (some by two), some empty: new GPUs open there.
      if (rng.Uniform() < 0.2) continue;
      const int holders = rng.Uniform() < 0.3 ? 2 : 1;
      for (int h = 0; h < holders; ++h) {
        jobs.push_back(Job(static_cast<int>(rng.Below(3)),
                           2000 + static_cast<int64_t>(rng.Below(9000)), rng.Uniform()));
        jobs.back().pinned_gpu = s;
      }
    }
    for (int i = 0; i < free_jobs; ++i) {
      // Few memory sizes: ties broken by SM utilisation, then index.
      jobs.push_back(
          Job(static_cast<int>(rng.Below(3)), 1000 * (1 + rng.Below(8)), rng.Below(3) * 0.25));
    }
    PackOptions options =
        Options(1 + static_cast<int>(rng.Below(3)), 16384, 1.1 + rng.Uniform(0.0, 0.6));
    options.max_probes = 1 + static_cast<int>(rng.Below(3));
    options.max_gpus = slots;
    SCOPED_TRACE(testing::Message() << "seed " << seed << " slots " << slots);
    const std::vector<int> want = PlainFirstFitDecreasing(jobs, model, options);
    const Result<Packing> p = GreedyPack(jobs, model, options);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->gpu_of, want);
    ASSERT_TRUE(GreedyPlace(jobs, model, options, scratch, gpu_of).ok());
    EXPECT_EQ(gpu_of, want);
  }
}

// SpeedTableModel that counts its PairSpeed calls.
class CountingModel final : public InterferenceModel {
 public:
  explicit CountingModel(std::vector<std::vector<double>> speed) : table_(std::move(speed)) {}
  double PairSpeed(const SharingJob& self, const SharingJob& other) const override {
    ++calls;
    return table_.PairSpeed(self, other);
  }
  mutable int calls = 0;

 private:
  SpeedTableModel table_;
};

// A scratch remembers the model's pair slowdowns across calls, by the jobs' features: the next
// packing beside holders of the same features (the next scheduling cycle's) asks the model
// nothing again, and places as a packing without that memory does.
TEST(PackingTest, PairSlowdownsRememberedAcrossCallsForOneModel) {
  std::vector<std::vector<double>> speed(3, std::vector<double>(3, 0.9));
  speed[0][2] = speed[2][0] = 0.5;  // 0 beside 2: over the bound
  const CountingModel model(speed);
  PackOptions options = Options(2, 16000, 1.5);
  options.max_gpus = 3;
  const std::vector<PackJob> jobs = {Pinned(2, 1000, 0), Pinned(1, 1000, 1), Pinned(2, 1000, 2),
                                     Job(0, 2000), Job(1, 1000)};
  PackScratch scratch;
  std::vector<int> first;
  ASSERT_TRUE(HeuristicPlace(jobs, model, options, scratch, first).ok());
  EXPECT_GT(model.calls, 0);
  const Result<Packing> fresh = HeuristicPack(jobs, model, options);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(first, fresh->gpu_of);
  model.calls = 0;
  std::vector<int> again;
  ASSERT_TRUE(HeuristicPlace(jobs, model, options, scratch, again).ok());
  EXPECT_EQ(model.calls, 0);
  EXPECT_EQ(again, first);
}

// Another model object, with the same scratch, is asked again: what the scratch remembered of
// the first answers for it only.
TEST(PackingTest, PairSlowdownsForgottenForAnotherModel) {
  std::vector<std::vector<double>> speed(2, std::vector<double>(2, 0.9));
  const SpeedTableModel shares(speed);
  speed[0][1] = speed[1][0] = 0.5;  // 0 beside 1: over the bound
  const SpeedTableModel refuses(speed);
  PackOptions options = Options(2, 16000, 1.5);
  options.max_gpus = 1;
  const std::vector<PackJob> jobs = {Pinned(1, 1000, 0), Job(0, 1000)};
  for (const bool heuristic : {false, true}) {
    SCOPED_TRACE(heuristic ? "HeuristicPlace" : "GreedyPlace");
    const auto place = heuristic ? HeuristicPlace : GreedyPlace;
    PackScratch scratch;
    std::vector<int> gpu_of;
    ASSERT_TRUE(place(jobs, shares, options, scratch, gpu_of).ok());
    EXPECT_EQ(gpu_of, (std::vector<int>{0, 0}));
    ASSERT_TRUE(place(jobs, refuses, options, scratch, gpu_of).ok());
    EXPECT_EQ(gpu_of, (std::vector<int>{0, -1}));
  }
}

// A model made where a destroyed one was (the same address) is another model to the scratch.
TEST(PackingTest, PairSlowdownsForgottenForAModelAtADestroyedOnesAddress) {
  std::vector<std::vector<double>> shares_speed(2, std::vector<double>(2, 0.9));
  std::vector<std::vector<double>> refuses_speed = shares_speed;
  refuses_speed[0][1] = refuses_speed[1][0] = 0.5;  // 0 beside 1: over the bound
  PackOptions options = Options(2, 16000, 1.5);
  options.max_gpus = 1;
  const std::vector<PackJob> jobs = {Pinned(1, 1000, 0), Job(0, 1000)};
  PackScratch scratch;
  std::vector<int> gpu_of;
  std::optional<SpeedTableModel> model(std::in_place, shares_speed);
  const InterferenceModel* first = &*model;
  ASSERT_TRUE(HeuristicPlace(jobs, *model, options, scratch, gpu_of).ok());
  EXPECT_EQ(gpu_of, (std::vector<int>{0, 0}));
  model.emplace(refuses_speed);
  ASSERT_EQ(&*model, first);
  ASSERT_TRUE(HeuristicPlace(jobs, *model, options, scratch, gpu_of).ok());
  EXPECT_EQ(gpu_of, (std::vector<int>{0, -1}));
}

}  // namespace
}  // namespace dlsched::sharing
