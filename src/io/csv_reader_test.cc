#include "io/csv_reader.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace dlsched {
namespace {

TEST(LineCursorTest, NumbersLinesAndStripsCarriageReturns) {
  LineCursor cursor("a\r\n\nb\nc");
  std::vector<std::pair<int, std::string>> got;
  std::string_view line;
  while (cursor.Next(line)) got.emplace_back(cursor.line_number(), std::string(line));
  const std::vector<std::pair<int, std::string>> want = {{1, "a"}, {2, ""}, {3, "b"}, {4, "c"}};
  EXPECT_EQ(got, want);
  LineCursor trailing("x\n");
  ASSERT_TRUE(trailing.Next(line));
  EXPECT_FALSE(trailing.Next(line));
}

TEST(LineCursorTest, NextRowSkipsBlankLinesAndKeepsFieldsAsTheyAre) {
  LineCursor cursor("a, b\n \t\r\n\nc\td,\r\n");
  std::vector<std::string_view> fields;
  ASSERT_TRUE(cursor.NextRow(',', fields));
  EXPECT_EQ(cursor.line_number(), 1);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"a", " b"}));
  ASSERT_TRUE(cursor.NextRow(',', fields));
  EXPECT_EQ(cursor.line_number(), 4);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"c\td", ""}));
  EXPECT_FALSE(cursor.NextRow(',', fields));
}

TEST(ForEachCsvLineTest, SkipsBlankLinesTrimsFieldsAndNumbersLinesLikeAnEditor) {
  std::vector<std::pair<int, std::vector<std::string>>> got;
  const Status status = ForEachCsvLine(
      " a , b\r\n\n \t\r\nc,,d \n\ne", [&](std::vector<std::string_view> fields, int line) {
        got.emplace_back(line, std::vector<std::string>(fields.begin(), fields.end()));
        return Status::Ok();
      });
  EXPECT_TRUE(status.ok());
  const std::vector<std::pair<int, std::vector<std::string>>> want = {
      {1, {"a", "b"}}, {4, {"c", "", "d"}}, {6, {"e"}}};
  EXPECT_EQ(got, want);
  int calls = 0;
  const Status stopped = ForEachCsvLine("x\ny\nz", [&](std::vector<std::string_view>, int line) {
    ++calls;
    return line == 2 ? InvalidArgument("stop") : Status::Ok();
  });
  EXPECT_EQ(stopped.message(), "stop");
  EXPECT_EQ(calls, 2);
}

TEST(CsvHeaderTest, FindsTrimmedNamesAndRequiresColumns) {
  const CsvHeader header(" id ,\tname,gpus\r", ',');
  EXPECT_EQ(header.size(), 3u);
  EXPECT_EQ(header.Find("name"), 1);
  EXPECT_EQ(header.Find("gpus"), 2);
  EXPECT_EQ(header.Find("missing"), -1);
  const RowErrors errors("trace.csv", /*skip_bad_rows=*/false);
  const auto found =
      RequireColumns(header, std::array<std::string_view, 2>{"gpus", "id"}, errors, 3);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, (std::array<int, 2>{2, 0}));
  const auto missing = RequireColumns(header, std::array<std::string_view, 1>{"user"}, errors, 3);
  EXPECT_EQ(missing.status().message(), "trace.csv:3: missing column 'user'");
}

TEST(RowErrorsTest, FailsOrCountsBadRows) {
  RowErrors strict("t.csv", /*skip_bad_rows=*/false);
  EXPECT_EQ(strict.Bad(7, "bad gpus").message(), "t.csv:7: bad gpus");
  EXPECT_EQ(strict.skipped(), 0);
  RowErrors lenient("t.csv", /*skip_bad_rows=*/true);
  EXPECT_TRUE(lenient.Bad(7, "bad gpus").ok());
  EXPECT_TRUE(lenient.Bad(8, "bad gpus").ok());
  EXPECT_EQ(lenient.skipped(), 2);
  EXPECT_EQ(lenient.Fatal(1, "no header").message(), "t.csv:1: no header");

  LineCursor blank("\n \n");
  EXPECT_EQ(ReadHeader(blank, strict, ',').status().message(),
            "t.csv:1: empty file: expected a header line");
  LineCursor cursor("\n a,b\n1,2");
  const Result<CsvHeader> header = ReadHeader(cursor, strict, ',');
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cursor.line_number(), 2);
}

}  // namespace
}  // namespace dlsched
