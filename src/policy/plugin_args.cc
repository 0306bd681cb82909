#include "dlsched/common/text.h"
#include "dlsched/policy/plugin.h"

namespace dlsched {
namespace {

// The value of argument `key`, `text`, as a finite number.
Result<double> DoubleArg(std::string_view key, std::string_view text) {
  const std::optional<double> value = ParseFiniteDouble(text);
  if (!value) {
    return InvalidArgument("argument '" + std::string(key) + "' must be a number, got '" +
                           std::string(text) + "'");
  }
  return *value;
}

}  // namespace

Result<double> PluginArgs::GetDouble(std::string_view key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  return DoubleArg(key, it->second);
}

Result<int64_t> PluginArgs::GetInt(std::string_view key, int64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  const std::optional<int64_t> value = ParseInt(text);
  if (!value) {
    return InvalidArgument("argument '" + std::string(key) + "' must be an integer, got '" + text +
                           "'");
  }
  return *value;
}

Result<bool> PluginArgs::GetBool(std::string_view key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  return InvalidArgument("argument '" + std::string(key) + "' must be true or false, got '" +
                         it->second + "'");
}

Result<std::vector<double>> PluginArgs::GetDoubleList(std::string_view key,
                                                      std::vector<double> fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  std::vector<double> out;
  std::string_view rest = it->second;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    DS_ASSIGN_OR_RETURN(double value, DoubleArg(key, rest.substr(0, comma)));
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Result<std::map<std::string, double, std::less<>>> PluginArgs::GetDoubleMap(
    std::string_view key) const {
  std::map<std::string, double, std::less<>> out;
  auto it = values_.find(key);
  if (it == values_.end()) return out;
  std::string_view rest = it->second;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgument("argument '" + std::string(key) + "': item '" + std::string(item) +
                             "' is not name=value");
    }
    DS_ASSIGN_OR_RETURN(double value, DoubleArg(key, item.substr(eq + 1)));
    if (!out.emplace(item.substr(0, eq), value).second) {
      return InvalidArgument("argument '" + std::string(key) + "': '" +
                             std::string(item.substr(0, eq)) + "' given twice");
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Status PluginArgs::CheckKnown(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : values_) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return InvalidArgument("unknown argument '" + key +
                             "' (known: " + (list.empty() ? "none" : list) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace dlsched
