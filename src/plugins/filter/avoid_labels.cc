#include "plugins/filter/avoid_labels.h"

#include <utility>

#include "dlsched/policy/context.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> AvoidLabelsFilter::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"labels"}));
  const auto text = args.values().find("labels");
  if (text == args.values().end()) {
    return InvalidArgument("avoid_labels: \"labels\" is required (e.g. \"maintenance=true\")");
  }
  Result<Labels> labels = ParseLabels(text->second);
  if (!labels.ok()) return labels.status().WithPrefix("avoid_labels: \"labels\"");
  if (labels->empty()) return InvalidArgument("avoid_labels: \"labels\" names no label");
  return std::unique_ptr<Plugin>(std::make_unique<AvoidLabelsFilter>(std::move(labels).value()));
}

Fit AvoidLabelsFilter::FilterNode(const JobView& job, NodeId node,
                                  const SchedulingContext& ctx) const {
  const Labels& labels = ctx.cluster.node(node).labels;
  const Labels& tolerated = job.spec().selector;
  for (const auto& [key, value] : avoided_) {
    const auto carried = labels.find(key);
    if (carried == labels.end() || carried->second != value) continue;
    const auto asked = tolerated.find(key);
    if (asked != tolerated.end() && asked->second == value) continue;
    return Fit::Unfit("the node carries " + key + "=" + value);
  }
  return Fit::Yes();
}

}  // namespace dlsched
