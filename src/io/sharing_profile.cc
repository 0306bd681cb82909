#include "io/sharing_profile.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace dlsched {

using nlohmann::json;

namespace {

Status BadKey(const std::string& where, const std::string& key) {
  return InvalidArgument("unexpected key '" + key + "' or a value of the wrong type in " + where +
                         " (see docs/sharing.md)");
}

Status ParseMigration(const json& doc, SharingPolicyConfig& config) {
  if (!doc.is_object()) return InvalidArgument("\"migration\" must be an object");
  for (const auto& [key, value] : doc.items()) {
    if (key == "enabled" && value.is_boolean()) {
      config.migrate = value.get<bool>();
    } else if (key == "max_per_job" && value.is_number_integer()) {
      config.max_migrations_per_job = value.get<int>();
    } else if (key == "min_residence_s" && value.is_number() &&
               std::abs(value.get<double>()) <= kMaxInputSeconds) {
      config.min_residence = Seconds(value.get<double>());
    } else if (key == "min_slowdown" && value.is_number()) {
      config.min_slowdown_to_migrate = value.get<double>();
    } else {
      return BadKey("\"migration\"", key);
    }
  }
  return Status::Ok();
}

Status ParseShare(const json& doc, SharingPolicyConfig& config) {
  if (!doc.is_object()) return InvalidArgument("\"share\" must be an object");
  for (const auto& [key, value] : doc.items()) {
    if (key == "packer" && value.is_string()) {
      const std::string packer = value.get<std::string>();
      if (packer == "greedy") {
        config.packer = SharingPolicyConfig::Packer::kGreedy;
      } else if (packer == "heuristic") {
        config.packer = SharingPolicyConfig::Packer::kHeuristic;
      } else {
        return InvalidArgument("unknown packer '" + packer + "' (known: greedy, heuristic)");
      }
    } else if (key == "mode" && value.is_string()) {
      const std::string mode = value.get<std::string>();
      if (mode == "packed") {
        config.mode = ShareMode::kPacked;
      } else if (mode == "time-sliced") {
        config.mode = ShareMode::kTimeSliced;
      } else {
        return InvalidArgument("unknown mode '" + mode + "' (known: packed, time-sliced)");
      }
    } else if (key == "interference_aware" && value.is_boolean()) {
      config.interference_aware = value.get<bool>();
    } else if (key == "max_jobs_per_gpu" && value.is_number_integer()) {
      config.max_jobs_per_gpu = value.get<int>();
    } else if (key == "memory_percentile" && value.is_number()) {
      config.memory_percentile = value.get<double>();
    } else if (key == "max_slowdown" && value.is_number()) {
      config.max_slowdown = value.get<double>();
    } else if (key == "max_candidates" && value.is_number_integer()) {
      config.max_candidates = value.get<int>();
    } else if (key == "migration") {
      DS_RETURN_IF_ERROR(ParseMigration(value, config));
    } else {
      return BadKey("\"share\"", key);
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsSharingProfile(const json& doc) { return doc.is_object() && doc.contains("share"); }

Result<SharingProfileDoc> ParseSharingProfile(const json& doc) {
  SharingProfileDoc profile;
  for (const auto& [key, value] : doc.items()) {
    if (key == "name" && value.is_string()) {
      profile.config.name = value.get<std::string>();
    } else if (key == "description" && value.is_string()) {
      profile.config.description = value.get<std::string>();
    } else if (key == "base" &&
               ((value.is_string() && !value.get<std::string>().empty()) || value.is_object())) {
      profile.base = value;
    } else if (key == "share") {
      DS_RETURN_IF_ERROR(ParseShare(value, profile.config));
    } else {
      return BadKey("a sharing profile", key);
    }
  }
  if (profile.config.name.empty()) return InvalidArgument("the profile has no \"name\"");
  if (profile.base.is_null()) return InvalidArgument("the profile has no \"base\"");
  DS_RETURN_IF_ERROR(ValidateSharingPolicyConfig(profile.config));
  return profile;
}

json SharingProfileJson(const SharingPolicyConfig& config, json base) {
  const bool greedy = config.packer == SharingPolicyConfig::Packer::kGreedy;
  const bool packed = config.mode == ShareMode::kPacked;
  return {{"name", config.name},
          {"description", config.description},
          {"base", std::move(base)},
          {"share",
           {{"packer", greedy ? "greedy" : "heuristic"},
            {"mode", packed ? "packed" : "time-sliced"},
            {"interference_aware", config.interference_aware},
            {"max_jobs_per_gpu", config.max_jobs_per_gpu},
            {"memory_percentile", config.memory_percentile},
            {"max_slowdown", config.max_slowdown},
            {"max_candidates", config.max_candidates},
            {"migration",
             {{"enabled", config.migrate},
              {"max_per_job", config.max_migrations_per_job},
              {"min_residence_s", ToSeconds(config.min_residence)},
              {"min_slowdown", config.min_slowdown_to_migrate}}}}}};
}

}  // namespace dlsched
