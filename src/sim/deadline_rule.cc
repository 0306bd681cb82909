#include "sim/deadline_rule.h"

#include <algorithm>
#include <string>

#include "dlsched/common/rng.h"
#include "dlsched/common/text.h"

namespace dlsched::sim {
namespace {

constexpr std::string_view kKeys = "slack, strict, soft, seed";

Status BadValue(std::string_view key, std::string_view value, std::string_view want) {
  return InvalidArgument("deadline rule " + std::string(key) + "=" + std::string(value) +
                         ": want " + std::string(want));
}

std::optional<double> Share(std::string_view value) {
  const auto v = ParseFiniteDouble(TrimField(value));
  return v && *v >= 0 && *v <= 1 ? v : std::nullopt;
}

}  // namespace

Result<DeadlineRule> ParseDeadlineRule(std::string_view text) {
  DeadlineRule rule;
  std::vector<std::string_view> items;
  SplitInto(text, ',', items);
  for (std::string_view item : items) {
    if (TrimField(item).empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("deadline rule item '" + std::string(item) +
                             "': want key=value (keys: " + std::string(kKeys) + ")");
    }
    const std::string_view key = TrimField(item.substr(0, eq));
    const std::string_view value = TrimField(item.substr(eq + 1));
    if (key == "slack") {
      const size_t colon = value.find(':');
      const auto lo = ParseFiniteDouble(TrimField(value.substr(0, colon)));
      const auto hi = colon == std::string_view::npos
                          ? lo
                          : ParseFiniteDouble(TrimField(value.substr(colon + 1)));
      if (!lo || !hi || *lo <= 0 || *hi < *lo) {
        return BadValue(key, value, "LO:HI or one factor, 0 < LO <= HI");
      }
      rule.slack_lo = *lo;
      rule.slack_hi = *hi;
    } else if (key == "strict" || key == "soft") {
      const auto v = Share(value);
      if (!v) return BadValue(key, value, "a share in [0, 1]");
      (key == "strict" ? rule.strict : rule.soft) = *v;
    } else if (key == "seed") {
      const auto v = ParseInt(value);
      if (!v || *v < 0) return BadValue(key, value, "an integer >= 0");
      rule.seed = static_cast<uint64_t>(*v);
    } else {
      return InvalidArgument("unknown deadline rule key '" + std::string(key) +
                             "' (keys: " + std::string(kKeys) + ")");
    }
  }
  if (rule.strict + rule.soft > 1 + 1e-12) {
    return InvalidArgument("deadline rule: strict + soft must be at most 1");
  }
  return rule;
}

int ApplyDeadlineRule(const DeadlineRule& rule, std::vector<JobSpec>& jobs) {
  int given = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobSpec& job = jobs[i];
    if (job.deadline || job.is_service()) continue;
    Rng rng(rule.seed ^ (0xD1B54A32D192ED03ull * (i + 1)));
    const double draw = rng.Uniform();
    const double slack = rng.Uniform(rule.slack_lo, rule.slack_hi);
    if (draw >= rule.strict + rule.soft) continue;  // best-effort
    job.qos = draw < rule.strict ? QosClass::kStrict : QosClass::kSoft;
    job.deadline = job.submit_time + Seconds(ToSeconds(job.ideal_duration()) * slack);
    ++given;
  }
  return given;
}

}  // namespace dlsched::sim
