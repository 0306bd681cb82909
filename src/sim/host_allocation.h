#pragma once

// How many host CPUs the simulator's GPU jobs ask for (`dlsched simulate --host-allocation`),
// issue 20's experiment (docs/multi-resource.md, "Experiment: CPU-aware allocation"):
//
//   requested     (default) each job's own request (JobSpec::cpus / host_memory_mib); what it
//                 leaves unstated comes from the cluster's per-GPU defaults, i.e. in proportion
//                 to its GPUs.
//   proportional  every GPU job asks ProportionalCpusPerGpu cores per GPU and the per-GPU
//                 memory default, whatever it requested: GPU-proportional allocation, the way
//                 GPU schedulers hand out CPUs and memory.
//   cpu-aware     Synergy-like (Mohan et al., OSDI '22): a GPU job whose model has a known
//                 data-loading sensitivity (sim/cpu_sensitivity.h) asks the cores per GPU at
//                 which it stops speeding up, rounded up, at least 1 and at most twice the
//                 GPU-proportional share and what one node can give it; so sensitive jobs get
//                 more than proportional and insensitive ones fewer, and the CPUs language
//                 models leave feed image and speech models. Other jobs ask as `requested`.
//
// CPU jobs (num_gpus 0) keep their own requests in every mode; host memory is not changed by
// cpu-aware (it takes the defaults when unstated). The requests are fixed when the job is
// submitted: a static demand, where Synergy re-tunes each round (a simplification: a job that
// asks for more than the free CPUs waits rather than starting with fewer).

#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched::sim {

enum class HostAllocation { kRequested, kProportional, kCpuAware };

// "requested", "proportional", "cpu-aware".
std::string_view HostAllocationName(HostAllocation allocation);
// The inverse; InvalidArgument naming the choices for anything else.
Result<HostAllocation> ParseHostAllocation(std::string_view name);

// The GPU-proportional share of CPU cores per GPU on `cluster`: its cpus_per_gpu default when
// set, else the CPUs of its GPU nodes over their GPUs (rounded down, at least 1 when they state
// CPUs); 0 when no GPU node states CPUs.
int ProportionalCpusPerGpu(const Cluster& cluster);

// Rewrites the jobs' host requests as `allocation` says (see above). kRequested changes nothing.
void ApplyHostAllocation(HostAllocation allocation, const Cluster& cluster,
                         std::vector<JobSpec>& jobs);

}  // namespace dlsched::sim
