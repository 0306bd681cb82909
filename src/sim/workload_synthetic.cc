#include "sim/workload_synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "dlsched/common/rng.h"
#include "dlsched/common/text.h"
#include "sim/cpu_sensitivity.h"

namespace dlsched::sim {
namespace {

// ---------------------------------------------------------------------------------------------
// Baked-in parameters. Measured once (Python, not at run time) from traces/pollux/philly.csv:
// 82,247 jobs submitted 2017-09-04 .. 2017-12-22, the Philly trace of Jeon et al. (ATC '19) as
// processed by Pollux. The paper's qualitative findings they reproduce: most jobs use one GPU,
// run times span seconds to weeks with a large share of short (often failed) jobs, and
// multi-GPU jobs run much longer than single-GPU ones.

// Gang sizes and their job counts in philly.csv (sizes 12, 24, 64 and 128, 23 jobs together,
// are dropped). 1 GPU: 93.2%, 2: 2.2%, 4: 2.3%, 8: 2.0%, 16: 0.24%, 32: 0.08%.
struct SizeWeight {
  int gpus;
  int count;
};
constexpr std::array<SizeWeight, 6> kSizes = {
    {{1, 76627}, {2, 1818}, {4, 1870}, {8, 1643}, {16, 199}, {32, 67}}};

// Run times: a mixture of lognormals (weight, median seconds, sigma of ln), fitted by EM on
// ln(duration), separately for single- and multi-GPU jobs.
// philly.csv, 1 GPU : p10 62 s, p25 122 s, p50 1,117 s, p75 2,716 s, p90 8,512 s, p99 1.6 d.
// philly.csv, >1 GPU: p10 17 s, p25 41 s,  p50 4,584 s, p75 23 h,    p90 2.4 d,   p99 10.5 d.
// The mixtures below give (100k samples, capped): 1 GPU p50 1,184 s, p90 9,507 s, p99 1.2 d;
// >1 GPU p50 4,431 s, p90 2.6 d. The short components are Philly's failed/debug jobs.
struct LogNormalPart {
  double weight;
  double median_s;
  double sigma;
};
constexpr std::array<LogNormalPart, 3> kSingleGpuRunTime = {
    {{0.19, 64, 0.25}, {0.24, 1950, 0.6}, {0.57, 1450, 2.0}}};
constexpr std::array<LogNormalPart, 3> kMultiGpuRunTime = {
    {{0.20, 18, 0.35}, {0.32, 280, 2.0}, {0.48, 73000, 1.35}}};
// 0.16% of single-GPU and 2% of multi-GPU Philly jobs ran longer than a week (the longest 53
// days); capping keeps a few-thousand-job simulation from being one job's tail.
constexpr double kMaxRunTimeS = 7 * 24 * 3600;
constexpr double kMinRunTimeS = 1;

// Model names and batch sizes that Gavel's measured throughput table
// (traces/gavel/simulation_throughputs.json) has entries for, so that model can look them up.
struct ModelChoice {
  const char* model;
  int batch_size;
};
constexpr std::array<ModelChoice, 7> kModels = {{{"ResNet-18", 64},
                                                 {"ResNet-50", 64},
                                                 {"Transformer", 128},
                                                 {"LM", 20},
                                                 {"Recommendation", 2048},
                                                 {"A3C", 0},
                                                 {"CycleGAN", 0}}};
constexpr double kModelShare = 0.6;
// Cumulative priority shares: 0 -> 70%, 1 -> 20%, 2 -> 10%.
constexpr std::array<double, 3> kPriorityCdf = {0.7, 0.9, 1.0};
constexpr double kRandomUserShare = 0.3;

// Independent streams per attribute, so that e.g. changing `users` leaves sizes and run times
// unchanged.
enum Stream : uint64_t {
  kSizeStream = 1,
  kRunTimeStream,
  kArrivalStream,
  kUserStream,
  kModelStream,
  kPriorityStream
};

template <size_t N>
double SampleRunTime(Rng& rng, const std::array<LogNormalPart, N>& parts) {
  const double u = rng.Uniform();
  double acc = 0;
  const LogNormalPart* chosen = &parts.back();
  for (const LogNormalPart& part : parts) {
    acc += part.weight;
    if (u < acc) {
      chosen = &part;
      break;
    }
  }
  const double seconds = rng.LogNormal(std::log(chosen->median_s), chosen->sigma);
  return std::clamp(std::round(seconds), kMinRunTimeS, kMaxRunTimeS);
}

// The model of DataLoadingModels() whose cumulative mix weight first exceeds u in [0, 1).
std::string_view PickDataLoadingModel(double u) {
  double acc = 0;
  for (const DataLoadingModel& m : DataLoadingModels()) {
    acc += m.mix_weight;
    if (u < acc) return m.model;
  }
  return DataLoadingModels().back().model;  // u within rounding of 1
}

std::string PaddedIndex(int index, int count) {
  const std::string digits = std::to_string(index);
  const size_t width = std::to_string(std::max(count - 1, 0)).size();
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}

constexpr std::string_view kKeys =
    "mix, jobs, seed, load, gpus, users, services, service_gpus, rate, throughputs";

Status BadOption(std::string_view key, std::string_view value, std::string_view want) {
  return InvalidArgument("synthetic workload option " + std::string(key) + "=" +
                         std::string(value) + ": want " + std::string(want));
}

// The k-th (0-based) of `count` synthetic services: see GenerateSyntheticJobs.
JobSpec OnlineService(int k, int gpus, Duration lifetime, int count) {
  JobSpec spec;
  spec.name = "svc" + PaddedIndex(k + 1, count + 1);
  spec.user = "online";
  spec.queue = "online";
  spec.num_gpus = gpus;
  spec.iterations = ToSeconds(lifetime);
  spec.ref_iters_per_s = 1.0;
  const int off_peak = std::max(1, gpus / 4);
  spec.service = ServiceLoad{{{Hours(0), off_peak}, {Hours(8), gpus}, {Hours(20), off_peak}}};
  return spec;
}

}  // namespace

Result<SyntheticOptions> ParseSyntheticOptions(std::string_view text) {
  SyntheticOptions options;
  if (TrimField(text).empty()) return options;
  std::vector<std::string_view> items;
  SplitInto(text, ',', items);
  std::vector<std::string_view> seen;
  for (std::string_view item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("synthetic workload option '" + std::string(item) +
                             "': want key=value (keys: " + std::string(kKeys) + ")");
    }
    const std::string_view key = TrimField(item.substr(0, eq));
    const std::string_view value = TrimField(item.substr(eq + 1));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return InvalidArgument("synthetic workload option '" + std::string(key) + "' given twice");
    }
    seen.push_back(key);
    if (key == "mix") {
      if (value == "philly") {
        options.mix = SyntheticOptions::Mix::kPhilly;
      } else if (value == "gavel") {
        options.mix = SyntheticOptions::Mix::kGavel;
      } else if (value == "dataload") {
        options.mix = SyntheticOptions::Mix::kDataLoading;
      } else {
        return BadOption(key, value, "philly, dataload or gavel");
      }
    } else if (key == "rate") {
      const auto v = ParseFiniteDouble(value);
      if (!v || *v < 0.001 || *v > 1e6) return BadOption(key, value, "a number in [0.001, 1e6]");
      options.rate_per_hour = *v;
    } else if (key == "throughputs") {
      if (value.empty()) return BadOption(key, value, "a file");
      options.throughputs = std::string(value);
    } else if (key == "jobs") {
      const auto v = ParseInt(value);
      if (!v || *v < 1 || *v > 1'000'000) return BadOption(key, value, "an integer in [1, 1e6]");
      options.jobs = static_cast<int>(*v);
    } else if (key == "seed") {
      const auto v = ParseInt(value);
      if (!v || *v < 0) return BadOption(key, value, "an integer >= 0");
      options.seed = static_cast<uint64_t>(*v);
    } else if (key == "load") {
      const auto v = ParseFiniteDouble(value);
      // The lower bound keeps the arrival span of a million jobs inside Timestamp's range.
      if (!v || *v < 0.01 || *v > 1000) return BadOption(key, value, "a number in [0.01, 1000]");
      options.load = *v;
    } else if (key == "gpus") {
      const auto v = ParseInt(value);
      if (!v || *v < 1 || *v > 10'000'000) return BadOption(key, value, "an integer >= 1");
      options.gpus = static_cast<int>(*v);
    } else if (key == "users") {
      const auto v = ParseInt(value);
      if (!v || *v < 1 || *v > 1'000'000) return BadOption(key, value, "an integer >= 1");
      options.users = static_cast<int>(*v);
    } else if (key == "services") {
      const auto v = ParseInt(value);
      if (!v || *v < 0 || *v > 10'000) return BadOption(key, value, "an integer in [0, 10000]");
      options.services = static_cast<int>(*v);
    } else if (key == "service_gpus") {
      const auto v = ParseInt(value);
      if (!v || *v < 1 || *v > kMaxGpusPerNode) {
        return BadOption(key, value, "an integer in [1, 64]");
      }
      options.service_gpus = static_cast<int>(*v);
    } else {
      return InvalidArgument("unknown synthetic workload option '" + std::string(key) +
                             "' (keys: " + std::string(kKeys) + ")");
    }
  }
  const bool gavel = options.mix == SyntheticOptions::Mix::kGavel;
  for (std::string_view key : seen) {
    const bool gavel_only = key == "rate" || key == "throughputs";
    const bool philly_only = key == "load" || key == "services" || key == "service_gpus";
    if ((gavel_only && !gavel) || (philly_only && gavel)) {
      const std::string_view mix = gavel                                                ? "gavel"
                                   : options.mix == SyntheticOptions::Mix::kDataLoading ? "dataload"
                                                                                        : "philly";
      return InvalidArgument("synthetic workload option '" + std::string(key) +
                             "' does not apply to mix=" + std::string(mix));
    }
  }
  return options;
}

std::vector<JobSpec> GenerateSyntheticJobs(const SyntheticOptions& options) {
  DS_CHECK(options.jobs >= 1 && options.gpus >= 1 && options.users >= 1 && options.load > 0)
      << "synthetic options out of range";
  Rng root(options.seed);
  Rng size_rng = root.Fork(kSizeStream);
  Rng run_time_rng = root.Fork(kRunTimeStream);
  Rng arrival_rng = root.Fork(kArrivalStream);
  Rng user_rng = root.Fork(kUserStream);
  Rng model_rng = root.Fork(kModelStream);
  Rng priority_rng = root.Fork(kPriorityStream);

  int64_t size_total = 0;
  for (const SizeWeight& s : kSizes) {
    if (s.gpus <= options.gpus) size_total += s.count;
  }
  const int num_queues = std::max(1, options.users / 2);
  const int first_user = static_cast<int>(user_rng.Below(static_cast<uint64_t>(options.users)));

  std::vector<JobSpec> jobs(static_cast<size_t>(options.jobs));
  double gpu_seconds = 0;  // summed in job order: deterministic
  for (int i = 0; i < options.jobs; ++i) {
    JobSpec& spec = jobs[static_cast<size_t>(i)];
    spec.name = std::to_string(i + 1);

    int64_t pick = static_cast<int64_t>(size_rng.Below(static_cast<uint64_t>(size_total)));
    for (const SizeWeight& s : kSizes) {
      if (s.gpus > options.gpus) continue;
      if (pick < s.count) {
        spec.num_gpus = s.gpus;
        break;
      }
      pick -= s.count;
    }
    const double run_time_s = spec.num_gpus == 1 ? SampleRunTime(run_time_rng, kSingleGpuRunTime)
                                                 : SampleRunTime(run_time_rng, kMultiGpuRunTime);
    spec.iterations = run_time_s;
    spec.ref_iters_per_s = 1.0;
    gpu_seconds += run_time_s * spec.num_gpus;

    int user = (first_user + i) % options.users;
    if (user_rng.Uniform() < kRandomUserShare) {
      user = static_cast<int>(user_rng.Below(static_cast<uint64_t>(options.users)));
    }
    spec.user = "user" + PaddedIndex(user, options.users);
    spec.queue = "vc" + PaddedIndex(user % num_queues, num_queues);

    if (options.mix == SyntheticOptions::Mix::kDataLoading) {
      spec.model = std::string(PickDataLoadingModel(model_rng.Uniform()));
    } else if (model_rng.Uniform() < kModelShare) {
      const ModelChoice& m = kModels[model_rng.Below(kModels.size())];
      spec.model = m.model;
      spec.batch_size = m.batch_size;
    }
    const double p = priority_rng.Uniform();
    spec.priority = static_cast<int>(std::upper_bound(kPriorityCdf.begin(), kPriorityCdf.end(), p) -
                                     kPriorityCdf.begin());
  }

  // Poisson arrivals: exponential gaps, then the time axis scaled so the arrival span makes the
  // offered load exact (conditioned on the number of arrivals, the points of a Poisson process
  // are uniform order statistics, so scaling keeps the process' shape).
  std::vector<double> arrival(jobs.size(), 0.0);
  for (size_t i = 1; i < jobs.size(); ++i) arrival[i] = arrival[i - 1] + arrival_rng.Exponential(1);
  const double span_s = gpu_seconds / (options.load * options.gpus);
  const double scale = arrival.back() > 0 ? span_s / arrival.back() : 0.0;
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].submit_time = AtSeconds(arrival[i] * scale);
  if (options.services > 0) {
    const Duration lifetime = jobs.back().submit_time.time_since_epoch() + Hours(24 * 7);
    jobs.insert(jobs.begin(), static_cast<size_t>(options.services), JobSpec{});
    for (int k = 0; k < options.services; ++k) {
      jobs[static_cast<size_t>(k)] = OnlineService(k, std::min(options.service_gpus, options.gpus),
                                                   lifetime, options.services);
    }
  }
  return jobs;
}

}  // namespace dlsched::sim
