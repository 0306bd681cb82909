#include "io/hetero_profile.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "lp/finish_time_fairness.h"
#include "lp/lp_allocators.h"

namespace dlsched {

using nlohmann::json;

bool IsRoundProfile(const json& doc) { return doc.is_object() && doc.contains("allocator"); }

Result<hetero::Allocator> AllocatorByName(std::string_view name) {
  if (name == "max-min") return hetero::MaxMinAllocator();
  if (name == "max-min-glpk") return hetero::MaxMinAllocator(hetero::MaxMinSolver::kAutoGlpk);
  if (name == "min-jct") return hetero::Allocator(hetero::AllocateMinJct);
  if (name == "greedy") return hetero::Allocator(hetero::AllocateGreedy);
  if (name == "finish-time-fairness") {
    return hetero::Allocator(hetero::AllocateFinishTimeFairness);
  }
  if (name == "finish-time-fairness-minmax") {
    return hetero::Allocator(hetero::AllocateFinishTimeFairnessMinMax);
  }
  if (name == "max-min-one-stage") return hetero::Allocator(hetero::AllocateMaxMinOneStage);
  if (name == "finish-time-fairness-centre") {
    return hetero::Allocator(hetero::AllocateFinishTimeFairnessCentre);
  }
  if (name == "max-min-gavel") return hetero::Allocator(hetero::AllocateMaxMinGavel);
  if (name == "max-min-one-stage-centre") {
    return hetero::Allocator(hetero::AllocateMaxMinOneStageCentre);
  }
  return InvalidArgument(
      "unknown allocator '" + std::string(name) +
      "' (known: max-min, max-min-glpk, min-jct, greedy, finish-time-fairness, finish-time-fairness-minmax, "
      "max-min-one-stage, finish-time-fairness-centre, max-min-one-stage-centre, max-min-gavel)");
}

// The most coalesce_above_jobs a profile may ask for (more active jobs than any cluster holds).
constexpr uint64_t kMaxCoalesceAboveJobs = 100'000'000;

// The names of RoundPolicyOptions::TypeWalk in profiles.
constexpr std::pair<std::string_view, hetero::RoundPolicyOptions::TypeWalk> kTypeWalks[] = {
    {"ranked", hetero::RoundPolicyOptions::TypeWalk::kRanked},
    {"type-order", hetero::RoundPolicyOptions::TypeWalk::kTypeOrder},
    {"shuffled", hetero::RoundPolicyOptions::TypeWalk::kShuffled}};

std::optional<hetero::RoundPolicyOptions::TypeWalk> TypeWalkByName(std::string_view name) {
  for (const auto& [known, walk] : kTypeWalks) {
    if (known == name) return walk;
  }
  return std::nullopt;
}

Result<RoundProfile> ParseRoundProfile(const json& doc) {
  RoundProfile profile;
  hetero::RoundPolicyOptions& options = profile.options;
  for (const auto& [key, value] : doc.items()) {
    if (key == "name" && value.is_string()) {
      options.name = value.get<std::string>();
    } else if (key == "description" && value.is_string()) {
      options.description = value.get<std::string>();
    } else if (key == "allocator" && value.is_string()) {
      profile.allocator = value.get<std::string>();
      DS_RETURN_IF_ERROR(AllocatorByName(profile.allocator).status());
    } else if (key == "round_s" && value.is_number() && value.get<double>() >= 1e-6 &&
               value.get<double>() <= kMaxInputSeconds) {
      options.round = Seconds(value.get<double>());
    } else if (key == "realloc_interval_s" && value.is_number() && value.get<double>() >= 0 &&
               value.get<double>() <= kMaxInputSeconds) {
      options.realloc_interval = Seconds(value.get<double>());
    } else if (key == "coalesce_above_jobs" && value.is_number_unsigned() &&
               value.get<uint64_t>() <= kMaxCoalesceAboveJobs) {
      options.coalesce_above_jobs = static_cast<int>(value.get<uint64_t>());
    } else if (key == "coalesce_fraction" && value.is_number() && value.get<double>() > 0 &&
               value.get<double>() <= 1) {
      options.coalesce_fraction = value.get<double>();
    } else if (key == "backfill_between_rounds" && value.is_boolean()) {
      options.backfill_between_rounds = value.get<bool>();
    } else if (key == "reset_counts_at_allocation" && value.is_boolean()) {
      options.reset_counts_at_allocation = value.get<bool>();
    } else if (key == "initial_rounds_received" && value.is_number() && value.get<double>() >= 0 &&
               value.get<double>() <= 1e6) {
      options.initial_rounds_received = value.get<double>();
    } else if (key == "deficit_ties" && value.is_boolean()) {
      options.deficit_ties = value.get<bool>();
    } else if (key == "zero_entries" && value.is_boolean()) {
      options.zero_entries = value.get<bool>();
    } else if (key == "spread_tied_types" && value.is_boolean()) {
      options.spread_tied_types = value.get<bool>();
    } else if (key == "agnostic" && value.is_boolean()) {
      options.agnostic = value.get<bool>();
    } else if (key == "type_walk" && value.is_string() &&
               TypeWalkByName(value.get<std::string>())) {
      options.type_walk = *TypeWalkByName(value.get<std::string>());
    } else {
      return InvalidArgument("unexpected key '" + key +
                             "' or a value of the wrong type in a round-based profile (see "
                             "docs/hetero.md)");
    }
  }
  if (options.name.empty()) return InvalidArgument("the profile has no \"name\"");
  if (profile.allocator.empty()) return InvalidArgument("the profile has no \"allocator\"");
  return profile;
}

json RoundProfileJson(const RoundProfile& profile) {
  json doc = {{"name", profile.options.name},
              {"description", profile.options.description},
              {"allocator", profile.allocator},
              {"round_s", ToSeconds(profile.options.round)},
              {"agnostic", profile.options.agnostic}};
  // Only when set, so profiles without it print as before.
  if (profile.options.realloc_interval > Duration::zero()) {
    doc["realloc_interval_s"] = ToSeconds(profile.options.realloc_interval);
  }
  if (profile.options.coalesce_above_jobs > 0) {
    doc["coalesce_above_jobs"] = profile.options.coalesce_above_jobs;
    doc["coalesce_fraction"] = profile.options.coalesce_fraction;
  }
  if (!profile.options.backfill_between_rounds) doc["backfill_between_rounds"] = false;
  if (profile.options.reset_counts_at_allocation) doc["reset_counts_at_allocation"] = true;
  if (profile.options.spread_tied_types) doc["spread_tied_types"] = true;
  if (profile.options.deficit_ties) doc["deficit_ties"] = true;
  if (profile.options.zero_entries) doc["zero_entries"] = true;
  if (profile.options.initial_rounds_received > 0) {
    doc["initial_rounds_received"] = profile.options.initial_rounds_received;
  }
  if (profile.options.type_walk != hetero::RoundPolicyOptions::TypeWalk::kRanked) {
    for (const auto& [name, walk] : kTypeWalks) {
      if (walk == profile.options.type_walk) doc["type_walk"] = std::string(name);
    }
  }
  return doc;
}

Result<std::unique_ptr<SchedulingPolicy>> BuildRoundPolicy(const RoundProfile& profile) {
  DS_ASSIGN_OR_RETURN(hetero::Allocator allocator, AllocatorByName(profile.allocator));
  return std::unique_ptr<SchedulingPolicy>(
      std::make_unique<hetero::RoundPolicy>(profile.options, std::move(allocator)));
}

}  // namespace dlsched
