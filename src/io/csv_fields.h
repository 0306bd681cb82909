#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/text.h"

namespace dlsched {

// The measured-table readers' CSV helpers (no quoting: the tables have none).
// The comma-separated fields of `line`, each trimmed (TrimField).
std::vector<std::string_view> SplitCsvLine(std::string_view line);

// Calls `on_line(fields, line_number)` (SplitCsvLine's fields, 1-based line numbers) for each
// line of `text` that is not blank; stops at, and returns, the first error it returns.
template <typename OnLine>
Status ForEachCsvLine(std::string_view text, const OnLine& on_line) {
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = TrimField(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    DS_RETURN_IF_ERROR(on_line(SplitCsvLine(line), line_number));
  }
  return Status::Ok();
}

}  // namespace dlsched
