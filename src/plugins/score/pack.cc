#include "plugins/score/pack.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> ConsolidateScore::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<ConsolidateScore>());
}

double ConsolidateScore::ScoreNode(const JobView&, NodeId, int free_gpus, int gpus,
                                   const SchedulingContext&) const {
  return -static_cast<double>(free_gpus - gpus);
}

Result<std::unique_ptr<Plugin>> SpreadScore::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<SpreadScore>());
}

double SpreadScore::ScoreNode(const JobView&, NodeId, int free_gpus, int gpus,
                              const SchedulingContext&) const {
  return static_cast<double>(free_gpus - gpus);
}

}  // namespace dlsched
