#pragma once

#include <string_view>
#include <vector>

namespace dlsched {

// The measured-table readers' CSV helpers (no quoting: the tables have none).
// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view TrimCsvField(std::string_view s);
// The comma-separated fields of `line`, each trimmed.
std::vector<std::string_view> SplitCsvLine(std::string_view line);

}  // namespace dlsched
