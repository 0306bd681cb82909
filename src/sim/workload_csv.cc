#include "sim/workload_csv.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace dlsched::sim::workload_internal {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return NotFound(path + ": is a directory, expected a file");
  }
  // stdio rather than iostreams: one fread of the whole file is the fastest portable read.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return NotFound(path + ": cannot open file (missing or unreadable)");
  std::string text;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) text.reserve(static_cast<size_t>(size));
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return IoError(path + ": read failed");
  return text;
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

void SplitFields(std::string_view line, char sep, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    const size_t pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view TrimSpace(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

bool IsBlank(std::string_view line) { return TrimSpace(line).empty(); }

std::optional<int64_t> ParseInt(std::string_view field) {
  field = TrimSpace(field);
  if (field.empty()) return std::nullopt;
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || ptr != field.data() + field.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseFiniteDouble(std::string_view field) {
  field = TrimSpace(field);
  if (field.empty()) return std::nullopt;
  // from_chars accepts "inf"/"nan" spellings; a number starts with a digit, '-' or '.'.
  const char c = field.front();
  if (!(c == '-' || c == '.' || (c >= '0' && c <= '9'))) return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || ptr != field.data() + field.size()) return std::nullopt;
  if (value - value != 0) return std::nullopt;  // inf or nan
  return value;
}

int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                    // [0, 399]
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;            // [0, 146096]
  return era * 146097 + doe - 719468;
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

bool IsLeapYear(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

}  // namespace

std::optional<int64_t> ParseUtcDateTime(std::string_view text) {
  text = TrimSpace(text);
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
  SplitFields(line, sep, fields);
  names_.reserve(fields.size());
  for (std::string_view field : fields) names_.emplace_back(TrimSpace(field));
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
