#include "sim/svg.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlsched::sim {
namespace {

std::vector<double> TickValues(const PlotAxis& axis) {
  std::vector<double> values;
  for (const Tick& t : axis.ticks) values.push_back(t.value);
  return values;
}

TEST(SvgTest, HtmlEscapeReplacesTheFiveSpecialCharacters) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(HtmlEscape("plain"), "plain");
}

TEST(SvgTest, TruncateCutsAtACharacterBoundary) {
  EXPECT_EQ(Truncate("short", 10), "short");
  EXPECT_EQ(Truncate("abcdef", 3), "abc\u2026");
  // "é" is two bytes; cutting after its first byte would split it.
  EXPECT_EQ(Truncate("a\u00e9b", 2), "a\u2026");
}

TEST(SvgTest, LinearAxisRoundsUpToANiceStep) {
  const PlotAxis axis = LinearAxis("n", 7, 4, true, [](double v) { return std::to_string(v); });
  EXPECT_EQ(TickValues(axis), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(axis.max, 8);
  EXPECT_DOUBLE_EQ(axis.Fraction(4), 0.5);
  EXPECT_EQ(axis.Fraction(-1), 0);
  EXPECT_EQ(axis.Fraction(100), 1);
}

TEST(SvgTest, TimeAxisStepsInWholeUnits) {
  const PlotAxis axis = TimeAxis("t", 5 * 3600);
  EXPECT_EQ(TickValues(axis), (std::vector<double>{0, 3600, 7200, 10800, 14400, 18000}));
  EXPECT_EQ(axis.ticks[1].label, "1h");
}

TEST(SvgTest, LogTimeAxisSnapsOutwardsToItsMarks) {
  const PlotAxis axis = LogTimeAxis("t", 30, 5000);
  EXPECT_TRUE(axis.log);
  EXPECT_EQ(axis.min, 10);
  EXPECT_EQ(axis.max, 21600);
  EXPECT_EQ(TickValues(axis), (std::vector<double>{10, 60, 600, 3600, 21600}));
  EXPECT_DOUBLE_EQ(axis.Fraction(10), 0);
  EXPECT_DOUBLE_EQ(axis.Fraction(21600), 1);
}

TEST(SvgTest, LinePlotRendersOnePolylinePerNonEmptyLine) {
  SvgLinePlot plot;
  plot.aria_label = "a & b";
  plot.x = LinearAxis("x", 10, 5, false, [](double v) { return std::to_string(v); });
  plot.y = LinearAxis("y", 1, 5, false, [](double v) { return std::to_string(v); });
  plot.lines.push_back({"one", RunColor(0), RunDash(0), {{0, 0}, {5, 1}}});
  plot.lines.push_back({"empty", RunColor(1), RunDash(1), {}});
  std::string svg;
  plot.Render(svg);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u) << svg;
  EXPECT_NE(svg.find("aria-label=\"a &amp; b\""), std::string::npos);
  EXPECT_EQ(svg.find("<polyline"), svg.rfind("<polyline"));  // exactly one
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_EQ(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(SvgTest, RunColorsRepeatDashedPastThePalette) {
  EXPECT_EQ(RunColor(0), RunColor(10));
  EXPECT_EQ(RunDash(0), "");
  EXPECT_EQ(RunDash(10), "6 3");
}

}  // namespace
}  // namespace dlsched::sim
