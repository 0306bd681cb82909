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

bool LineCursor::Next(std::string_view& line) {
  if (done_) return false;
  const size_t end = rest_.find('\n');
  if (end == std::string_view::npos) {
    done_ = true;
    // A trailing newline leaves an empty remainder, which is not a line.
    if (rest_.empty()) return false;
    line = rest_;
    rest_ = {};
  } else {
    line = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  return true;
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

CsvHeader::CsvHeader(std::string_view line, char sep) {
  std::vector<std::string_view> fields;
  SplitInto(line, sep, fields);
  names_.reserve(fields.size());
  for (std::string_view field : fields) names_.emplace_back(TrimField(field));
}

int CsvHeader::Find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Status RowErrors::Bad(int line, std::string_view what) {
  if (skip_) {
    ++skipped_;
    return Status::Ok();
  }
  return Fatal(line, what);
}

Status RowErrors::Fatal(int line, std::string_view what) const {
  return InvalidArgument(path_ + ":" + std::to_string(line) + ": " + std::string(what));
}

Result<CsvHeader> ReadHeader(LineCursor& cursor, const RowErrors& errors, char sep) {
  std::string_view line;
  while (cursor.Next(line)) {
    if (!IsBlank(line)) return CsvHeader(line, sep);
  }
  return errors.Fatal(1, "empty file: expected a header line");
}

}  // namespace dlsched::sim::workload_internal
