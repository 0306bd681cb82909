#include "dlsched/policy/context.h"

#include <array>

namespace dlsched {

std::string_view PendingCauseName(PendingCause cause) {
  static constexpr std::array<std::string_view, kNumPendingCauses> kNames = {
      "other",         "gpus-busy",      "no-matching-gpus", "fragmentation",
      "consolidation", "lower-priority", "head-of-line",     "preempting",
      "quota",         "host-short",     "cpus-busy"};
  return kNames[static_cast<size_t>(cause)];
}

}  // namespace dlsched
