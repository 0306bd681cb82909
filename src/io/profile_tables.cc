#include "io/profile_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "io/csv_reader.h"

namespace dlsched {
namespace {

// Gavel measures 1, 2, 4 and 8 GPUs; its table has no larger scale factor.
constexpr int kMaxGavelScaleFactor = 64;

std::optional<int> ParsePositiveInt(std::string_view s) {
  const std::optional<int> value = ParseInt<int>(s);
  return value && *value >= 1 ? value : std::nullopt;
}

std::optional<double> ParsePositiveDouble(std::string_view s) {
  const std::optional<double> value = ParseFiniteDouble(s);
  return value && *value > 0 ? value : std::nullopt;
}

// Subdirectories of `dir`, by name. NotFound when `dir` is not a directory.
Result<std::vector<std::filesystem::path>> ListDirs(const std::string& dir, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound(fmt::format("{} profiles directory {} not found", what, dir));
  }
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory()) dirs.push_back(entry.path());
  }
  if (ec) return IoError(fmt::format("cannot list {}: {}", dir, ec.message()));
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

Status AppendCsv(const std::filesystem::path& path, const StepTimeCsvInfo& info,
                 std::vector<PerfProfile>& out) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path.string()));
  DS_ASSIGN_OR_RETURN(std::vector<PerfProfile> rows, ParseStepTimeCsv(text, path.string(), info));
  out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  return Status::Ok();
}

}  // namespace

std::vector<PerfProfile> GavelProfiles(const GavelThroughputTable& table, bool colocation) {
  std::vector<PerfProfile> out;
  for (const GavelThroughputTable::JobType& job : table.job_types()) {
    for (const std::string& gpu : table.gpu_types()) {
      std::vector<int> measured_counts;
      for (bool consolidated : {true, false}) {
        for (int n = consolidated ? 1 : 2; n <= kMaxGavelScaleFactor; ++n) {
          const std::optional<double> rate =
              table.Measured({job.model, job.batch_size, n}, gpu, consolidated);
          if (!rate.has_value()) continue;
          out.push_back({"gavel", job.model, job.batch_size, gpu, n, consolidated, *rate, {}});
          if (consolidated) measured_counts.push_back(n);
        }
      }
      if (!colocation) continue;
      for (int n : measured_counts) {
        for (const GavelThroughputTable::JobType& other : table.job_types()) {
          const auto pair = table.Colocated({job.model, job.batch_size, n},
                                            {other.model, other.batch_size, n}, gpu);
          if (!pair.has_value()) continue;
          out.push_back({"gavel", job.model, job.batch_size, gpu, n, true, pair->first,
                         PerfJobType{other.model, other.batch_size}});
        }
      }
    }
  }
  return out;
}

Result<std::vector<PerfProfile>> ParseStepTimeCsv(std::string_view text, std::string_view origin,
                                                  const StepTimeCsvInfo& info) {
  std::vector<PerfProfile> out;
  std::vector<std::string_view> header;
  int col_batch = -1, col_step = -1, col_placement = -1, col_nodes = -1, col_replicas = -1;
  DS_RETURN_IF_ERROR(
      ForEachCsvLine(text, [&](std::vector<std::string_view> fields, int line_number) -> Status {
        const auto bad = [&](std::string_view what) {
          return InvalidArgument(fmt::format("{}:{}: {}", origin, line_number, what));
        };
        if (header.empty()) {
          header = std::move(fields);
          const auto find = [&](std::string_view name) {
            const auto it = std::find(header.begin(), header.end(), name);
            return it == header.end() ? -1 : static_cast<int>(it - header.begin());
          };
          col_batch = find("local_bsz");
          col_step = find("step_time");
          col_placement = find("placement");
          col_nodes = find("num_nodes");
          col_replicas = find("num_replicas");
          if (col_batch < 0 || col_step < 0 ||
              (col_placement < 0 && (col_nodes < 0 || col_replicas < 0))) {
            return bad(
                "header needs local_bsz, step_time, and placement or num_nodes + num_replicas");
          }
          return Status::Ok();
        }
        if (fields.size() != header.size()) {
          return bad(fmt::format("expected {} fields, got {}", header.size(), fields.size()));
        }
        const std::optional<int> batch = ParsePositiveInt(fields[col_batch]);
        if (!batch.has_value()) return bad("local_bsz must be a positive integer");
        const std::optional<double> step = ParsePositiveDouble(fields[col_step]);
        if (!step.has_value()) return bad("step_time must be a positive number of seconds");
        int gpus = 0;
        int nodes = 0;
        if (col_placement >= 0) {
          const std::string_view placement = fields[col_placement];
          if (placement.empty()) return bad("empty placement");
          for (char c : placement) {
            if (c < '1' || c > '9') {
              return bad(
                  fmt::format("placement \"{}\": expected digits 1-9 (GPUs per node)", placement));
            }
            gpus += c - '0';
          }
          nodes = static_cast<int>(placement.size());
        } else {
          const std::optional<int> n = ParsePositiveInt(fields[col_nodes]);
          const std::optional<int> r = ParsePositiveInt(fields[col_replicas]);
          if (!n.has_value() || !r.has_value() || *r < *n) {
            return bad(
                "num_nodes and num_replicas must be positive with num_replicas >= num_nodes");
          }
          gpus = *r;
          nodes = *n;
        }
        out.push_back(
            {info.source, info.model, *batch, info.gpu_type, gpus, nodes == 1, 1.0 / *step, {}});
        return Status::Ok();
      }));
  if (header.empty()) return InvalidArgument(fmt::format("{}: empty file", origin));
  return out;
}

std::optional<std::string_view> SiaGpuType(std::string_view suffix) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {{"aws", "T4"},
                                                                             {"azure", "V100"},
                                                                             {"dgx-ext", "A100"},
                                                                             {"quad", "RTX6000"},
                                                                             {"rtx", "RTX2080Ti"}};
  for (const auto& [name, type] : kTypes) {
    if (name == suffix) return type;
  }
  return std::nullopt;
}

Result<std::vector<PerfProfile>> LoadSiaProfiles(const std::string& dir) {
  DS_ASSIGN_OR_RETURN(const std::vector<std::filesystem::path> models, ListDirs(dir, "sia"));
  std::vector<PerfProfile> out;
  for (const std::filesystem::path& model_dir : models) {
    const std::string model = model_dir.filename().string();
    if (model == "gpt_pmp") continue;  // see the header
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(model_dir, ec)) {
      files.push_back(entry.path());
    }
    if (ec) return IoError(fmt::format("cannot list {}: {}", model_dir.string(), ec.message()));
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      const std::string name = file.filename().string();
      if (!name.ends_with(".csv")) continue;
      const std::string_view stem(name.data(), name.size() - 4);
      std::string_view suffix;
      for (std::string_view kind : {"placements-", "scalability-"}) {
        if (stem.starts_with(kind)) suffix = stem.substr(kind.size());
      }
      if (suffix.empty()) continue;   // validation-*.csv: statistical efficiency, not speed
      if (suffix == "dgx") continue;  // superseded by dgx-ext (see the header)
      const std::optional<std::string_view> type = SiaGpuType(suffix);
      if (!type.has_value()) {
        return InvalidArgument(
            fmt::format("{}: unknown GPU suffix \"{}\" (known: aws, azure, dgx, dgx-ext, quad, "
                        "rtx)",
                        file.string(), suffix));
      }
      DS_RETURN_IF_ERROR(AppendCsv(file, {"sia", model, std::string(*type)}, out));
    }
  }
  return out;
}

Result<std::vector<PerfProfile>> LoadPolluxProfiles(const std::string& dir) {
  DS_ASSIGN_OR_RETURN(const std::vector<std::filesystem::path> models, ListDirs(dir, "pollux"));
  std::vector<PerfProfile> out;
  for (const std::filesystem::path& model_dir : models) {
    const std::string model = model_dir.filename().string();
    for (std::string_view kind : {"placements.csv", "scalability.csv"}) {
      const std::filesystem::path file = model_dir / kind;
      std::error_code ec;
      if (!std::filesystem::exists(file, ec)) continue;
      DS_RETURN_IF_ERROR(AppendCsv(file, {"pollux", model, "T4"}, out));
    }
  }
  return out;
}

Result<std::vector<PerfProfile>> LoadProfileTables(const std::string& traces_dir,
                                                   std::span<const std::string> tables,
                                                   bool gavel_colocation) {
  std::vector<PerfProfile> out;
  for (const std::string& name : tables) {
    std::vector<PerfProfile> rows;
    if (name == "gavel") {
      DS_ASSIGN_OR_RETURN(
          const GavelThroughputTable table,
          GavelThroughputTable::Load(traces_dir + "/gavel/simulation_throughputs.json"));
      rows = GavelProfiles(table, gavel_colocation);
    } else if (name == "sia") {
      DS_ASSIGN_OR_RETURN(rows, LoadSiaProfiles(traces_dir + "/sia/profiles"));
    } else if (name == "pollux") {
      DS_ASSIGN_OR_RETURN(rows, LoadPolluxProfiles(traces_dir + "/pollux/profiles"));
    } else {
      return InvalidArgument(fmt::format("unknown table \"{}\" (known: gavel, sia, pollux)", name));
    }
    out.insert(out.end(), std::make_move_iterator(rows.begin()),
               std::make_move_iterator(rows.end()));
  }
  return out;
}

}  // namespace dlsched
