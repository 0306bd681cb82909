#include "io/profile.h"

#include <nlohmann/json.hpp>
#include <variant>

#include "dlsched/common/overloaded.h"
#include "dlsched/common/text.h"
#include "dlsched/policy/registry.h"
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

Result<PipelineConfig> ParsePipelineJson(const json& doc) {
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
    } else if (key == "share_measure" && value.is_string() &&
               (value.get<std::string>() == "dominant" || value.get<std::string>() == "gpu")) {
      config.share_measure = value.get<std::string>() == "gpu"
                                 ? PipelineConfig::ShareMeasure::kGpu
                                 : PipelineConfig::ShareMeasure::kDominant;
    } else if (key == "tenant_order" && value.is_string() &&
               (value.get<std::string>() == "rank" || value.get<std::string>() == "fair")) {
      config.tenant_order = value.get<std::string>() == "fair" ? PipelineConfig::TenantOrder::kFair
                                                               : PipelineConfig::TenantOrder::kRank;
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

json PipelineJson(const PipelineConfig& profile) {
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
  // The defaults (dominant, rank) are left out, as before the keys existed.
  if (profile.share_measure == PipelineConfig::ShareMeasure::kGpu) doc["share_measure"] = "gpu";
  if (profile.tenant_order == PipelineConfig::TenantOrder::kFair) doc["tenant_order"] = "fair";
  return doc;
}

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

Result<json> ParseJsonText(std::string_view json_text, std::string_view origin) {
  try {
    return json::parse(json_text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string(origin) + ": not valid JSON: " + e.what());
  }
}

// The profile a document describes. Errors carry no origin (the caller adds it).
Result<PolicyProfile> ParseProfileDoc(const json& doc);

// A sharing profile's base: `base` is a name or path (read now) or an embedded document; it may
// be of any kind but sharing.
Result<std::variant<PipelineConfig, RoundProfile>> ParseBase(const json& base) {
  json doc = base;
  std::string where = "base profile";
  if (base.is_string()) {
    // Read and checked before it is parsed, so a sharing profile naming itself is refused, not
    // recursed into.
    const std::string name = base.get<std::string>();
    where += " '" + name + "'";
    Result<ProfileSource> source = ReadProfileSource(name);
    if (!source.ok()) return source.status().WithPrefix(where);
    Result<json> parsed = ParseJsonText(source->text, source->origin);
    if (!parsed.ok()) return parsed.status().WithPrefix(where);
    doc = std::move(parsed).value();
  }
  if (IsSharingProfile(doc)) {
    return InvalidArgument(where + ": a sharing profile cannot be another's base");
  }
  Result<PolicyProfile> profile = ParseProfileDoc(doc);
  if (!profile.ok()) return profile.status().WithPrefix(where);
  using Base = std::variant<PipelineConfig, RoundProfile>;
  if (auto* pipeline = std::get_if<PipelineConfig>(&profile->kind)) {
    return Base(std::move(*pipeline));
  }
  return Base(std::move(std::get<RoundProfile>(profile->kind)));
}

Result<PolicyProfile> ParseProfileDoc(const json& doc) {
  if (!doc.is_object()) return InvalidArgument("a profile is a JSON object");
  PolicyProfile profile;
  if (IsSharingProfile(doc)) {
    DS_ASSIGN_OR_RETURN(SharingProfileDoc sharing, ParseSharingProfile(doc));
    DS_ASSIGN_OR_RETURN(auto base, ParseBase(sharing.base));
    profile.kind = SharingProfile{std::move(sharing.config), std::move(base)};
  } else if (IsRoundProfile(doc)) {
    DS_ASSIGN_OR_RETURN(profile.kind, ParseRoundProfile(doc));
  } else {
    DS_ASSIGN_OR_RETURN(profile.kind, ParsePipelineJson(doc));
  }
  return profile;
}

json BaseJson(const std::variant<PipelineConfig, RoundProfile>& base) {
  if (const auto* pipeline = std::get_if<PipelineConfig>(&base)) return PipelineJson(*pipeline);
  return RoundProfileJson(std::get<RoundProfile>(base));
}

Result<std::unique_ptr<SchedulingPolicy>> BuildBase(
    const std::variant<PipelineConfig, RoundProfile>& base) {
  if (const auto* pipeline = std::get_if<PipelineConfig>(&base)) {
    return BuildPipeline(*pipeline, InTreeRegistry());
  }
  return BuildRoundPolicy(std::get<RoundProfile>(base));
}

}  // namespace

const std::string& PolicyProfile::name() const {
  return std::visit(
      Overloaded{[](const PipelineConfig& p) -> const std::string& { return p.name; },
                 [](const RoundProfile& p) -> const std::string& { return p.options.name; },
                 [](const SharingProfile& p) -> const std::string& { return p.config.name; }},
      kind);
}

const std::string& PolicyProfile::description() const {
  return std::visit(
      Overloaded{
          [](const PipelineConfig& p) -> const std::string& { return p.description; },
          [](const RoundProfile& p) -> const std::string& { return p.options.description; },
          [](const SharingProfile& p) -> const std::string& { return p.config.description; }},
      kind);
}

Result<PolicyProfile> ParsePolicyProfile(std::string_view json_text, std::string_view origin) {
  DS_ASSIGN_OR_RETURN(const json doc, ParseJsonText(json_text, origin));
  Result<PolicyProfile> profile = ParseProfileDoc(doc);
  if (!profile.ok()) return profile.status().WithPrefix(origin);
  return profile;
}

Result<PolicyProfile> LoadPolicyProfile(std::string_view name_or_path) {
  DS_ASSIGN_OR_RETURN(ProfileSource source, ReadProfileSource(name_or_path));
  return ParsePolicyProfile(source.text, source.origin);
}

std::string PolicyProfileToJson(const PolicyProfile& profile) {
  return std::visit(Overloaded{[](const PipelineConfig& p) { return PipelineJson(p); },
                               [](const RoundProfile& p) { return RoundProfileJson(p); },
                               [](const SharingProfile& p) {
                                 return SharingProfileJson(p.config, BaseJson(p.base));
                               }},
                    profile.kind)
      .dump();
}

Status SetRoundLength(PolicyProfile& profile, Duration round) {
  RoundProfile* rounds = std::get_if<RoundProfile>(&profile.kind);
  if (auto* sharing = std::get_if<SharingProfile>(&profile.kind)) {
    rounds = std::get_if<RoundProfile>(&sharing->base);
  }
  if (rounds == nullptr) {
    return InvalidArgument("profile '" + profile.name() +
                           "' is not round-based (the hetero-* profiles are)");
  }
  if (round <= Duration(0)) return InvalidArgument("a round must be longer than 0 s");
  rounds->options.round = round;
  return Status::Ok();
}

Result<std::unique_ptr<SchedulingPolicy>> BuildPolicy(const PolicyProfile& profile) {
  Result<std::unique_ptr<SchedulingPolicy>> policy = std::visit(
      Overloaded{[](const PipelineConfig& p) { return BuildPipeline(p, InTreeRegistry()); },
                 [](const RoundProfile& p) { return BuildRoundPolicy(p); },
                 [](const SharingProfile& p) -> Result<std::unique_ptr<SchedulingPolicy>> {
                   Result<std::unique_ptr<SchedulingPolicy>> base = BuildBase(p.base);
                   if (!base.ok()) return base.status().WithPrefix("base profile");
                   return MakeSharingPolicy(p.config, std::move(base).value());
                 }},
      profile.kind);
  if (!policy.ok()) return policy.status().WithPrefix("profile '" + profile.name() + "'");
  return policy;
}

}  // namespace dlsched
