#pragma once

// Runs for the report tests (src/sim/report_*_test.cc): a synthetic run with a time series, runs
// with given JCTs, and deadlines added to a run. Each comes back with its summary computed.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/metrics.h"

namespace dlsched::testing {

// A run of `num_jobs` synthetic jobs on `total_gpus` GPUs: deterministic pseudo-random submit
// times, sizes and waits (a fixed LCG seeded by `seed`), every 10th job rejected and the last
// one left queued, plus a series sampled at each start and finish.
sim::RunResult SyntheticRun(std::string policy, int num_jobs, uint64_t seed, double wait_scale);

// A run whose job i completed with JCT jct_s[i] seconds, or was rejected when jct_s[i] < 0.
sim::RunResult Finished(std::string policy, const std::vector<double>& jct_s);

// Gives every third job of `run` a deadline (strict, soft alternately) that the job meets when
// its index is even, then recomputes the summary.
sim::RunResult WithDeadlines(sim::RunResult run);

}  // namespace dlsched::testing
