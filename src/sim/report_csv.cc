// The per-job CSV of `dlsched simulate` (WriteJobsCsv, declared in sim/report.h).

#include <algorithm>
#include <charconv>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"
#include "sim/report.h"
#include "sim/report_table.h"

namespace dlsched::sim {
namespace {

// RFC 4180: appends `text` as one cell, quoted where it holds a comma, quote or line break,
// inner quotes doubled.
void AppendCsvCell(std::string& row, std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    row += text;
    return;
  }
  row += '"';
  for (char c : text) {
    if (c == '"') row += '"';
    row += c;
  }
  row += '"';
}

template <typename Integer>
void AppendInteger(std::string& row, Integer value) {
  char digits[24];
  const std::to_chars_result written = std::to_chars(std::begin(digits), std::end(digits), value);
  row.append(digits, written.ptr);
}

// Appends `value` with three decimals, as printf's "%.3f" and fmt's "{:.3f}" write it (correctly
// rounded, halves to even, the sign wherever its bit is set): the same bytes, without a format
// string parsed per cell or fmt's exact fixed-precision path (which was more than a third of
// srtf's instructions on Philly, in a replay that wrote its jobs CSV).
void AppendSeconds(std::string& row, double value) {
  // A double's fixed notation has at most 309 integer digits, a sign, a point and 3 decimals.
  char text[320];
  const std::to_chars_result written =
      std::to_chars(std::begin(text), std::end(text), value, std::chars_format::fixed, 3);
  DS_CHECK(written.ec == std::errc()) << "a number too long for the jobs CSV";
  row.append(text, written.ptr);
}

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
  std::string row;
  // A cell and the comma after it: seconds, or nothing where the figure does not exist.
  const auto seconds_or_empty = [&](bool present, double seconds) {
    if (present) AppendSeconds(row, seconds);
    row += ',';
  };
  for (const JobRecord& job : run.jobs) {
    const bool started = job.first_start != kTimeNever;
    const bool finished = job.finish_time != kTimeNever;
    const bool completed = job.completed() && finished;
    const bool has_slowdown = completed && job.ideal_duration > Duration::zero();
    row.clear();
    AppendInteger(row, job.id.value());
    row += ',';
    AppendCsvCell(row, job.name);
    row += ',';
    AppendCsvCell(row, job.user);
    row += ',';
    AppendCsvCell(row, job.queue);
    row += ',';
    AppendInteger(row, job.num_gpus);
    row += ',';
    row += JobStateName(job.final_state);
    row += ',';
    AppendSeconds(row, ToSeconds(job.submit_time));
    row += ',';
    seconds_or_empty(started, started ? ToSeconds(job.first_start) : 0);
    seconds_or_empty(finished, finished ? ToSeconds(job.finish_time) : 0);
    seconds_or_empty(completed, completed ? ToSeconds(job.jct()) : 0);
    seconds_or_empty(started, started ? ToSeconds(job.first_queue_delay()) : 0);
    AppendSeconds(row, ToSeconds(job.ideal_duration));
    row += ',';
    AppendSeconds(row, ToSeconds(job.run_time));
    row += ',';
    seconds_or_empty(has_slowdown,
                     has_slowdown ? ToSeconds(job.jct()) / ToSeconds(job.ideal_duration) : 0);
    AppendInteger(row, job.preemptions);
    row += ',';
    row += DominantWaitCause(job);
    row += ',';
    AppendCsvCell(row, job.reason);
    row += '\n';
    out << row;
  }
  return StreamStatus(out, "jobs CSV");
}

}  // namespace dlsched::sim
