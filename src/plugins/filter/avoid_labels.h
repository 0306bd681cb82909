#pragma once

#include <memory>
#include <string_view>

#include "dlsched/model/cluster.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {

// Keeps jobs off nodes that carry any of the given labels (a drain or a reservation by label,
// Kubernetes' taints without the scheduler's own effects): {"name": "avoid_labels", "args":
// {"labels": "maintenance=true;pool=inference"}}. A job whose selector asks for one of those
// labels (JobSpec::selector, the toleration) may still use such nodes, e.g. a burn-in job sent
// to nodes under maintenance. `labels` is ParseLabels' text and must name at least one label.
class AvoidLabelsFilter final : public FilterPlugin {
 public:
  static constexpr std::string_view kName = "avoid_labels";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  explicit AvoidLabelsFilter(Labels avoided) : avoided_(std::move(avoided)) {}

  std::string_view Name() const override { return kName; }
  Fit FilterNode(const JobView& job, NodeId node, const SchedulingContext& ctx) const override;

 private:
  Labels avoided_;
};

}  // namespace dlsched
