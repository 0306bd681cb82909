#include "cli/terminal_text.h"

#include <gtest/gtest.h>

namespace dlsched::cli {
namespace {

TEST(EscapeControlTest, Table) {
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {"resnet-50 run 3", "resnet-50 run 3"},
      {"\x1b[2J\x1b]0;pwned\x07", "\\x1b[2J\\x1b]0;pwned\\x07"},
      {"a\tb\nc\rd", "a\\x09b\\x0ac\\x0dd"},
      {"del\x7f", "del\\x7f"},
      {"csi\xc2\x9b"
       "31m",
       "csi\\u009b31m"},
      {"caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5"},  // UTF-8 kept
      {"\xc2\xa0nbsp", "\xc2\xa0nbsp"},
      {std::string("nul\0x", 5), "nul\\x00x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(EscapeControl(c.text), c.want);
  }
}

}  // namespace
}  // namespace dlsched::cli
