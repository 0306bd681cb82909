#include "sim/sharing_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/builders.h"

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR ""
#endif

namespace dlsched::sim {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeJob;

JobSpec Typed(uint32_t id, std::string model, int batch_size) {
  JobSpec spec = MakeJob(id).Spec();
  spec.model = std::move(model);
  spec.batch_size = batch_size;
  return spec;
}

JobSpec Fractional(uint32_t id, int64_t memory_mib) {
  JobSpec spec = MakeJob(id).Spec();
  spec.memory_mib = memory_mib;
  return spec;
}

// A mix: two typed jobs, a fractional one, and model-less ones (a catalog type by hash).
std::vector<JobSpec> MixedJobs() {
  std::vector<JobSpec> jobs = {Typed(0, "lstm", 128), Typed(1, "large-cnn", 100),
                               Fractional(2, 4096)};
  for (uint32_t i = 3; i < 24; ++i) jobs.push_back(MakeJob(i).Spec());
  return jobs;
}

std::unique_ptr<SharingWorld> BuildOrDie(const std::vector<JobSpec>& jobs, const Cluster& cluster,
                                         SharingOptions options) {
  Result<std::unique_ptr<SharingWorld>> world = SharingWorld::Build(jobs, cluster, options);
  EXPECT_TRUE(world.ok()) << world.status().ToString();
  return world.ok() ? std::move(world).value() : nullptr;
}

bool SameFeatures(const sharing::SharingJob& a, const sharing::SharingJob& b) {
  return a.type == b.type && a.sm_util == b.sm_util && a.mem_bw_util == b.mem_bw_util &&
         a.memory_mib == b.memory_mib;
}

TEST(SharingWorldTest, BuiltInTypesGiveEveryJobFeatures) {
  const Cluster cluster = MakeCluster("2x4xV100+1x4xK80");
  const std::vector<JobSpec> jobs = MixedJobs();
  std::unique_ptr<SharingWorld> world = BuildOrDie(jobs, cluster, {.traces_dir = ""});
  ASSERT_NE(world, nullptr);
  EXPECT_THAT(world->source(), HasSubstr("built-in"));
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(i));
    const sharing::SharingJob f = world->knowledge().Features(JobId(static_cast<uint32_t>(i)));
    EXPECT_GT(f.memory_mib, 0);
    EXPECT_GT(f.sm_util, 0.0);
    EXPECT_LE(f.sm_util, 1.0);
    EXPECT_GE(f.mem_bw_util, 0.0);
    EXPECT_LE(f.mem_bw_util, 1.0);
    if (i != 2) {
      EXPECT_NE(f.type, sharing::SharingJob::kUnknownType);
    }
  }
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    EXPECT_NE(world->knowledge().Interference(GpuTypeId(static_cast<uint32_t>(t))), nullptr);
  }
  EXPECT_EQ(
      world->knowledge().Interference(GpuTypeId(static_cast<uint32_t>(cluster.num_gpu_types()))),
      nullptr);
}

TEST(SharingWorldTest, AJobNamingABuiltInTypeGetsItsFeatures) {
  const Cluster cluster = MakeCluster("1x4xV100");
  std::unique_ptr<SharingWorld> world = BuildOrDie(MixedJobs(), cluster, {.traces_dir = ""});
  ASSERT_NE(world, nullptr);
  const sharing::SharingJob lstm = world->knowledge().Features(JobId(0));
  EXPECT_DOUBLE_EQ(lstm.sm_util, 0.75);
  EXPECT_DOUBLE_EQ(lstm.mem_bw_util, 0.60);
  EXPECT_EQ(lstm.memory_mib, 5632);
  // Batch 100 is nearest (in log2) to large-cnn's 128, not its 64.
  const sharing::SharingJob cnn = world->knowledge().Features(JobId(1));
  EXPECT_DOUBLE_EQ(cnn.sm_util, 1.00);
  EXPECT_EQ(cnn.memory_mib, 13312);
}

TEST(SharingWorldTest, AFractionalRequestGetsAProfileOfThatFraction) {
  const Cluster cluster = MakeCluster("1x4xV100");
  std::unique_ptr<SharingWorld> world = BuildOrDie(MixedJobs(), cluster, {.traces_dir = ""});
  ASSERT_NE(world, nullptr);
  const sharing::SharingJob f = world->knowledge().Features(JobId(2));
  EXPECT_EQ(f.type, sharing::SharingJob::kUnknownType);
  EXPECT_EQ(f.memory_mib, 4096);
  EXPECT_DOUBLE_EQ(f.sm_util, 0.25);
  EXPECT_EQ(world->Demand(JobId(2)).profile().peak_memory_mib, 4096);
  EXPECT_EQ(world->knowledge().MemoryDemandMib(JobId(2), 95), 4096);  // declared
}

TEST(SharingWorldTest, MemoryDemandIsTheDeclaredPeakUntilObservedThenAPercentile) {
  const Cluster cluster = MakeCluster("1x4xV100");
  std::unique_ptr<SharingWorld> world = BuildOrDie(MixedJobs(), cluster, {.traces_dir = ""});
  ASSERT_NE(world, nullptr);
  const JobId lstm(0);
  EXPECT_EQ(world->knowledge().MemoryDemandMib(lstm, 50), 5632);  // the model's profiled memory
  EXPECT_EQ(world->knowledge().MemoryDemandMib(lstm, 100), 5632);

  world->Observe(lstm, std::chrono::seconds(30));
  const int64_t p50 = world->knowledge().MemoryDemandMib(lstm, 50);
  const int64_t p100 = world->knowledge().MemoryDemandMib(lstm, 100);
  EXPECT_GE(p100, p50);
  EXPECT_LT(p50, 5632);  // the memory floor is well below the peak
  EXPECT_GT(p50, 0);
  EXPECT_LE(p100, world->Demand(lstm).MemoryBoundMib());
  EXPECT_EQ(world->knowledge().MemoryDemandMib(lstm, 50), p50);  // the cache answers the same

  // A new sample invalidates the cached answer.
  world->ObserveSample(lstm, {.memory_mib = 20000, .sm = 0.5});
  EXPECT_EQ(world->knowledge().MemoryDemandMib(lstm, 100), 20000);
  // Another job's demand is untouched by this one's history.
  EXPECT_EQ(world->knowledge().MemoryDemandMib(JobId(3), 100),
            world->knowledge().Features(JobId(3)).memory_mib);
  // A run of no time observes nothing.
  world->Observe(JobId(3), Duration::zero());
  EXPECT_EQ(world->knowledge().MemoryDemandMib(JobId(3), 50),
            world->knowledge().Features(JobId(3)).memory_mib);
}

TEST(SharingWorldTest, TheSameSeedGivesTheSameWorldAndAnotherSeedAnother) {
  const Cluster cluster = MakeCluster("1x4xV100");
  const std::vector<JobSpec> jobs = MixedJobs();
  std::unique_ptr<SharingWorld> a = BuildOrDie(jobs, cluster, {.traces_dir = "", .seed = 7});
  std::unique_ptr<SharingWorld> b = BuildOrDie(jobs, cluster, {.traces_dir = "", .seed = 7});
  std::unique_ptr<SharingWorld> c = BuildOrDie(jobs, cluster, {.traces_dir = "", .seed = 8});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  bool features_differ = false;
  bool demand_differs = false;
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(i));
    const JobId id(static_cast<uint32_t>(i));
    EXPECT_TRUE(SameFeatures(a->knowledge().Features(id), b->knowledge().Features(id)));
    features_differ |= !SameFeatures(a->knowledge().Features(id), c->knowledge().Features(id));
    for (int s = 0; s < 20; ++s) {
      const Duration t = std::chrono::milliseconds(137 * s);
      EXPECT_EQ(a->Demand(id).At(t), b->Demand(id).At(t));
      demand_differs |= !(a->Demand(id).At(t) == c->Demand(id).At(t));
    }
    EXPECT_EQ(a->PackedSpeed(id, std::vector<JobId>{JobId(0), JobId(5)}, GpuTypeId(0)),
              b->PackedSpeed(id, std::vector<JobId>{JobId(0), JobId(5)}, GpuTypeId(0)));
  }
  EXPECT_TRUE(features_differ);  // model-less jobs draw their type by (seed, index)
  EXPECT_TRUE(demand_differs);
  // The typed jobs keep their type whatever the seed.
  EXPECT_TRUE(SameFeatures(a->knowledge().Features(JobId(0)), c->knowledge().Features(JobId(0))));
  EXPECT_TRUE(SameFeatures(a->knowledge().Features(JobId(2)), c->knowledge().Features(JobId(2))));
}

TEST(SharingWorldTest, PackedSpeedIsOneAloneAndAFractionWithOthers) {
  const Cluster cluster = MakeCluster("1x4xV100+1x4xK80");
  const std::vector<JobSpec> jobs = MixedJobs();
  std::unique_ptr<SharingWorld> world = BuildOrDie(jobs, cluster, {.traces_dir = ""});
  ASSERT_NE(world, nullptr);
  for (int t = 0; t < cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(static_cast<uint32_t>(t));
    for (size_t i = 0; i < jobs.size(); ++i) {
      SCOPED_TRACE("type " + std::to_string(t) + " job " + std::to_string(i));
      const JobId self(static_cast<uint32_t>(i));
      EXPECT_EQ(world->PackedSpeed(self, {}, type), 1.0);
      EXPECT_EQ(world->PackedSpeed(self, std::vector<JobId>{self}, type), 1.0);  // not its own
      const JobId other(static_cast<uint32_t>((i + 1) % jobs.size()));
      const JobId third(static_cast<uint32_t>((i + 2) % jobs.size()));
      const double one = world->PackedSpeed(self, std::vector<JobId>{other}, type);
      const double two = world->PackedSpeed(self, std::vector<JobId>{other, third}, type);
      EXPECT_GT(one, 0.0);
      EXPECT_LE(one, 1.0);
      EXPECT_GT(two, 0.0);
      EXPECT_LE(two, one);  // each partner's effect is a factor <= 1
    }
  }
  // Two heavy jobs slow each other.
  EXPECT_LT(world->PackedSpeed(JobId(0), std::vector<JobId>{JobId(1)}, GpuTypeId(0)), 1.0);
}

TEST(SharingWorldTest, MeasuredTypesFromLucid) {
  const std::string traces = DLSCHED_TRACES_DIR;
  if (traces.empty() || !std::filesystem::exists(traces + "/lucid/single_data.csv") ||
      !std::filesystem::exists(traces + "/gavel/simulation_throughputs.json")) {
    GTEST_SKIP() << "traces not found at " << traces;
  }
  const Cluster cluster = MakeCluster("1x4xV100");
  const std::vector<JobSpec> jobs = {Typed(0, "ResNet50", 64), MakeJob(1).Spec()};
  std::unique_ptr<SharingWorld> world = BuildOrDie(jobs, cluster, {.traces_dir = traces});
  ASSERT_NE(world, nullptr);
  EXPECT_THAT(world->source(), HasSubstr("lucid"));
  const sharing::SharingJob resnet = world->knowledge().Features(JobId(0));
  EXPECT_NE(resnet.type, sharing::SharingJob::kUnknownType);
  EXPECT_NEAR(resnet.sm_util, 1.0, 1e-9);  // Lucid: ResNet50, batch 64, no AMP: 100% busy
  EXPECT_EQ(resnet.memory_mib, 8570);
  EXPECT_EQ(world->knowledge().MemoryDemandMib(JobId(0), 95), 8570);
  EXPECT_NE(world->knowledge().Interference(GpuTypeId(0)), nullptr);
  const double speed = world->PackedSpeed(JobId(0), std::vector<JobId>{JobId(1)}, GpuTypeId(0));
  EXPECT_GT(speed, 0.0);
  EXPECT_LE(speed, 1.0);
}

}  // namespace
}  // namespace dlsched::sim
