#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "sim/metrics.h"

// The comparison table, shared by the text and HTML outputs, and the pieces the report writers
// (report_*.cc) share. Internal to them: callers use sim/report.h.

namespace dlsched::sim {

struct Column {
  std::string_view header;
  bool numeric;
};

inline constexpr std::array<Column, 14> kColumns = {{
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

// Whether some run had jobs with a deadline (qos_jobs > 0).
bool AnyQos(const std::vector<RunResult>& runs);

// The table's columns: kColumns, with kQosColumn before the last ("wall s") when `with_qos`.
std::vector<Column> TableColumns(bool with_qos);

// One table row, in TableColumns(with_qos) order. "-" where a figure has no data behind it.
std::vector<std::string> SummaryCells(const RunResult& run, bool with_qos);

// The run's name in every table: its policy, suffixed " (oracle)" for a run that saw true run
// times and speeds (RunResult::oracle).
std::string RunLabel(const RunResult& run);

// What the run's policy was told, for humans: "run times from history (...); speeds from ...".
std::string DescribeEstimates(const RunResult& run);

// The distinct DescribeEstimates of the runs, in run order, joined by " | "; "none (no run)".
std::string DescribeAllEstimates(const std::vector<RunResult>& runs);
// "Estimates the policies saw: <DescribeAllEstimates>": the line after "Best avg JCT".
std::string EstimatesLine(const std::vector<RunResult>& runs);

// The clear winner of Judge, if any: the run the HTML report highlights.
std::optional<size_t> BestRun(const std::vector<RunResult>& runs);

// The "Best avg JCT" line that follows the table (see WriteComparisonTable).
std::string BestRunLine(const std::vector<RunResult>& runs);

// Ok while `out` is good; otherwise IoError "writing the <what> failed".
Status StreamStatus(const std::ostream& out, std::string_view what);

}  // namespace dlsched::sim
