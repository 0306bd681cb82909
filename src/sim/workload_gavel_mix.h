#pragma once

// The Gavel-style synthetic workload ("synthetic:mix=gavel,..." in LoadWorkload): job types,
// gang sizes and run times drawn as Gavel's simulator draws them (Narayanan et al.,
// "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI '20;
// stanford-futuredata/gavel, scheduler/utils.py), with the job types and their measured speeds
// read at run time from Gavel's throughput table (traces/gavel/simulation_throughputs.json).

#include <vector>

#include "dlsched/model/job.h"
#include "io/gavel_throughputs.h"
#include "sim/workload_synthetic.h"

namespace dlsched::sim {

// Generates options.jobs jobs sorted by submit time, the first at t = 0, from `table`:
//  - gang size 1, 2, 4 or 8 GPUs with probabilities 0.7, 0.1, 0.15, 0.05 (Gavel's "Philly
//    distribution"); a size above options.gpus becomes the largest of them that fits;
//  - job type uniform over the table's job types measured on V100 at that gang size (so a
//    multi-GPU job is of a type Gavel runs distributed), model and batch size set;
//  - run time on V100 60 x 10^x seconds, x uniform in [3, 4] for 20% of the jobs and in
//    [1.5, 3] for the rest; iterations = run time x the table's V100 throughput at the gang size
//    (Gavel's num_steps), ref_iters_per_s = that throughput, so the ideal V100 run time is the
//    drawn one;
//  - Poisson arrivals at options.rate_per_hour jobs per hour (exponential gaps);
//  - user "user<k>" round-robin over options.users, queue "vc<k mod max(1, users/2)>";
//    name = 1-based position.
// Same options and table -> identical jobs. Precondition: the table measures at least one job
// type on V100 alone on one GPU (else FailedPrecondition).
Result<std::vector<JobSpec>> GenerateGavelMixJobs(const SyntheticOptions& options,
                                                  const GavelThroughputTable& table);

}  // namespace dlsched::sim
