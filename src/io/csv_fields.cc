#include "io/csv_fields.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlsched {

Result<std::string> ReadTableFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFound(fmt::format("{} not found", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(fmt::format("cannot open {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return IoError(fmt::format("cannot read {}", path));
  return text.str();
}

std::string_view TrimCsvField(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> SplitCsvLine(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(TrimCsvField(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

}  // namespace dlsched
