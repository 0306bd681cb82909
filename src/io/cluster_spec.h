#pragma once

// Cluster specs: the text a user gives for `--cluster`. Three forms:
//
// 1. Shorthand: terms joined by '+', each one of
//    - `NODESxGPUSxTYPE[:HOST]`: NODES nodes of GPUS GPUs of TYPE, e.g. "64x8xV100",
//      "9x4xK80+9x4xP100+9x4xV100" or "64x8xV100:96c:1024g"; `GPUSxTYPE[:HOST]` is one node
//      ("8xV100"). TYPE starts with a letter; "cpu" is reserved (below).
//    - `NODESxcpu:HOST` (`cpu:HOST`: one node): CPU-only nodes, e.g. "16xcpu:64c:256g". HOST
//      must state the CPUs.
//    - `per-gpu:HOST`: the cluster's per-GPU defaults for jobs that state no CPUs or memory
//      (Cluster::host_defaults, Slurm's DefCpuPerGPU / DefMemPerGPU), at most once, e.g.
//      "64x8xV100:96c:1024g+per-gpu:12c:96g".
//    HOST is ':'-joined suffixes, each kind at most once: `Nc` CPU cores, `Ng` host memory in
//    GiB or `Nm` in MiB. Per node: 1..1,000,000 cores and 1 MiB..2^50 MiB; per GPU: 1..1,024
//    cores and 1 MiB..2^30 MiB. A node whose HOST leaves CPUs or memory out has 0 of it
//    (unknown: never a limit).
//    Nodes are named n0000, n0001, ... in order and grouped into racks of 8 consecutive nodes
//    (r000, r001, ...); each node term starts a new rack. All GPUs of a node form one
//    interconnect group. GPU memory comes from DefaultGpuMemoryMib. Node labels: gpu=<TYPE>
//    (none on CPU-only nodes), rack=<rack name>.
//
// 2. "philly": the Philly preset. One rack per Philly virtual cluster, named by its VC hash,
//    sized from <traces_dir>/helios/philly_vc.csv (`vc,node num`; 11 VCs, 352 nodes), or from
//    the same 11 sizes built in when that file is absent. Nodes n0000... in file order, 8 V100
//    GPUs each (labels gpu=V100, rack=<hash>, vc=<hash>). ASSUMPTION: 8-GPU V100 nodes follow the
//    Helios/QSSF simulator's model of Philly; the real Philly cluster mixed 2-, 4- and 8-GPU
//    nodes of P100, P40 and M40 GPUs, which no public file describes node by node.
//
// 3. A path ending in ".json", a file of this form (all keys but "racks" and "nodes" optional;
//    unknown keys are errors):
//      {"description": "free text, ignored",
//       "racks": [
//         {"name": "r0",                      default "r000", "r001", ... by position
//          "nodes": [
//            {"name": "a",                     default n0000, n0001, ... (cluster-wide count)
//             "count": 4,                      repeat the entry; names become a-0 .. a-3
//             "gpus": 8,                       0..64 (0: a CPU-only node)
//             "gpu_type": "A100",              default "V100"
//             "gpu_memory_mib": 81920,         per GPU; default DefaultGpuMemoryMib(gpu_type)
//             "nvlink_groups": 2,              interconnect groups of equal size, must divide
//                                              gpus; GPU i is in group i / (gpus / groups);
//                                              default 1
//             "cpus": 96, "memory_mib": 1048576,   0..1,000,000 and 0..2^50; default 0
//                                              (unknown: never a limit)
//             "labels": {"zone": "a"}}]}],     string values; gpu=<type> and rack=<rack> are
//                                              added unless given
//       "cpus_per_gpu": 12,                    the per-GPU defaults for jobs that state no
//       "memory_mib_per_gpu": 98304}           CPUs or memory (Cluster::host_defaults): 0..1,024
//                                              and 0..2^30; default 0 (none)
//    "gpus": 0 makes CPU-only nodes: they must state "cpus" (>= 1) and take no "gpu_type",
//    "gpu_memory_mib" or "nvlink_groups".
//
// Node names must be unique across the cluster. A cluster has at most 1,000,000 GPUs in all.
// In every form, per-GPU defaults that ask more of a node than it states (cpus_per_gpu x its GPUs
// over its CPUs, or the same for memory) are an error naming the node: its GPUs could never all
// run jobs that take the defaults.
//
// GPU types are free names (a site may have types no table knows), matched case-sensitively by
// jobs' gpu_type and the throughput models. A type that differs from one of KnownGpuTypes only
// in case ("v100") is refused in every form, naming the right spelling.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"

namespace dlsched {

// Builds a cluster from any of the three forms above. `traces_dir` is only used by "philly"
// (may be empty: then the built-in VC sizes are used). Errors are InvalidArgument saying what is
// wrong (a bad shorthand names the term and the expected form; a bad JSON file names the path
// and the offending element), or NotFound for a missing .json file.
Result<Cluster> ParseClusterSpec(std::string_view spec, std::string_view traces_dir);

// Form 1 alone.
Result<Cluster> ParseClusterShorthand(std::string_view shorthand);

// Form 2 alone: reads <traces_dir>/helios/philly_vc.csv when it exists, else the built-in sizes.
// A present but malformed file is an InvalidArgument naming "<path>:<line>".
Result<Cluster> PhillyCluster(std::string_view traces_dir);

// Form 3 from text. `origin` (a path) prefixes error messages.
Result<Cluster> ParseClusterJson(std::string_view json_text, std::string_view origin);

// The GPU types the built-in throughput model has speeds for, sorted: A100, H100, H200, K80,
// P100, T4, V100. The simulator runs any other type at the reference (V100) speed.
const std::vector<std::string>& KnownGpuTypes();

// One sentence per GPU type of `cluster` that KnownGpuTypes lacks, joined by "; ": "GPU type
// 'V1000' has no throughput data (known: A100, ...); did you mean V100?". Empty when every type
// is known. For the simulator to refuse or warn.
std::string DescribeUnknownGpuTypes(const Cluster& cluster);

// Memory per GPU in MiB for a GPU type name (case-insensitive): V100 32768, A100 81920,
// H100 81920, K80 12288, P100 16384, T4 16384; any other type 16384.
int64_t DefaultGpuMemoryMib(std::string_view gpu_type);

}  // namespace dlsched
