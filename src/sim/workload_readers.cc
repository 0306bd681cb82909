#include "sim/workload_readers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "sim/workload_csv.h"

namespace dlsched::sim {
namespace {

using workload_internal::ParseUtcDateTime;
using workload_internal::ReadTraceFile;

// Times beyond this many seconds from the epoch would overflow Timestamp's int64 microseconds
// (max ~9.2e12 s); no trace comes near it.
constexpr double kMaxAbsSeconds = 1e12;

std::string BadValue(std::string_view column, std::string_view value, std::string_view want) {
  return "bad " + std::string(column) + " '" + std::string(TrimField(value)) + "': want " +
         std::string(want);
}

std::string WrongFieldCount(size_t want, size_t got) {
  return "expected " + std::to_string(want) + " fields, got " + std::to_string(got);
}

// An integer in [lo, hi], or nullopt.
std::optional<int> IntInRange(std::string_view field, int64_t lo, int64_t hi) {
  const std::optional<int64_t> value = ParseInt(TrimField(field));
  if (!value || *value < lo || *value > hi) return std::nullopt;
  return static_cast<int>(*value);
}

// Seconds (fractional ok) within Timestamp's range, or nullopt.
std::optional<double> SecondsField(std::string_view field) {
  const std::optional<double> value = ParseFiniteDouble(TrimField(field));
  if (!value || std::fabs(*value) > kMaxAbsSeconds) return std::nullopt;
  return value;
}

constexpr int kMaxInt = std::numeric_limits<int>::max();
// Bounds of a job's host request in all (every node of its gang together): CPU cores and host
// memory in MiB, far above any cluster and well within int / int64.
constexpr int kMaxJobCpus = 10'000'000;
constexpr int64_t kMaxJobHostMemoryMib = int64_t{1} << 50;

// Reads every non-blank line after the cursor as a data row: splits it at `sep`, hands the
// fields and the line number to `parse_row` (returning Result<JobSpec>, the error message
// saying what is wrong with the row), validates the spec and appends it to `out`. Bad rows go
// to `errors`. Returns the first unskipped error.
template <typename ParseRow>
Status ReadRows(LineCursor& cursor, char sep, RowErrors& errors, ParseRow&& parse_row,
                std::vector<JobSpec>& out) {
  std::vector<std::string_view> fields;
  while (cursor.NextRow(sep, fields)) {
    const int line_no = cursor.line_number();
    Result<JobSpec> spec = parse_row(fields, line_no);
    Status problem = spec.ok() ? ValidateJobSpec(*spec) : spec.status();
    if (!problem.ok()) {
      DS_RETURN_IF_ERROR(errors.Bad(line_no, problem.message()));
      continue;
    }
    out.push_back(std::move(spec).value());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// philly:

Result<ParsedRows> ReadPhillyText(const std::string& path, std::string_view text,
                                  const ReadOptions& options) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  DS_ASSIGN_OR_RETURN(const CsvHeader header, ReadHeader(cursor, errors, ','));
  const int header_line = cursor.line_number();
  constexpr std::array<std::string_view, 4> kColumns = {"timestamp", "duration", "num_gpus",
                                                        "cluster"};
  DS_ASSIGN_OR_RETURN(const auto col, RequireColumns(header, kColumns, errors, header_line));

  // Two passes keep 82k rows fast: parse into compact rows in file order (so the first bad row
  // is the one reported), stable-sort those by submit time, then build the large JobSpecs once,
  // in final order, so LoadWorkload finds them sorted and has nothing to move.
  struct Row {
    int64_t submit_s;
    double duration_s;
    int num_gpus;
    int line;
    std::string_view queue;
  };
  std::vector<Row> parsed;
  parsed.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  JobSpec probe;  // carries the row's values into ValidateJobSpec without building strings
  std::vector<std::string_view> fields;
  while (cursor.NextRow(',', fields)) {
    const int line_no = cursor.line_number();
    Status problem = Status::Ok();
    std::optional<int64_t> submit_s;
    std::optional<double> duration_s;
    std::optional<int> num_gpus;
    if (fields.size() != header.size()) {
      problem = InvalidArgument(WrongFieldCount(header.size(), fields.size()));
    } else if (submit_s = ParseUtcDateTime(fields[col[0]]); !submit_s) {
      problem = InvalidArgument(BadValue("timestamp", fields[col[0]], "YYYY-MM-DD HH:MM:SS"));
    } else if (duration_s = SecondsField(fields[col[1]]); !duration_s || *duration_s <= 0) {
      problem = InvalidArgument(BadValue("duration", fields[col[1]], "seconds > 0"));
    } else if (num_gpus = IntInRange(fields[col[2]], 1, kMaxInt); !num_gpus) {
      problem = InvalidArgument(BadValue("num_gpus", fields[col[2]], "an integer >= 1"));
    } else {
      probe.num_gpus = *num_gpus;
      probe.iterations = *duration_s;
      problem = ValidateJobSpec(probe);
    }
    if (!problem.ok()) {
      DS_RETURN_IF_ERROR(errors.Bad(line_no, problem.message()));
      continue;
    }
    parsed.push_back({*submit_s, *duration_s, *num_gpus, line_no, TrimField(fields[col[3]])});
  }
  std::stable_sort(parsed.begin(), parsed.end(),
                   [](const Row& a, const Row& b) { return a.submit_s < b.submit_s; });

  ParsedRows rows;
  rows.jobs.resize(parsed.size());
  const int64_t first_s = parsed.empty() ? 0 : parsed.front().submit_s;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Row& row = parsed[i];
    JobSpec& spec = rows.jobs[i];
    spec.name = std::to_string(row.line - header_line);
    spec.queue = std::string(row.queue);
    spec.num_gpus = row.num_gpus;
    // Already shifted to the first submission: the epoch of a 2017 trace is irrelevant.
    spec.submit_time = Timestamp(Duration((row.submit_s - first_s) * 1'000'000));
    spec.iterations = row.duration_s;
    spec.ref_iters_per_s = 1.0;
  }
  rows.skipped_rows = errors.skipped();
  return rows;
}

// ---------------------------------------------------------------------------------------------
// gavel:

// "ResNet-50 (batch size 64)" -> ("ResNet-50", 64); "A3C" -> ("A3C", 0).
std::optional<std::pair<std::string_view, int>> ParseGavelJobType(std::string_view job_type) {
  job_type = TrimField(job_type);
  constexpr std::string_view kMarker = " (batch size ";
  const size_t pos = job_type.find(kMarker);
  if (pos == std::string_view::npos) {
    if (job_type.empty() || job_type.find('(') != std::string_view::npos) return std::nullopt;
    return std::pair(job_type, 0);
  }
  if (pos == 0 || job_type.back() != ')') return std::nullopt;
  const size_t begin = pos + kMarker.size();
  const std::optional<int> batch =
      IntInRange(job_type.substr(begin, job_type.size() - 1 - begin), 1, kMaxInt);
  if (!batch) return std::nullopt;
  return std::pair(job_type.substr(0, pos), *batch);
}

// Field positions of the two Gavel layouts; -1 = absent.
struct GavelLayout {
  size_t fields;
  int total_steps;
  int arrival_time;
  int scale_factor;
  int priority_weight;
};
constexpr GavelLayout kGavelMsr = {7, 4, 5, 6, -1};
constexpr GavelLayout kGavelPhysical = {10, 5, 9, 6, 7};

// Appends the jobs of one Gavel trace file to `rows`. `name_prefix` ("" or "<stem>:") goes
// before the row number; `queue` is the msr layout's queue.
Status ReadGavelText(const std::string& path, std::string_view text, std::string_view name_prefix,
                     std::string_view queue, const ReadOptions& options, ParsedRows& rows) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  // The first non-blank row picks the layout; peek at it on a copy of the cursor.
  LineCursor peek = cursor;
  std::string_view first;
  while (peek.Next(first) && IsBlank(first)) {
  }
  if (IsBlank(first)) return Status::Ok();  // no rows at all
  std::vector<std::string_view> fields;
  SplitInto(first, '\t', fields);
  const GavelLayout* layout = nullptr;
  if (fields.size() == kGavelMsr.fields) {
    layout = &kGavelMsr;
  } else if (fields.size() == kGavelPhysical.fields) {
    layout = &kGavelPhysical;
  } else {
    // Without a layout no row can be read, so this is not skippable.
    return errors.Fatal(peek.line_number(),
                        "expected 7 (msr) or 10 (physical_cluster) tab-separated fields, got " +
                            std::to_string(fields.size()));
  }

  const auto parse_row = [&](const std::vector<std::string_view>& f,
                             int line_no) -> Result<JobSpec> {
    if (f.size() != layout->fields)
      return InvalidArgument(WrongFieldCount(layout->fields, f.size()));
    const auto job_type = ParseGavelJobType(f[0]);
    if (!job_type) {
      return InvalidArgument(BadValue("job_type", f[0], "'<model>' or '<model> (batch size <N>)'"));
    }
    const std::optional<double> total_steps = ParseFiniteDouble(TrimField(f[layout->total_steps]));
    if (!total_steps || *total_steps <= 0) {
      return InvalidArgument(BadValue("total_steps", f[layout->total_steps], "a number > 0"));
    }
    const std::optional<double> arrival_s = SecondsField(f[layout->arrival_time]);
    if (!arrival_s) {
      return InvalidArgument(BadValue("arrival_time", f[layout->arrival_time], "seconds"));
    }
    const std::optional<int> scale_factor = IntInRange(f[layout->scale_factor], 1, kMaxInt);
    if (!scale_factor) {
      return InvalidArgument(BadValue("scale_factor", f[layout->scale_factor], "an integer >= 1"));
    }
    JobSpec spec;
    if (layout->priority_weight >= 0) {
      const std::optional<double> weight = ParseFiniteDouble(TrimField(f[layout->priority_weight]));
      if (!weight || std::fabs(*weight) > 1e9) {
        return InvalidArgument(BadValue("priority_weight", f[layout->priority_weight], "a number"));
      }
      spec.priority = static_cast<int>(std::lround(*weight));
    }
    spec.name = std::string(name_prefix) + std::to_string(line_no);
    if (layout == &kGavelMsr) spec.queue = std::string(queue);
    spec.model = std::string(job_type->first);
    spec.batch_size = job_type->second;
    spec.num_gpus = *scale_factor;
    spec.submit_time = AtSeconds(*arrival_s);
    // Placeholder speed: the Gavel throughput model supplies real iteration rates.
    spec.iterations = *total_steps;
    spec.ref_iters_per_s = 1.0;
    return spec;
  };
  DS_RETURN_IF_ERROR(ReadRows(cursor, '\t', errors, parse_row, rows.jobs));
  rows.skipped_rows += errors.skipped();
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// tiresias:

Result<ParsedRows> ReadTiresiasText(const std::string& path, std::string_view text,
                                    const ReadOptions& options) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  DS_ASSIGN_OR_RETURN(const CsvHeader header, ReadHeader(cursor, errors, ','));
  constexpr std::array<std::string_view, 6> kColumns = {"job_id",     "num_gpu",    "submit_time",
                                                        "iterations", "model_name", "duration"};
  DS_ASSIGN_OR_RETURN(const auto col,
                      RequireColumns(header, kColumns, errors, cursor.line_number()));
  const auto parse_row = [&](const std::vector<std::string_view>& fields, int) -> Result<JobSpec> {
    if (fields.size() != header.size()) {
      return InvalidArgument(WrongFieldCount(header.size(), fields.size()));
    }
    const std::string_view job_id = TrimField(fields[col[0]]);
    if (job_id.empty()) return InvalidArgument("empty job_id");
    const std::optional<int> num_gpus = IntInRange(fields[col[1]], 1, kMaxInt);
    if (!num_gpus) return InvalidArgument(BadValue("num_gpu", fields[col[1]], "an integer >= 1"));
    const std::optional<double> submit_s = SecondsField(fields[col[2]]);
    if (!submit_s) return InvalidArgument(BadValue("submit_time", fields[col[2]], "seconds"));
    const std::optional<double> iterations = ParseFiniteDouble(TrimField(fields[col[3]]));
    if (!iterations || *iterations <= 0) {
      return InvalidArgument(BadValue("iterations", fields[col[3]], "a number > 0"));
    }
    const std::optional<double> duration_s = SecondsField(fields[col[5]]);
    if (!duration_s || *duration_s <= 0) {
      return InvalidArgument(BadValue("duration", fields[col[5]], "seconds > 0"));
    }
    JobSpec spec;
    spec.name = std::string(job_id);
    spec.model = std::string(TrimField(fields[col[4]]));
    spec.num_gpus = *num_gpus;
    spec.submit_time = AtSeconds(*submit_s);
    spec.iterations = *iterations;
    spec.ref_iters_per_s = *iterations / *duration_s;
    return spec;
  };
  ParsedRows rows;
  DS_RETURN_IF_ERROR(ReadRows(cursor, ',', errors, parse_row, rows.jobs));
  rows.skipped_rows = errors.skipped();
  return rows;
}

// ---------------------------------------------------------------------------------------------
// csv: (native)

enum class Column {
  kSubmitTime,
  kNumGpus,
  kDuration,
  kJobId,
  kUser,
  kQueue,
  kModel,
  kBatchSize,
  kGpuType,
  kDeadline,
  kQosClass,
  kPriority,
  kMemoryMib,
  kIterations,
  kRuntimeEstimate,
  kSelector,
  kPrefer,
  kKind,
  kServiceLoad,
  kCpus,
  kHostMemoryMib,
};
constexpr int kNumColumns = 21;
// Indexed by Column; the first kNumRequired are required.
constexpr std::array<std::string_view, kNumColumns> kColumnNames = {
    "submit_time",  "num_gpus",   "duration",         "job_id",   "user",      "queue",
    "model",        "batch_size", "gpu_type",         "deadline", "qos_class", "priority",
    "memory_mib",   "iterations", "runtime_estimate", "selector", "prefer",    "kind",
    "service_load", "cpus",       "host_memory_mib"};
constexpr int kNumRequired = 3;

std::string KnownColumns() {
  std::string out;
  for (std::string_view name : kColumnNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// Parses the cells of one native-CSV row; `column_of[i]` is the column of field i.
Result<JobSpec> ParseNativeRow(const std::vector<std::string_view>& fields,
                               const std::vector<Column>& column_of, int row_number) {
  if (fields.size() != column_of.size()) {
    return InvalidArgument(WrongFieldCount(column_of.size(), fields.size()));
  }
  JobSpec spec;
  double submit_s = 0;
  double duration_s = 0;
  std::optional<double> iterations;
  std::optional<double> deadline_s;
  bool service = false;
  std::optional<ServiceLoad> load;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string_view cell = TrimField(fields[i]);
    const Column column = column_of[i];
    const std::string_view name = kColumnNames[static_cast<size_t>(column)];
    if (cell.empty()) {
      if (static_cast<int>(column) < kNumRequired) {
        return InvalidArgument("empty " + std::string(name));
      }
      continue;  // optional: unset
    }
    switch (column) {
      case Column::kSubmitTime: {
        const auto v = SecondsField(cell);
        if (!v) return InvalidArgument(BadValue(name, cell, "seconds"));
        submit_s = *v;
        break;
      }
      case Column::kNumGpus: {
        const auto v = IntInRange(cell, 0, kMaxInt);
        if (!v) return InvalidArgument(BadValue(name, cell, "an integer >= 0 (0: a CPU job)"));
        spec.num_gpus = *v;
        break;
      }
      case Column::kCpus: {
        const auto v = IntInRange(cell, 0, kMaxJobCpus);
        if (!v) {
          return InvalidArgument(BadValue(
              name, cell, "an integer in 0.." + std::to_string(kMaxJobCpus) + " (CPU cores)"));
        }
        spec.cpus = *v;
        break;
      }
      case Column::kHostMemoryMib: {
        const std::optional<int64_t> v = ParseInt(cell);
        if (!v || *v < 0 || *v > kMaxJobHostMemoryMib) {
          return InvalidArgument(BadValue(
              name, cell, "an integer in 0.." + std::to_string(kMaxJobHostMemoryMib) + " (MiB)"));
        }
        spec.host_memory_mib = *v;
        break;
      }
      case Column::kDuration: {
        const auto v = SecondsField(cell);
        if (!v || *v <= 0) return InvalidArgument(BadValue(name, cell, "seconds > 0"));
        duration_s = *v;
        break;
      }
      case Column::kJobId:
        spec.name = std::string(cell);
        break;
      case Column::kUser:
        spec.user = std::string(cell);
        break;
      case Column::kQueue:
        spec.queue = std::string(cell);
        break;
      case Column::kModel:
        spec.model = std::string(cell);
        break;
      case Column::kBatchSize: {
        const auto v = IntInRange(cell, 0, kMaxInt);
        if (!v) return InvalidArgument(BadValue(name, cell, "an integer >= 0"));
        spec.batch_size = *v;
        break;
      }
      case Column::kGpuType:
        spec.gpu_type = std::string(cell);
        break;
      case Column::kSelector:
      case Column::kPrefer: {
        Result<Labels> labels = ParseLabels(cell);
        if (!labels.ok()) return labels.status().WithPrefix(std::string(name));
        (column == Column::kSelector ? spec.selector : spec.preferences) = *std::move(labels);
        break;
      }
      case Column::kDeadline: {
        const auto v = SecondsField(cell);
        if (!v || *v < 0) {
          return InvalidArgument(BadValue(name, cell, "seconds after submit_time, >= 0"));
        }
        deadline_s = *v;
        break;
      }
      case Column::kQosClass: {
        Result<QosClass> qos = ParseQosClass(cell);
        if (!qos.ok()) return qos.status();
        spec.qos = *qos;
        break;
      }
      case Column::kPriority: {
        const auto v = IntInRange(cell, std::numeric_limits<int>::min(), kMaxInt);
        if (!v) return InvalidArgument(BadValue(name, cell, "an integer"));
        spec.priority = *v;
        break;
      }
      case Column::kMemoryMib: {
        const std::optional<int64_t> v = ParseInt(cell);
        if (!v || *v < 0) {
          return InvalidArgument(BadValue(name, cell, "an integer >= 0 (MiB per GPU)"));
        }
        spec.memory_mib = *v;
        break;
      }
      case Column::kRuntimeEstimate: {
        const auto v = SecondsField(cell);
        if (!v || *v <= 0) return InvalidArgument(BadValue(name, cell, "seconds > 0"));
        spec.runtime_estimate = Seconds(*v);
        break;
      }
      case Column::kIterations: {
        const auto v = ParseFiniteDouble(cell);
        if (!v || *v <= 0) return InvalidArgument(BadValue(name, cell, "a number > 0"));
        iterations = *v;
        break;
      }
      case Column::kKind:
        if (cell != "training" && cell != "service") {
          return InvalidArgument(BadValue(name, cell, "training or service"));
        }
        service = cell == "service";
        break;
      case Column::kServiceLoad: {
        Result<ServiceLoad> parsed = ParseServiceLoad(cell);
        if (!parsed.ok()) return parsed.status().WithPrefix(std::string(name));
        load = *std::move(parsed);
        break;
      }
    }
  }
  if (load && !service) return InvalidArgument("service_load is for rows of kind service");
  if (service) spec.service = load.value_or(ServiceLoad{});
  if (spec.name.empty()) spec.name = std::to_string(row_number);
  spec.submit_time = AtSeconds(submit_s);
  if (iterations) {
    spec.iterations = *iterations;
    spec.ref_iters_per_s = *iterations / duration_s;
  } else {
    spec.iterations = duration_s;
    spec.ref_iters_per_s = 1.0;
  }
  if (deadline_s) spec.deadline = spec.submit_time + Seconds(*deadline_s);
  return spec;
}

Result<ParsedRows> ReadNativeText(const std::string& path, std::string_view text,
                                  const ReadOptions& options) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  DS_ASSIGN_OR_RETURN(const CsvHeader header, ReadHeader(cursor, errors, ','));
  const int header_line = cursor.line_number();
  std::vector<Column> column_of;  // column_of[position in the file]
  std::array<bool, kNumColumns> seen{};
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& name = header.names()[i];
    const auto it = std::find(kColumnNames.begin(), kColumnNames.end(), name);
    if (it == kColumnNames.end()) {
      if (name.empty()) {
        return errors.Fatal(header_line, "empty column name at position " + std::to_string(i + 1));
      }
      return errors.Fatal(header_line,
                          "unknown column '" + name + "' (known: " + KnownColumns() + ")");
    }
    const size_t index = static_cast<size_t>(it - kColumnNames.begin());
    if (seen[index]) return errors.Fatal(header_line, "column '" + name + "' appears twice");
    seen[index] = true;
    column_of.push_back(static_cast<Column>(index));
  }
  for (int i = 0; i < kNumRequired; ++i) {
    if (!seen[static_cast<size_t>(i)]) {
      return errors.Fatal(header_line,
                          "missing required column '" + std::string(kColumnNames[i]) + "'");
    }
  }
  const auto parse_row = [&](const std::vector<std::string_view>& fields, int line_no) {
    return ParseNativeRow(fields, column_of, line_no - header_line);
  };
  ParsedRows rows;
  DS_RETURN_IF_ERROR(ReadRows(cursor, ',', errors, parse_row, rows.jobs));
  rows.skipped_rows = errors.skipped();
  return rows;
}

// ---------------------------------------------------------------------------------------------
// alibaba:

// The columns ReadAlibabaTrace needs, in the order its parser indexes them.
constexpr std::array<std::string_view, 10> kAlibabaColumns = {
    "name",          "num_gpu",       "gpu_milli",      "qos",       "pod_phase",
    "creation_time", "deletion_time", "scheduled_time", "cpu_milli", "memory_mib"};
// A pod's CPU request in thousandths of a core: up to a million cores (a cluster node's bound).
constexpr int64_t kMaxAlibabaCpuMilli = int64_t{1'000'000} * 1000;
constexpr int64_t kMaxAlibabaMemoryMib = int64_t{1} << 50;

// One pod-list row: the job, or nullopt for a pod the format leaves out (never ran).
Result<std::optional<JobSpec>> ParseAlibabaRow(const std::vector<std::string_view>& fields,
                                               const std::array<int, kAlibabaColumns.size()>& col,
                                               size_t width) {
  if (fields.size() != width) return InvalidArgument(WrongFieldCount(width, fields.size()));
  const auto field = [&](int i) { return TrimField(fields[static_cast<size_t>(col[i])]); };
  const std::string_view name = field(0);
  if (name.empty()) return InvalidArgument("empty name");
  const std::optional<int> num_gpu = IntInRange(field(1), 0, kMaxInt);
  if (!num_gpu) return InvalidArgument(BadValue("num_gpu", field(1), "an integer >= 0"));
  const int min_milli = *num_gpu == 1 ? 1 : 0;
  const std::optional<int> gpu_milli = IntInRange(field(2), min_milli, 1000);
  if (!gpu_milli) {
    return InvalidArgument(
        BadValue("gpu_milli", field(2),
                 min_milli == 1 ? "an integer in 1..1000 for one GPU" : "an integer in 0..1000"));
  }
  const std::string_view qos = field(3);
  if (qos != "LS" && qos != "BE" && qos != "Burstable" && qos != "Guaranteed") {
    return InvalidArgument(BadValue("qos", qos, "LS, BE, Burstable or Guaranteed"));
  }
  const std::string_view phase = field(4);
  if (phase != "Succeeded" && phase != "Running" && phase != "Pending" && phase != "Failed") {
    return InvalidArgument(BadValue("pod_phase", phase, "Succeeded, Running, Pending or Failed"));
  }
  const std::optional<double> creation_s = SecondsField(field(5));
  if (!creation_s) return InvalidArgument(BadValue("creation_time", field(5), "seconds"));
  const std::optional<double> deletion_s = SecondsField(field(6));
  if (!deletion_s) return InvalidArgument(BadValue("deletion_time", field(6), "seconds"));
  std::optional<double> scheduled_s;
  if (!field(7).empty()) {
    scheduled_s = SecondsField(field(7));
    if (!scheduled_s) {
      return InvalidArgument(BadValue("scheduled_time", field(7), "seconds or empty"));
    }
  }
  const std::optional<int64_t> cpu_milli = ParseInt(field(8));
  if (!cpu_milli || *cpu_milli < 0 || *cpu_milli > kMaxAlibabaCpuMilli) {
    return InvalidArgument(
        BadValue("cpu_milli", field(8), "an integer in 0.." + std::to_string(kMaxAlibabaCpuMilli)));
  }
  const std::optional<int64_t> memory_mib = ParseInt(field(9));
  if (!memory_mib || *memory_mib < 0 || *memory_mib > kMaxAlibabaMemoryMib) {
    return InvalidArgument(BadValue("memory_mib", field(9),
                                    "an integer in 0.." + std::to_string(kMaxAlibabaMemoryMib)));
  }
  if (!scheduled_s || phase == "Pending") return std::optional<JobSpec>();
  if (*deletion_s < *scheduled_s) {
    return InvalidArgument("deletion_time " + std::string(field(6)) + " is before scheduled_time " +
                           std::string(field(7)));
  }
  JobSpec spec;
  spec.name = std::string(name);
  spec.num_gpus = *num_gpu;
  spec.submit_time = AtSeconds(*creation_s);
  spec.iterations = *deletion_s - *scheduled_s;
  spec.ref_iters_per_s = 1.0;
  spec.priority = qos == "LS" || qos == "Guaranteed" ? 1 : 0;
  spec.cpus = static_cast<int>((*cpu_milli + 999) / 1000);  // ceil: whole cores
  spec.host_memory_mib = *memory_mib;
  if (*num_gpu == 1 && *gpu_milli < 1000) {
    spec.memory_mib = (*gpu_milli * kAlibabaGpuMemoryMib + 999) / 1000;  // ceil
  }
  return std::optional<JobSpec>(std::move(spec));
}

Result<ParsedRows> ReadAlibabaText(const std::string& path, std::string_view text,
                                   const ReadOptions& options) {
  RowErrors errors(path, options.skip_bad_rows);
  LineCursor cursor(text);
  DS_ASSIGN_OR_RETURN(const CsvHeader header, ReadHeader(cursor, errors, ','));
  std::array<int, kAlibabaColumns.size()> col{};
  std::string missing;
  for (size_t i = 0; i < kAlibabaColumns.size(); ++i) {
    col[i] = header.Find(kAlibabaColumns[i]);
    if (col[i] >= 0) continue;
    if (!missing.empty()) missing += ", ";
    missing += kAlibabaColumns[i];
  }
  if (!missing.empty()) {
    // openb_pod_list_multigpu50.csv, say: resource requests only, nothing to simulate.
    return errors.Fatal(cursor.line_number(),
                        "missing columns " + missing +
                            ": an Alibaba pod list needs the pods' requests, QoS, phase and times");
  }
  ParsedRows rows;
  std::vector<std::string_view> fields;
  while (cursor.NextRow(',', fields)) {
    const int line_no = cursor.line_number();
    Result<std::optional<JobSpec>> spec = ParseAlibabaRow(fields, col, header.size());
    Status problem = !spec.ok()          ? spec.status()
                     : spec->has_value() ? ValidateJobSpec(**spec)
                                         : Status::Ok();
    if (!problem.ok()) {
      DS_RETURN_IF_ERROR(errors.Bad(line_no, problem.message()));
      continue;
    }
    if (!spec->has_value()) {
      ++rows.excluded_rows;
      continue;
    }
    rows.jobs.push_back(*std::move(*spec));
  }
  rows.skipped_rows = errors.skipped();
  return rows;
}

}  // namespace

Result<ParsedRows> ReadPhillyTrace(const std::string& path, const ReadOptions& options) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
  return ReadPhillyText(path, text, options);
}

Result<ParsedRows> ReadGavelTrace(const std::string& path, const ReadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  ParsedRows rows;
  if (!fs::is_directory(path, ec)) {
    DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
    const std::string stem = fs::path(path).stem().string();
    DS_RETURN_IF_ERROR(ReadGavelText(path, text, "", stem, options, rows));
    return rows;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".trace") files.push_back(it->path());
  }
  if (ec) return IoError(path + ": cannot list directory: " + ec.message());
  if (files.empty()) return NotFound(path + ": directory has no *.trace files");
  std::sort(files.begin(), files.end());  // directory order is unspecified
  for (const fs::path& file : files) {
    DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(file.string()));
    const std::string stem = file.stem().string();
    DS_RETURN_IF_ERROR(ReadGavelText(file.string(), text, stem + ":", stem, options, rows));
  }
  return rows;
}

Result<ParsedRows> ReadTiresiasTrace(const std::string& path, const ReadOptions& options) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
  return ReadTiresiasText(path, text, options);
}

Result<ParsedRows> ReadNativeCsv(const std::string& path, const ReadOptions& options) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
  return ReadNativeText(path, text, options);
}

Result<ParsedRows> ReadAlibabaTrace(const std::string& path, const ReadOptions& options) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadTraceFile(path));
  return ReadAlibabaText(path, text, options);
}

}  // namespace dlsched::sim
