#pragma once

// The built-in synthetic workload ("synthetic[:k=v,...]" in LoadWorkload): a seeded generator
// whose job sizes and run times follow the Microsoft Philly trace (Jeon et al., "Analysis of
// Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC '19), with
// parameters measured once from the Pollux-processed trace (traces/pollux/philly.csv) and baked
// into workload_synthetic.cc. The generator never reads a file.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"

namespace dlsched::sim {

struct SyntheticOptions {
  // Which generator: the Philly-like mix below; the same with data-loading models whose speed
  // depends on the CPUs they hold (kDataLoading, "dataload"); or Gavel's
  // (sim/workload_gavel_mix.h).
  enum class Mix { kPhilly, kGavel, kDataLoading };
  Mix mix = Mix::kPhilly;
  int jobs = 4000;       // number of jobs, in [1, 1e6]
  uint64_t seed = 1;     // same options (seed included) -> identical jobs, on every platform
  double load = 1.0;     // offered load: total GPU-time / (arrival span x gpus), [0.01, 1000]
  int gpus = 128;        // cluster size the load refers to; no job asks for more, >= 1
  int users = 8;         // distinct users, >= 1
  int services = 0;      // online services beside the training jobs, [0, 10000]
  int service_gpus = 8;  // each service's reservation (at most `gpus`), >= 1
  // mix=gavel only (which takes neither load nor services): Poisson arrivals at this many jobs
  // per hour, in [0.001, 1e6], and Gavel's throughput table (empty: ReadOptions::traces_dir's
  // gavel/simulation_throughputs.json). Default 24: Gavel's reference runs' `-l 150`, a mean gap
  // of 150 s (peer-results/gavel).
  double rate_per_hour = 24;
  std::string throughputs;
};

// Parses "k=v,k=v" (the part after "synthetic:"; may be empty) over the defaults. Keys: mix
// (philly, dataload or gavel), jobs, seed, load, gpus, users, services, service_gpus, and with
// mix=gavel rate and throughputs. Unknown keys, repeated keys, out-of-range values and keys the mix
// does not take are InvalidArgument naming the key.
Result<SyntheticOptions> ParseSyntheticOptions(std::string_view text);

// Generates options.jobs jobs sorted by submit time, the first at t = 0. Precondition: options
// are in range (as ParseSyntheticOptions guarantees).
//  - num_gpus in {1, 2, 4, 8, 16, 32} (sizes above `gpus` excluded), ~93% single-GPU.
//  - run time heavy-tailed (median ~19 min, 1% beyond a day, capped at 7 days), whole seconds;
//    multi-GPU jobs run longer. iterations = run time in seconds, ref_iters_per_s = 1.
//  - arrivals: a Poisson process whose time axis is scaled so that the offered load
//    (sum of num_gpus x run time) / (last submit - first submit) / gpus equals `load` exactly
//    up to microsecond rounding.
//  - user "user<k>" (round-robin from a seeded start, 30% of jobs to a random user), queue
//    "vc<k mod max(1, users/2)>" of its user; ~60% of jobs carry a Gavel model name and batch
//    size; priority 0 (70%), 1 (20%), 2 (10%). With mix=dataload every job instead carries a
//    model of sim/cpu_sensitivity.h's DataLoadingModels(), drawn by its mix weight (batch size
//    0), and states no CPUs or memory (the cluster's per-GPU defaults; see sim/host_allocation.h
//    for the CPU-aware alternative); everything else is as for mix=philly, same seed, same jobs.
//  - name = 1-based position.
// Then `services` online services ("svc<k>", user and queue "online"), submitted at t = 0 and
// placed first, each reserving min(service_gpus, gpus) GPUs for the whole run (until 7 days
// after the last arrival) with a daily load: all its GPUs from 08:00 to 20:00, a quarter (at
// least 1) otherwise. The offered `load` counts training jobs only.
std::vector<JobSpec> GenerateSyntheticJobs(const SyntheticOptions& options);

}  // namespace dlsched::sim
