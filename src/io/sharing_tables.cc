#include "io/sharing_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "io/csv_reader.h"

namespace dlsched {
namespace {

using sharing::JobTypeKey;
using sharing::MeasuredPair;
using sharing::PairSample;

// A row of a CSV file whose columns were looked up by name.
class Row {
 public:
  Row(std::vector<std::string_view> fields, std::string_view origin, int line)
      : fields_(std::move(fields)), origin_(origin), line_(line) {}

  Status Error(std::string_view what) const {
    return InvalidArgument(fmt::format("{}:{}: {}", origin_, line_, what));
  }
  int line() const { return line_; }
  std::string_view Text(int col) const { return fields_[static_cast<size_t>(col)]; }
  Result<double> Number(int col, std::string_view name, double lo, double hi) const {
    const std::optional<double> v = ParseFiniteDouble(Text(col));
    if (!v.has_value() || *v < lo || *v > hi) {
      return Error(
          fmt::format("{} must be a number in [{}, {}], got \"{}\"", name, lo, hi, Text(col)));
    }
    return *v;
  }
  Result<int> Integer(int col, std::string_view name, int lo, int hi) const {
    const std::optional<int> v = ParseInt<int>(Text(col));
    if (!v.has_value() || *v < lo || *v > hi) {
      return Error(
          fmt::format("{} must be an integer in [{}, {}], got \"{}\"", name, lo, hi, Text(col)));
    }
    return *v;
  }

 private:
  std::vector<std::string_view> fields_;
  std::string_view origin_;
  int line_;
};

// Calls `on_row` for every non-blank line after the header; `columns` names the columns needed,
// and `on_row` gets their indexes in that order.
Status ForEachRow(std::string_view text, std::string_view origin,
                  std::span<const std::string_view> columns,
                  const std::function<Status(const Row&, std::span<const int>)>& on_row) {
  std::vector<std::string_view> header;
  std::vector<int> cols;
  DS_RETURN_IF_ERROR(
      ForEachCsvLine(text, [&](std::vector<std::string_view> fields, int line_number) -> Status {
        if (header.empty()) {
          header = std::move(fields);
          for (std::string_view name : columns) {
            const auto it = std::find(header.begin(), header.end(), name);
            if (it == header.end()) {
              return InvalidArgument(
                  fmt::format("{}:{}: no column \"{}\" in the header", origin, line_number, name));
            }
            cols.push_back(static_cast<int>(it - header.begin()));
          }
          return Status::Ok();
        }
        if (fields.size() != header.size()) {
          return InvalidArgument(fmt::format("{}:{}: expected {} fields, got {}", origin,
                                             line_number, header.size(), fields.size()));
        }
        return on_row(Row(std::move(fields), origin, line_number), cols);
      }));
  if (header.empty()) return InvalidArgument(fmt::format("{}: empty file", origin));
  return Status::Ok();
}

Result<JobTypeKey> ReadKey(const Row& row, int model, int batch, int amp) {
  JobTypeKey key;
  key.model = std::string(row.Text(model));
  if (key.model.empty()) return row.Error("empty model");
  DS_ASSIGN_OR_RETURN(key.batch_size, row.Integer(batch, "batch size", 1, 1 << 20));
  DS_ASSIGN_OR_RETURN(const int amp_flag, row.Integer(amp, "amp", 0, 1));
  key.amp = amp_flag == 1;
  return key;
}

// The Lucid row (amp off) of `model` whose batch size is nearest `batch_size` in log2 (ties to
// the smaller); batch_size 0 takes the smallest.
std::optional<int> NearestLucidType(const sharing::JobTypeCatalog& catalog, std::string_view model,
                                    int batch_size) {
  std::optional<int> best;
  double best_distance = 0.0;
  for (int t = 0; t < catalog.size(); ++t) {
    const JobTypeKey& key = catalog.at(t).key;
    if (key.model != model || key.amp) continue;
    const double distance =
        batch_size > 0 ? std::abs(std::log2(static_cast<double>(key.batch_size) / batch_size))
                       : static_cast<double>(key.batch_size);
    const bool better =
        !best.has_value() || distance < best_distance ||
        (distance == best_distance && key.batch_size < catalog.at(*best).key.batch_size);
    if (better) {
      best = t;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace

Result<std::vector<LucidJobProfile>> ParseLucidSingle(std::string_view text,
                                                      std::string_view origin) {
  static constexpr std::string_view kColumns[] = {
      "model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem", "label"};
  std::vector<LucidJobProfile> out;
  DS_RETURN_IF_ERROR(
      ForEachRow(text, origin, kColumns, [&](const Row& row, std::span<const int> c) -> Status {
        LucidJobProfile p;
        DS_ASSIGN_OR_RETURN(p.key, ReadKey(row, c[0], c[2], c[3]));
        p.dataset = std::string(row.Text(c[1]));
        DS_ASSIGN_OR_RETURN(p.iters_per_s, row.Number(c[4], "speed", 0.0, 1e12));
        DS_ASSIGN_OR_RETURN(p.gpu_util_pct, row.Number(c[5], "gpu_util", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.gmem_util_pct, row.Number(c[6], "gmem_util", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.gmem_mib, row.Number(c[7], "gmem", 0.0, 1e9));
        DS_ASSIGN_OR_RETURN(p.label, row.Integer(c[8], "label", 0, 1000));
        out.push_back(std::move(p));
        return Status::Ok();
      }));
  return out;
}

Result<std::vector<LucidPair>> ParseLucidColocate(std::string_view text, std::string_view origin) {
  static constexpr std::string_view kColumns[] = {
      "model1", "batchsize1", "amp1",      "speed1", "model2",   "batchsize2", "amp2",
      "speed2", "gpu_util",   "gmem_util", "gmem",   "gpu_num1", "gpu_num2"};
  std::vector<LucidPair> out;
  DS_RETURN_IF_ERROR(
      ForEachRow(text, origin, kColumns, [&](const Row& row, std::span<const int> c) -> Status {
        LucidPair p;
        p.line = row.line();
        DS_ASSIGN_OR_RETURN(p.a, ReadKey(row, c[0], c[1], c[2]));
        DS_ASSIGN_OR_RETURN(p.speed_a, row.Number(c[3], "speed1", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.b, ReadKey(row, c[4], c[5], c[6]));
        DS_ASSIGN_OR_RETURN(p.speed_b, row.Number(c[7], "speed2", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.gpu_util_pct, row.Number(c[8], "gpu_util", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.gmem_util_pct, row.Number(c[9], "gmem_util", 0.0, 100.0));
        DS_ASSIGN_OR_RETURN(p.gmem_mib, row.Number(c[10], "gmem", 0.0, 1e9));
        // Every measured pair shares one GPU; anything else is a different experiment.
        DS_RETURN_IF_ERROR(row.Integer(c[11], "gpu_num1", 1, 1));
        DS_RETURN_IF_ERROR(row.Integer(c[12], "gpu_num2", 1, 1));
        out.push_back(std::move(p));
        return Status::Ok();
      }));
  return out;
}

Result<std::vector<int>> ParseAlibabaGpuMilli(std::string_view text, std::string_view origin) {
  static constexpr std::string_view kColumns[] = {"num_gpu", "gpu_milli"};
  std::vector<int> out;
  DS_RETURN_IF_ERROR(
      ForEachRow(text, origin, kColumns, [&](const Row& row, std::span<const int> c) -> Status {
        DS_ASSIGN_OR_RETURN(const int gpus, row.Integer(c[0], "num_gpu", 0, 1 << 16));
        if (gpus != 1) return Status::Ok();
        DS_ASSIGN_OR_RETURN(const int milli, row.Integer(c[1], "gpu_milli", 1, 1000));
        out.push_back(milli);
        return Status::Ok();
      }));
  return out;
}

Result<SharingMeasurements> LucidMeasurements(const std::vector<LucidJobProfile>& singles,
                                              const std::vector<LucidPair>& pairs,
                                              std::string_view pairs_origin) {
  SharingMeasurements out;
  for (const LucidJobProfile& s : singles) {
    DS_RETURN_IF_ERROR(out.catalog.Add(
        {s.key, s.gpu_util_pct / 100.0, s.gmem_util_pct / 100.0, std::llround(s.gmem_mib)}));
  }
  int group = 0;
  for (const LucidPair& p : pairs) {
    const std::optional<int> a = out.catalog.Find(p.a);
    const std::optional<int> b = out.catalog.Find(p.b);
    if (!a.has_value() || !b.has_value()) {
      const JobTypeKey& missing = a.has_value() ? p.b : p.a;
      return InvalidArgument(fmt::format("{}:{}: job type {} batch {} amp {} not in single_data",
                                         pairs_origin, p.line, missing.model, missing.batch_size,
                                         missing.amp ? 1 : 0));
    }
    out.pairs.push_back({"", *a, *b, p.speed_a, p.speed_b});
    out.lucid_samples.push_back({out.catalog.Job(*a), out.catalog.Job(*b), p.speed_a, group});
    out.lucid_samples.push_back({out.catalog.Job(*b), out.catalog.Job(*a), p.speed_b, group});
    ++group;
  }
  return out;
}

Status AddGavelMeasurements(const GavelThroughputTable& table, SharingMeasurements& out) {
  // Gavel type index (in table.job_types()) -> catalog type.
  std::vector<int> types;
  for (const GavelThroughputTable::JobType& job : table.job_types()) {
    // A type both sources name alike (Transformer at batch size 32) is one type: its features
    // are measured, and each source's pairs apply as documented at TableInterferenceModel.
    if (const std::optional<int> same = out.catalog.Find({job.model, job.batch_size, false})) {
      types.push_back(*same);
      continue;
    }
    std::string_view lucid_model;
    for (const auto& [gavel, lucid] : kGavelToLucidModel) {
      if (gavel == job.model) lucid_model = lucid;
    }
    if (lucid_model.empty()) {
      return NotFound(fmt::format("Gavel model {} has no Lucid counterpart", job.model));
    }
    const std::optional<int> borrowed = NearestLucidType(out.catalog, lucid_model, job.batch_size);
    if (!borrowed.has_value()) {
      return NotFound(fmt::format("Lucid model {} (for Gavel's {}) not in the catalog", lucid_model,
                                  job.model));
    }
    sharing::JobTypeProfile profile = out.catalog.at(*borrowed);
    profile.key = {job.model, job.batch_size, false};
    DS_ASSIGN_OR_RETURN(const int type, out.catalog.Add(std::move(profile)));
    types.push_back(type);
  }
  const std::vector<GavelThroughputTable::JobType>& jobs = table.job_types();
  int group = static_cast<int>(out.lucid_samples.size());
  for (const std::string& gpu : table.gpu_types()) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      const std::optional<double> alone_a =
          table.Isolated(jobs[i].model, jobs[i].batch_size, 1, gpu, true);
      for (size_t j = i; j < jobs.size(); ++j) {
        const std::optional<double> alone_b =
            table.Isolated(jobs[j].model, jobs[j].batch_size, 1, gpu, true);
        const GavelThroughputTable::JobKey a{jobs[i].model, jobs[i].batch_size, 1};
        const GavelThroughputTable::JobKey b{jobs[j].model, jobs[j].batch_size, 1};
        std::optional<std::pair<double, double>> pair = table.Colocated(a, b, gpu);
        if (!pair.has_value()) {
          pair = table.Colocated(b, a, gpu);
          if (pair.has_value()) std::swap(pair->first, pair->second);
        }
        if (!pair.has_value() || !alone_a.has_value() || !alone_b.has_value() || *alone_a <= 0.0 ||
            *alone_b <= 0.0) {
          continue;
        }
        const double speed_a = pair->first / *alone_a;
        const double speed_b = pair->second / *alone_b;
        out.pairs.push_back({gpu, types[i], types[j], speed_a, speed_b});
        if (speed_a <= 0.0 || speed_b <= 0.0) continue;
        const sharing::SharingJob ja = out.catalog.Job(types[i]);
        const sharing::SharingJob jb = out.catalog.Job(types[j]);
        out.gavel_samples.push_back({ja, jb, speed_a, group});
        out.gavel_samples.push_back({jb, ja, speed_b, group});
        ++group;
      }
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<sharing::TableInterferenceModel>> MakeInterferenceModel(
    const SharingMeasurements& measurements, std::string_view gpu_type) {
  DS_ASSIGN_OR_RETURN(sharing::FittedInterferenceModel fitted,
                      sharing::FittedInterferenceModel::Fit(measurements.lucid_samples));
  return std::make_unique<sharing::TableInterferenceModel>(
      measurements.catalog.size(), measurements.pairs, gpu_type,
      std::make_shared<const sharing::FittedInterferenceModel>(std::move(fitted)));
}

Result<SharingMeasurements> LoadSharingMeasurements(const std::string& traces_dir,
                                                    bool with_gavel) {
  const std::filesystem::path dir(traces_dir);
  const std::string single_path = (dir / "lucid" / "single_data.csv").string();
  const std::string pairs_path = (dir / "lucid" / "colocate_info.csv").string();
  DS_ASSIGN_OR_RETURN(const std::string single_text, ReadWholeFile(single_path));
  DS_ASSIGN_OR_RETURN(const std::string pairs_text, ReadWholeFile(pairs_path));
  DS_ASSIGN_OR_RETURN(const std::vector<LucidJobProfile> singles,
                      ParseLucidSingle(single_text, single_path));
  DS_ASSIGN_OR_RETURN(const std::vector<LucidPair> pairs,
                      ParseLucidColocate(pairs_text, pairs_path));
  DS_ASSIGN_OR_RETURN(SharingMeasurements out, LucidMeasurements(singles, pairs, pairs_path));
  if (with_gavel) {
    DS_ASSIGN_OR_RETURN(
        const GavelThroughputTable table,
        GavelThroughputTable::Load((dir / "gavel" / "simulation_throughputs.json").string()));
    DS_RETURN_IF_ERROR(AddGavelMeasurements(table, out));
  }
  return out;
}

Result<std::vector<int>> LoadAlibabaGpuMilli(const std::string& path) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  return ParseAlibabaGpuMilli(text, path);
}

}  // namespace dlsched
