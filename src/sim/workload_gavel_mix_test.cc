#include "sim/workload_gavel_mix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "sim/workload.h"

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR ""
#endif

namespace dlsched::sim {
namespace {

// ResNet-50 is measured on V100 at 1, 2, 4 and 8 GPUs; LM at one GPU only (so it is never a
// multi-GPU job); A3C on K80 only (so it is never drawn: the reference type is V100).
constexpr char kTable[] = R"json({
  "v100": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 4.0},
    "('ResNet-50 (batch size 64)', 2)": {"null": 7.0},
    "('ResNet-50 (batch size 64)', 4)": {"null": 12.0},
    "('ResNet-50 (batch size 64)', 8)": {"null": 20.0},
    "('LM (batch size 20)', 1)": {"null": 30.0}
  },
  "k80": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 1.0},
    "('A3C', 1)": {"null": 2.0}
  }
})json";

GavelThroughputTable Table() {
  Result<GavelThroughputTable> table = GavelThroughputTable::Parse(kTable, "test");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return std::move(table).value();
}

SyntheticOptions GavelOptions(int jobs) {
  Result<SyntheticOptions> options =
      ParseSyntheticOptions("mix=gavel,jobs=" + std::to_string(jobs) + ",rate=30");
  EXPECT_TRUE(options.ok()) << options.status().ToString();
  return *options;
}

// Gavel's published distributions: gang sizes 1/2/4/8 at 0.7/0.1/0.15/0.05, V100 run times
// 60 x 10^x s with x in [3, 4] for a fifth of the jobs and in [1.5, 3] for the rest, and
// Poisson arrivals at the rate asked for. 20,000 jobs: the tolerances are > 4 standard errors.
TEST(GavelMixTest, FollowsGavelsDistributionsOfSizeRunTimeAndArrivals) {
  const int n = 20000;
  Result<std::vector<JobSpec>> jobs = GenerateGavelMixJobs(GavelOptions(n), Table());
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), static_cast<size_t>(n));
  std::map<int, int> sizes;
  int long_jobs = 0;
  for (const JobSpec& job : *jobs) {
    ++sizes[job.num_gpus];
    const double run_time_s = job.iterations / job.ref_iters_per_s;
    ASSERT_GE(run_time_s, 60 * std::pow(10.0, 1.5) * (1 - 1e-12));
    ASSERT_LE(run_time_s, 60 * 1e4 * (1 + 1e-12));
    if (run_time_s > 60 * 1e3) ++long_jobs;
  }
  ASSERT_EQ(sizes.size(), 4u);
  EXPECT_NEAR(sizes[1] / double(n), 0.70, 0.015);
  EXPECT_NEAR(sizes[2] / double(n), 0.10, 0.01);
  EXPECT_NEAR(sizes[4] / double(n), 0.15, 0.012);
  EXPECT_NEAR(sizes[8] / double(n), 0.05, 0.007);
  EXPECT_NEAR(long_jobs / double(n), 0.20, 0.012);
  EXPECT_EQ(jobs->front().submit_time, kTimeZero);
  const double span_s = ToSeconds(jobs->back().submit_time - jobs->front().submit_time);
  EXPECT_NEAR(span_s / (n - 1), 3600.0 / 30, 3600.0 / 30 * 0.03);  // rate=30 jobs per hour
  for (size_t i = 1; i < jobs->size(); ++i) {
    ASSERT_LE((*jobs)[i - 1].submit_time, (*jobs)[i].submit_time);
  }
}

// Job types come from the table: a multi-GPU job is of a type measured on V100 at its size, and
// its work is the drawn run time at the table's V100 throughput for that size (Gavel's
// num_steps); types V100 never ran are never drawn.
TEST(GavelMixTest, JobTypesAndWorkComeFromTheTablesV100Measurements) {
  Result<std::vector<JobSpec>> jobs = GenerateGavelMixJobs(GavelOptions(2000), Table());
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  const std::map<int, double> resnet = {{1, 4.0}, {2, 7.0}, {4, 12.0}, {8, 20.0}};
  int lm = 0;
  for (const JobSpec& job : *jobs) {
    ASSERT_NE(job.model, "A3C");
    if (job.model == "LM") {
      ++lm;
      EXPECT_EQ(job.num_gpus, 1);
      EXPECT_EQ(job.batch_size, 20);
      EXPECT_EQ(job.ref_iters_per_s, 30.0);
    } else {
      ASSERT_EQ(job.model, "ResNet-50");
      EXPECT_EQ(job.batch_size, 64);
      EXPECT_EQ(job.ref_iters_per_s, resnet.at(job.num_gpus));
    }
  }
  // Single-GPU jobs pick uniformly between the two types: about 0.35 of all jobs are LM.
  EXPECT_NEAR(lm / 2000.0, 0.35, 0.05);
}

TEST(GavelMixTest, SameOptionsSameJobsAndGangsFitTheCluster) {
  const auto a = GenerateGavelMixJobs(GavelOptions(500), Table());
  const auto b = GenerateGavelMixJobs(GavelOptions(500), Table());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].model, (*b)[i].model);
    EXPECT_EQ((*a)[i].num_gpus, (*b)[i].num_gpus);
    EXPECT_EQ((*a)[i].iterations, (*b)[i].iterations);
    EXPECT_EQ((*a)[i].submit_time, (*b)[i].submit_time);
  }
  SyntheticOptions small = GavelOptions(500);
  small.gpus = 3;
  const auto fitted = GenerateGavelMixJobs(small, Table());
  ASSERT_TRUE(fitted.ok());
  for (const JobSpec& job : *fitted) EXPECT_LE(job.num_gpus, 2);
}

TEST(GavelMixTest, OptionsOfTheOtherMixAreRefused) {
  EXPECT_FALSE(ParseSyntheticOptions("mix=gavel,load=2").ok());
  EXPECT_FALSE(ParseSyntheticOptions("mix=gavel,services=1").ok());
  EXPECT_FALSE(ParseSyntheticOptions("rate=10").ok());
  EXPECT_FALSE(ParseSyntheticOptions("mix=alibaba").ok());
  EXPECT_FALSE(ParseSyntheticOptions("mix=gavel,rate=0").ok());
  Result<SyntheticOptions> options = ParseSyntheticOptions("mix=gavel,rate=2.5,throughputs=t.json");
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->mix, SyntheticOptions::Mix::kGavel);
  EXPECT_EQ(options->rate_per_hour, 2.5);
  EXPECT_EQ(options->throughputs, "t.json");
}

// The real table, read at run time through LoadWorkload (skipped where the traces are absent).
TEST(GavelMixTest, LoadWorkloadReadsGavelsTable) {
  const std::string dir = DLSCHED_TRACES_DIR;
  if (dir.empty()) GTEST_SKIP() << "DLSCHED_TRACES_DIR not set";
  ReadOptions options;
  options.traces_dir = dir;
  Result<Workload> workload = LoadWorkload("synthetic:mix=gavel,jobs=100", options);
  if (!workload.ok() && workload.status().code() == StatusCode::kNotFound) {
    GTEST_SKIP() << workload.status().ToString();
  }
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  ASSERT_EQ(workload->jobs.size(), 100u);
  for (const JobSpec& job : workload->jobs) {
    EXPECT_FALSE(job.model.empty());
    EXPECT_GT(job.ref_iters_per_s, 0);
  }
  EXPECT_FALSE(LoadWorkload("synthetic:mix=gavel,throughputs=/nonexistent.json", options).ok());
}

}  // namespace
}  // namespace dlsched::sim
