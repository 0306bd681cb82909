#include "daemon/api/progress_request.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace dlsched::daemon {
namespace {

TEST(ProgressRequestTest, ParsesWhatTheProgressFileAccepts) {
  struct Case {
    std::string name;
    std::string body;
    std::optional<Progress> want;  // nullopt: refused
    std::string field;             // the field the refusal names
  };
  const std::vector<Case> cases = {
      {"done and total", R"({"iterations_done": 1200, "iterations_total": 5000})",
       Progress{1200, 5000}, ""},
      {"done alone", R"({"iterations_done": 2.5})", Progress{2.5, 0}, ""},
      {"null total", R"({"iterations_done": 0, "iterations_total": null})", Progress{0, 0}, ""},
      {"more than the total", R"({"iterations_done": 9, "iterations_total": 5})", Progress{9, 5},
       ""},
      {"malformed json", R"({"iterations_done": )", std::nullopt, "body"},
      {"not an object", R"([1, 2])", std::nullopt, "body"},
      {"missing done", R"({"iterations_total": 5})", std::nullopt, "iterations_done"},
      {"negative done", R"({"iterations_done": -1})", std::nullopt, "iterations_done"},
      {"done as text", R"({"iterations_done": "12"})", std::nullopt, "iterations_done"},
      {"zero total", R"({"iterations_done": 1, "iterations_total": 0})", std::nullopt,
       "iterations_total"},
      {"negative total", R"({"iterations_done": 1, "iterations_total": -4})", std::nullopt,
       "iterations_total"},
      {"unknown field", R"({"iterations_done": 1, "eta": 5})", std::nullopt, "eta"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<Progress> got = ParseProgressReport(c.body);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->done, c.want->done);
      EXPECT_EQ(got->total, c.want->total);
      // The same values, written as the progress line, read back the same.
      const std::optional<Progress> line = ParseProgress(FormatProgress(*got));
      ASSERT_TRUE(line.has_value());
      EXPECT_EQ(line->done, got->done);
      EXPECT_EQ(line->total, got->total);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(got.status().message().rfind(c.field + ":", 0), 0u) << got.status().message();
    }
  }
}

}  // namespace
}  // namespace dlsched::daemon
