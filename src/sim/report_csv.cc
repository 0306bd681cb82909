// The per-job CSV of `dlsched simulate` (WriteJobsCsv, declared in sim/report.h).

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <string_view>

#include "dlsched/model/job.h"
#include "sim/report.h"
#include "sim/report_table.h"

namespace dlsched::sim {
namespace {

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

}  // namespace dlsched::sim
