#pragma once

// Small, allocation-light text helpers shared by the workload readers: whole-file reads, line
// iteration, field splitting and strict number parsing. Internal to src/sim; not a general CSV
// library (no quoting: none of the supported formats quotes fields).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched::sim::workload_internal {

// Reads the whole file at `path` in one go. NotFound when it cannot be opened (or is a
// directory), IoError when reading fails.
Result<std::string> ReadWholeFile(const std::string& path);

// Walks the lines of a text buffer. Strips one trailing '\r' per line (CRLF files). Line numbers
// are 1-based and count every line, blank ones included, so they match an editor's.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}

  // Stores the next line (without its terminator) in `line`; false at the end of the text. A
  // final line without a trailing newline is still returned.
  bool Next(std::string_view& line);
  // The 1-based number of the line last returned by Next (0 before the first call).
  int line_number() const { return line_number_; }

 private:
  std::string_view rest_;
  int line_number_ = 0;
  bool done_ = false;
};

// Splits `line` at every `sep` into `out` (cleared first). "a,,b" gives three fields, the middle
// one empty; an empty line gives one empty field. The views point into `line`.
void SplitFields(std::string_view line, char sep, std::vector<std::string_view>& out);

// `text` without leading and trailing spaces and tabs.
std::string_view TrimSpace(std::string_view text);

// True when `line` holds nothing but spaces, tabs (and a stray '\r').
bool IsBlank(std::string_view line);

// Strict parsers: the whole (space-trimmed) field must be the number; no '+' sign, no empty
// field. Return nullopt otherwise or on overflow.
std::optional<int64_t> ParseInt(std::string_view field);
// Accepts decimal and exponent forms ("12", "1.5", "2e3"); rejects inf and nan.
std::optional<double> ParseFiniteDouble(std::string_view field);

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (negative before it). Valid for any
// year an int64 second count can hold; m in [1, 12], d in [1, 31] (not checked here).
// H. Hinnant's days_from_civil algorithm.
int64_t DaysFromCivil(int64_t y, int m, int d);

// Parses "YYYY-MM-DD HH:MM:SS" (exactly that layout; 'T' also accepted as the separator) as
// UTC and returns seconds since the Unix epoch. Checks field ranges, including the day against
// the month's length in that year. No time zones, no fractional seconds.
std::optional<int64_t> ParseUtcDateTime(std::string_view text);

// Maps the column names of a header line to their positions. Names are space-trimmed.
class CsvHeader {
 public:
  CsvHeader(std::string_view line, char sep);

  // The 0-based position of `name`, or -1 when absent.
  int Find(std::string_view name) const;
  size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Bookkeeping for bad rows: either fails with "<path>:<line>: <what>" or, when skipping, counts
// the row and lets the reader continue.
class RowErrors {
 public:
  RowErrors(std::string path, bool skip_bad_rows) : path_(std::move(path)), skip_(skip_bad_rows) {}

  // OK (and one more skipped row) when skipping bad rows; otherwise the InvalidArgument to
  // return. Use as: `DS_RETURN_IF_ERROR(errors.Bad(line, "...")); continue;`.
  Status Bad(int line, std::string_view what);
  // An error that no option skips (a bad header, a missing column): always InvalidArgument.
  Status Fatal(int line, std::string_view what) const;
  int skipped() const { return skipped_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool skip_;
  int skipped_ = 0;
};

// Reads the first non-blank line as the header. Fails on an empty file.
Result<CsvHeader> ReadHeader(LineCursor& cursor, const RowErrors& errors, char sep);

// Positions of `names` in `header`; fails naming the first missing one.
template <size_t N>
Result<std::array<int, N>> RequireColumns(const CsvHeader& header,
                                          const std::array<std::string_view, N>& names,
                                          const RowErrors& errors, int header_line) {
  std::array<int, N> positions{};
  for (size_t i = 0; i < N; ++i) {
    positions[i] = header.Find(names[i]);
    if (positions[i] < 0) {
      return errors.Fatal(header_line, "missing column '" + std::string(names[i]) + "'");
    }
  }
  return positions;
}

}  // namespace dlsched::sim::workload_internal
