#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A small kit for the HTML report's inline SVG plots: axes with nice ticks (linear, time, log),
// frames, and line plots with a legend. Every renderer appends to a string; output is
// deterministic. All text goes through HtmlEscape.

namespace dlsched::sim {

// `text` with & < > " ' as HTML character references: safe in HTML and SVG text and attributes.
std::string HtmlEscape(std::string_view text);

// At most `max_bytes` bytes of `text`, cut at a UTF-8 character boundary, with an ellipsis appended
// when cut. Keeps long policy names inside plot margins; the full name goes in a <title>.
std::string Truncate(std::string_view text, size_t max_bytes);

// Run i's colour; past the palette, colours repeat and lines are dashed.
std::string_view RunColor(size_t i);
std::string_view RunDash(size_t i);

struct Point {
  double x;
  double y;
};

// The pixel layout of a plot: the drawing area is the box inside the margins.
struct PlotFrame {
  double width = 960;
  double height = 320;
  double left = 64;
  double right = 210;  // legend
  double top = 14;
  double bottom = 46;

  double inner_width() const { return width - left - right; }
  double inner_height() const { return height - top - bottom; }
  // Pixel coordinates of a fraction in [0, 1] along each axis (y grows upwards).
  double X(double fraction) const { return left + fraction * inner_width(); }
  double Y(double fraction) const { return top + (1 - fraction) * inner_height(); }
};

struct Tick {
  double value;
  std::string label;
};

struct PlotAxis {
  std::string title;
  double min = 0;
  double max = 1;    // > min
  bool log = false;  // log10 scale; then min > 0
  std::vector<Tick> ticks;

  // Where `v` falls along the axis, as a fraction clamped to [0, 1].
  double Fraction(double v) const {
    const double f =
        log ? (std::log10(std::max(v, min)) - std::log10(min)) / (std::log10(max) - std::log10(min))
            : (v - min) / (max - min);
    return f >= 0 ? std::min(f, 1.0) : 0.0;  // also maps NaN to 0
  }
};

// A step of 1, 2 or 5 x 10^k no smaller than `raw`.
double NiceStep(double raw);

// A linear axis from 0 to `max_value` rounded up to a nice step, with at most ~`intervals`
// intervals. `integral` keeps steps whole (counts). Labels come from `label`.
template <typename LabelFn>
PlotAxis LinearAxis(std::string title, double max_value, int intervals, bool integral,
                    LabelFn label) {
  PlotAxis axis;
  axis.title = std::move(title);
  if (!(max_value > 0)) max_value = 1;
  double step = NiceStep(max_value / intervals);
  if (integral) step = std::max(step, 1.0);
  const int count = static_cast<int>(std::ceil(max_value / step - 1e-9));
  axis.max = count * step;
  for (int k = 0; k <= count; ++k) axis.ticks.push_back({k * step, label(k * step)});
  return axis;
}

// A linear time axis in seconds from 0 to at least `max_s`, with whole-unit steps (30s, 10m, 6h,
// 1d, ...) and at most 8 intervals.
PlotAxis TimeAxis(std::string title, double max_s);

// Durations from 1 ms to 10 years at readable points: 1s, 10s, 1m, 10m, 1h, 6h, 1d, 7d, 30d, ...
PlotAxis LogTimeAxis(std::string title, double lo_s, double hi_s);

// Ratios on a 1-2-5 log scale (1, 2, 5, 10, ... labelled "2x" with a times sign); only powers of
// ten when the range is wide.
PlotAxis LogRatioAxis(std::string title, double lo, double hi);

void OpenSvg(double width, double height, std::string_view label, std::string& out);

// Vertical grid lines and labels for each x tick, and the axis title below.
void RenderXAxis(const PlotFrame& f, const PlotAxis& axis, std::string& out);

// Horizontal grid lines and labels for each y tick, and the rotated axis title at the left.
void RenderYAxis(const PlotFrame& f, const PlotAxis& axis, std::string& out);

void RenderPlotBorder(const PlotFrame& f, std::string& out);

struct PlotLine {
  std::string label;
  std::string_view color;
  std::string_view dash;      // stroke-dasharray; empty for solid
  std::vector<Point> points;  // in x order
};

// A line plot with two numeric axes, gridlines at the ticks, and a legend at the right. With
// `steps`, each point's y holds until the next point's x (step functions, empirical CDFs).
struct SvgLinePlot {
  std::string aria_label;
  PlotFrame frame;
  PlotAxis x;
  PlotAxis y;
  bool steps = true;
  std::vector<PlotLine> lines;

  void Render(std::string& out) const;

 private:
  static std::string DashAttr(std::string_view dash);

  void RenderLine(const PlotLine& line, std::string& out) const;
};

}  // namespace dlsched::sim
