#pragma once

// GPU discovery for `serve --gpus auto` through NVML (libnvidia-ml.so.1), loaded with dlopen at
// run time: the binary neither links nor needs the NVIDIA driver where there is none.

#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

// A one-node cluster of this machine's NVIDIA GPUs, in NVML index order (= PCI bus order, the
// order CUDA_VISIBLE_DEVICES uses with CUDA_DEVICE_ORDER=PCI_BUS_ID). The node is named after
// the host; GPU types are short names ("NVIDIA H100 80GB HBM3" -> "H100"). Unavailable, saying
// why, when NVML cannot be loaded or initialised or reports no GPU.
Result<Cluster> DiscoverNvidiaGpus();

// "NVIDIA A100-SXM4-80GB" -> "A100", "Tesla V100-SXM2-32GB" -> "V100", "NVIDIA H200" -> "H200".
std::string ShortGpuTypeName(std::string_view nvml_name);

}  // namespace dlsched::daemon
