#include "dlsched/sharing/interference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

namespace dlsched::sharing {

InterferenceModel::InterferenceModel() {
  static std::atomic<uint64_t> last_serial{0};
  serial_ = last_serial.fetch_add(1, std::memory_order_relaxed) + 1;
}
namespace {

constexpr size_t kN = FittedInterferenceModel::kNumFeatures;
using Matrix = std::array<std::array<double, kN>, kN>;

char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Upper(a[i]) != Upper(b[i])) return false;
  }
  return true;
}

bool InUnitRange(double v) { return v >= 0.0 && v <= 1.0; }

// Solves a x = b in place by Gaussian elimination with partial pivoting; false when singular.
bool Solve(Matrix& a, std::array<double, kN>& b) {
  for (size_t col = 0; col < kN; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < kN; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    if (std::abs(a[pivot][col]) < 1e-12) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (size_t r = 0; r < kN; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (size_t c = col; c < kN; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (size_t i = 0; i < kN; ++i) b[i] /= a[i][i];
  return true;
}

}  // namespace

Result<int> JobTypeCatalog::Add(JobTypeProfile profile) {
  if (!InUnitRange(profile.sm_util) || !InUnitRange(profile.mem_bw_util)) {
    return InvalidArgument("job type " + profile.key.model + ": utilisation outside [0, 1]");
  }
  if (profile.memory_mib < 0) {
    return InvalidArgument("job type " + profile.key.model + ": negative memory");
  }
  const int type = size();
  if (!index_.emplace(profile.key, type).second) {
    return AlreadyExists("job type " + profile.key.model + " at batch size " +
                         std::to_string(profile.key.batch_size) + " added twice");
  }
  types_.push_back(std::move(profile));
  return type;
}

std::optional<int> JobTypeCatalog::Find(const JobTypeKey& key) const {
  const auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

SharingJob JobTypeCatalog::Job(int type) const {
  const JobTypeProfile& p = at(type);
  return {type, p.sm_util, p.mem_bw_util, p.memory_mib};
}

void GroupSpeeds(const InterferenceModel& model, std::span<const SharingJob> group,
                 std::span<double> out) {
  for (size_t i = 0; i < group.size(); ++i) {
    double speed = 1.0;
    for (size_t j = 0; j < group.size(); ++j) {
      if (j != i) speed *= model.PairSpeed(group[i], group[j]);
    }
    out[i] = speed;
  }
}

FittedInterferenceModel::Weights FittedInterferenceModel::Features(const SharingJob& self,
                                                                   const SharingJob& other) {
  const double us = self.sm_util;
  const double uo = other.sm_util;
  return {1.0,
          uo,
          us * uo,
          std::max(0.0, us + uo - 1.0),
          other.mem_bw_util,
          self.mem_bw_util * other.mem_bw_util,
          static_cast<double>(other.memory_mib) / kReferenceMemoryMib};
}

Result<FittedInterferenceModel> FittedInterferenceModel::Fit(std::span<const PairSample> samples,
                                                             double ridge) {
  if (samples.size() < kN) {
    return InvalidArgument("interference fit: " + std::to_string(samples.size()) +
                           " samples, need at least " + std::to_string(kN));
  }
  Matrix a{};
  std::array<double, kN> b{};
  for (const PairSample& s : samples) {
    const Weights x = Features(s.self, s.other);
    const double loss = 1.0 - s.speed;
    for (size_t i = 0; i < kN; ++i) {
      for (size_t j = 0; j < kN; ++j) a[i][j] += x[i] * x[j];
      b[i] += x[i] * loss;
    }
  }
  for (size_t i = 0; i < kN; ++i) a[i][i] += ridge * static_cast<double>(samples.size());
  if (!Solve(a, b)) return InvalidArgument("interference fit: singular system");
  return FittedInterferenceModel(b);
}

double FittedInterferenceModel::PairSpeed(const SharingJob& self, const SharingJob& other) const {
  const Weights x = Features(self, other);
  double loss = 0.0;
  for (size_t i = 0; i < kN; ++i) loss += weights_[i] * x[i];
  return std::clamp(1.0 - loss, kMinSpeed, kMaxSpeed);
}

TableInterferenceModel::TableInterferenceModel(int num_types, std::span<const MeasuredPair> pairs,
                                               std::string_view gpu_type,
                                               std::shared_ptr<const InterferenceModel> fallback)
    : num_types_(num_types), fallback_(std::move(fallback)) {
  DS_CHECK(fallback_ != nullptr) << "TableInterferenceModel needs a fallback";
  const size_t cells = static_cast<size_t>(num_types) * static_cast<size_t>(num_types);
  // Sums and counts per ordered pair, for the typed and the untyped measurements; typed ones win.
  std::vector<double> sum[2] = {std::vector<double>(cells), std::vector<double>(cells)};
  std::vector<int> count[2] = {std::vector<int>(cells), std::vector<int>(cells)};
  for (const MeasuredPair& p : pairs) {
    DS_CHECK(p.a >= 0 && p.a < num_types && p.b >= 0 && p.b < num_types)
        << "measured pair names a type outside the catalog";
    int kind;
    if (p.gpu_type.empty()) {
      kind = 0;
    } else if (EqualsIgnoreCase(p.gpu_type, gpu_type)) {
      kind = 1;
    } else {
      continue;
    }
    const size_t ab = static_cast<size_t>(p.a) * num_types + p.b;
    const size_t ba = static_cast<size_t>(p.b) * num_types + p.a;
    sum[kind][ab] += p.speed_a;
    ++count[kind][ab];
    sum[kind][ba] += p.speed_b;
    ++count[kind][ba];
  }
  speed_.assign(cells, std::numeric_limits<float>::quiet_NaN());
  for (size_t c = 0; c < cells; ++c) {
    const int kind = count[1][c] > 0 ? 1 : 0;
    if (count[kind][c] == 0) continue;
    speed_[c] = static_cast<float>(sum[kind][c] / count[kind][c]);
    ++num_measured_;
  }
}

std::optional<double> TableInterferenceModel::Measured(int self, int other) const {
  if (self < 0 || other < 0 || self >= num_types_ || other >= num_types_) return std::nullopt;
  const float v = speed_[static_cast<size_t>(self) * num_types_ + other];
  if (std::isnan(v)) return std::nullopt;
  return v;
}

double TableInterferenceModel::PairSpeed(const SharingJob& self, const SharingJob& other) const {
  const std::optional<double> measured = Measured(self.type, other.type);
  return measured.has_value() ? *measured : fallback_->PairSpeed(self, other);
}

FitError EvaluateFit(const InterferenceModel& model, std::span<const PairSample> test,
                     double baseline_speed) {
  FitError e;
  e.num_samples = test.size();
  if (test.empty()) return e;
  double sq = 0.0;
  for (const PairSample& s : test) {
    const double err = std::abs(model.PairSpeed(s.self, s.other) - s.speed);
    e.mae += err;
    sq += err * err;
    e.max_abs = std::max(e.max_abs, err);
    e.baseline_mae += std::abs(baseline_speed - s.speed);
  }
  const double n = static_cast<double>(test.size());
  e.mae /= n;
  e.rmse = std::sqrt(sq / n);
  e.baseline_mae /= n;
  return e;
}

Result<FitError> CrossValidateFit(std::span<const PairSample> samples, int folds) {
  if (folds < 2) return InvalidArgument("cross-validation needs at least 2 folds");
  FitError pooled;
  double sq = 0.0;
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<PairSample> train;
    std::vector<PairSample> test;
    for (const PairSample& s : samples) {
      (((s.group % folds) + folds) % folds == fold ? test : train).push_back(s);
    }
    if (test.empty()) continue;
    DS_ASSIGN_OR_RETURN(const FittedInterferenceModel model, FittedInterferenceModel::Fit(train));
    double mean = 0.0;
    for (const PairSample& s : train) mean += s.speed;
    mean /= static_cast<double>(train.size());
    const FitError e = EvaluateFit(model, test, mean);
    const double n = static_cast<double>(e.num_samples);
    pooled.num_samples += e.num_samples;
    pooled.mae += e.mae * n;
    pooled.baseline_mae += e.baseline_mae * n;
    sq += e.rmse * e.rmse * n;
    pooled.max_abs = std::max(pooled.max_abs, e.max_abs);
  }
  if (pooled.num_samples == 0) return InvalidArgument("cross-validation: no samples");
  const double n = static_cast<double>(pooled.num_samples);
  pooled.mae /= n;
  pooled.baseline_mae /= n;
  pooled.rmse = std::sqrt(sq / n);
  return pooled;
}

}  // namespace dlsched::sharing
