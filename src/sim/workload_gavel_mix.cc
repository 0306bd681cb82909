#include "sim/workload_gavel_mix.h"

#include <array>
#include <cmath>
#include <string>

#include "dlsched/common/rng.h"

namespace dlsched::sim {
namespace {

// Gavel's gang sizes and their cumulative probabilities (0.7, 0.1, 0.15, 0.05).
constexpr std::array<int, 4> kScaleFactors = {1, 2, 4, 8};
constexpr std::array<double, 4> kScaleCdf = {0.7, 0.8, 0.95, 1.0};
// Run time on V100: 60 x 10^x s, x ~ U[3, 4] with probability kLongShare, else U[1.5, 3].
constexpr double kLongShare = 0.2;
constexpr double kShortExponent[2] = {1.5, 3.0};
constexpr double kLongExponent[2] = {3.0, 4.0};
constexpr std::string_view kReferenceType = "V100";

// Independent streams per attribute, as in the Philly-like mix.
enum Stream : uint64_t { kSizeStream = 1, kRunTimeStream, kArrivalStream, kTypeStream };

std::string Padded(int index, int count) {
  const std::string digits = std::to_string(index);
  const size_t width = std::to_string(std::max(count - 1, 0)).size();
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}

}  // namespace

Result<std::vector<JobSpec>> GenerateGavelMixJobs(const SyntheticOptions& options,
                                                  const GavelThroughputTable& table) {
  DS_CHECK(options.jobs >= 1 && options.gpus >= 1 && options.users >= 1 &&
           options.rate_per_hour > 0)
      << "synthetic options out of range";
  // Per gang size: the job types measured on V100 at it, and their throughputs.
  struct Choice {
    const GavelThroughputTable::JobType* type;
    double iters_per_s;
  };
  std::array<std::vector<Choice>, kScaleFactors.size()> choices;
  for (size_t s = 0; s < kScaleFactors.size(); ++s) {
    for (const GavelThroughputTable::JobType& type : table.job_types()) {
      const std::optional<double> rate =
          table.Measured({type.model, type.batch_size, kScaleFactors[s]}, kReferenceType, true);
      if (rate && *rate > 0) choices[s].push_back({&type, *rate});
    }
  }
  if (choices[0].empty()) {
    return FailedPrecondition("the Gavel throughput table measures no job type on one V100");
  }

  Rng root(options.seed);
  Rng size_rng = root.Fork(kSizeStream);
  Rng run_time_rng = root.Fork(kRunTimeStream);
  Rng arrival_rng = root.Fork(kArrivalStream);
  Rng type_rng = root.Fork(kTypeStream);
  const int num_queues = std::max(1, options.users / 2);
  const double mean_gap_s = 3600.0 / options.rate_per_hour;

  std::vector<JobSpec> jobs(static_cast<size_t>(options.jobs));
  double arrival_s = 0;
  for (int i = 0; i < options.jobs; ++i) {
    JobSpec& spec = jobs[static_cast<size_t>(i)];
    spec.name = std::to_string(i + 1);
    const double u = size_rng.Uniform();
    size_t s = 0;
    while (u >= kScaleCdf[s]) ++s;
    // Too wide for the cluster, or no type measured that wide: the widest size that works.
    while (s > 0 && (kScaleFactors[s] > options.gpus || choices[s].empty())) --s;
    const Choice& choice = choices[s][type_rng.Below(choices[s].size())];
    spec.model = choice.type->model;
    spec.batch_size = choice.type->batch_size;
    spec.num_gpus = kScaleFactors[s];

    const double* exponent = run_time_rng.Uniform() < kLongShare ? kLongExponent : kShortExponent;
    const double run_time_s = 60 * std::pow(10.0, run_time_rng.Uniform(exponent[0], exponent[1]));
    spec.iterations = run_time_s * choice.iters_per_s;
    spec.ref_iters_per_s = choice.iters_per_s;

    const int user = i % options.users;
    spec.user = "user" + Padded(user, options.users);
    spec.queue = "vc" + Padded(user % num_queues, num_queues);

    if (i > 0) arrival_s += arrival_rng.Exponential(mean_gap_s);
    spec.submit_time = AtSeconds(arrival_s);
  }
  return jobs;
}

}  // namespace dlsched::sim
