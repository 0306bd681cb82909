#include "daemon/core/oom_watchdog.h"

namespace dlsched::daemon {

std::optional<int64_t> GpuMemoryLimitMib(const Job& job) {
  if (job.spec.memory_mib <= 0) return std::nullopt;
  return job.spec.memory_mib;
}

std::vector<OomVerdict> OomWatchdog::Check(
    std::span<const JobGpuObservation> observations,
    const std::function<std::optional<int64_t>(JobId)>& limit_of) {
  std::vector<OomVerdict> verdicts;
  std::map<JobId, int> streaks;  // only the jobs over their limit in this sample keep one
  if (options_.samples <= 0) return verdicts;
  for (const JobGpuObservation& o : observations) {
    const std::optional<int64_t> limit = limit_of(o.job);
    if (!limit || o.memory_mib <= *limit + options_.slack_mib) continue;
    const auto it = streaks_.find(o.job);
    const int streak = (it == streaks_.end() ? 0 : it->second) + 1;
    if (streak < options_.samples) {
      streaks.emplace(o.job, streak);
      continue;
    }
    verdicts.push_back({o.job, std::string(kOutOfMemoryReason) + "held " +
                                   std::to_string(o.memory_mib) + " MiB of GPU memory, over its " +
                                   std::to_string(*limit) + " MiB limit (+" +
                                   std::to_string(options_.slack_mib) + " MiB slack) in " +
                                   std::to_string(streak) + " samples in a row"});
  }
  streaks_ = std::move(streaks);
  return verdicts;
}

std::optional<std::string_view> FindCudaOutOfMemory(std::string_view log_tail) {
  for (std::string_view pattern : kCudaOutOfMemoryPatterns) {
    if (log_tail.find(pattern) != std::string_view::npos) return pattern;
  }
  return std::nullopt;
}

}  // namespace dlsched::daemon
