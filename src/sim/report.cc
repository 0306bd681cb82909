#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/model/job.h"

namespace dlsched::sim {
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers.

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

// RFC 4180: quote a cell that holds a comma, quote or line break; double inner quotes.
std::string CsvCell(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// At most `max_bytes` bytes of `text`, cut at a UTF-8 character boundary, with an ellipsis appended
// when cut. Keeps long policy names inside plot margins; the full name goes in a <title>.
std::string Truncate(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "\u2026";
}

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

// ---------------------------------------------------------------------------------------------
// The comparison table, shared by the text and HTML outputs.

struct Column {
  std::string_view header;
  bool numeric;
};

constexpr std::array<Column, 14> kColumns = {{
    {"policy", false},
    {"jobs", true},
    {"done", true},
    {"rejected", true},
    {"avg JCT", true},
    {"p50 JCT", true},
    {"p95 JCT", true},
    {"p99 JCT", true},
    {"avg queue", true},
    {"makespan", true},
    {"GPU util", true},
    {"preempt", true},
    {"slowdown", true},
    {"wall s", true},
}};

// Shown before "wall s" only when some run had jobs with a deadline, so the outputs of runs
// without QoS targets stay as they were.
constexpr Column kQosColumn = {"qos met", true};

bool AnyQos(const std::vector<RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const RunResult& run) { return run.summary.qos_jobs > 0; });
}

// The table's columns: kColumns, with kQosColumn before the last ("wall s") when `with_qos`.
std::vector<Column> TableColumns(bool with_qos) {
  std::vector<Column> columns(kColumns.begin(), kColumns.end());
  if (with_qos) columns.insert(columns.end() - 1, kQosColumn);
  return columns;
}

// One table row, in TableColumns(with_qos) order. "-" where a figure has no data behind it.
std::vector<std::string> SummaryCells(const RunResult& run, bool with_qos) {
  const RunSummary& s = run.summary;
  const bool any_completed = s.completed > 0;
  const auto duration = [&](double seconds) {
    return any_completed ? FormatDuration(seconds) : std::string("-");
  };
  std::vector<std::string> cells = {
      run.policy,
      std::to_string(s.jobs),
      std::to_string(s.completed),
      std::to_string(s.rejected),
      duration(s.avg_jct_s),
      duration(s.p50_jct_s),
      duration(s.p95_jct_s),
      duration(s.p99_jct_s),
      FormatDuration(s.avg_queue_s),
      duration(s.makespan_s),
      any_completed ? fmt::format("{:.1f}%", 100 * s.gpu_utilization) : std::string("-"),
      std::to_string(s.preemptions),
      s.avg_slowdown > 0 ? fmt::format("{:.2f}", s.avg_slowdown) : std::string("-"),
      fmt::format("{:.2f}", s.wall_s),
  };
  if (with_qos) {
    cells.insert(cells.end() - 1,
                 s.qos_jobs > 0 ? fmt::format("{:.1f}%", 100 * s.qos_met_rate) : std::string("-"));
  }
  return cells;
}

// Avg JCTs closer than this (relative to the lower one) are a tie: run-to-run differences of a
// fraction of a percent come from tie-breaks and estimate noise, not from the policy.
constexpr double kNearTie = 0.01;

// The jobs a run completed are the same as another's: same count, same ids.
bool SameCompletedJobs(const RunResult& a, const RunResult& b) {
  if (a.summary.completed != b.summary.completed) return false;
  std::vector<JobId> done_a;
  std::vector<JobId> done_b;
  for (const JobRecord& j : a.jobs) {
    if (j.completed()) done_a.push_back(j.id);
  }
  for (const JobRecord& j : b.jobs) {
    if (j.completed()) done_b.push_back(j.id);
  }
  return done_a == done_b;
}

// Which runs the "Best avg JCT" verdict compares and what it finds. Comparable runs accounted
// for every job (none unfinished) and completed exactly the jobs of the run that completed the
// most (the first such run): a policy that rejects jobs is not faster for it. Among them the
// lowest avg JCT wins unless another is within kNearTie of it.
struct Verdict {
  std::optional<size_t> reference;  // the run that completed the most; none: nothing to compare
  std::vector<size_t> compared;     // in run order
  std::vector<size_t> left_out;     // in run order
  std::vector<size_t> tied;         // the best and those within kNearTie, lowest avg JCT first
};

Verdict Judge(const std::vector<RunResult>& runs) {
  Verdict v;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunSummary& s = runs[i].summary;
    if (s.unfinished != 0 || s.completed == 0) continue;
    if (!v.reference || s.completed > runs[*v.reference].summary.completed) v.reference = i;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool comparable = v.reference && runs[i].summary.unfinished == 0 &&
                            SameCompletedJobs(runs[i], runs[*v.reference]);
    (comparable ? v.compared : v.left_out).push_back(i);
  }
  if (v.compared.empty()) return v;
  std::vector<size_t> by_jct = v.compared;
  std::stable_sort(by_jct.begin(), by_jct.end(), [&](size_t a, size_t b) {
    return runs[a].summary.avg_jct_s < runs[b].summary.avg_jct_s;
  });
  const double best = runs[by_jct.front()].summary.avg_jct_s;
  for (size_t i : by_jct) {
    if (runs[i].summary.avg_jct_s <= best * (1 + kNearTie)) v.tied.push_back(i);
  }
  return v;
}

// The clear winner of Judge, if any: the run the HTML report highlights.
std::optional<size_t> BestRun(const std::vector<RunResult>& runs) {
  const Verdict v = Judge(runs);
  if (v.tied.size() != 1) return std::nullopt;
  return v.tied.front();
}

std::string BestRunLine(const std::vector<RunResult>& runs) {
  const Verdict v = Judge(runs);
  if (!v.reference) return "Best avg JCT: none (no run completed or rejected every job)";
  const RunSummary& ref = runs[*v.reference].summary;
  std::string line =
      ref.completed == ref.jobs
          ? fmt::format("Best avg JCT among runs that completed all {} jobs: ", ref.jobs)
          : fmt::format("Best avg JCT among runs that completed the same {} of {} jobs: ",
                        ref.completed, ref.jobs);
  const auto named = [&](size_t i) {
    return fmt::format("{} ({})", runs[i].policy, FormatDuration(runs[i].summary.avg_jct_s));
  };
  if (v.tied.size() == 1) {
    line += named(v.tied.front());
  } else {
    line += "no clear winner,";
    for (size_t k = 0; k < v.tied.size(); ++k) line += (k == 0 ? " " : ", ") + named(v.tied[k]);
    line += fmt::format(" are within {:.0f}%", 100 * kNearTie);
  }
  for (size_t k = 0; k < v.left_out.size(); ++k) {
    const RunSummary& s = runs[v.left_out[k]].summary;
    line += k == 0 ? "; left out: " : ", ";
    line += runs[v.left_out[k]].policy;
    if (s.unfinished > 0) {
      line += fmt::format(" ({} unfinished)", s.unfinished);
    } else if (s.completed != ref.completed) {
      line += fmt::format(" (completed {} of {})", s.completed, s.jobs);
    } else {
      line += " (completed other jobs)";
    }
  }
  return line;
}

// ---------------------------------------------------------------------------------------------
// SVG plots.

constexpr std::array<std::string_view, 10> kPalette = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

// Run i's colour; past the palette, colours repeat and lines are dashed.
std::string_view RunColor(size_t i) { return kPalette[i % kPalette.size()]; }
std::string_view RunDash(size_t i) { return i < kPalette.size() ? "" : "6 3"; }

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
double NiceStep(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

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

// Durations from 1 ms to 10 years at readable points: 1s, 10s, 1m, 10m, 1h, 6h, 1d, 7d, 30d, ...
PlotAxis LogTimeAxis(std::string title, double lo_s, double hi_s) {
  static const std::vector<double> kMarks = {
      0.001, 0.01, 0.1, 1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000, 31536000, 315360000};
  return LogAxis(std::move(title), lo_s, hi_s, kMarks, FormatTimeTick);
}

// Ratios on a 1-2-5 log scale (1, 2, 5, 10, ... labelled "2x" with a times sign); only powers of
// ten when the range is wide.
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

// Vertical grid lines and labels for each x tick, and the axis title below.
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

// Horizontal grid lines and labels for each y tick, and the rotated axis title at the left.
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

  void Render(std::string& out) const {
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

 private:
  static std::string DashAttr(std::string_view dash) {
    return dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash);
  }

  void RenderLine(const PlotLine& line, std::string& out) const {
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
};

// ---------------------------------------------------------------------------------------------
// Data for the plots.

constexpr size_t kMaxPointsPerLine = 600;

std::vector<double> SortedCompletedJcts(const RunResult& run) {
  std::vector<double> jcts;
  for (const JobRecord& job : run.jobs) {
    if (job.completed()) jcts.push_back(ToSeconds(job.jct()));
  }
  std::sort(jcts.begin(), jcts.end());
  return jcts;
}

std::vector<double> SortedSlowdowns(const RunResult& run) {
  std::vector<double> slowdowns;
  for (const JobRecord& job : run.jobs) {
    if (!job.completed() || job.ideal_duration <= Duration::zero()) continue;
    slowdowns.push_back(ToSeconds(job.jct()) / ToSeconds(job.ideal_duration));
  }
  std::sort(slowdowns.begin(), slowdowns.end());
  return slowdowns;
}

// The empirical CDF of `sorted` as step points: (v0, 0), then (v_i, (i+1)/n). Above
// `max_points` values, keeps the values at evenly spaced ranks (the CDF's y is what stays even).
std::vector<Point> CdfPoints(const std::vector<double>& sorted, size_t max_points) {
  std::vector<Point> points;
  if (sorted.empty()) return points;
  const size_t n = sorted.size();
  points.push_back({sorted.front(), 0});
  if (n <= max_points) {
    for (size_t i = 0; i < n; ++i) {
      points.push_back({sorted[i], static_cast<double>(i + 1) / static_cast<double>(n)});
    }
    return points;
  }
  for (size_t k = 1; k <= max_points; ++k) {
    const size_t rank = (k * n + max_points - 1) / max_points;  // ceil(k n / max), in [1, n]
    points.push_back({sorted[rank - 1], static_cast<double>(rank) / static_cast<double>(n)});
  }
  return points;
}

// Thins a step function (each point holds until the next, the last until `x_end`) to at most
// `buckets` points: [first x, x_end] is cut into equal buckets, each becoming one point at its
// start holding the function's mean over the bucket. Smaller inputs come back as they are.
std::vector<Point> DownsampleSteps(const std::vector<Point>& points, double x_end, size_t buckets) {
  if (points.size() <= buckets || !(x_end > points.front().x)) return points;
  const double x0 = points.front().x;
  const double width = (x_end - x0) / static_cast<double>(buckets);
  std::vector<Point> out;
  out.reserve(buckets);
  size_t first = 0;  // the first point whose step may overlap the current bucket
  for (size_t b = 0; b < buckets; ++b) {
    const double lo = x0 + width * static_cast<double>(b);
    const double hi = b + 1 == buckets ? x_end : x0 + width * static_cast<double>(b + 1);
    while (first + 1 < points.size() && points[first + 1].x <= lo) ++first;
    double area = 0;
    for (size_t j = first; j < points.size() && points[j].x < hi; ++j) {
      const double from = std::max(points[j].x, lo);
      const double to = std::min(j + 1 < points.size() ? points[j + 1].x : x_end, hi);
      if (to > from) area += points[j].y * (to - from);
    }
    out.push_back({lo, hi > lo ? area / (hi - lo) : points[first].y});
  }
  return out;
}

// Where a run's time series ends: its last sample or last completion, whichever is later.
double SeriesEndSeconds(const RunResult& run) {
  double end = run.series.empty() ? 0 : ToSeconds(run.series.back().time);
  for (const JobRecord& job : run.jobs) {
    if (job.completed()) end = std::max(end, ToSeconds(job.finish_time));
  }
  return end;
}

// One run's series as at most kMaxPointsPerLine step points of `value(sample)`, extended to
// `x_end` so the line shows the last value holding.
template <typename ValueFn>
std::vector<Point> SeriesPoints(const RunResult& run, double x_end, ValueFn value) {
  std::vector<Point> raw;
  raw.reserve(run.series.size());
  for (const TimeSample& s : run.series) raw.push_back({ToSeconds(s.time), value(s)});
  if (raw.empty()) return raw;
  std::vector<Point> points = DownsampleSteps(raw, x_end, kMaxPointsPerLine - 1);
  if (x_end > points.back().x) points.push_back({x_end, points.back().y});
  return points;
}

std::string RunLabel(const RunResult& run) { return run.policy; }

// ---------------------------------------------------------------------------------------------
// The four plots.

void RenderJctCdf(const std::vector<RunResult>& runs, std::string& out) {
  SvgLinePlot plot;
  plot.aria_label = "CDF of job completion time per policy";
  double lo = 0;
  double hi = 0;
  bool any = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<double> jcts = SortedCompletedJcts(runs[i]);
    if (!jcts.empty()) {
      lo = any ? std::min(lo, jcts.front()) : jcts.front();
      hi = any ? std::max(hi, jcts.back()) : jcts.back();
      any = true;
    }
    plot.lines.push_back({fmt::format("{} (n={})", RunLabel(runs[i]), jcts.size()), RunColor(i),
                          RunDash(i), CdfPoints(jcts, kMaxPointsPerLine)});
  }
  plot.x = any ? LogTimeAxis("job completion time (log scale)", lo, hi)
               : LogTimeAxis("job completion time (log scale)", 1, 3600);
  plot.y = LinearAxis("fraction of completed jobs", 1, 5, false,
                      [](double v) { return fmt::format("{:g}", v); });
  plot.Render(out);
}

// A plot of one per-sample quantity over time, one line per run.
template <typename ValueFn>
void RenderSeriesPlot(const std::vector<RunResult>& runs, std::string aria_label,
                      const PlotAxis& y_axis, ValueFn value, std::string& out) {
  SvgLinePlot plot;
  plot.aria_label = std::move(aria_label);
  double x_end = 0;
  for (const RunResult& run : runs) x_end = std::max(x_end, SeriesEndSeconds(run));
  for (size_t i = 0; i < runs.size(); ++i) {
    plot.lines.push_back({RunLabel(runs[i]), RunColor(i), RunDash(i),
                          SeriesPoints(runs[i], SeriesEndSeconds(runs[i]),
                                       [&](const TimeSample& s) { return value(runs[i], s); })});
  }
  plot.x = TimeAxis("time since first submission", x_end);
  plot.y = y_axis;
  plot.Render(out);
}

void RenderUtilization(const std::vector<RunResult>& runs, std::string& out) {
  const PlotAxis y = LinearAxis("GPUs allocated / total", 1, 5, false,
                                [](double v) { return fmt::format("{:g}%", std::round(100 * v)); });
  RenderSeriesPlot(
      runs, "GPU utilisation over time per policy", y,
      [](const RunResult& run, const TimeSample& s) {
        return run.total_gpus > 0 ? static_cast<double>(s.gpus_allocated) / run.total_gpus : 0.0;
      },
      out);
}

void RenderQueueLength(const std::vector<RunResult>& runs, std::string& out) {
  int max_queue = 0;
  for (const RunResult& run : runs) {
    for (const TimeSample& s : run.series) max_queue = std::max(max_queue, s.queue_length);
  }
  const PlotAxis y = LinearAxis("queued + suspended jobs", max_queue, 5, true,
                                [](double v) { return fmt::format("{:g}", v); });
  RenderSeriesPlot(
      runs, "Queue length over time per policy", y,
      [](const RunResult&, const TimeSample& s) { return static_cast<double>(s.queue_length); },
      out);
}

// Per run, a horizontal box: whiskers p5-p95, box p25-p75, a bar at the median, and the
// median and p95 as text at the right.
void RenderSlowdownBoxes(const std::vector<RunResult>& runs, std::string& out) {
  static constexpr double kRow = 30;
  struct Box {
    double p5, p25, p50, p75, p95;
    size_t n;
  };
  std::vector<std::optional<Box>> boxes;
  double lo = 1;
  double hi = 1;
  bool any = false;
  for (const RunResult& run : runs) {
    const std::vector<double> s = SortedSlowdowns(run);
    if (s.empty()) {
      boxes.push_back(std::nullopt);
      continue;
    }
    const Box box{NearestRankPercentile(s, 5),  NearestRankPercentile(s, 25),
                  NearestRankPercentile(s, 50), NearestRankPercentile(s, 75),
                  NearestRankPercentile(s, 95), s.size()};
    lo = any ? std::min(lo, box.p5) : box.p5;
    hi = any ? std::max(hi, box.p95) : box.p95;
    any = true;
    boxes.push_back(box);
  }
  PlotFrame f;
  f.left = 170;
  f.right = 260;
  f.height = f.top + f.bottom + kRow * static_cast<double>(std::max<size_t>(1, runs.size()));
  const PlotAxis x = LogRatioAxis("slowdown = JCT / ideal run time (log scale)", std::min(lo, 1.0),
                                  std::max(hi, 1.0));
  OpenSvg(f.width, f.height, "Slowdown percentiles per policy", out);
  RenderXAxis(f, x, out);
  RenderPlotBorder(f, out);
  for (size_t i = 0; i < runs.size(); ++i) {
    const double cy = f.top + kRow * (static_cast<double>(i) + 0.5);
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\"><title>{}</title>{}"
                   "</text>\n",
                   f.left - 8, cy + 4, HtmlEscape(runs[i].policy),
                   HtmlEscape(Truncate(runs[i].policy, 22)));
    const double text_x = f.X(1) + 10;
    if (!boxes[i]) {
      fmt::format_to(std::back_inserter(out),
                     "<text class=\"title\" x=\"{:.1f}\" y=\"{:.1f}\">no completed jobs</text>\n",
                     text_x, cy + 4);
      continue;
    }
    const Box& b = *boxes[i];
    const auto px = [&](double v) { return f.X(x.Fraction(v)); };
    const std::string_view color = RunColor(i);
    fmt::format_to(std::back_inserter(out),
                   "<g stroke=\"{0}\"><line x1=\"{1:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" "
                   "y2=\"{2:.1f}\"/>"
                   "<line x1=\"{1:.1f}\" y1=\"{4:.1f}\" x2=\"{1:.1f}\" y2=\"{5:.1f}\"/>"
                   "<line x1=\"{3:.1f}\" y1=\"{4:.1f}\" x2=\"{3:.1f}\" y2=\"{5:.1f}\"/>"
                   "<rect x=\"{6:.1f}\" y=\"{7:.1f}\" width=\"{8:.1f}\" height=\"16\" "
                   "fill=\"{0}\" fill-opacity=\"0.3\"/>"
                   "<line x1=\"{9:.1f}\" y1=\"{7:.1f}\" x2=\"{9:.1f}\" y2=\"{10:.1f}\" "
                   "stroke-width=\"3\"/></g>\n",
                   color, px(b.p5), cy, px(b.p95), cy - 5, cy + 5, px(b.p25), cy - 8,
                   std::max(1.0, px(b.p75) - px(b.p25)), px(b.p50), cy + 8);
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{:.1f}\" y=\"{:.1f}\">p50 {:.2f}\u00d7 \u00b7 p95 {:.2f}\u00d7 "
                   "\u00b7 n={}</text>\n",
                   text_x, cy + 4, b.p50, b.p95, b.n);
  }
  out += "</svg>\n";
}

// ---------------------------------------------------------------------------------------------
// HTML page.

constexpr std::string_view kCss =
    R"(body{margin:24px auto;max-width:1100px;padding:0 16px;color:#222;background:#fff;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:22px;margin:0 0 10px}
h2{font-size:17px;margin:30px 0 4px;padding-bottom:4px;border-bottom:1px solid #ddd}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:14px;margin:0}
dl.meta dt{color:#666}
dl.meta dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
div.scroll{overflow-x:auto}
table.summary{border-collapse:collapse;font-size:12.5px;width:100%}
table.summary th,table.summary td{padding:4px 6px;border-bottom:1px solid #eee;white-space:nowrap;
text-align:right}
table.summary th{background:#f5f5f5;font-weight:600}
table.summary th:first-child,table.summary td:first-child{text-align:left}
table.summary td{font-variant-numeric:tabular-nums}
table.summary tr.best td{background:#eef6ee;font-weight:600}
span.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
p.note{color:#666;font-size:13px;margin:4px 0 8px}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:12px;fill:#333}
svg .grid{stroke:#e6e6e6;stroke-width:1}
svg .frame{fill:none;stroke:#999}
svg text.title{fill:#666}
footer{margin-top:32px;color:#888;font-size:12px}
)";

// The report leaves out the last column (wall time), so the same run gives the same bytes.
void RenderSummaryTable(const std::vector<RunResult>& runs, std::string& out) {
  static_assert(kColumns.back().header == "wall s");
  const bool with_qos = AnyQos(runs);
  const std::vector<Column> columns = TableColumns(with_qos);
  const size_t shown = columns.size() - 1;
  const std::optional<size_t> best = BestRun(runs);
  out += "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr>";
  for (size_t c = 0; c < shown; ++c) {
    fmt::format_to(std::back_inserter(out), "<th>{}</th>", columns[c].header);
  }
  out += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    out += best == i ? "<tr class=\"best\">" : "<tr>";
    const std::vector<std::string> cells = SummaryCells(runs[i], with_qos);
    for (size_t c = 0; c < shown; ++c) {
      out += "<td>";
      if (c == 0) {
        fmt::format_to(std::back_inserter(out),
                       "<span class=\"swatch\" style=\"background:{}\"></span>", RunColor(i));
      }
      out += HtmlEscape(cells[c]);
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  fmt::format_to(std::back_inserter(out), "<p class=\"note\">{}</p>\n",
                 HtmlEscape(BestRunLine(runs)));
}

bool AnySharing(const std::vector<RunResult>& runs) {
  return std::ranges::any_of(runs, [](const RunResult& run) {
    return run.sharing.shared_gpu_s > 0 || run.sharing.migrations > 0;
  });
}

// GPU sharing as the ground truth saw it, one row per run (docs/sharing.md).
void RenderSharingTable(const std::vector<RunResult>& runs, std::string& out) {
  out +=
      "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr><th>policy</th>"
      "<th>GPU memory used</th><th>SM used</th><th>shared GPU-h</th><th>jobs shared</th>"
      "<th>p95 slowdown</th><th>max slowdown</th><th>OOM restarts</th><th>GPU-h lost</th>"
      "<th>migrations</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const SharingSummary& s = runs[i].sharing;
    fmt::format_to(std::back_inserter(out),
                   "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
                   "<td>{:.1f}%</td><td>{:.1f}%</td><td>{:.0f}</td><td>{}</td><td>{:.2f}x</td>"
                   "<td>{:.2f}x</td><td>{}</td><td>{:.1f}</td><td>{}</td></tr>\n",
                   RunColor(i), HtmlEscape(runs[i].policy), 100 * s.gpu_mem_utilization,
                   100 * s.gpu_sm_utilization, s.shared_gpu_s / 3600, s.jobs_shared, s.p95_slowdown,
                   s.max_slowdown, s.oom_restarts, s.oom_lost_gpu_s / 3600, s.migrations);
  }
  out += "</tbody></table></div>\n";
}

std::string RenderHtml(const std::vector<RunResult>& runs, const ReportMeta& meta) {
  const std::string title = meta.title.empty() ? "dlsched simulation report" : meta.title;
  std::string out;
  out.reserve(64 * 1024);
  fmt::format_to(std::back_inserter(out),
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<title>{0}</title>\n<style>\n{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
                 HtmlEscape(title), kCss);
  fmt::format_to(std::back_inserter(out),
                 "<dl class=\"meta\"><dt>Trace</dt><dd>{}</dd><dt>Cluster</dt><dd>{}</dd>"
                 "<dt>Seed</dt><dd>{}</dd><dt>Policies</dt><dd>{}</dd></dl>\n",
                 HtmlEscape(meta.trace), HtmlEscape(meta.cluster), meta.seed, runs.size());

  out += "<h2>Summary</h2>\n";
  RenderSummaryTable(runs, out);

  out +=
      "<h2>Job completion time</h2>\n<p class=\"note\">Empirical CDF of completed jobs' "
      "completion time (submission to finish).</p>\n";
  RenderJctCdf(runs, out);
  out +=
      "<h2>GPU utilisation</h2>\n<p class=\"note\">Share of the cluster's GPUs allocated "
      "(time-weighted means when thinned).</p>\n";
  RenderUtilization(runs, out);
  out += "<h2>Queue length</h2>\n<p class=\"note\">Jobs waiting to start or resume.</p>\n";
  RenderQueueLength(runs, out);
  out +=
      "<h2>Slowdown</h2>\n<p class=\"note\">JCT over the job's ideal run time; whiskers "
      "p5&ndash;p95, box p25&ndash;p75, bar at the median.</p>\n";
  RenderSlowdownBoxes(runs, out);
  if (AnySharing(runs)) {
    out +=
        "<h2>GPU sharing</h2>\n<p class=\"note\">Memory and SM use of running jobs over the "
        "cluster's (ground-truth means); slowdown here is interference only: the largest "
        "1&nbsp;/&nbsp;speed each shared job ran at, p95 and max over those jobs; OOM restarts "
        "are runs killed because a shared GPU ran out of memory, and GPU-h lost the progress "
        "they threw away since their last checkpoint.</p>\n";
    RenderSharingTable(runs, out);
  }
  fmt::format_to(std::back_inserter(out),
                 "<footer>Generated by dlsched {}.</footer>\n</body>\n</html>\n", kVersion);
  return out;
}

Status StreamStatus(const std::ostream& out, std::string_view what) {
  if (out) return Status::Ok();
  return IoError(fmt::format("writing the {} failed", what));
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (seconds < 0) return "-" + FormatDuration(-seconds);
  // Thresholds sit where one-decimal rounding would reach the next unit (59.95 s -> "1.0m").
  if (seconds < 59.95) return fmt::format("{:.1f}s", seconds);
  if (seconds < 59.95 * 60) return fmt::format("{:.1f}m", seconds / 60);
  if (seconds < 23.95 * 3600) return fmt::format("{:.1f}h", seconds / 3600);
  return fmt::format("{:.1f}d", seconds / 86400);
}

void WriteComparisonTable(const std::vector<RunResult>& runs, std::ostream& out) {
  const bool with_qos = AnyQos(runs);
  const std::vector<Column> columns = TableColumns(with_qos);
  std::vector<std::vector<std::string>> rows;
  rows.reserve(runs.size());
  for (const RunResult& run : runs) rows.push_back(SummaryCells(run, with_qos));
  std::vector<size_t> widths(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    widths[c] = columns[c].header.size();
    for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto write_row = [&](const auto& cells) {
    std::string line;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) line += "  ";
      if (columns[c].numeric) {
        fmt::format_to(std::back_inserter(line), "{:>{}}", cells[c], widths[c]);
      } else {
        fmt::format_to(std::back_inserter(line), "{:<{}}", cells[c], widths[c]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  std::vector<std::string_view> headers(columns.size());
  size_t total_width = 2 * (columns.size() - 1);
  for (size_t c = 0; c < columns.size(); ++c) {
    headers[c] = columns[c].header;
    total_width += widths[c];
  }
  write_row(headers);
  out << std::string(total_width, '-') << "\n";
  for (const auto& row : rows) write_row(row);
  out << BestRunLine(runs) << "\n";
}

std::string RunsToJson(const std::vector<RunResult>& runs, const JsonMeta& meta) {
  using Json = nlohmann::ordered_json;
  Json doc = Json::object();
  doc["trace"] = meta.trace;
  doc["cluster"] = meta.cluster;
  doc["seed"] = meta.seed;
  doc["dlsched_version"] = kVersion;
  Json& list = doc["runs"] = Json::array();
  const bool with_qos = AnyQos(runs);
  for (const RunResult& run : runs) {
    const RunSummary& s = run.summary;
    Json r = Json::object();
    r["policy"] = run.policy;
    r["jobs"] = s.jobs;
    r["completed"] = s.completed;
    r["rejected"] = s.rejected;
    r["unfinished"] = s.unfinished;
    r["avg_jct_s"] = s.avg_jct_s;
    r["p50_jct_s"] = s.p50_jct_s;
    r["p95_jct_s"] = s.p95_jct_s;
    r["p99_jct_s"] = s.p99_jct_s;
    r["avg_queue_s"] = s.avg_queue_s;
    r["makespan_s"] = s.makespan_s;
    r["gpu_utilization"] = s.gpu_utilization;
    r["preemptions"] = s.preemptions;
    r["avg_slowdown"] = s.avg_slowdown;
    r["p95_slowdown"] = s.p95_slowdown;
    r["avg_ftf"] = s.avg_ftf;
    r["max_ftf"] = s.max_ftf;
    r["fragmentation_blocked_s"] = s.fragmentation_blocked_s;
    const SharingSummary& sharing = run.sharing;
    r["gpu_mem_utilization"] = sharing.gpu_mem_utilization;
    r["migrations"] = sharing.migrations;
    r["oom_restarts"] = sharing.oom_restarts;
    r["sharing"] = {{"gpu_sm_utilization", sharing.gpu_sm_utilization},
                    {"shared_gpu_s", sharing.shared_gpu_s},
                    {"jobs_shared", sharing.jobs_shared},
                    {"max_slowdown", sharing.max_slowdown},
                    {"p95_slowdown", sharing.p95_slowdown},
                    {"oom_lost_gpu_s", sharing.oom_lost_gpu_s}};
    Json& causes = r["pending_s_by_cause"] = Json::object();
    for (int c = 0; c < kNumPendingCauses; ++c) {
      causes[std::string(PendingCauseName(static_cast<PendingCause>(c)))] = s.pending_s_by_cause[c];
    }
    Json& tenants = r["tenant_share"] = Json::object();
    for (const auto& [tenant, share] : s.tenant_share) tenants[tenant] = share;
    Json& types = r["gpu_type_utilization"] = Json::object();
    for (const auto& [type, utilization] : s.gpu_type_utilization) types[type] = utilization;
    r["wall_s"] = s.wall_s;
    if (run.services.services > 0) {
      r["services"] = {{"services", run.services.services},
                       {"reserved_gpus", run.services.reserved_gpus},
                       {"lent_gpu_s", run.services.lent_gpu_s},
                       {"yields", run.services.yields},
                       {"shortfall_gpu_s", run.services.shortfall_gpu_s}};
    }
    if (with_qos) {
      r["qos_jobs"] = s.qos_jobs;
      r["qos_met_rate"] = s.qos_met_rate;
      r["qos_met_rate_strict"] = s.qos_met_rate_strict;
      r["qos_met_rate_soft"] = s.qos_met_rate_soft;
      r["best_effort_avg_jct_s"] = s.best_effort_avg_jct_s;
    }
    list.push_back(std::move(r));
  }
  // With error_handler_t::replace, dump() cannot throw on bad UTF-8 (its only input-driven
  // exception), so nothing escapes this boundary.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

// The cause a job's sampled waiting time was longest in; "" when no sample saw it wait.
std::string_view DominantWaitCause(const JobRecord& job) {
  const auto& by_cause = job.pending_s_by_cause;
  const auto longest = std::max_element(by_cause.begin(), by_cause.end());
  if (*longest <= 0) return "";
  return PendingCauseName(static_cast<PendingCause>(longest - by_cause.begin()));
}

}  // namespace

Status WriteJobsCsv(const RunResult& run, std::ostream& out) {
  out << "job_id,name,user,queue,num_gpus,state,submit_s,start_s,finish_s,jct_s,queue_s,ideal_s,"
         "run_s,slowdown,preemptions,wait_cause,reason\n";
  const auto seconds_or_empty = [](bool present, double seconds) {
    return present ? fmt::format("{:.3f}", seconds) : std::string();
  };
  for (const JobRecord& job : run.jobs) {
    const bool started = job.first_start != kTimeNever;
    const bool finished = job.finish_time != kTimeNever;
    const bool completed = job.completed() && finished;
    const bool has_slowdown = completed && job.ideal_duration > Duration::zero();
    out << fmt::format(
        "{},{},{},{},{},{},{:.3f},{},{},{},{},{:.3f},{:.3f},{},{},{},{}\n", job.id.value(),
        CsvCell(job.name), CsvCell(job.user), CsvCell(job.queue), job.num_gpus,
        JobStateName(job.final_state), ToSeconds(job.submit_time),
        seconds_or_empty(started, started ? ToSeconds(job.first_start) : 0),
        seconds_or_empty(finished, finished ? ToSeconds(job.finish_time) : 0),
        seconds_or_empty(completed, completed ? ToSeconds(job.jct()) : 0),
        seconds_or_empty(started, started ? ToSeconds(job.first_queue_delay()) : 0),
        ToSeconds(job.ideal_duration), ToSeconds(job.run_time),
        seconds_or_empty(has_slowdown,
                         has_slowdown ? ToSeconds(job.jct()) / ToSeconds(job.ideal_duration) : 0),
        job.preemptions, DominantWaitCause(job), CsvCell(job.reason));
  }
  return StreamStatus(out, "jobs CSV");
}

Status WriteHtmlReport(const std::vector<RunResult>& runs, const ReportMeta& meta,
                       std::ostream& out) {
  out << RenderHtml(runs, meta);
  return StreamStatus(out, "HTML report");
}

}  // namespace dlsched::sim
