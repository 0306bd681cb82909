// The one list of in-tree plugins.

#include "dlsched/policy/registry.h"
#include "plugins/admit/deadline_admission.h"
#include "plugins/admit/feasibility.h"
#include "plugins/admit/guarantee_admission.h"
#include "plugins/filter/avoid_labels.h"
#include "plugins/preempt/priority_preempt.h"
#include "plugins/preempt/qos_preempt.h"
#include "plugins/queue_sort/deadline_sorts.h"
#include "plugins/queue_sort/multi_priority.h"
#include "plugins/queue_sort/queue_sorts.h"
#include "plugins/score/deadline_fit.h"
#include "plugins/score/pack.h"
#include "plugins/score/relative_speedup.h"

namespace dlsched {

Status RegisterInTreePlugins(PluginRegistry& registry) {
  DS_RETURN_IF_ERROR(registry.Register<FeasibilityAdmit>());
  DS_RETURN_IF_ERROR(registry.Register<DeadlineAdmission>());
  DS_RETURN_IF_ERROR(registry.Register<GuaranteeAdmission>());
  DS_RETURN_IF_ERROR(registry.Register<FifoSort>());
  DS_RETURN_IF_ERROR(registry.Register<SjfSort>());
  DS_RETURN_IF_ERROR(registry.Register<SrtfSort>());
  DS_RETURN_IF_ERROR(registry.Register<LasSort>());
  DS_RETURN_IF_ERROR(registry.Register<TiresiasSort>());
  DS_RETURN_IF_ERROR(registry.Register<PrioritySort>());
  DS_RETURN_IF_ERROR(registry.Register<MultiPrioritySort>());
  DS_RETURN_IF_ERROR(registry.Register<EdfSort>());
  DS_RETURN_IF_ERROR(registry.Register<LaxitySort>());
  DS_RETURN_IF_ERROR(registry.Register<AvoidLabelsFilter>());
  DS_RETURN_IF_ERROR(registry.Register<ConsolidateScore>());
  DS_RETURN_IF_ERROR(registry.Register<SpreadScore>());
  DS_RETURN_IF_ERROR(registry.Register<DeadlineFitScore>());
  DS_RETURN_IF_ERROR(registry.Register<RelativeSpeedupScore>());
  DS_RETURN_IF_ERROR(registry.Register<PriorityPreempt>());
  DS_RETURN_IF_ERROR(registry.Register<QosPreempt>());
  return Status::Ok();
}

}  // namespace dlsched
