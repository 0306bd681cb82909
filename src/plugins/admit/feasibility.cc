#include "plugins/admit/feasibility.h"

#include <algorithm>

#include "dlsched/policy/context.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> FeasibilityAdmit::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<FeasibilityAdmit>());
}

Fit FeasibilityAdmit::Admit(const JobView& job, const SchedulingContext& ctx) const {
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
