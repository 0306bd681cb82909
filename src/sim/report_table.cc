// The text comparison table of `dlsched simulate` (FormatDuration and WriteComparisonTable,
// declared in sim/report.h) and its pieces the HTML report shares (sim/report_table.h).

#include "sim/report_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/model/job.h"
#include "sim/report.h"

namespace dlsched::sim {
namespace {

// Shown before "wall s" only when some run had jobs with a deadline, so the outputs of runs
// without QoS targets stay as they were.
constexpr Column kQosColumn = {"qos met", true};

// Appended by `timings`: the cycle count and the wall time of a cycle, in ms.
constexpr std::array<Column, 4> kTimingColumns = {{
    {"cycles", true},
    {"cycle p50 ms", true},
    {"cycle p99 ms", true},
    {"cycle max ms", true},
}};

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

}  // namespace

bool AnyQos(const std::vector<RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const RunResult& run) { return run.summary.qos_jobs > 0; });
}

std::vector<Column> TableColumns(bool with_qos) {
  std::vector<Column> columns(kColumns.begin(), kColumns.end());
  if (with_qos) columns.insert(columns.end() - 1, kQosColumn);
  return columns;
}

std::vector<std::string> SummaryCells(const RunResult& run, bool with_qos) {
  const RunSummary& s = run.summary;
  const bool any_completed = s.completed > 0;
  const auto duration = [&](double seconds) {
    return any_completed ? FormatDuration(seconds) : std::string("-");
  };
  std::vector<std::string> cells = {
      RunLabel(run),
      s.cpu_jobs > 0 ? fmt::format("{} ({} CPU)", s.jobs, s.cpu_jobs) : std::to_string(s.jobs),
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

std::string RunLabel(const RunResult& run) {
  return run.oracle ? run.policy + " (oracle)" : run.policy;
}

std::string DescribeEstimates(const RunResult& run) {
  std::string_view runtimes = run.runtime_estimator;
  if (run.runtime_estimator == "history") {
    runtimes = "history (past jobs of the same user, model and GPU count)";
  } else if (run.runtime_estimator == "stated") {
    runtimes = "users' estimates";
  } else if (run.runtime_estimator == "oracle") {
    runtimes = "the oracle (true run times)";
  }
  return fmt::format("run times from {}; speeds from {}", runtimes, run.speed_estimator);
}

std::string DescribeAllEstimates(const std::vector<RunResult>& runs) {
  std::vector<std::string> kinds;
  for (const RunResult& run : runs) {
    std::string kind = DescribeEstimates(run);
    if (std::ranges::find(kinds, kind) == kinds.end()) kinds.push_back(std::move(kind));
  }
  if (kinds.empty()) return "none (no run)";
  std::string text;
  for (size_t k = 0; k < kinds.size(); ++k) text += (k == 0 ? "" : " | ") + kinds[k];
  return text;
}

std::string EstimatesLine(const std::vector<RunResult>& runs) {
  return "Estimates the policies saw: " + DescribeAllEstimates(runs);
}

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
    return fmt::format("{} ({})", RunLabel(runs[i]), FormatDuration(runs[i].summary.avg_jct_s));
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
    line += RunLabel(runs[v.left_out[k]]);
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

Status StreamStatus(const std::ostream& out, std::string_view what) {
  if (out) return Status::Ok();
  return IoError(fmt::format("writing the {} failed", what));
}

std::string FormatDuration(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (seconds < 0) return std::string("-").append(FormatDuration(-seconds));
  // Thresholds sit where one-decimal rounding would reach the next unit (59.95 s -> "1.0m").
  if (seconds < 59.95) return fmt::format("{:.1f}s", seconds);
  if (seconds < 59.95 * 60) return fmt::format("{:.1f}m", seconds / 60);
  if (seconds < 23.95 * 3600) return fmt::format("{:.1f}h", seconds / 3600);
  return fmt::format("{:.1f}d", seconds / 86400);
}

void WriteComparisonTable(const std::vector<RunResult>& runs, std::ostream& out, bool timings) {
  const bool with_qos = AnyQos(runs);
  std::vector<Column> columns = TableColumns(with_qos);
  if (timings) columns.insert(columns.end(), kTimingColumns.begin(), kTimingColumns.end());
  std::vector<std::vector<std::string>> rows;
  rows.reserve(runs.size());
  for (const RunResult& run : runs) {
    rows.push_back(SummaryCells(run, with_qos));
    if (timings) {
      const CycleTimes& t = run.summary.cycle_times;
      const auto ms = [](double seconds) { return fmt::format("{:.3f}", 1e3 * seconds); };
      rows.back().insert(rows.back().end(),
                         {std::to_string(t.cycles), ms(t.p50_s), ms(t.p99_s), ms(t.max_s)});
    }
  }
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
  out << EstimatesLine(runs) << "\n";
}

}  // namespace dlsched::sim
