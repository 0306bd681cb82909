// The HTML report of `dlsched simulate` (WriteHtmlReport, declared in sim/report.h): the
// comparison table and the plots, drawn with sim/svg.h.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/version.h"
#include "dlsched/model/job.h"
#include "sim/report.h"
#include "sim/report_table.h"
#include "sim/report_theme.h"
#include "sim/svg.h"

namespace dlsched::sim {
namespace {

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
                   f.left - 8, cy + 4, HtmlEscape(RunLabel(runs[i])),
                   HtmlEscape(Truncate(RunLabel(runs[i]), 22)));
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

// The report's layout; its palette, type and tables are the dashboard's (ReportTheme, before it).
constexpr std::string_view kCss =
    R"(body{margin:24px auto;max-width:1100px;padding:0 16px;background:var(--card)}
h1{font-size:22px;margin:0 0 10px}
h2{margin:30px 0 4px;padding-bottom:4px;border-bottom:1px solid var(--line)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0;font-family:var(--mono);word-break:break-all}
div.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px}
table.summary{font-size:12.5px}
table.summary th,table.summary td{padding:4px 6px;text-align:right}
table.summary th:first-child,table.summary td:first-child{text-align:left}
table.summary tr.best td{background:var(--good-bg);font-weight:600}
span.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
p.note{color:var(--muted);font-size:13px;margin:4px 0 8px}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:12px;fill:var(--fg)}
svg .grid{stroke:var(--line);stroke-width:1}
svg .frame{fill:none;stroke:var(--other)}
svg text.title{fill:var(--muted)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
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
                   RunColor(i), HtmlEscape(RunLabel(runs[i])), 100 * s.gpu_mem_utilization,
                   100 * s.gpu_sm_utilization, s.shared_gpu_s / 3600, s.jobs_shared, s.p95_slowdown,
                   s.max_slowdown, s.oom_restarts, s.oom_lost_gpu_s / 3600, s.migrations);
  }
  out += "</tbody></table></div>\n";
}

// The share of the run's GPUs allocated in each of `buckets` equal slices of [t0, t1], weighted
// by time (a sample holds until the next one, the last one until t1; 0 before the first).
std::vector<double> AllocationBuckets(const RunResult& run, Timestamp t0, Timestamp t1,
                                      int buckets) {
  std::vector<double> share(buckets, 0.0);
  const double span = ToSeconds(t1 - t0);
  if (span <= 0 || run.total_gpus <= 0) return share;
  const double width = span / buckets;
  for (size_t i = 0; i < run.series.size(); ++i) {
    const double v = static_cast<double>(run.series[i].gpus_allocated) / run.total_gpus;
    const double a = std::max(0.0, ToSeconds(run.series[i].time - t0));
    const double b =
        i + 1 < run.series.size() ? std::min(span, ToSeconds(run.series[i + 1].time - t0)) : span;
    for (int k = static_cast<int>(a / width); k < buckets && k * width < b; ++k) {
      const double overlap = std::min(b, (k + 1) * width) - std::max(a, k * width);
      if (overlap > 0) share[k] += v * overlap / width;
    }
  }
  return share;
}

// A heat map of GPU allocation over time: one row per run, 60 columns over the runs' common
// window, darker for more GPUs allocated; each cell's title gives its share.
void RenderAllocationHeatMap(const std::vector<RunResult>& runs, std::string& out) {
  constexpr int kBuckets = 60;
  constexpr double kLeft = 170, kCell = 10, kRow = 22;
  std::optional<Timestamp> t0, t1;
  for (const RunResult& run : runs) {
    if (run.series.empty()) continue;
    t0 = t0 ? std::min(*t0, run.series.front().time) : run.series.front().time;
    t1 = t1 ? std::max(*t1, run.series.back().time) : run.series.back().time;
  }
  if (!t0 || *t1 <= *t0) return;
  const double width = kLeft + kBuckets * kCell + 10;
  const double height = kRow * static_cast<double>(runs.size()) + 24;
  out +=
      "<h2>GPU allocation over time</h2>\n<p class=\"note\">Share of the GPUs allocated, per "
      "policy, in 60 equal slices of the run (time-weighted; darker is more).</p>\n";
  OpenSvg(width, height, "GPU allocation heat map, one row per policy", out);
  for (size_t i = 0; i < runs.size(); ++i) {
    const double y = kRow * static_cast<double>(i);
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n", kLeft - 8,
                   y + 15, HtmlEscape(Truncate(runs[i].policy, 22)));
    const std::vector<double> share = AllocationBuckets(runs[i], *t0, *t1, kBuckets);
    for (int k = 0; k < kBuckets; ++k) {
      fmt::format_to(std::back_inserter(out),
                     "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                     "fill=\"hsl(215,70%,{:.0f}%)\"><title>{}: {:.0f}% allocated</title></rect>\n",
                     kLeft + k * kCell, y + 2, kCell, kRow - 4, 96 - 60 * share[k],
                     HtmlEscape(runs[i].policy), 100 * share[k]);
    }
  }
  fmt::format_to(std::back_inserter(out),
                 "<text x=\"{:.0f}\" y=\"{:.0f}\">0 h</text><text x=\"{:.0f}\" y=\"{:.0f}\" "
                 "text-anchor=\"end\">{:.1f} h</text>\n</svg>\n",
                 kLeft, height - 6, kLeft + kBuckets * kCell, height - 6,
                 ToSeconds(*t1 - *t0) / 3600);
}

// Why jobs waited, per run: the sampled job-hours of each cause any run has, with its share of
// the run's waiting (SimOptions::explain_every); nothing when no run sampled any.
void RenderWaitCauses(const std::vector<RunResult>& runs, std::string& out) {
  std::vector<size_t> causes;
  for (size_t c = 0; c < static_cast<size_t>(kNumPendingCauses); ++c) {
    if (std::ranges::any_of(
            runs, [c](const RunResult& r) { return r.summary.pending_s_by_cause[c] > 0; })) {
      causes.push_back(c);
    }
  }
  if (causes.empty()) return;
  out +=
      "<h2>Why jobs waited</h2>\n<p class=\"note\">Job-hours of waiting by the policy's "
      "why-pending cause (sampled), and each cause's share of the run's waiting.</p>\n"
      "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr><th>policy</th>";
  for (size_t c : causes) {
    out += "<th>" + HtmlEscape(PendingCauseName(static_cast<PendingCause>(c))) + "</th>";
  }
  out += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& by_cause = runs[i].summary.pending_s_by_cause;
    double total = 0;
    for (double s : by_cause) total += s;
    fmt::format_to(std::back_inserter(out),
                   "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>",
                   RunColor(i), HtmlEscape(runs[i].policy));
    for (size_t c : causes) {
      fmt::format_to(std::back_inserter(out), "<td>{:.1f} h ({:.0f}%)</td>", by_cause[c] / 3600,
                     total > 0 ? 100 * by_cause[c] / total : 0.0);
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

// Per tenant (JobSpec::queue) of each run: jobs, completed ones, their mean JCT and the tenant's
// share of the allocated GPU-time; nothing unless some run has two tenants or more.
void RenderTenants(const std::vector<RunResult>& runs, std::string& out) {
  struct Tenant {
    int jobs = 0;
    int completed = 0;
    double jct_s = 0;
  };
  std::vector<std::map<std::string, Tenant>> per_run(runs.size());
  bool several = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const JobRecord& job : runs[i].jobs) {
      Tenant& t = per_run[i][job.queue];
      ++t.jobs;
      if (job.completed()) {
        ++t.completed;
        t.jct_s += ToSeconds(job.jct());
      }
    }
    several = several || per_run[i].size() > 1;
  }
  if (!several) return;
  out +=
      "<h2>Tenants</h2>\n<p class=\"note\">Per tenant (the jobs' queue): its jobs, those "
      "completed and their mean completion time, and its share of the GPU-time allocated.</p>\n"
      "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr><th>policy</th>"
      "<th>tenant</th><th>jobs</th><th>completed</th><th>mean JCT</th><th>GPU-time share</th>"
      "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [name, t] : per_run[i]) {
      double share = 0;
      for (const auto& [tenant, s] : runs[i].summary.tenant_share) {
        if (tenant == name) share = s;
      }
      fmt::format_to(std::back_inserter(out),
                     "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                     RunColor(i), HtmlEscape(runs[i].policy),
                     name.empty() ? std::string("(none)") : HtmlEscape(name), t.jobs, t.completed,
                     t.completed > 0 ? fmt::format("{:.2f} h", t.jct_s / t.completed / 3600)
                                     : std::string("&mdash;"),
                     100 * share);
    }
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
                 "<title>{0}</title>\n<style>\n{1}{2}</style>\n</head>\n<body>\n<h1>{0}</h1>\n",
                 HtmlEscape(title), ReportTheme(), kCss);
  fmt::format_to(std::back_inserter(out),
                 "<dl class=\"meta\"><dt>Trace</dt><dd>{}</dd><dt>Cluster</dt><dd>{}</dd>"
                 "<dt>Seed</dt><dd>{}</dd><dt>Policies</dt><dd>{}</dd><dt>Estimates</dt>"
                 "<dd>{}</dd></dl>\n",
                 HtmlEscape(meta.trace), HtmlEscape(meta.cluster), meta.seed, runs.size(),
                 HtmlEscape(DescribeAllEstimates(runs)));

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
  RenderAllocationHeatMap(runs, out);
  RenderWaitCauses(runs, out);
  RenderTenants(runs, out);
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

}  // namespace

Status WriteHtmlReport(const std::vector<RunResult>& runs, const ReportMeta& meta,
                       std::ostream& out) {
  out << RenderHtml(runs, meta);
  return StreamStatus(out, "HTML report");
}

}  // namespace dlsched::sim
