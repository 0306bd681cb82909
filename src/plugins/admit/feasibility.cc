#include "plugins/admit/feasibility.h"

#include <algorithm>

#include "dlsched/policy/context.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> FeasibilityAdmit::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<FeasibilityAdmit>());
}

namespace {

// GPUs of `type` on nodes matching `selector`, summed over label classes.
int GpusMatching(const Cluster& cluster, GpuTypeId type, const Labels& selector) {
  int gpus = 0;
  for (int c = 0; c < cluster.num_label_classes(); ++c) {
    const LabelClassId id(static_cast<uint32_t>(c));
    if (cluster.label_class_gpu_type(id) == type &&
        MatchesSelector(cluster.label_class_labels(id), selector)) {
      gpus += cluster.label_class_gpus(id);
    }
  }
  return gpus;
}

// A job with a selector: some single GPU type (the required one, if any) must offer the gang on
// matching nodes.
Fit AdmitSelector(const JobView& job, const SchedulingContext& ctx) {
  const JobSpec& spec = job.spec();
  const GpuTypeId required = ctx.cluster.FindGpuType(spec.gpu_type);
  int largest_pool = 0;
  for (int t = 0; t < ctx.cluster.num_gpu_types(); ++t) {
    const GpuTypeId type(static_cast<uint32_t>(t));
    if (spec.gpu_type.empty() || type == required) {
      largest_pool = std::max(largest_pool, GpusMatching(ctx.cluster, type, spec.selector));
    }
  }
  if (job.num_gpus() <= largest_pool) return Fit::Yes();
  const int gpus = job.num_gpus();
  return Fit::Unfit("needs " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") +
                    " on nodes labelled " + FormatLabels(spec.selector) + "; the cluster has " +
                    std::to_string(largest_pool) + " of one type there");
}

// A CPU job: one node must state its CPUs and memory (a node that does not state memory does
// not limit it).
Fit AdmitCpuJob(const JobView& job, const SchedulingContext& ctx) {
  const HostRequest host = EffectiveHostRequest(job.spec(), ctx.cluster.host_defaults());
  int largest = 0;
  for (const NodeSpec& node : ctx.cluster.nodes()) {
    if (node.memory_mib > 0 && node.memory_mib < host.memory_mib) continue;
    largest = std::max(largest, node.cpus);
    if (node.cpus >= host.cpus) return Fit::Yes();
  }
  if (host.memory_mib == 0) {
    return Fit::Unfit("a CPU job needs " + std::to_string(host.cpus) +
                      " CPUs on one node; the most a node states is " + std::to_string(largest));
  }
  return Fit::Unfit("a CPU job needs " + std::to_string(host.cpus) + " CPUs and " +
                    std::to_string(host.memory_mib) +
                    " MiB of host memory on one node; the most CPUs a node with that memory "
                    "states is " +
                    std::to_string(largest));
}

}  // namespace

Fit FeasibilityAdmit::Admit(const JobView& job, const SchedulingContext& ctx) const {
  if (job.num_gpus() == 0) return AdmitCpuJob(job, ctx);
  const Fit by_type = AdmitByType(job, ctx);
  if (!by_type.ok || job.spec().selector.empty()) return by_type;
  return AdmitSelector(job, ctx);
}

Fit FeasibilityAdmit::AdmitByType(const JobView& job, const SchedulingContext& ctx) {
  const std::string& type_name = job.spec().gpu_type;
  const int gpus = job.num_gpus();
  if (!type_name.empty()) {
    const GpuTypeId type = ctx.cluster.FindGpuType(type_name);
    if (!type.valid()) {
      return Fit::Unfit("needs GPU type " + type_name + "; the cluster has none");
    }
    if (gpus > ctx.cluster.gpus_of_type(type)) {
      return Fit::Unfit("needs " + std::to_string(gpus) + " " + type_name +
                        " GPUs; the cluster has " + std::to_string(ctx.cluster.gpus_of_type(type)));
    }
    return Fit::Yes();
  }
  // Any type will do, but a gang does not mix types: the largest single-type pool bounds it.
  int largest_pool = 0;
  for (int t = 0; t < ctx.cluster.num_gpu_types(); ++t) {
    largest_pool = std::max(largest_pool, ctx.cluster.gpus_of_type(GpuTypeId(t)));
  }
  if (gpus > largest_pool) {
    return Fit::Unfit("needs " + std::to_string(gpus) +
                      " GPUs; the largest pool of one GPU type has " +
                      std::to_string(largest_pool));
  }
  return Fit::Yes();
}

}  // namespace dlsched
