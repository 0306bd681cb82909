#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/report.h"
#include "sim/report_theme.h"
#include "support/report_runs.h"

namespace dlsched::sim {
namespace {

using testing::Finished;
using testing::SyntheticRun;

size_t CountOccurrences(const std::string& haystack, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

TEST(HtmlReportTest, HighlightsOnlyAClearWinner) {
  const auto highlighted = [](const std::vector<RunResult>& runs) {
    std::ostringstream out;
    EXPECT_TRUE(WriteHtmlReport(runs, {"t", "csv:x", "1x8xV100", 1}, out).ok());
    return out.str().find("<tr class=\"best\">") != std::string::npos;
  };
  EXPECT_TRUE(highlighted({Finished("las", {1000}), Finished("fifo", {2000})}));
  EXPECT_FALSE(highlighted({Finished("las", {1000}), Finished("tiresias", {999})}));
}

TEST(WriteHtmlReportTest, SelfContainedEscapedAndDeterministic) {
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 400, 1, 6),
                                       SyntheticRun("<b>las</b>", 400, 1, 2),
                                       SyntheticRun("srtf", 400, 1, 1)};
  const ReportMeta meta{"Compare & contrast", "synthetic:jobs=400", "64 x V100", 7};
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(runs, meta, out).ok());
  const std::string html = out.str();

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // JCT CDF, utilisation, queue, slowdown, allocation heat map.
  EXPECT_EQ(CountOccurrences(html, "<svg"), 5u);
  EXPECT_EQ(CountOccurrences(html, "</svg>"), 5u);
  // Nothing to fetch: "http" only in the SVG namespace declarations; no script.
  EXPECT_EQ(CountOccurrences(html, "http"),
            CountOccurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>las"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;las&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("Compare &amp; contrast"), std::string::npos);
  EXPECT_NE(html.find("synthetic:jobs=400"), std::string::npos);
  // The dashboard's look: its theme (web/theme.css) opens the report's style.
  EXPECT_NE(html.find(std::string("<style>\n") + std::string(ReportTheme())), std::string::npos);
  EXPECT_NE(html.find("--accent:"), std::string::npos);

  std::ostringstream again;
  ASSERT_TRUE(WriteHtmlReport(runs, meta, again).ok());
  EXPECT_EQ(html, again.str());

  // Keep a copy to look at by hand when asked to.
  if (const char* path = std::getenv("DLSCHED_REPORT_TEST_HTML")) {
    std::ofstream(path) << html;
  }
}

TEST(WriteHtmlReportTest, LinesAreThinnedToAFewHundredPoints) {
  // 5000 jobs -> ~10000 series samples and 4500 JCTs per run.
  const std::vector<RunResult> runs = {SyntheticRun("fifo", 5000, 3, 1)};
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport(runs, ReportMeta{}, out).ok());
  const std::string html = out.str();
  EXPECT_NE(html.find("dlsched simulation report"), std::string::npos);
  size_t polylines = 0;
  for (size_t pos = html.find("<polyline"); pos != std::string::npos;
       pos = html.find("<polyline", pos + 1)) {
    ++polylines;
    const size_t begin = html.find("points=\"", pos) + 8;
    const size_t end = html.find('"', begin);
    const size_t points = std::count(html.begin() + begin, html.begin() + end, ' ') + 1;
    EXPECT_LE(points, 2 * 601u);  // each kept point is two vertices when drawn as steps
  }
  EXPECT_EQ(polylines, 3u);
  EXPECT_LT(html.size(), 200u * 1024);
}

TEST(WriteHtmlReportTest, NoRunsStillRendersEveryPlot) {
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport({}, ReportMeta{}, out).ok());
  EXPECT_EQ(CountOccurrences(out.str(), "<svg"), 4u);
}

}  // namespace
}  // namespace dlsched::sim

namespace dlsched::sim {
namespace {

TEST(WriteHtmlReportTest, WaitCausesAndTenantsAppearWhenTheRunsHaveThem) {
  const auto render = [](const std::vector<RunResult>& runs) {
    std::ostringstream out;
    EXPECT_TRUE(WriteHtmlReport(runs, ReportMeta{}, out).ok());
    return out.str();
  };
  // One tenant and no sampled causes: neither section.
  const std::string plain = render({testing::Finished("fifo", {3600, 7200})});
  EXPECT_EQ(plain.find("<h2>Why jobs waited</h2>"), std::string::npos);
  EXPECT_EQ(plain.find("<h2>Tenants</h2>"), std::string::npos);

  RunResult run = testing::Finished("las", {3600, 7200, 1800, -1});
  run.jobs[0].queue = "team-a";
  run.jobs[1].queue = "team-a";
  run.jobs[2].queue = "team-b";
  run.summary.tenant_share = {{"", 0.0}, {"team-a", 0.75}, {"team-b", 0.25}};
  run.summary.pending_s_by_cause[static_cast<size_t>(PendingCause::kGpusBusy)] = 3 * 3600;
  run.summary.pending_s_by_cause[static_cast<size_t>(PendingCause::kQuota)] = 3600;
  const std::string html = render({run});
  EXPECT_NE(html.find("<h2>Why jobs waited</h2>"), std::string::npos);
  EXPECT_NE(html.find("<th>gpus-busy</th><th>quota</th></tr>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>3.0 h (75%)</td><td>1.0 h (25%)</td>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Tenants</h2>"), std::string::npos);
  // team-a: two jobs completed in 1 h and 2 h; the rejected job has no tenant.
  EXPECT_NE(html.find("<td>team-a</td><td>2</td><td>2</td><td>1.50 h</td><td>75.0%</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>(none)</td><td>1</td><td>0</td><td>&mdash;</td><td>0.0%</td>"),
            std::string::npos);
}

}  // namespace
}  // namespace dlsched::sim

namespace dlsched::sim {
namespace {

TEST(WriteHtmlReportTest, TheHeatMapWeighsAllocationByTime) {
  RunResult run = testing::Finished("las", {3600});
  run.total_gpus = 8;
  // No GPU for the first 30 slices of 60, all 8 for the rest.
  run.series = {{AtSeconds(0), 0, 0, 0}, {AtSeconds(3000), 8, 0, 1}, {AtSeconds(6000), 8, 0, 1}};
  std::ostringstream out;
  ASSERT_TRUE(WriteHtmlReport({run}, ReportMeta{}, out).ok());
  const std::string html = out.str();
  ASSERT_NE(html.find("<h2>GPU allocation over time</h2>"), std::string::npos);
  EXPECT_EQ(CountOccurrences(html, "<title>las: 0% allocated</title>"), 30u);
  EXPECT_EQ(CountOccurrences(html, "<title>las: 100% allocated</title>"), 30u);
  EXPECT_NE(html.find(">1.7 h</text>"), std::string::npos);
}

}  // namespace
}  // namespace dlsched::sim
