#include "io/profile.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dlsched {
namespace {

using nlohmann::json;

// JSON scalars become their text; arrays of scalars become comma-separated text.
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
  return InvalidArgument("argument '" + key + "' must be a scalar or an array");
}

Result<PluginConfig> ParsePlugin(const json& entry, const std::string& where) {
  PluginConfig config;
  if (entry.is_string()) {
    config.name = entry.get<std::string>();
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

Result<PipelineConfig> ParseProfileJson(const json& doc) {
  if (!doc.is_object()) return InvalidArgument("a profile is a JSON object");
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
    } else if (key == "starvation_limit_s" && value.is_number() && value.get<double>() > 0) {
      config.starvation_limit = Seconds(value.get<double>());
    } else if (key == "reject_late_strict" && value.is_boolean()) {
      config.reject_late_strict = value.get<bool>();
    } else if (key == "starvation_guard" && value.is_string() &&
               (value.get<std::string>() == "all" || value.get<std::string>() == "no-deadline")) {
      config.starvation_guard_no_deadline_only = value.get<std::string>() == "no-deadline";
    } else if (key == "late_jobs_last" && value.is_boolean()) {
      config.late_jobs_last = value.get<bool>();
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

Result<PipelineConfig> LoadProfile(std::string_view name_or_path) {
  for (const auto& [name, text] : BuiltinProfiles()) {
    if (name == name_or_path)
      return ParseProfile(text, "builtin profile '" + std::string(name) + "'");
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
  std::ifstream in(path);
  if (!in) return NotFound("cannot open profile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseProfile(text.str(), path);
}

Result<std::unique_ptr<SchedulingPolicy>> LoadPolicy(std::string_view name_or_path) {
  DS_ASSIGN_OR_RETURN(PipelineConfig profile, LoadProfile(name_or_path));
  return BuildPipeline(profile, InTreeRegistry());
}

}  // namespace dlsched
