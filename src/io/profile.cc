#include "io/profile.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "dlsched/common/text.h"
#include "io/hetero_profile.h"
#include "io/sharing_profile.h"

namespace dlsched {
namespace {

using nlohmann::json;

// JSON scalars become their text; arrays of scalars become comma-separated text; objects of
// numbers become "key=value" items, comma-separated.
Result<std::string> ArgText(const std::string& key, const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean() || value.is_number()) return value.dump();
  if (value.is_array()) {
    std::string text;
    for (const json& item : value) {
      if (!item.is_number() && !item.is_string()) {
        return InvalidArgument("argument '" + key + "' must hold numbers or strings");
      }
      if (!text.empty()) text += ",";
      text += item.is_string() ? item.get<std::string>() : item.dump();
    }
    return text;
  }
  if (value.is_object()) {  // {"a": 1, "b": 2} -> "a=1,b=2" (PluginArgs::GetDoubleMap)
    std::string text;
    for (const auto& [item_key, item] : value.items()) {
      if (!item.is_number() || item_key.empty() ||
          item_key.find_first_of("=,") != std::string::npos) {
        return InvalidArgument("argument '" + key +
                               "' must map names (without '=' or ',') to numbers");
      }
      if (!text.empty()) text += ",";
      text += item_key + "=" + item.dump();
    }
    return text;
  }
  return InvalidArgument("argument '" + key + "' must be a scalar, an array or an object");
}

Result<PluginConfig> ParsePlugin(const json& entry, const std::string& where) {
  PluginConfig config;
  if (entry.is_string()) {
    config.name = entry.get<std::string>();
    if (config.name.empty()) return InvalidArgument(where + ": plugin without a name");
    return config;
  }
  if (!entry.is_object()) {
    return InvalidArgument(where + ": a plugin is a name or an object with \"name\"");
  }
  for (const auto& [key, value] : entry.items()) {
    if (key == "name" && value.is_string()) {
      config.name = value.get<std::string>();
    } else if (key == "weight" && value.is_number()) {
      config.weight = value.get<double>();
    } else if (key == "args" && value.is_object()) {
      std::map<std::string, std::string, std::less<>> args;
      for (const auto& [arg, arg_value] : value.items()) {
        DS_ASSIGN_OR_RETURN(std::string text, ArgText(arg, arg_value));
        args.emplace(arg, std::move(text));
      }
      config.args = PluginArgs(std::move(args));
    } else {
      return InvalidArgument(where + ": unexpected key '" + key +
                             "' (want name, args, weight with the right types)");
    }
  }
  if (config.name.empty()) return InvalidArgument(where + ": plugin without a name");
  return config;
}

Result<std::vector<PluginConfig>> ParsePluginList(const json& value, const std::string& where) {
  if (!value.is_array()) return InvalidArgument(where + " must be an array");
  std::vector<PluginConfig> list;
  for (const json& entry : value) {
    DS_ASSIGN_OR_RETURN(PluginConfig plugin, ParsePlugin(entry, where));
    list.push_back(std::move(plugin));
  }
  return list;
}

// "placement": {"prefer_one_group": bool, "min_spread_speed": 0..1, "relax_after_s": s > 0}.
Result<PlacementOptions> ParsePlacementOptions(const json& value) {
  if (!value.is_object()) return InvalidArgument("placement must be an object");
  PlacementOptions options;
  for (const auto& [key, v] : value.items()) {
    if (key == "prefer_one_group" && v.is_boolean()) {
      options.prefer_one_group = v.get<bool>();
    } else if (key == "min_spread_speed" && v.is_number() && v.get<double>() >= 0 &&
               v.get<double>() <= 1) {
      options.min_spread_speed = v.get<double>();
    } else if (key == "relax_after_s" && v.is_number() && v.get<double>() >= 1e-6 &&
               v.get<double>() <= kMaxInputSeconds) {
      options.relax_after = Seconds(v.get<double>());
    } else {
      return InvalidArgument("placement: unexpected key '" + key +
                             "' or a value of the wrong type (see docs/profiles.md)");
    }
  }
  return options;
}

// "quotas": {"<tenant>|*": {"guaranteed_share": 0..1, "max_share": 0..1}, ...}.
Result<std::map<std::string, PipelineConfig::Quota, std::less<>>> ParseQuotas(const json& value) {
  if (!value.is_object()) return InvalidArgument("quotas must be an object of tenants");
  std::map<std::string, PipelineConfig::Quota, std::less<>> quotas;
  for (const auto& [tenant, entry] : value.items()) {
    const std::string where = "quotas." + tenant;
    if (!entry.is_object()) return InvalidArgument(where + " must be an object");
    PipelineConfig::Quota quota;
    for (const auto& [key, v] : entry.items()) {
      const bool share = v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1;
      if (key == "guaranteed_share" && share) {
        quota.guaranteed_share = v.get<double>();
      } else if (key == "max_share" && share) {
        quota.max_share = v.get<double>();
      } else {
        return InvalidArgument(where + ": unexpected key '" + key +
                               "' or not a share in [0, 1] (want guaranteed_share, max_share)");
      }
    }
    if (quota.guaranteed_share > quota.max_share) {
      return InvalidArgument(where + ": guaranteed_share exceeds max_share");
    }
    quotas.emplace(tenant, quota);
  }
  return quotas;
}

Result<PipelineConfig> ParseProfileJson(const json& doc) {
  if (!doc.is_object()) return InvalidArgument("a profile is a JSON object");
  if (IsRoundProfile(doc)) {
    return InvalidArgument(
        "a round-based heterogeneity-aware profile (docs/hetero.md), not a plugin pipeline: "
        "only `dlsched simulate` runs it");
  }
  if (IsSharingProfile(doc)) {
    return InvalidArgument("a GPU-sharing profile (docs/sharing.md), not a plugin pipeline");
  }
  PipelineConfig config;
  for (const auto& [key, value] : doc.items()) {
    if (key == "name" && value.is_string()) {
      config.name = value.get<std::string>();
    } else if (key == "description" && value.is_string()) {
      config.description = value.get<std::string>();
    } else if (key == "admit") {
      DS_ASSIGN_OR_RETURN(config.admit, ParsePluginList(value, key));
    } else if (key == "queue_sort") {
      DS_ASSIGN_OR_RETURN(config.queue_sort, ParsePlugin(value, key));
    } else if (key == "filter") {
      DS_ASSIGN_OR_RETURN(config.filter, ParsePluginList(value, key));
    } else if (key == "score") {
      DS_ASSIGN_OR_RETURN(config.score, ParsePluginList(value, key));
    } else if (key == "preempt") {
      DS_ASSIGN_OR_RETURN(config.preempt, ParsePluginList(value, key));
    } else if (key == "backfill" && value.is_boolean()) {
      config.backfill = value.get<bool>();
    } else if (key == "starvation_limit_s" && value.is_number() && value.get<double>() >= 1e-6 &&
               value.get<double>() <= kMaxInputSeconds) {
      config.starvation_limit = Seconds(value.get<double>());
    } else if (key == "reject_late_strict" && value.is_boolean()) {
      config.reject_late_strict = value.get<bool>();
    } else if (key == "starvation_guard" && value.is_string() &&
               (value.get<std::string>() == "all" || value.get<std::string>() == "no-deadline")) {
      config.starvation_guard_no_deadline_only = value.get<std::string>() == "no-deadline";
    } else if (key == "late_jobs_last" && value.is_boolean()) {
      config.late_jobs_last = value.get<bool>();
    } else if (key == "placement") {
      DS_ASSIGN_OR_RETURN(config.placement, ParsePlacementOptions(value));
    } else if (key == "quotas") {
      DS_ASSIGN_OR_RETURN(config.quotas, ParseQuotas(value));
    } else if (key == "max_preemption_attempts" && value.is_number_integer() &&
               value.get<int>() >= 0) {
      config.max_preemption_attempts = value.get<int>();
    } else {
      return InvalidArgument("unexpected key '" + key +
                             "' or a value of the wrong type (see docs/profiles.md)");
    }
  }
  if (config.name.empty()) return InvalidArgument("the profile has no \"name\"");
  return config;
}

}  // namespace

std::string ProfileToJson(const PipelineConfig& profile) {
  auto plugin = [](const PluginConfig& p) {
    json j = {{"name", p.name}, {"weight", p.weight}};
    if (!p.args.values().empty()) {
      json args = json::object();
      for (const auto& [key, value] : p.args.values()) args[key] = value;
      j["args"] = std::move(args);
    }
    return j;
  };
  auto list = [&plugin](const std::vector<PluginConfig>& plugins) {
    json j = json::array();
    for (const PluginConfig& p : plugins) j.push_back(plugin(p));
    return j;
  };
  json doc = {
      {"name", profile.name},
      {"description", profile.description},
      {"admit", list(profile.admit)},
      {"queue_sort", plugin(profile.queue_sort)},
      {"filter", list(profile.filter)},
      {"score", list(profile.score)},
      {"preempt", list(profile.preempt)},
      {"backfill", profile.backfill},
      {"max_preemption_attempts", profile.max_preemption_attempts},
      {"reject_late_strict", profile.reject_late_strict},
      {"late_jobs_last", profile.late_jobs_last},
      {"starvation_guard", profile.starvation_guard_no_deadline_only ? "no-deadline" : "all"}};
  if (profile.starvation_limit != Duration::max()) {
    doc["starvation_limit_s"] = ToSeconds(profile.starvation_limit);
  }
  json placement = {{"prefer_one_group", profile.placement.prefer_one_group},
                    {"min_spread_speed", profile.placement.min_spread_speed}};
  if (profile.placement.relax_after != Duration::max()) {
    placement["relax_after_s"] = ToSeconds(profile.placement.relax_after);
  }
  doc["placement"] = std::move(placement);
  if (!profile.quotas.empty()) {
    json quotas = json::object();
    for (const auto& [tenant, quota] : profile.quotas) {
      quotas[tenant] = {{"guaranteed_share", quota.guaranteed_share},
                        {"max_share", quota.max_share}};
    }
    doc["quotas"] = std::move(quotas);
  }
  return doc.dump();
}

Result<PipelineConfig> ParseProfile(std::string_view json_text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string(origin) + ": not valid JSON: " + e.what());
  }
  Result<PipelineConfig> config = ParseProfileJson(doc);
  if (!config.ok()) return config.status().WithPrefix(origin);
  return config;
}

namespace {

struct ProfileSource {
  std::string text;
  std::string origin;  // for messages
};

Result<ProfileSource> ReadProfileSource(std::string_view name_or_path) {
  for (const auto& [name, text] : BuiltinProfiles()) {
    if (name == name_or_path) {
      return ProfileSource{std::string(text), "builtin profile '" + std::string(name) + "'"};
    }
  }
  const bool looks_like_path =
      name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".json");
  if (!looks_like_path) {
    std::string known;
    for (const auto& [name, text] : BuiltinProfiles()) {
      known += (known.empty() ? "" : ", ") + std::string(name);
    }
    return NotFound("no policy named '" + std::string(name_or_path) + "' (known: " + known +
                    "; or give a path to a .json profile)");
  }
  const std::string path(name_or_path);
  FileText file = ReadFileText(path);
  if (file.fault != FileFault::kNone) return NotFound("cannot open profile " + path);
  return ProfileSource{std::move(file.text), path};
}

// The JSON of a round-based profile, or nullopt for a pipeline profile (or invalid JSON, which
// ParseProfile reports).
Result<std::unique_ptr<SchedulingPolicy>> LoadNonSharingPolicy(std::string_view name_or_path);

// The profile's JSON when it is one of the kinds that are not a plugin pipeline.
std::optional<json> OtherKindJson(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !(IsRoundProfile(doc) || IsSharingProfile(doc))) return std::nullopt;
  return doc;
}

}  // namespace

bool IsRoundProfileText(std::string_view json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return !doc.is_discarded() && IsRoundProfile(doc);
}

bool IsPipelineProfileText(std::string_view json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return !doc.is_discarded() && doc.is_object() && !OtherKindJson(json_text);
}

Result<PipelineConfig> LoadProfile(std::string_view name_or_path) {
  DS_ASSIGN_OR_RETURN(ProfileSource source, ReadProfileSource(name_or_path));
  return ParseProfile(source.text, source.origin);
}

Result<std::string> ProfileDescription(std::string_view json_text, std::string_view origin) {
  if (std::optional<json> doc = OtherKindJson(json_text)) {
    const auto description = doc->find("description");
    if (description == doc->end()) return std::string();
    if (!description->is_string()) {
      return InvalidArgument(std::string(origin) + ": \"description\" must be a string");
    }
    return description->get<std::string>();
  }
  DS_ASSIGN_OR_RETURN(PipelineConfig profile, ParseProfile(json_text, origin));
  return profile.description;
}

namespace {

// A sharing profile's base: any kind but another sharing profile.
Result<std::unique_ptr<SchedulingPolicy>> LoadNonSharingPolicy(std::string_view name_or_path) {
  DS_ASSIGN_OR_RETURN(ProfileSource source, ReadProfileSource(name_or_path));
  const json doc = json::parse(source.text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded() && IsSharingProfile(doc)) {
    return InvalidArgument(source.origin + ": a sharing profile cannot be another's base");
  }
  return LoadPolicy(name_or_path);
}

}  // namespace

Result<std::unique_ptr<SchedulingPolicy>> LoadPolicy(std::string_view name_or_path) {
  DS_ASSIGN_OR_RETURN(ProfileSource source, ReadProfileSource(name_or_path));
  if (std::optional<json> doc = OtherKindJson(source.text)) {
    Result<std::unique_ptr<SchedulingPolicy>> policy =
        IsRoundProfile(*doc) ? BuildRoundPolicy(*doc)
                             : BuildSharingPolicy(*doc, [](std::string_view base) {
                                 return LoadNonSharingPolicy(base);
                               });
    if (!policy.ok()) return policy.status().WithPrefix(source.origin);
    return policy;
  }
  DS_ASSIGN_OR_RETURN(PipelineConfig profile, ParseProfile(source.text, source.origin));
  Result<std::unique_ptr<SchedulingPolicy>> policy = BuildPipeline(profile, InTreeRegistry());
  if (!policy.ok()) return policy.status().WithPrefix(source.origin);
  return policy;
}

}  // namespace dlsched
