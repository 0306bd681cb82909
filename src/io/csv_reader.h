#pragma once

// The one CSV reader, for the workload traces (src/sim) and the measured tables (src/io): line
// iteration with editor line numbers, field splitting, the header and its columns by name, and
// bad-row bookkeeping. No quoting: none of the supported formats quotes fields. Built on
// dlsched/common/text.h.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/text.h"

namespace dlsched {

// Walks the lines of a text buffer. Strips one trailing '\r' per line (CRLF files). Line numbers
// are 1-based and count every line, blank ones included, so they match an editor's.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}

  // Stores the next line (without its terminator) in `line`; false at the end of the text. A
  // final line without a trailing newline is still returned.
  bool Next(std::string_view& line);
  // Moves to the next line that is not blank (IsBlank) and splits it at every `sep` into
  // `fields` (SplitInto: untrimmed, views into the text); false at the end of the text.
  bool NextRow(char sep, std::vector<std::string_view>& fields);
  // The 1-based number of the line last returned by Next or NextRow (0 before the first call).
  int line_number() const { return line_number_; }

 private:
  std::string_view rest_;
  int line_number_ = 0;
  bool done_ = false;
};

// The comma-separated fields of `line`, each trimmed (TrimField).
std::vector<std::string_view> SplitCsvLine(std::string_view line);

// Calls `on_line(fields, line_number)` (SplitCsvLine's fields, 1-based line numbers) for each
// line of `text` that is not blank; stops at, and returns, the first error it returns.
template <typename OnLine>
Status ForEachCsvLine(std::string_view text, const OnLine& on_line) {
  LineCursor cursor(text);
  std::string_view line;
  while (cursor.Next(line)) {
    line = TrimField(line);
    if (line.empty()) continue;
    DS_RETURN_IF_ERROR(on_line(SplitCsvLine(line), cursor.line_number()));
  }
  return Status::Ok();
}

// Maps the column names of a header line to their positions. Names are trimmed (TrimField).
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

}  // namespace dlsched
