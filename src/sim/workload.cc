#include "sim/workload.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "sim/workload_chronus.h"
#include "sim/workload_gavel_mix.h"
#include "sim/workload_readers.h"
#include "sim/workload_synthetic.h"

namespace dlsched::sim {
namespace {

constexpr std::string_view kValidPrefixes =
    "philly:PATH, gavel:PATH, tiresias:PATH, chronus:PATH, alibaba:PATH, csv:PATH, "
    "synthetic[:k=v,...]";

// Orders jobs by submit time, keeping file order among equal times, and shifts all times
// (deadlines included) so the first submission is at t = 0.
std::vector<JobSpec> SortAndShift(std::vector<JobSpec> jobs) {
  const auto by_submit = [](const JobSpec& a, const JobSpec& b) {
    return a.submit_time < b.submit_time;
  };
  if (std::is_sorted(jobs.begin(), jobs.end(), by_submit)) {
    // Common: a reader that sorted already, or a trace in time order. Shift in place.
    if (!jobs.empty() && jobs.front().submit_time != kTimeZero) {
      const Duration shift = jobs.front().submit_time.time_since_epoch();
      for (JobSpec& spec : jobs) {
        spec.submit_time -= shift;
        if (spec.deadline) *spec.deadline -= shift;
      }
    }
    return jobs;
  }
  // Sorting indexes, then moving each spec once, is cheaper than stable-sorting the large
  // JobSpecs themselves.
  std::vector<uint32_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&jobs](uint32_t a, uint32_t b) {
    return jobs[a].submit_time < jobs[b].submit_time;
  });
  std::vector<JobSpec> sorted;
  sorted.reserve(jobs.size());
  for (uint32_t i : order) sorted.push_back(std::move(jobs[i]));
  if (sorted.empty()) return sorted;
  const Duration shift = sorted.front().submit_time.time_since_epoch();
  for (JobSpec& spec : sorted) {
    spec.submit_time -= shift;
    if (spec.deadline) *spec.deadline -= shift;
  }
  return sorted;
}

}  // namespace

Result<Workload> LoadWorkload(std::string_view spec, const ReadOptions& options) {
  const size_t colon = spec.find(':');
  const std::string_view format = spec.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);

  Workload workload;
  workload.source = std::string(spec);
  if (format == "synthetic") {
    DS_ASSIGN_OR_RETURN(const SyntheticOptions synthetic, ParseSyntheticOptions(rest));
    if (synthetic.mix == SyntheticOptions::Mix::kGavel) {
      const std::string path = synthetic.throughputs.empty()
                                   ? options.traces_dir + "/gavel/simulation_throughputs.json"
                                   : synthetic.throughputs;
      DS_ASSIGN_OR_RETURN(const GavelThroughputTable table, GavelThroughputTable::Load(path));
      DS_ASSIGN_OR_RETURN(workload.jobs, GenerateGavelMixJobs(synthetic, table));
    } else {
      workload.jobs = GenerateSyntheticJobs(synthetic);  // already sorted, first at t = 0
    }
  } else {
    Result<ParsedRows> (*reader)(const std::string&, const ReadOptions&) = nullptr;
    if (format == "philly") {
      reader = &ReadPhillyTrace;
    } else if (format == "gavel") {
      reader = &ReadGavelTrace;
    } else if (format == "tiresias") {
      reader = &ReadTiresiasTrace;
    } else if (format == "chronus") {
      reader = &ReadChronusTrace;
    } else if (format == "alibaba") {
      reader = &ReadAlibabaTrace;
    } else if (format == "csv") {
      reader = &ReadNativeCsv;
    } else {
      return InvalidArgument("unknown workload '" + std::string(spec) + "': want one of " +
                             std::string(kValidPrefixes));
    }
    if (colon == std::string_view::npos || rest.empty()) {
      return InvalidArgument("workload '" + std::string(spec) + "' names no file: want " +
                             std::string(format) + ":PATH");
    }
    DS_ASSIGN_OR_RETURN(ParsedRows rows, reader(std::string(rest), options));
    workload.jobs = SortAndShift(std::move(rows.jobs));
    workload.skipped_rows = rows.skipped_rows;
    workload.excluded_rows = rows.excluded_rows;
  }
  if (options.max_jobs > 0 && workload.jobs.size() > options.max_jobs) {
    workload.jobs.resize(options.max_jobs);
  }
  return workload;
}

double OfferedLoad(const std::vector<JobSpec>& jobs, int cluster_gpus) {
  if (jobs.empty() || cluster_gpus <= 0) return 0;
  Timestamp first = jobs.front().submit_time;
  Timestamp last = first;
  double gpu_seconds = 0;
  for (const JobSpec& spec : jobs) {
    first = std::min(first, spec.submit_time);
    last = std::max(last, spec.submit_time);
    gpu_seconds += spec.num_gpus * ToSeconds(spec.ideal_duration());
  }
  const double span_s = ToSeconds(last - first);
  if (span_s <= 0) return 0;
  return gpu_seconds / (span_s * cluster_gpus);
}

}  // namespace dlsched::sim
