#include "sim/workload_chronus.h"

#include <array>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/workload_csv.h"

namespace dlsched::sim {
namespace {

using workload_internal::ReadTraceFile;

// The trace counts time in minutes (see the header for the evidence).
constexpr double kSecondsPerUnit = 60;
// Beyond this many minutes a time would overflow Timestamp's int64 microseconds (~9.2e12 s).
constexpr double kMaxAbsMinutes = 1e10;
constexpr int64_t kMaxGpus = 1 << 20;

enum Col {
  kJobId,
  kUser,
  kNumGpu,
  kSubmitTime,
  kIterations,
  kModelName,
  kDuration,
  kExpectTimes,
  kExpectValues,
  kBestEffort,
  kJobType,
  kNumCols,
};
constexpr std::array<std::string_view, kNumCols> kColumnNames = {
    "job_id",     "user",     "num_gpu",          "submit_time",       "iterations",
    "model_name", "duration", "expect_time_list", "expect_value_list", "best_effort",
    "job_type"};

std::string BadValue(std::string_view column, std::string_view value, std::string_view want) {
  return "bad " + std::string(column) + " '" + std::string(TrimField(value)) + "': want " +
         std::string(want);
}

// Minutes (fractional ok) within Timestamp's range, or nullopt.
std::optional<double> MinutesField(std::string_view field) {
  const std::optional<double> value = ParseFiniteDouble(TrimField(field));
  if (!value || std::fabs(*value) > kMaxAbsMinutes) return std::nullopt;
  return value;
}

// Splits a '-'-separated list ("159-189-229-289") into numbers; nullopt if any element is empty
// or not a finite number. (The separator rules out negative elements.)
std::optional<std::vector<double>> ParseDashList(std::string_view field) {
  std::vector<std::string_view> parts;
  SplitInto(TrimField(field), '-', parts);
  std::vector<double> values;
  values.reserve(parts.size());
  for (std::string_view part : parts) {
    const std::optional<double> v = ParseFiniteDouble(TrimField(part));
    if (!v) return std::nullopt;
    values.push_back(*v);
  }
  return values;
}

// The QoS fields of a strict or soft row: the utility steps (relative to submit, ascending).
Result<std::vector<std::pair<Duration, double>>> ParseUtilitySteps(std::string_view times_field,
                                                                   std::string_view values_field,
                                                                   QosClass qos) {
  const auto times = ParseDashList(times_field);
  if (!times) {
    return InvalidArgument(
        BadValue("expect_time_list", times_field, "'-'-separated minutes, e.g. 159-189"));
  }
  const auto values = ParseDashList(values_field);
  if (!values) {
    return InvalidArgument(
        BadValue("expect_value_list", values_field, "'-'-separated numbers, e.g. 10-8"));
  }
  if (times->size() != values->size()) {
    return InvalidArgument("expect_time_list has " + std::to_string(times->size()) +
                           " entries but expect_value_list has " + std::to_string(values->size()));
  }
  if (qos == QosClass::kStrict && times->size() != 1) {
    return InvalidArgument("a strict job has one deadline; expect_time_list '" +
                           std::string(TrimField(times_field)) + "' has " +
                           std::to_string(times->size()));
  }
  std::vector<std::pair<Duration, double>> steps;
  steps.reserve(times->size());
  for (size_t i = 0; i < times->size(); ++i) {
    const double minutes = (*times)[i];
    if (!(minutes > 0) || minutes > kMaxAbsMinutes) {
      return InvalidArgument(BadValue("expect_time_list", times_field, "minutes > 0"));
    }
    if (i > 0 && !(minutes > (*times)[i - 1])) {
      return InvalidArgument(BadValue("expect_time_list", times_field, "ascending times"));
    }
    steps.emplace_back(Seconds(minutes * kSecondsPerUnit), (*values)[i]);
  }
  return steps;
}

Result<JobSpec> ParseChronusRow(const std::vector<std::string_view>& fields,
                                const std::array<int, kNumCols>& col, size_t header_size) {
  if (fields.size() != header_size) {
    return InvalidArgument("expected " + std::to_string(header_size) + " fields, got " +
                           std::to_string(fields.size()));
  }
  const auto field = [&](Col c) { return fields[static_cast<size_t>(col[c])]; };

  const std::string_view job_id = TrimField(field(kJobId));
  if (job_id.empty()) return InvalidArgument("empty job_id");
  const std::optional<int64_t> num_gpus = ParseInt(TrimField(field(kNumGpu)));
  if (!num_gpus || *num_gpus < 0 || *num_gpus > kMaxGpus) {
    return InvalidArgument(BadValue("num_gpu", field(kNumGpu), "an integer >= 0"));
  }
  const std::optional<double> submit_min = MinutesField(field(kSubmitTime));
  if (!submit_min) return InvalidArgument(BadValue("submit_time", field(kSubmitTime), "minutes"));
  const std::optional<double> iterations = ParseFiniteDouble(TrimField(field(kIterations)));
  if (!iterations || *iterations <= 0) {
    return InvalidArgument(BadValue("iterations", field(kIterations), "a number > 0"));
  }
  const std::optional<double> duration_min = MinutesField(field(kDuration));
  if (!duration_min || *duration_min <= 0) {
    return InvalidArgument(BadValue("duration", field(kDuration), "minutes > 0"));
  }

  const std::string_view job_type = TrimField(field(kJobType));
  QosClass qos;
  if (job_type == "strict") {
    qos = QosClass::kStrict;
  } else if (job_type == "soft") {
    qos = QosClass::kSoft;
  } else if (job_type == "best") {
    qos = QosClass::kBestEffort;
  } else {
    return InvalidArgument(BadValue("job_type", job_type, "strict, soft or best"));
  }
  const std::string_view best_effort = TrimField(field(kBestEffort));
  if (best_effort != "0" && best_effort != "1") {
    return InvalidArgument(BadValue("best_effort", best_effort, "0 or 1"));
  }
  if ((best_effort == "1") != (qos == QosClass::kBestEffort)) {
    return InvalidArgument("best_effort " + std::string(best_effort) + " contradicts job_type " +
                           std::string(job_type));
  }

  JobSpec spec;
  spec.name = std::string(job_id);
  spec.user = std::string(TrimField(field(kUser)));
  spec.queue = spec.user;
  spec.model = std::string(TrimField(field(kModelName)));
  spec.num_gpus = static_cast<int>(*num_gpus);
  if (spec.num_gpus == 0) spec.cpus = kChronusCpuJobCpus;  // Chronus' own loader drops these
  spec.submit_time = AtSeconds(*submit_min * kSecondsPerUnit);
  spec.iterations = *iterations;
  spec.ref_iters_per_s = *iterations / (*duration_min * kSecondsPerUnit);
  spec.qos = qos;
  if (qos != QosClass::kBestEffort) {
    DS_ASSIGN_OR_RETURN(spec.utility_steps,
                        ParseUtilitySteps(field(kExpectTimes), field(kExpectValues), qos));
    spec.deadline = spec.submit_time + spec.utility_steps.front().first;
  }
  return spec;
}

Result<ParsedRows> ReadChronusText(const std::string& path, std::string_view text,
                                   const ReadOptions& options) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  DS_ASSIGN_OR_RETURN(const CsvHeader header, ReadHeader(cursor, errors, ','));
  const int header_line = cursor.line_number();
  DS_ASSIGN_OR_RETURN(const auto col, RequireColumns(header, kColumnNames, errors, header_line));

  ParsedRows rows;
  std::vector<std::string_view> fields;
  while (cursor.NextRow(',', fields)) {
    const int line_no = cursor.line_number();
    Result<JobSpec> spec = ParseChronusRow(fields, col, header.size());
    const Status problem = spec.ok() ? ValidateJobSpec(*spec) : spec.status();
    if (!problem.ok()) {
      DS_RETURN_IF_ERROR(errors.Bad(line_no, problem.message()));
      continue;
    }
    rows.jobs.push_back(std::move(spec).value());
  }
  rows.skipped_rows = errors.skipped();
  return rows;
}

}  // namespace

Result<ParsedRows> ReadChronusTrace(const std::string& path, const ReadOptions& options) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
  return ReadChronusText(path, text, options);
}

}  // namespace dlsched::sim
