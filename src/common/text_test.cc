#include "dlsched/common/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dlsched {
namespace {

TEST(TrimTest, StripsTheGivenCharacters) {
  struct Case {
    std::string_view text, chars, left, right, both;
  };
  const std::vector<Case> cases = {
      {"  a b \t", " \t", "a b \t", "  a b", "a b"},
      {"", " ", "", "", ""},
      {" \t ", " \t", "", "", ""},
      {"\r\nx\n\r", " ", "\r\nx\n\r", "\r\nx\n\r", "\r\nx\n\r"},
      {"\r\nx\n\r", kAsciiSpace, "x\n\r", "\r\nx", "x"},
      {"\v\fx\f\v", kAsciiSpace, "x\f\v", "\v\fx", "x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    EXPECT_EQ(TrimLeft(c.text, c.chars), c.left);
    EXPECT_EQ(TrimRight(c.text, c.chars), c.right);
    EXPECT_EQ(Trim(c.text, c.chars), c.both);
  }
  EXPECT_EQ(Trim(" \n x \t\r"), "x");  // kAsciiSpace by default
}

TEST(TrimFieldTest, StripsBlanksAndAStrayCarriageReturnAtTheEnd) {
  struct Case {
    std::string_view text, want;
  };
  const std::vector<Case> cases = {
      {" a ", "a"}, {"\ta\t\r", "a"}, {"a \r", "a"}, {"\ra", "\ra"}, {"a\n", "a\n"}, {"\r", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(TrimField(c.text), c.want) << c.text;
    EXPECT_EQ(IsBlank(c.text), c.want.empty()) << c.text;
  }
}

TEST(SplitTest, KeepsEmptyFieldsUnlessAskedNotTo) {
  struct Case {
    std::string_view text;
    std::vector<std::string_view> fields;
    std::vector<std::string> non_empty;
  };
  const std::vector<Case> cases = {
      {"a,,b,", {"a", "", "b", ""}, {"a", "b"}},
      {"", {""}, {}},
      {",", {"", ""}, {}},
      {"a", {"a"}, {"a"}},
      {" a , b", {" a ", " b"}, {" a ", " b"}},
  };
  std::vector<std::string_view> reused = {"stale"};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    EXPECT_EQ(Split(c.text, ','), c.fields);
    SplitInto(c.text, ',', reused);
    EXPECT_EQ(reused, c.fields);
    EXPECT_EQ(SplitNonEmpty(c.text, ','), c.non_empty);
  }
}

TEST(ParseIntTest, IsStrict) {
  struct Case {
    std::string_view text;
    std::optional<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"42", 42},   {"-7", -7},
      {"0", 0},     {"9223372036854775807", INT64_MAX},
      {"", {}},     {" 42", {}},
      {"42 ", {}},  {"4.0", {}},
      {"+4", {}},   {"4x", {}},
      {"-", {}},    {"99999999999999999999", {}},
      {"0x10", {}}, {"9223372036854775808", {}},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseInt(c.text), c.want) << c.text;
  EXPECT_EQ(ParseInt<int>("2147483647"), 2147483647);
  EXPECT_EQ(ParseInt<int>("2147483648"), std::nullopt);
}

TEST(ParseFiniteDoubleTest, IsStrict) {
  struct Case {
    std::string_view text;
    std::optional<double> want;
  };
  const std::vector<Case> cases = {
      {"66.0", 66.0}, {"2e3", 2000.0}, {".5", 0.5},  {"-1.5", -1.5}, {"", {}},
      {"inf", {}},    {"nan", {}},     {"-inf", {}}, {"1e999", {}},  {"1.0.0", {}},
      {"+1", {}},     {" 1", {}},      {"1 ", {}},   {"0x1p3", {}},  {"infinity", {}},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseFiniteDouble(c.text), c.want) << c.text;
}

TEST(CivilDateTest, KnownDates) {
  struct Case {
    int y, m, d;
    int64_t days;
    int month_days;
  };
  const std::vector<Case> cases = {
      {1970, 1, 1, 0, 31},      {1969, 12, 31, -1, 31},   {2000, 3, 1, 11017, 31},
      {2017, 10, 9, 17448, 31}, {2016, 2, 29, 16860, 29}, {1600, 1, 1, -135140, 31},
      {2100, 2, 1, 47513, 28},  {2000, 2, 1, 10988, 29},  {9999, 12, 31, 2932896, 31},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.y) + "-" + std::to_string(c.m) + "-" + std::to_string(c.d));
    EXPECT_EQ(DaysFromCivil(c.y, c.m, c.d), c.days);
    EXPECT_EQ(DaysInMonth(c.y, c.m), c.month_days);
  }
  EXPECT_TRUE(IsLeapYear(2000));
  EXPECT_FALSE(IsLeapYear(1900));
  EXPECT_TRUE(IsLeapYear(2024));
  EXPECT_FALSE(IsLeapYear(2023));
}

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("dlsched_text_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ReadFileTest, ReadsBytesAsTheyAre) {
  const std::string content = std::string("a\r\nb\0c\n", 7);
  const std::string path = Write("f.txt", content);
  const FileText read = ReadFileText(path);
  EXPECT_EQ(read.fault, FileFault::kNone);
  EXPECT_EQ(read.text, content);
  const Result<std::string> whole = ReadWholeFile(path, "table");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, content);
  EXPECT_EQ(ReadFileText(Write("empty", "")).text, "");
}

TEST_F(ReadFileTest, NamesEachFault) {
  const std::string missing = (dir_ / "missing").string();
  const std::string big = Write("big", std::string(100, 'x'));
  EXPECT_EQ(ReadFileText(missing).fault, FileFault::kNotFound);
  EXPECT_EQ(ReadFileText(dir_.string()).fault, FileFault::kIsDirectory);
  EXPECT_EQ(ReadFileText(big, 99).fault, FileFault::kTooLarge);
  EXPECT_EQ(ReadFileText(big, 99).text, "");
  EXPECT_EQ(ReadFileText(big, 100).text.size(), 100u);

  const Result<std::string> not_found = ReadWholeFile(missing, "profile store");
  EXPECT_EQ(not_found.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(not_found.status().message(), "profile store " + missing + " not found");
  EXPECT_EQ(ReadWholeFile(missing).status().message(), missing + " not found");
  const Result<std::string> directory = ReadWholeFile(dir_.string(), "table");
  EXPECT_EQ(directory.status().code(), StatusCode::kIoError);
  EXPECT_EQ(directory.status().message(), "cannot read table " + dir_.string());
  EXPECT_EQ(ReadWholeFile(big, "table", 10).status().message(),
            "table " + big + " is larger than 10 bytes");
}

}  // namespace
}  // namespace dlsched
