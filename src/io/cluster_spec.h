#pragma once

// Cluster specs: the text a user gives for `--cluster`. Three forms:
//
// 1. Shorthand: `NODESxGPUSxTYPE` terms joined by '+', e.g. "64x8xV100" or
//    "9x4xK80+9x4xP100+9x4xV100"; a term `GPUSxTYPE` is one node ("8xV100"). TYPE starts with a
//    letter. Nodes are named n0000, n0001, ... in order and grouped into
//    racks of 8 consecutive nodes (r000, r001, ...); each term starts a new rack. All GPUs of a
//    node form one interconnect group. GPU memory comes from DefaultGpuMemoryMib. Node labels:
//    gpu=<TYPE>, rack=<rack name>. Node CPUs and memory are 0 (unknown).
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
//             "gpus": 8,                       1..64
//             "gpu_type": "A100",              default "V100"
//             "gpu_memory_mib": 81920,         per GPU; default DefaultGpuMemoryMib(gpu_type)
//             "nvlink_groups": 2,              interconnect groups of equal size, must divide
//                                              gpus; GPU i is in group i / (gpus / groups);
//                                              default 1
//             "cpus": 96, "memory_mib": 1048576,   default 0 (unknown)
//             "labels": {"zone": "a"}}]}]}     string values; gpu=<type> and rack=<rack> are
//                                              added unless given
//
// Node names must be unique across the cluster. A cluster has at most 1,000,000 GPUs in all.
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
