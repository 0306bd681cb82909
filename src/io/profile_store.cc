#include "io/profile_store.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "dlsched/common/text.h"

namespace dlsched {
namespace {

using Json = nlohmann::json;

std::string Quote(std::string_view s) { return Json(std::string(s)).dump(); }

Status CheckKeys(const Json& object, const std::set<std::string_view>& allowed,
                 std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    if (!allowed.contains(key)) {
      return InvalidArgument(fmt::format("{}: unknown key \"{}\"", where, key));
    }
  }
  return Status::Ok();
}

Result<std::string> GetString(const Json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must be a string", where, key));
  }
  return it->get<std::string>();
}

Result<int> GetInt(const Json& object, const char* key, std::string_view where,
                   std::optional<int> default_value) {
  const auto it = object.find(key);
  if (it == object.end() && default_value.has_value()) return *default_value;
  if (it == object.end() || !it->is_number_integer()) {
    return InvalidArgument(fmt::format("{}: \"{}\" must be an integer", where, key));
  }
  return it->get<int>();
}

Result<PerfProfile> ParseEntry(const Json& entry, std::string_view where) {
  if (!entry.is_object()) return InvalidArgument(fmt::format("{}: expected an object", where));
  DS_RETURN_IF_ERROR(CheckKeys(entry,
                               {"source", "model", "batch_size", "gpu_type", "num_gpus",
                                "consolidated", "iters_per_s", "colocated_with"},
                               where));
  PerfProfile p;
  DS_ASSIGN_OR_RETURN(p.source, GetString(entry, "source", where));
  DS_ASSIGN_OR_RETURN(p.model, GetString(entry, "model", where));
  DS_ASSIGN_OR_RETURN(p.batch_size, GetInt(entry, "batch_size", where, 0));
  DS_ASSIGN_OR_RETURN(p.gpu_type, GetString(entry, "gpu_type", where));
  DS_ASSIGN_OR_RETURN(p.num_gpus, GetInt(entry, "num_gpus", where, std::nullopt));
  if (const auto it = entry.find("consolidated"); it != entry.end()) {
    if (!it->is_boolean()) {
      return InvalidArgument(fmt::format("{}: \"consolidated\" must be true or false", where));
    }
    p.consolidated = it->get<bool>();
  }
  const auto rate = entry.find("iters_per_s");
  if (rate == entry.end() || !rate->is_number()) {
    return InvalidArgument(fmt::format("{}: \"iters_per_s\" must be a number", where));
  }
  p.iters_per_s = rate->get<double>();
  if (const auto it = entry.find("colocated_with"); it != entry.end()) {
    const std::string inner = fmt::format("{}, colocated_with", where);
    if (!it->is_object()) return InvalidArgument(inner + ": expected an object");
    DS_RETURN_IF_ERROR(CheckKeys(*it, {"model", "batch_size"}, inner));
    PerfJobType other;
    DS_ASSIGN_OR_RETURN(other.model, GetString(*it, "model", inner));
    DS_ASSIGN_OR_RETURN(other.batch_size, GetInt(*it, "batch_size", inner, 0));
    p.colocated_with = std::move(other);
  }
  DS_RETURN_IF_ERROR(ValidatePerfProfile(p).WithPrefix(where));
  return p;
}

}  // namespace

void WriteProfileStore(const ProfileStore& store, std::ostream& out) {
  out << "{\"format\": " << Quote(kProfileStoreFormat) << ", \"version\": " << kProfileStoreVersion
      << ",\n \"about\": {";
  bool first = true;
  for (const auto& [key, value] : store.about) {
    out << (first ? "" : ", ") << Quote(key) << ": " << Quote(value);
    first = false;
  }
  out << "},\n \"profiles\": [";
  for (size_t i = 0; i < store.profiles.size(); ++i) {
    const PerfProfile& p = store.profiles[i];
    out << (i == 0 ? "\n  " : ",\n  ")
        << fmt::format(
               "{{\"source\": {}, \"model\": {}, \"batch_size\": {}, \"gpu_type\": {}, "
               "\"num_gpus\": {}, \"consolidated\": {}, \"iters_per_s\": {}",
               Quote(p.source), Quote(p.model), p.batch_size, Quote(p.gpu_type), p.num_gpus,
               p.consolidated, p.iters_per_s);
    if (p.colocated_with.has_value()) {
      out << fmt::format(", \"colocated_with\": {{\"model\": {}, \"batch_size\": {}}}",
                         Quote(p.colocated_with->model), p.colocated_with->batch_size);
    }
    out << "}";
  }
  out << "\n ]}\n";
}

Result<ProfileStore> ParseProfileStore(std::string_view json_text, std::string_view origin) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return InvalidArgument(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!root.is_object()) return InvalidArgument(fmt::format("{}: expected an object", origin));
  DS_RETURN_IF_ERROR(CheckKeys(root, {"format", "version", "about", "profiles"}, origin));
  const auto format = root.find("format");
  if (format == root.end() || *format != kProfileStoreFormat) {
    return InvalidArgument(fmt::format("{}: \"format\" must be \"{}\" (not a profile store?)",
                                       origin, kProfileStoreFormat));
  }
  const auto version = root.find("version");
  if (version == root.end() || *version != kProfileStoreVersion) {
    return InvalidArgument(fmt::format("{}: unsupported \"version\" (this build reads {})", origin,
                                       kProfileStoreVersion));
  }
  ProfileStore store;
  if (const auto about = root.find("about"); about != root.end()) {
    if (!about->is_object())
      return InvalidArgument(fmt::format("{}: \"about\" must be an object", origin));
    for (const auto& [key, value] : about->items()) {
      if (!value.is_string()) {
        return InvalidArgument(fmt::format("{}: about \"{}\" must be a string", origin, key));
      }
      store.about[key] = value.get<std::string>();
    }
  }
  const auto profiles = root.find("profiles");
  if (profiles == root.end() || !profiles->is_array()) {
    return InvalidArgument(fmt::format("{}: \"profiles\" must be an array", origin));
  }
  store.profiles.reserve(profiles->size());
  for (size_t i = 0; i < profiles->size(); ++i) {
    DS_ASSIGN_OR_RETURN(PerfProfile p,
                        ParseEntry((*profiles)[i], fmt::format("{}: profile {}", origin, i)));
    store.profiles.push_back(std::move(p));
  }
  return store;
}

Result<ProfileStore> LoadProfileStore(const std::string& path) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path, "profile store"));
  return ParseProfileStore(text, path);
}

Result<PerfPredictor> FitProfileStore(const std::string& path) {
  DS_ASSIGN_OR_RETURN(const ProfileStore store, LoadProfileStore(path));
  Result<PerfPredictor> fitted =
      PerfPredictor::Fit(store.profiles, std::make_shared<const SimpleThroughputModel>());
  if (!fitted.ok()) return fitted.status().WithPrefix(path);
  return fitted;
}

}  // namespace dlsched
