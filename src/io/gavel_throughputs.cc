#include "io/gavel_throughputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "dlsched/common/text.h"

namespace dlsched {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kUnconsolidatedSuffix = "_unconsolidated";
constexpr std::string_view kBatchSizeMarker = "(batch size";
// Field widths of the packed pair key (see PairKey).
constexpr int kMaxGpuTypes = 1 << 8;
constexpr int kMaxJobTypes = 1 << 16;
constexpr int kMaxScaleFactor = (1 << 12) - 1;

// The blanks around the table's keys and their parts.
constexpr std::string_view kBlanks = " \t\n\r";

char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Upper(c);
  return out;
}

// `upper` is already upper case.
bool EqualsUpper(std::string_view upper, std::string_view s) {
  if (upper.size() != s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (upper[i] != Upper(s[i])) return false;
  }
  return true;
}

// A positive decimal integer filling all of `s`.
std::optional<int> ParsePositiveInt(std::string_view s) {
  const std::optional<int> value = ParseInt<int>(s);
  return value && *value >= 1 ? value : std::nullopt;
}

// Gang throughput at `num_gpus` from measured points (sorted by scale factor, non-empty); the
// rule is documented at GavelThroughputTable::Isolated.
template <typename Point>
double Interpolate(std::span<const Point> points, int num_gpus) {
  const Point& first = points.front();
  const Point& last = points.back();
  if (num_gpus <= first.scale_factor) {
    return first.iters_per_s * num_gpus / first.scale_factor;
  }
  if (num_gpus >= last.scale_factor) {
    return last.iters_per_s * num_gpus / last.scale_factor;
  }
  const auto hi = std::lower_bound(points.begin(), points.end(), num_gpus,
                                   [](const Point& p, int n) { return p.scale_factor < n; });
  if (hi->scale_factor == num_gpus) return hi->iters_per_s;
  const auto lo = std::prev(hi);
  // A job that cannot run at one neighbour size is not assumed to run in between.
  if (lo->iters_per_s <= 0.0 || hi->iters_per_s <= 0.0) return 0.0;
  const double frac = static_cast<double>(num_gpus - lo->scale_factor) /
                      static_cast<double>(hi->scale_factor - lo->scale_factor);
  return lo->iters_per_s + (hi->iters_per_s - lo->iters_per_s) * frac;
}

// A throughput value; the caller adds where it was found to an error.
Result<double> ReadThroughput(const Json& value) {
  if (!value.is_number()) {
    return InvalidArgument(fmt::format("expected a number, got {}", value.dump()));
  }
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < 0.0) {
    return InvalidArgument(fmt::format("throughput must be finite and >= 0, got {}", v));
  }
  return v;
}

}  // namespace

// Collects the parsed entries, then lays out the sorted, indexed table in one go.
class GavelThroughputTable::Builder {
 public:
  struct IsolatedEntry {
    std::string gpu;  // upper case
    bool unconsolidated;
    JobKey key;
    double iters_per_s;
  };
  struct PairEntry {
    std::string gpu;
    JobKey a;
    JobKey b;
    double self;
    double other;
  };

  Status AddWorkerType(std::string_view worker_type, const Json& jobs) {
    std::string_view base = worker_type;
    bool unconsolidated = false;
    if (base.ends_with(kUnconsolidatedSuffix)) {
      base.remove_suffix(kUnconsolidatedSuffix.size());
      unconsolidated = true;
    }
    if (Trim(base, kBlanks).empty()) {
      return InvalidArgument(fmt::format("bad worker type \"{}\"", worker_type));
    }
    if (!jobs.is_object()) {
      return InvalidArgument(
          fmt::format("worker type \"{}\": expected an object of job keys", worker_type));
    }
    const std::string gpu = ToUpper(Trim(base, kBlanks));
    for (const auto& [key_text, entry] : jobs.items()) {
      // Error context is formatted only on failure: the table has ~10k entries.
      const auto where = [&] {
        return fmt::format("worker type \"{}\", job \"{}\"", worker_type, key_text);
      };
      Result<JobKey> key = CachedParseJobKey(key_text);
      if (!key.ok()) return key.status().WithPrefix(where());
      if (!entry.is_object()) return InvalidArgument(where() + ": expected an object");
      const auto null_it = entry.find("null");
      if (null_it == entry.end()) {
        return InvalidArgument(where() + ": no \"null\" (isolated throughput) entry");
      }
      const Result<double> isolated = ReadThroughput(*null_it);
      if (!isolated.ok()) return isolated.status().WithPrefix(where() + ": \"null\"");
      isolated_.push_back({gpu, unconsolidated, *key, *isolated});
      for (const auto& [other_text, value] : entry.items()) {
        if (other_text == "null") continue;
        const auto pair_where = [&] { return fmt::format("{}, pair \"{}\"", where(), other_text); };
        Result<JobKey> other = CachedParseJobKey(other_text);
        if (!other.ok()) return other.status().WithPrefix(pair_where());
        if (!value.is_array() || value.size() != 2) {
          return InvalidArgument(
              fmt::format("{}: expected [self, other], got {}", pair_where(), value.dump()));
        }
        const Result<double> self = ReadThroughput(value[0]);
        const Result<double> other_tput = ReadThroughput(value[1]);
        if (!self.ok()) return self.status().WithPrefix(pair_where());
        if (!other_tput.ok()) return other_tput.status().WithPrefix(pair_where());
        // Unconsolidated pair entries duplicate the consolidated ones in Gavel's snapshot.
        if (!unconsolidated) pairs_.push_back({gpu, *key, *std::move(other), *self, *other_tput});
      }
    }
    return Status::Ok();
  }

  Result<GavelThroughputTable> Build() && {
    if (isolated_.empty()) return InvalidArgument("no isolated throughputs");
    GavelThroughputTable table;
    for (const IsolatedEntry& e : isolated_) {
      table.job_types_.push_back({e.key.model, e.key.batch_size});
      table.gpu_types_.push_back(e.gpu);
    }
    for (const PairEntry& p : pairs_) {
      table.job_types_.push_back({p.a.model, p.a.batch_size});
      table.job_types_.push_back({p.b.model, p.b.batch_size});
      table.gpu_types_.push_back(p.gpu);
    }
    SortUnique(table.job_types_);
    SortUnique(table.gpu_types_);
    if (table.gpu_types_.size() >= static_cast<size_t>(kMaxGpuTypes) ||
        table.job_types_.size() >= static_cast<size_t>(kMaxJobTypes)) {
      return InvalidArgument(fmt::format("too many GPU types ({}) or job types ({})",
                                         table.gpu_types_.size(), table.job_types_.size()));
    }
    const auto job_index = [&](const JobKey& k) {
      const JobType type{k.model, k.batch_size};
      return static_cast<int>(
          std::lower_bound(table.job_types_.begin(), table.job_types_.end(), type) -
          table.job_types_.begin());
    };
    const auto gpu_index = [&](const std::string& gpu) {
      return static_cast<int>(
          std::lower_bound(table.gpu_types_.begin(), table.gpu_types_.end(), gpu) -
          table.gpu_types_.begin());
    };

    table.series_.resize(table.job_types_.size() * table.gpu_types_.size() * 2);
    for (const IsolatedEntry& e : isolated_) {
      if (e.key.scale_factor > kMaxScaleFactor) {
        return InvalidArgument(
            fmt::format("scale factor {} of {} is too large", e.key.scale_factor, e.key.model));
      }
      const size_t slot =
          (static_cast<size_t>(job_index(e.key)) * table.gpu_types_.size() + gpu_index(e.gpu)) * 2 +
          (e.unconsolidated ? 1 : 0);
      table.series_[slot].push_back({e.key.scale_factor, e.iters_per_s});
    }
    for (std::vector<Point>& series : table.series_) {
      std::sort(series.begin(), series.end(),
                [](const Point& a, const Point& b) { return a.scale_factor < b.scale_factor; });
      const auto dup = std::adjacent_find(
          series.begin(), series.end(),
          [](const Point& a, const Point& b) { return a.scale_factor == b.scale_factor; });
      if (dup != series.end()) {
        return InvalidArgument(fmt::format(
            "two job keys name the same job type and scale factor {}", dup->scale_factor));
      }
    }
    table.num_measurements_ = isolated_.size();

    table.pairs_.reserve(pairs_.size());
    for (const PairEntry& p : pairs_) {
      if (p.a.scale_factor > kMaxScaleFactor || p.b.scale_factor > kMaxScaleFactor) {
        return InvalidArgument(
            fmt::format("scale factor of pair {} / {} is too large", p.a.model, p.b.model));
      }
      table.pairs_.push_back({PairKey(gpu_index(p.gpu), job_index(p.a), p.a.scale_factor,
                                      job_index(p.b), p.b.scale_factor),
                              p.self, p.other});
    }
    std::sort(table.pairs_.begin(), table.pairs_.end(),
              [](const Pair& a, const Pair& b) { return a.key < b.key; });
    const auto dup_pair =
        std::adjacent_find(table.pairs_.begin(), table.pairs_.end(),
                           [](const Pair& a, const Pair& b) { return a.key == b.key; });
    if (dup_pair != table.pairs_.end()) {
      return InvalidArgument("two pair keys name the same pair of jobs");
    }
    return table;
  }

 private:
  // The ~10k pair entries name only ~80 distinct job keys.
  Result<JobKey> CachedParseJobKey(const std::string& text) {
    const auto it = parsed_keys_.find(text);
    if (it != parsed_keys_.end()) return it->second;
    Result<JobKey> key = ParseJobKey(text);
    if (key.ok()) parsed_keys_.emplace(text, *key);
    return key;
  }

  template <typename T>
  static void SortUnique(std::vector<T>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  std::vector<IsolatedEntry> isolated_;
  std::vector<PairEntry> pairs_;
  std::map<std::string, JobKey, std::less<>> parsed_keys_;
};

Result<GavelThroughputTable> GavelThroughputTable::Load(const std::string& path) {
  DS_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path, "gavel throughput table"));
  return Parse(text, path);
}

Result<GavelThroughputTable> GavelThroughputTable::Parse(std::string_view json_text,
                                                         std::string_view origin) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return InvalidArgument(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!root.is_object() || root.empty()) {
    return InvalidArgument(
        fmt::format("{}: expected a non-empty object {{worker_type: {{job_key: ...}}}}", origin));
  }
  Builder builder;
  // nlohmann's object iterates in key order, so errors and the layout are deterministic.
  for (const auto& [worker_type, jobs] : root.items()) {
    const Status status = builder.AddWorkerType(worker_type, jobs);
    if (!status.ok()) return status.WithPrefix(origin);
  }
  Result<GavelThroughputTable> table = std::move(builder).Build();
  if (!table.ok()) return table.status().WithPrefix(origin);
  return table;
}

Result<GavelThroughputTable::JobType> GavelThroughputTable::ParseJobType(std::string_view text) {
  const std::string_view trimmed = Trim(text, kBlanks);
  const size_t marker = trimmed.rfind(kBatchSizeMarker);
  if (marker == std::string_view::npos) {
    if (trimmed.empty()) return InvalidArgument("empty job type");
    return JobType{std::string(trimmed), 0};
  }
  const std::string_view model = Trim(trimmed.substr(0, marker), kBlanks);
  const std::string_view rest = trimmed.substr(marker + kBatchSizeMarker.size());
  const std::optional<int> batch =
      rest.ends_with(')') ? ParsePositiveInt(Trim(rest.substr(0, rest.size() - 1), kBlanks))
                          : std::nullopt;
  if (model.empty() || !batch.has_value()) {
    return InvalidArgument(fmt::format(
        "job type \"{}\": expected \"<model> (batch size <positive int>)\" or \"<model>\"", text));
  }
  return JobType{std::string(model), *batch};
}

Result<GavelThroughputTable::JobKey> GavelThroughputTable::ParseJobKey(std::string_view text) {
  const auto bad = [&] {
    return InvalidArgument(
        fmt::format("job key \"{}\": expected \"('<job type>', <scale factor >= 1>)\"", text));
  };
  std::string_view s = Trim(text, kBlanks);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return bad();
  s = s.substr(1, s.size() - 2);
  const size_t comma = s.rfind(',');
  if (comma == std::string_view::npos) return bad();
  const std::string_view quoted = Trim(s.substr(0, comma), kBlanks);
  const std::optional<int> scale = ParsePositiveInt(Trim(s.substr(comma + 1), kBlanks));
  if (!scale.has_value() || quoted.size() < 2 ||
      (quoted.front() != '\'' && quoted.front() != '"') || quoted.back() != quoted.front()) {
    return bad();
  }
  Result<JobType> type = ParseJobType(quoted.substr(1, quoted.size() - 2));
  if (!type.ok()) return type.status();
  return JobKey{std::move(type->model), type->batch_size, *scale};
}

int GavelThroughputTable::FindJobType(std::string_view model, int batch_size) const {
  const auto find = [&](int batch) {
    const auto it =
        std::lower_bound(job_types_.begin(), job_types_.end(), std::pair(model, batch),
                         [](const JobType& t, const std::pair<std::string_view, int>& k) {
                           const int cmp = std::string_view(t.model).compare(k.first);
                           return cmp < 0 || (cmp == 0 && t.batch_size < k.second);
                         });
    const bool found = it != job_types_.end() && it->model == model && it->batch_size == batch;
    return found ? static_cast<int>(it - job_types_.begin()) : -1;
  };
  const int exact = find(batch_size);
  // A model listed without a batch size (A3C, CycleGAN) stands for all its batch sizes.
  return exact >= 0 || batch_size == 0 ? exact : find(0);
}

int GavelThroughputTable::FindGpuType(std::string_view gpu_type) const {
  for (size_t i = 0; i < gpu_types_.size(); ++i) {
    if (EqualsUpper(gpu_types_[i], gpu_type)) return static_cast<int>(i);
  }
  return -1;
}

uint64_t GavelThroughputTable::PairKey(int gpu, int a_type, int a_scale, int b_type, int b_scale) {
  // 8 + 16 + 12 + 16 + 12 bits; Build() rejects tables that do not fit.
  return (static_cast<uint64_t>(gpu) << 56) | (static_cast<uint64_t>(a_type) << 40) |
         (static_cast<uint64_t>(a_scale) << 28) | (static_cast<uint64_t>(b_type) << 12) |
         static_cast<uint64_t>(b_scale);
}

std::optional<double> GavelThroughputTable::Isolated(std::string_view model, int batch_size,
                                                     int num_gpus, std::string_view gpu_type,
                                                     bool consolidated) const {
  if (num_gpus < 1) return std::nullopt;
  const int job = FindJobType(model, batch_size);
  const int gpu = FindGpuType(gpu_type);
  if (job < 0 || gpu < 0) return std::nullopt;
  const std::vector<Point>& together = Series(job, gpu, /*unconsolidated=*/false);
  if (!consolidated && num_gpus > 1) {
    const std::vector<Point>& spread = Series(job, gpu, /*unconsolidated=*/true);
    // Only gangs of 2+ GPUs can span nodes; a 1-GPU "unconsolidated" row is a consolidated one.
    const auto multi = std::find_if(spread.begin(), spread.end(),
                                    [](const Point& p) { return p.scale_factor >= 2; });
    if (multi != spread.end()) {
      return Interpolate(std::span<const Point>(multi, spread.end()), num_gpus);
    }
    if (together.empty()) return std::nullopt;
    return Interpolate(std::span<const Point>(together), num_gpus) * kUnconsolidatedFallbackFactor;
  }
  if (together.empty()) return std::nullopt;
  return Interpolate(std::span<const Point>(together), num_gpus);
}

std::optional<double> GavelThroughputTable::Measured(const JobKey& key, std::string_view gpu_type,
                                                     bool consolidated) const {
  const int job = FindJobType(key.model, key.batch_size);
  const int gpu = FindGpuType(gpu_type);
  if (job < 0 || gpu < 0) return std::nullopt;
  for (const Point& p : Series(job, gpu, !consolidated)) {
    if (p.scale_factor == key.scale_factor) return p.iters_per_s;
  }
  return std::nullopt;
}

std::optional<std::pair<double, double>> GavelThroughputTable::Colocated(
    const JobKey& a, const JobKey& b, std::string_view gpu_type) const {
  const int a_type = FindJobType(a.model, a.batch_size);
  const int b_type = FindJobType(b.model, b.batch_size);
  const int gpu = FindGpuType(gpu_type);
  if (a_type < 0 || b_type < 0 || gpu < 0) return std::nullopt;
  if (a.scale_factor < 1 || a.scale_factor > kMaxScaleFactor || b.scale_factor < 1 ||
      b.scale_factor > kMaxScaleFactor) {
    return std::nullopt;
  }
  const uint64_t key = PairKey(gpu, a_type, a.scale_factor, b_type, b.scale_factor);
  const auto it = std::lower_bound(pairs_.begin(), pairs_.end(), key,
                                   [](const Pair& p, uint64_t k) { return p.key < k; });
  if (it == pairs_.end() || it->key != key) return std::nullopt;
  return std::pair(it->self_iters_per_s, it->other_iters_per_s);
}

std::optional<double> GavelThroughputTable::ReferenceItersPerSecond(
    const JobSpec& spec, std::string_view reference_type) const {
  const std::optional<double> rate =
      Isolated(spec.model, spec.batch_size, spec.num_gpus, reference_type, /*consolidated=*/true);
  if (!rate.has_value() || *rate <= 0.0) return std::nullopt;
  return rate;
}

GavelThroughputModel::GavelThroughputModel(std::shared_ptr<const GavelThroughputTable> table,
                                           std::shared_ptr<const ThroughputModel> fallback)
    : table_(std::move(table)), fallback_(std::move(fallback)) {
  DS_CHECK(table_ != nullptr) << "GavelThroughputModel needs a table";
  DS_CHECK(fallback_ != nullptr) << "GavelThroughputModel needs a fallback model";
}

double GavelThroughputModel::ItersPerSecond(const JobSpec& spec, const Cluster& cluster,
                                            const Placement& placement) const {
  // A CPU job: the table knows GPUs only.
  if (spec.num_gpus == 0) return fallback_->ItersPerSecond(spec, cluster, placement);
  if (placement.num_gpus() == 0) return 0.0;
  const std::optional<double> rate =
      SlowestTypeRate(cluster, placement, [&](std::string_view type, int gpus, bool consolidated) {
        return table_->Isolated(spec.model, spec.batch_size, gpus, type, consolidated);
      });
  return rate.has_value() ? *rate : fallback_->ItersPerSecond(spec, cluster, placement);
}

}  // namespace dlsched
