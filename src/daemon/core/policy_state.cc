#include "daemon/core/policy_state.h"

#include <nlohmann/json.hpp>
#include <optional>

namespace dlsched::daemon {

using nlohmann::json;

Result<std::string> LoadPolicyState(StateStore& store, const PolicyProfile& profile) {
  DS_ASSIGN_OR_RETURN(const std::optional<std::string> row, store.GetMeta(kPolicyStateKey));
  if (!row) return std::string();
  const json doc = json::parse(*row, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("profile") || !doc["profile"].is_string() ||
      !doc.contains("state") || !doc["state"].is_string()) {
    return std::string();
  }
  if (doc["profile"].get<std::string>() != PolicyProfileToJson(profile)) return std::string();
  return doc["state"].get<std::string>();
}

Status SavePolicyState(StateStore& store, const PolicyProfile& profile, std::string_view state) {
  return store.SetMeta(kPolicyStateKey,
                       json{{"profile", PolicyProfileToJson(profile)}, {"state", state}}.dump());
}

}  // namespace dlsched::daemon
