#pragma once

// The one set of small text helpers every layer uses: trimming, splitting, strict number parsing,
// civil dates and whole-file reads. Standard library only (the core may use it). None of it knows
// a file format; the CSV reader (io/csv_reader.h) builds on it.

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched {

// What std::isspace accepts in the "C" locale.
inline constexpr std::string_view kAsciiSpace = " \t\n\v\f\r";

// `text` without any of the characters in `chars` at its start (TrimLeft), its end (TrimRight)
// or both ends (Trim). The result is a view into `text`.
std::string_view TrimLeft(std::string_view text, std::string_view chars);
std::string_view TrimRight(std::string_view text, std::string_view chars);
std::string_view Trim(std::string_view text, std::string_view chars = kAsciiSpace);

// A field of a line-oriented table: without spaces and tabs at both ends, and without the stray
// '\r' of a CRLF line at its end.
std::string_view TrimField(std::string_view text);
// True when `line` holds nothing but spaces, tabs (and a stray '\r'): TrimField(line).empty().
bool IsBlank(std::string_view line);

// Splits `text` at every `sep` into `out` (cleared first; SplitInto reuses its capacity, for
// readers that split millions of lines). "a,,b" gives three fields, the middle one empty; an
// empty text gives one empty field. The views point into `text`.
void SplitInto(std::string_view text, char sep, std::vector<std::string_view>& out);
std::vector<std::string_view> Split(std::string_view text, char sep);
// The non-empty pieces of `text` between `sep`s, copied: "a,,b," gives "a" and "b".
std::vector<std::string> SplitNonEmpty(std::string_view text, char sep);

// The whole of `text` as a decimal integer of type T: an optional '-' then digits, nothing else
// (no '+', no spaces: trim first where a format allows them). nullopt otherwise, for an empty
// text, and when the value is outside T's range.
template <std::integral T = int64_t>
std::optional<T> ParseInt(std::string_view text) {
  T value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The whole of `text` as a finite double in decimal or exponent form ("12", "-1.5", ".5",
// "2e3"); nullopt for anything else ('+', spaces, inf, nan, hex, overflow).
std::optional<double> ParseFiniteDouble(std::string_view text);

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (negative before it), for any year
// an int64 second count can hold; m in [1, 12], d in [1, 31] (not checked here). H. Hinnant's
// days_from_civil algorithm.
int64_t DaysFromCivil(int64_t y, int m, int d);
bool IsLeapYear(int64_t y);
// The number of days of month m (in [1, 12]) of year y.
int DaysInMonth(int64_t y, int m);

// The largest file ReadFileText reads unless told otherwise (1 GiB: every supported trace and
// table is far smaller; a larger file is a mistake, not an input).
inline constexpr size_t kMaxWholeFileBytes = size_t{1} << 30;

// Why ReadFileText could not read a file.
enum class FileFault {
  kNone,
  kNotFound,     // nothing at the path (or its folder cannot be searched)
  kIsDirectory,  // the path names a directory
  kCannotOpen,   // it exists but cannot be opened (permissions)
  kReadFailed,   // reading failed part way
  kTooLarge,     // larger than the bound
};

struct FileText {
  std::string text;  // the whole file when fault is kNone, else empty
  FileFault fault = FileFault::kNone;
};

// Reads the whole file at `path` (bytes as they are: no newline translation), at most
// `max_bytes`. For callers whose messages differ per fault; the others use ReadWholeFile.
FileText ReadFileText(const std::string& path, size_t max_bytes = kMaxWholeFileBytes);

// ReadFileText with the messages of the table and profile loaders, `what` naming the file
// ("profile store"; empty for none): NotFound "<what> <path> not found"; IoError "cannot open
// <what> <path>", "cannot read <what> <path>" (a directory, a failed read) and "<what> <path> is
// larger than <max_bytes> bytes".
Result<std::string> ReadWholeFile(const std::string& path, std::string_view what = {},
                                  size_t max_bytes = kMaxWholeFileBytes);

}  // namespace dlsched
