#pragma once

#include <string_view>

namespace dlsched {

// The release of dlsched, printed by `dlsched --version` and recorded in results.
inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace dlsched
