#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dlsched/policy/plugin.h"

namespace dlsched {

enum class PluginPoint { kAdmit, kQueueSort, kFilter, kScore, kPreempt };
std::string_view PluginPointName(PluginPoint point);

// Plugin factories by extension point and name. Filled explicitly by RegisterInTreePlugins (no
// static-initialiser registration); registering a name twice at one point is an error.
class PluginRegistry {
 public:
  using Factory = std::function<Result<std::unique_ptr<Plugin>>(const PluginArgs&)>;

  // Registers P under P::kName at the point P derives from.
  template <typename P>
  Status Register() {
    return Add(PointOf<P>(), std::string(P::kName),
               [](const PluginArgs& args) -> Result<std::unique_ptr<Plugin>> {
                 DS_ASSIGN_OR_RETURN(std::unique_ptr<Plugin> plugin, P::Create(args));
                 return plugin;
               });
  }

  Status Add(PluginPoint point, std::string name, Factory factory);
  // Creates the named plugin at a point; NotFound lists the names that exist there.
  Result<std::unique_ptr<Plugin>> Create(PluginPoint point, std::string_view name,
                                         const PluginArgs& args) const;
  std::vector<std::string> Names(PluginPoint point) const;

 private:
  template <typename P>
  static constexpr PluginPoint PointOf() {
    if constexpr (std::is_base_of_v<AdmitPlugin, P>)
      return PluginPoint::kAdmit;
    else if constexpr (std::is_base_of_v<QueueSortPlugin, P>)
      return PluginPoint::kQueueSort;
    else if constexpr (std::is_base_of_v<FilterPlugin, P>)
      return PluginPoint::kFilter;
    else if constexpr (std::is_base_of_v<ScorePlugin, P>)
      return PluginPoint::kScore;
    else
      return PluginPoint::kPreempt;
  }

  std::map<std::pair<PluginPoint, std::string>, Factory> factories_;
};

// Registers every plugin that ships with dlsched. The one list of them.
Status RegisterInTreePlugins(PluginRegistry& registry);

// A registry with the in-tree plugins, built once.
const PluginRegistry& InTreeRegistry();

}  // namespace dlsched
