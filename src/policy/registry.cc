#include "dlsched/policy/registry.h"

namespace dlsched {

std::string_view PluginPointName(PluginPoint point) {
  switch (point) {
    case PluginPoint::kAdmit:
      return "admit";
    case PluginPoint::kQueueSort:
      return "queue_sort";
    case PluginPoint::kFilter:
      return "filter";
    case PluginPoint::kScore:
      return "score";
    case PluginPoint::kPreempt:
      return "preempt";
  }
  return "unknown";
}

Status PluginRegistry::Add(PluginPoint point, std::string name, Factory factory) {
  auto [it, inserted] = factories_.emplace(std::make_pair(point, name), std::move(factory));
  if (!inserted) {
    return AlreadyExists("plugin '" + name + "' is registered twice at " +
                         std::string(PluginPointName(point)));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Plugin>> PluginRegistry::Create(PluginPoint point, std::string_view name,
                                                       const PluginArgs& args) const {
  auto it = factories_.find(std::make_pair(point, std::string(name)));
  if (it == factories_.end()) {
    std::string known;
    for (const std::string& n : Names(point)) known += (known.empty() ? "" : ", ") + n;
    return NotFound("no " + std::string(PluginPointName(point)) + " plugin named '" +
                    std::string(name) + "' (known: " + known + ")");
  }
  Result<std::unique_ptr<Plugin>> plugin = it->second(args);
  if (!plugin.ok()) {
    return plugin.status().WithPrefix(std::string(PluginPointName(point)) + " plugin '" +
                                      std::string(name) + "'");
  }
  return plugin;
}

std::vector<std::string> PluginRegistry::Names(PluginPoint point) const {
  std::vector<std::string> names;
  for (const auto& [key, factory] : factories_) {
    if (key.first == point) names.push_back(key.second);
  }
  return names;
}

const PluginRegistry& InTreeRegistry() {
  static const PluginRegistry registry = [] {
    PluginRegistry r;
    const Status status = RegisterInTreePlugins(r);
    DS_CHECK(status.ok()) << status.ToString();
    return r;
  }();
  return registry;
}

}  // namespace dlsched
