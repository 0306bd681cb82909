#include "plugins/score/deadline_fit.h"

#include "dlsched/policy/context.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> DeadlineFitScore::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<DeadlineFitScore>());
}

double DeadlineFitScore::ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                                   const SchedulingContext& ctx) const {
  const JobSpec& spec = job.spec();
  if (!spec.deadline || !(spec.ref_iters_per_s > 0)) return 0;
  // The node's first `gpus` GPUs stand for the ones the placer will pick: the estimators price
  // a placement by its GPU type and spread, not by which GPUs of a node it holds.
  Placement placement;
  placement.parts.push_back({node, LowestGpus(gpus)});
  const double speed =
      ctx.estimator.ItersPerSecond(spec, ctx.cluster, placement) / spec.ref_iters_per_s;
  if (!(speed > 0)) return 0;
  const double run_s = ToSeconds(job.estimated_remaining()) / speed;
  const bool meets = ToSeconds(ctx.now) + run_s <= ToSeconds(*spec.deadline);
  return meets ? 1 + 1 / (1 + speed) : speed / (1 + speed);
}

}  // namespace dlsched
