#include "sim/host_allocation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/pipeline.h"
#include "io/cluster_spec.h"
#include "io/profile.h"
#include "sim/cpu_sensitivity.h"
#include "sim/simulator.h"
#include "sim/workload_synthetic.h"

namespace dlsched::sim {
namespace {

Cluster MustParse(const std::string& spec) {
  Result<Cluster> cluster = ParseClusterSpec(spec, "");
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return cluster.ok() ? *std::move(cluster) : Cluster();
}

JobSpec Job(std::string model, int gpus, int cpus = 0, int64_t memory_mib = 0) {
  JobSpec spec;
  spec.model = std::move(model);
  spec.num_gpus = gpus;
  spec.cpus = cpus;
  spec.host_memory_mib = memory_mib;
  spec.iterations = 1;
  return spec;
}

TEST(HostAllocationTest, NamesRoundTrip) {
  for (const HostAllocation a :
       {HostAllocation::kRequested, HostAllocation::kProportional, HostAllocation::kCpuAware}) {
    EXPECT_EQ(ParseHostAllocation(HostAllocationName(a)).value(), a);
  }
  const Result<HostAllocation> bad = ParseHostAllocation("synergy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown host allocation 'synergy' (want requested, proportional or cpu-aware)");
}

TEST(HostAllocationTest, ProportionalShareFromTheDefaultsOrTheGpuNodes) {
  EXPECT_EQ(ProportionalCpusPerGpu(MustParse("2x8xV100:24c+per-gpu:2c")), 2);
  EXPECT_EQ(ProportionalCpusPerGpu(MustParse("1x8xV100:24c+1x4xT4:20c+2xcpu:64c")), 3);  // 44/12
  EXPECT_EQ(ProportionalCpusPerGpu(MustParse("1x8xV100:4c")), 1);
  EXPECT_EQ(ProportionalCpusPerGpu(MustParse("1x8xV100")), 0);
}

TEST(HostAllocationTest, EachModeRewritesGpuJobsOnly) {
  const Cluster cluster = MustParse("2x8xV100:24c:512g+1xcpu:32c+per-gpu:3c:64g");
  const std::vector<JobSpec> jobs = {
      Job("alexnet", 1),         // saturates at 12 cores per GPU: capped at 2 x 3
      Job("resnet50", 2),        // 4 per GPU
      Job("gnmt", 4, 16, 1024),  // 1 per GPU, fewer than it asked
      Job("", 1, 5, 2048),       // no known model
      Job("deepspeech", 8),      // 5 per GPU, but a whole node has 24 cores: 3
      Job("", 0, 6, 4096),       // a CPU job
  };
  struct Want {
    int cpus;
    int64_t memory_mib;
  };
  struct Case {
    HostAllocation allocation;
    std::vector<Want> want;
  };
  const Case cases[] = {
      {HostAllocation::kRequested, {{0, 0}, {0, 0}, {16, 1024}, {5, 2048}, {0, 0}, {6, 4096}}},
      {HostAllocation::kProportional, {{3, 0}, {6, 0}, {12, 0}, {3, 0}, {24, 0}, {6, 4096}}},
      {HostAllocation::kCpuAware, {{6, 0}, {8, 0}, {4, 1024}, {5, 2048}, {24, 0}, {6, 4096}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(HostAllocationName(c.allocation)));
    std::vector<JobSpec> rewritten = jobs;
    ApplyHostAllocation(c.allocation, cluster, rewritten);
    ASSERT_EQ(rewritten.size(), c.want.size());
    for (size_t i = 0; i < rewritten.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(rewritten[i].cpus, c.want[i].cpus);
      EXPECT_EQ(rewritten[i].host_memory_mib, c.want[i].memory_mib);
      EXPECT_EQ(rewritten[i].num_gpus, jobs[i].num_gpus);
    }
  }
}

// A cluster whose nodes state no CPUs has nothing to allocate: every mode leaves the jobs be.
TEST(HostAllocationTest, NothingToAllocateWithoutCpus) {
  const Cluster cluster = MustParse("2x8xV100");
  for (const HostAllocation a : {HostAllocation::kProportional, HostAllocation::kCpuAware}) {
    std::vector<JobSpec> jobs = {Job("alexnet", 1), Job("gnmt", 2)};
    ApplyHostAllocation(a, cluster, jobs);
    EXPECT_EQ(jobs[0].cpus, 0);
    EXPECT_EQ(jobs[1].cpus, 0);
  }
}

// The experiment's key claim (docs/multi-resource.md, "Experiment: CPU-aware allocation"), at a
// fixed seed: on Synergy-like servers (3 cores per GPU) the CPU-aware allocation finishes the
// data-loading mix with a clearly lower average JCT than GPU-proportional allocation, at the
// price of some GPU-time idle for lack of CPUs, which proportional allocation never has.
TEST(CpuAwareAllocationTest, BeatsProportionalOnTheDataLoadingMix) {
  const Cluster cluster = MustParse("4x8xV100:24c:512g+per-gpu:3c:64g");
  SyntheticOptions synthetic;
  synthetic.mix = SyntheticOptions::Mix::kDataLoading;
  synthetic.jobs = 400;
  synthetic.gpus = 32;
  synthetic.load = 0.8;
  const CpuSensitiveThroughputModel truth(std::make_unique<SimpleThroughputModel>());
  const auto run = [&](HostAllocation allocation) {
    Workload workload{"synthetic", GenerateSyntheticJobs(synthetic), 0};
    ApplyHostAllocation(allocation, cluster, workload.jobs);
    Result<PolicyProfile> profile = LoadPolicyProfile("las");
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPolicy(*profile);
    EXPECT_TRUE(policy.ok()) << policy.status().ToString();
    return Simulate({cluster, workload, truth, truth}, std::move(policy).value(), {});
  };
  const RunResult proportional = run(HostAllocation::kProportional);
  const RunResult cpu_aware = run(HostAllocation::kCpuAware);
  ASSERT_EQ(proportional.summary.completed, 400);
  ASSERT_EQ(cpu_aware.summary.completed, 400);
  EXPECT_LT(cpu_aware.summary.avg_jct_s, 0.8 * proportional.summary.avg_jct_s)
      << "cpu-aware " << cpu_aware.summary.avg_jct_s << " s, proportional "
      << proportional.summary.avg_jct_s << " s";
  ASSERT_TRUE(proportional.summary.host_blocked_gpu_share.has_value());
  ASSERT_TRUE(cpu_aware.summary.host_blocked_gpu_share.has_value());
  EXPECT_EQ(*proportional.summary.host_blocked_gpu_share, 0);
  EXPECT_GT(*cpu_aware.summary.host_blocked_gpu_share, 0);
}

}  // namespace
}  // namespace dlsched::sim
