#include "io/csv_reader.h"

namespace dlsched {

std::vector<std::string_view> SplitCsvLine(std::string_view line) {
  std::vector<std::string_view> fields = Split(line, ',');
  for (std::string_view& field : fields) field = TrimField(field);
  return fields;
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

bool LineCursor::NextRow(char sep, std::vector<std::string_view>& fields) {
  std::string_view line;
  while (Next(line)) {
    if (IsBlank(line)) continue;
    SplitInto(line, sep, fields);
    return true;
  }
  return false;
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

}  // namespace dlsched
