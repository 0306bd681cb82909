#include "dlsched/common/text.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace dlsched {

std::string_view TrimLeft(std::string_view text, std::string_view chars) {
  const size_t first = text.find_first_not_of(chars);
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

std::string_view TrimRight(std::string_view text, std::string_view chars) {
  const size_t last = text.find_last_not_of(chars);
  return last == std::string_view::npos ? std::string_view() : text.substr(0, last + 1);
}

std::string_view Trim(std::string_view text, std::string_view chars) {
  return TrimRight(TrimLeft(text, chars), chars);
}

std::string_view TrimField(std::string_view text) {
  return TrimRight(TrimLeft(text, " \t"), " \t\r");
}

bool IsBlank(std::string_view line) { return TrimField(line).empty(); }

void SplitInto(std::string_view text, char sep, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(text.substr(start));
      return;
    }
    out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  SplitInto(text, sep, out);
  return out;
}

std::vector<std::string> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::string_view piece : Split(text, sep)) {
    if (!piece.empty()) out.emplace_back(piece);
  }
  return out;
}

std::optional<double> ParseFiniteDouble(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return std::nullopt;
  }
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

bool IsLeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

FileText ReadFileText(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) return {{}, FileFault::kNotFound};
  if (std::filesystem::is_directory(status)) return {{}, FileFault::kIsDirectory};
  // stdio rather than iostreams: one fread per 64 KiB is the fastest portable read.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return {{}, FileFault::kCannotOpen};
  FileText out;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes) {
    std::fclose(file);
    return {{}, FileFault::kTooLarge};
  }
  if (!ec) out.text.reserve(static_cast<size_t>(size));
  char buffer[1 << 16];
  size_t n = 0;
  // The size check above does not cover files that grow, or report no size (pipes, /proc).
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    if (n > max_bytes - out.text.size()) {
      out = {{}, FileFault::kTooLarge};
      break;
    }
    out.text.append(buffer, n);
  }
  if (out.fault == FileFault::kNone && std::ferror(file) != 0) out = {{}, FileFault::kReadFailed};
  std::fclose(file);
  return out;
}

Result<std::string> ReadWholeFile(const std::string& path, std::string_view what,
                                  size_t max_bytes) {
  const std::string named = what.empty() ? path : std::string(what) + " " + path;
  FileText read = ReadFileText(path, max_bytes);
  switch (read.fault) {
    case FileFault::kNone:
      return std::move(read.text);
    case FileFault::kNotFound:
      return NotFound(named + " not found");
    case FileFault::kCannotOpen:
      return IoError("cannot open " + named);
    case FileFault::kIsDirectory:
    case FileFault::kReadFailed:
      return IoError("cannot read " + named);
    case FileFault::kTooLarge:
      return IoError(named + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  return IoError("cannot read " + named);
}

}  // namespace dlsched
