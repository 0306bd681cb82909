#include "dlsched/policy/sharing_knowledge.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dlsched/common/status.h"

namespace dlsched {
namespace {

struct BuiltInType {
  const char* model;
  int batch_size;
  double sm_util;
  double mem_bw_util;
  int64_t memory_mib;
};
constexpr BuiltInType kBuiltInTypes[] = {
    {"recommendation", 256, 0.12, 0.03, 2048}, {"rl-agent", 64, 0.15, 0.02, 2048},
    {"small-cnn", 64, 0.45, 0.25, 3072},       {"mobile-cnn", 128, 0.60, 0.35, 4096},
    {"lstm", 128, 0.75, 0.60, 5632},           {"large-cnn", 64, 0.95, 0.75, 8192},
    {"large-cnn", 128, 1.00, 0.85, 13312},     {"transformer", 64, 0.80, 0.35, 12288},
};
constexpr sharing::FittedInterferenceModel::Weights kBuiltInWeights = {
    -0.0020, -0.0034, 0.2316, 0.1467, 0.0736, -0.0558, -0.0816};

}  // namespace

sharing::JobTypeCatalog BuiltInSharingJobTypes() {
  sharing::JobTypeCatalog catalog;
  for (const BuiltInType& type : kBuiltInTypes) {
    const Result<int> added = catalog.Add(
        {{type.model, type.batch_size, false}, type.sm_util, type.mem_bw_util, type.memory_mib});
    DS_CHECK(added.ok()) << "built-in job type refused: " << added.status().ToString();
  }
  return catalog;
}

std::shared_ptr<const sharing::InterferenceModel> BuiltInInterferenceModel() {
  return std::make_shared<const sharing::FittedInterferenceModel>(kBuiltInWeights);
}

std::optional<int> FindSharingJobType(const sharing::JobTypeCatalog& catalog,
                                      std::string_view model, int batch_size) {
  if (model.empty()) return std::nullopt;
  std::optional<int> best;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int t = 0; t < catalog.size(); ++t) {
    const sharing::JobTypeKey& key = catalog.at(t).key;
    if (key.model != model || key.amp) continue;
    const double distance =
        batch_size > 0 && key.batch_size > 0
            ? std::abs(std::log2(static_cast<double>(batch_size) / key.batch_size))
            : 0.0;
    if (distance < best_distance) {
      best_distance = distance;
      best = t;
    }
  }
  return best;
}

SharingKnowledge::SharingKnowledge(
    std::vector<std::shared_ptr<const sharing::InterferenceModel>> models)
    : models_(std::move(models)) {}

void SharingKnowledge::Set(JobId job, const sharing::SharingJob& features,
                           int64_t declared_peak_mib, size_t history) {
  if (job.index() >= jobs_.size()) jobs_.resize(job.index() + 1);
  JobInfo& info = jobs_[job.index()];
  info = JobInfo{};
  info.set = true;
  info.features = features;
  info.declared_peak_mib = std::max<int64_t>(1, declared_peak_mib);
  info.history = sharing::DemandHistory(history);
  changes_.Record(job);
}

void SharingKnowledge::Observe(JobId job, const sharing::DemandSample& sample) {
  DS_CHECK(Has(job)) << "observed job " << job << " was never declared";
  JobInfo& info = jobs_[job.index()];
  info.history.Add(sample);
  info.cached_percentile = -1.0;
  changes_.Record(job);
}

void SharingKnowledge::SetHistory(JobId job, const sharing::DemandHistory& history) {
  DS_CHECK(Has(job)) << "history for job " << job << ", which was never declared";
  JobInfo& info = jobs_[job.index()];
  info.history = history;
  info.cached_percentile = -1.0;
  changes_.Record(job);
}

void SharingKnowledge::SetShareGroup(JobId job, uint64_t group) {
  DS_CHECK(Has(job)) << "a group for job " << job << ", which was never declared";
  jobs_[job.index()].group = group;
  changes_.Record(job);
}

const sharing::InterferenceModel* SharingKnowledge::Interference(GpuTypeId type) const {
  return type.index() < models_.size() ? models_[type.index()].get() : nullptr;
}

int64_t SharingKnowledge::MemoryDemandMib(JobId job, double p) const {
  const JobInfo& info = jobs_[job.index()];
  if (info.history.empty()) return info.declared_peak_mib;
  if (info.cached_percentile != p) {
    info.cached_percentile = p;
    info.cached_demand_mib = std::max<int64_t>(1, *info.history.MemoryPercentileMib(p));
  }
  return info.cached_demand_mib;
}

void SharingKnowledge::FiguresOf(std::span<const JobId> jobs, double p,
                                 std::span<SharingFigures> out) const {
  FiguresByCalls(*this, jobs, p, out);
}

}  // namespace dlsched
