#include "sim/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlsched::sim {
namespace {

// An axis tick label for a time in seconds: the largest unit (d, h, m, s) in which the value is
// a whole or half number, e.g. "1d", "1.5h", "10m", "45s", "0.1s".
std::string FormatTimeTick(double seconds) {
  struct Unit {
    double seconds;
    std::string_view suffix;
  };
  static constexpr std::array<Unit, 3> kUnits = {{{86400, "d"}, {3600, "h"}, {60, "m"}}};
  for (const Unit& u : kUnits) {
    if (seconds >= u.seconds && std::fmod(seconds, u.seconds / 2) == 0) {
      return fmt::format("{:g}{}", seconds / u.seconds, u.suffix);
    }
  }
  return fmt::format("{:g}s", seconds);
}

constexpr std::array<std::string_view, 10> kPalette = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

// A log axis spanning [lo, hi] snapped outwards to values of `marks` (ascending, > 0); the ticks
// are the marks inside. Values beyond the marks widen the axis to them.
template <typename LabelFn>
PlotAxis LogAxis(std::string title, double lo, double hi, const std::vector<double>& marks,
                 LabelFn label) {
  PlotAxis axis;
  axis.title = std::move(title);
  axis.log = true;
  lo = std::max(lo, marks.front());
  hi = std::max(hi, lo);
  axis.min = marks.front();
  for (double m : marks) {
    if (m <= lo) axis.min = m;
  }
  axis.max = hi;
  for (double m : marks) {
    if (m >= hi) {
      axis.max = m;
      break;
    }
  }
  if (axis.max <= axis.min) {
    const auto next = std::upper_bound(marks.begin(), marks.end(), axis.min);
    axis.max = next != marks.end() ? *next : axis.min * 10;
  }
  for (double m : marks) {
    if (m >= axis.min && m <= axis.max) axis.ticks.push_back({m, label(m)});
  }
  return axis;
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Truncate(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "\u2026";
}

std::string_view RunColor(size_t i) { return kPalette[i % kPalette.size()]; }
std::string_view RunDash(size_t i) { return i < kPalette.size() ? "" : "6 3"; }

double NiceStep(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

PlotAxis TimeAxis(std::string title, double max_s) {
  static constexpr std::array<double, 24> kSteps = {
      1,    2,    5,     10,    15,    30,    60,     120,    300,    600,     900,     1800,
      3600, 7200, 10800, 21600, 43200, 86400, 172800, 432000, 604800, 1209600, 2592000, 7776000};
  PlotAxis axis;
  axis.title = std::move(title);
  if (!(max_s > 0)) max_s = 1;
  double step = kSteps.back();
  for (double s : kSteps) {
    if (max_s / s <= 8) {
      step = s;
      break;
    }
  }
  if (max_s / step > 8) step = NiceStep(max_s / 8 / 86400) * 86400;  // beyond 90-day steps
  const int count = static_cast<int>(std::ceil(max_s / step - 1e-9));
  axis.max = count * step;
  for (int k = 0; k <= count; ++k) axis.ticks.push_back({k * step, FormatTimeTick(k * step)});
  return axis;
}

PlotAxis LogTimeAxis(std::string title, double lo_s, double hi_s) {
  static const std::vector<double> kMarks = {
      0.001, 0.01, 0.1, 1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000, 31536000, 315360000};
  return LogAxis(std::move(title), lo_s, hi_s, kMarks, FormatTimeTick);
}

PlotAxis LogRatioAxis(std::string title, double lo, double hi) {
  std::vector<double> marks;
  for (int e = -2; e <= 6; ++e) {
    for (double m : {1.0, 2.0, 5.0}) marks.push_back(m * std::pow(10.0, e));
  }
  const auto label = [](double v) { return fmt::format("{:g}\u00d7", v); };
  PlotAxis axis = LogAxis(std::move(title), lo, hi, marks, label);
  if (axis.ticks.size() > 10) {
    std::erase_if(axis.ticks, [](const Tick& t) {
      const double e = std::log10(t.value);
      return std::abs(e - std::round(e)) > 1e-9;
    });
  }
  return axis;
}

void OpenSvg(double width, double height, std::string_view label, std::string& out) {
  fmt::format_to(std::back_inserter(out),
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
                 "width=\"{0:.0f}\" height=\"{1:.0f}\" role=\"img\" aria-label=\"{2}\">\n",
                 width, height, HtmlEscape(label));
}

void RenderXAxis(const PlotFrame& f, const PlotAxis& axis, std::string& out) {
  const double y0 = f.Y(0);
  for (const Tick& t : axis.ticks) {
    const double x = f.X(axis.Fraction(t.value));
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
                   "y2=\"{2:.1f}\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                   "text-anchor=\"middle\">{4}</text>\n",
                   x, f.Y(1), y0, y0 + 16, HtmlEscape(t.label));
  }
  fmt::format_to(
      std::back_inserter(out),
      "<text class=\"title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
      f.X(0.5), f.height - 8, HtmlEscape(axis.title));
}

void RenderYAxis(const PlotFrame& f, const PlotAxis& axis, std::string& out) {
  for (const Tick& t : axis.ticks) {
    const double y = f.Y(axis.Fraction(t.value));
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
                   "y2=\"{1:.1f}\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                   "text-anchor=\"end\">{5}</text>\n",
                   f.X(0), y, f.X(1), f.X(0) - 6, y + 4, HtmlEscape(t.label));
  }
  const double cy = f.Y(0.5);
  fmt::format_to(std::back_inserter(out),
                 "<text class=\"title\" x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 14 {0:.1f})\">{1}</text>\n",
                 cy, HtmlEscape(axis.title));
}

void RenderPlotBorder(const PlotFrame& f, std::string& out) {
  fmt::format_to(std::back_inserter(out),
                 "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                 "height=\"{:.1f}\"/>\n",
                 f.X(0), f.Y(1), f.inner_width(), f.inner_height());
}

void SvgLinePlot::Render(std::string& out) const {
  static constexpr double kLegendRow = 18;
  const double height =
      std::max(frame.height, frame.top + kLegendRow * static_cast<double>(lines.size()) + 8);
  OpenSvg(frame.width, height, aria_label, out);
  RenderYAxis(frame, y, out);
  RenderXAxis(frame, x, out);
  RenderPlotBorder(frame, out);
  bool any_points = false;
  for (const PlotLine& line : lines) {
    if (line.points.empty()) continue;
    any_points = true;
    RenderLine(line, out);
  }
  if (!any_points) {
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"title\" x=\"{:.1f}\" y=\"{:.1f}\" "
                   "text-anchor=\"middle\">no data</text>\n",
                   frame.X(0.5), frame.Y(0.5));
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const double ly = frame.top + 10 + kLegendRow * static_cast<double>(i);
    const double lx = frame.X(1) + 14;
    fmt::format_to(std::back_inserter(out),
                   "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
                   "stroke=\"{3}\" stroke-width=\"3\"{4}/><text x=\"{5:.1f}\" "
                   "y=\"{6:.1f}\"><title>{7}</title>{8}</text>\n",
                   lx, ly, lx + 22, lines[i].color, DashAttr(lines[i].dash), lx + 28, ly + 4,
                   HtmlEscape(lines[i].label), HtmlEscape(Truncate(lines[i].label, 26)));
  }
  out += "</svg>\n";
}

std::string SvgLinePlot::DashAttr(std::string_view dash) {
  return dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash);
}

void SvgLinePlot::RenderLine(const PlotLine& line, std::string& out) const {
  fmt::format_to(
      std::back_inserter(out),
      "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" stroke-opacity=\"0.85\" "
      "stroke-linejoin=\"round\"{} points=\"",
      line.color, DashAttr(line.dash));
  for (size_t i = 0; i < line.points.size(); ++i) {
    const double px = frame.X(x.Fraction(line.points[i].x));
    const double py = frame.Y(y.Fraction(line.points[i].y));
    if (steps && i > 0) {
      fmt::format_to(std::back_inserter(out), "{:.1f},{:.1f} ", px,
                     frame.Y(y.Fraction(line.points[i - 1].y)));
    }
    fmt::format_to(std::back_inserter(out), "{:.1f},{:.1f} ", px, py);
  }
  out.back() = '"';
  fmt::format_to(std::back_inserter(out), "><title>{}</title></polyline>\n",
                 HtmlEscape(line.label));
}

}  // namespace dlsched::sim
