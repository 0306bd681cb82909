#include "io/hetero_profile.h"

#include <nlohmann/json.hpp>
#include <string>

#include "lp/lp_allocators.h"
#include "policy/hetero/round_policy.h"

namespace dlsched {

using nlohmann::json;

bool IsRoundProfile(const json& doc) { return doc.is_object() && doc.contains("allocator"); }

Result<hetero::Allocator> AllocatorByName(std::string_view name) {
  if (name == "max-min") return hetero::Allocator(hetero::AllocateMaxMin);
  if (name == "min-jct") return hetero::Allocator(hetero::AllocateMinJct);
  if (name == "greedy") return hetero::Allocator(hetero::AllocateGreedy);
  return InvalidArgument("unknown allocator '" + std::string(name) +
                         "' (known: max-min, min-jct, greedy)");
}

Result<std::unique_ptr<SchedulingPolicy>> BuildRoundPolicy(const json& doc) {
  hetero::RoundPolicyOptions options;
  hetero::Allocator allocator;
  for (const auto& [key, value] : doc.items()) {
    if (key == "name" && value.is_string()) {
      options.name = value.get<std::string>();
    } else if (key == "description" && value.is_string()) {
      options.description = value.get<std::string>();
    } else if (key == "allocator" && value.is_string()) {
      DS_ASSIGN_OR_RETURN(allocator, AllocatorByName(value.get<std::string>()));
    } else if (key == "round_s" && value.is_number() && value.get<double>() >= 1e-6 &&
               value.get<double>() <= kMaxInputSeconds) {
      options.round = Seconds(value.get<double>());
    } else if (key == "agnostic" && value.is_boolean()) {
      options.agnostic = value.get<bool>();
    } else {
      return InvalidArgument("unexpected key '" + key +
                             "' or a value of the wrong type in a round-based profile (see "
                             "docs/hetero.md)");
    }
  }
  if (options.name.empty()) return InvalidArgument("the profile has no \"name\"");
  if (!allocator) return InvalidArgument("the profile has no \"allocator\"");
  return std::unique_ptr<SchedulingPolicy>(
      std::make_unique<hetero::RoundPolicy>(std::move(options), std::move(allocator)));
}

}  // namespace dlsched
