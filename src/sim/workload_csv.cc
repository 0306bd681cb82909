#include "sim/workload_csv.h"

namespace dlsched::sim::workload_internal {

Result<std::string> ReadTraceFile(const std::string& path) {
  FileText read = ReadFileText(path);
  switch (read.fault) {
    case FileFault::kNone:
      return std::move(read.text);
    case FileFault::kIsDirectory:
      return NotFound(path + ": is a directory, expected a file");
    case FileFault::kNotFound:
    case FileFault::kCannotOpen:
      return NotFound(path + ": cannot open file (missing or unreadable)");
    case FileFault::kReadFailed:
      return IoError(path + ": read failed");
    case FileFault::kTooLarge:
      return IoError(path + ": larger than " + std::to_string(kMaxWholeFileBytes) + " bytes");
  }
  return IoError(path + ": read failed");
}

namespace {

// Parses exactly `digits` decimal digits at text[pos...].
std::optional<int> FixedDigits(std::string_view text, size_t pos, size_t digits) {
  if (pos + digits > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = pos; i < pos + digits; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

std::optional<int64_t> ParseUtcDateTime(std::string_view text) {
  text = TrimField(text);
  // YYYY-MM-DD HH:MM:SS
  // 0123456789012345678
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != ' ' && text[10] != 'T') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const auto year = FixedDigits(text, 0, 4);
  const auto month = FixedDigits(text, 5, 2);
  const auto day = FixedDigits(text, 8, 2);
  const auto hour = FixedDigits(text, 11, 2);
  const auto minute = FixedDigits(text, 14, 2);
  const auto second = FixedDigits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > DaysInMonth(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 60) {  // 60: a leap second, counted as the next second
    return std::nullopt;
  }
  return DaysFromCivil(*year, *month, *day) * 86400 + *hour * 3600 + *minute * 60 + *second;
}

}  // namespace dlsched::sim::workload_internal
