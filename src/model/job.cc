#include "dlsched/model/job.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace dlsched {
namespace {

constexpr std::array<std::string_view, 8> kJobStateNames = {
    "pending", "queued", "running", "suspended", "succeeded", "failed", "killed", "rejected"};
constexpr std::array<std::string_view, 3> kQosNames = {"best-effort", "soft", "strict"};

}  // namespace

std::string_view JobStateName(JobState state) { return kJobStateNames[static_cast<size_t>(state)]; }

std::string_view ShareModeName(ShareMode mode) {
  switch (mode) {
    case ShareMode::kExclusive:
      return "exclusive";
    case ShareMode::kPacked:
      return "packed";
    case ShareMode::kTimeSliced:
      return "time-sliced";
  }
  return "unknown";
}

Result<JobState> ParseJobState(std::string_view name) {
  for (size_t i = 0; i < kJobStateNames.size(); ++i) {
    if (kJobStateNames[i] == name) return static_cast<JobState>(i);
  }
  return InvalidArgument("unknown job state '" + std::string(name) + "'");
}

std::string_view QosClassName(QosClass qos) { return kQosNames[static_cast<size_t>(qos)]; }

Result<QosClass> ParseQosClass(std::string_view name) {
  if (name == "best-effort" || name == "best_effort" || name == "best" || name.empty()) {
    return QosClass::kBestEffort;
  }
  if (name == "soft") return QosClass::kSoft;
  if (name == "strict") return QosClass::kStrict;
  return InvalidArgument("unknown qos_class '" + std::string(name) +
                         "' (want strict, soft or best-effort)");
}

int ServiceLoad::NeedAt(Timestamp t, int reserved) const {
  if (steps.empty()) return reserved;
  const Duration offset = t.time_since_epoch() % kPeriod;
  auto after = std::ranges::upper_bound(steps, offset, {}, [](const auto& s) { return s.first; });
  return std::prev(after)->second;  // the first step is at 0, so `after` is not begin()
}

Timestamp ServiceLoad::NextChangeAfter(Timestamp t) const {
  if (steps.size() <= 1) return kTimeNever;
  const Duration offset = t.time_since_epoch() % kPeriod;
  const Timestamp day_start = t - offset;
  auto after = std::ranges::upper_bound(steps, offset, {}, [](const auto& s) { return s.first; });
  return after == steps.end() ? day_start + kPeriod : day_start + after->first;
}

Result<ServiceLoad> ParseServiceLoad(std::string_view text) {
  ServiceLoad load;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string_view step = text.substr(start, end - start);
    start = end + 1;
    const size_t colon = step.find(':');
    int64_t offset_s = -1;
    int gpus = -1;
    const auto parse = [](std::string_view field, auto& out) {
      auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
      return ec == std::errc() && ptr == field.data() + field.size();
    };
    if (colon == std::string_view::npos || !parse(step.substr(0, colon), offset_s) ||
        !parse(step.substr(colon + 1), gpus)) {
      return InvalidArgument("service load step '" + std::string(step) +
                             "': want SECONDS:GPUS (offset into the day, GPUs needed)");
    }
    load.steps.emplace_back(Seconds(static_cast<double>(offset_s)), gpus);
  }
  return load;
}

std::string FormatServiceLoad(const ServiceLoad& load) {
  std::string text;
  for (const auto& [offset, gpus] : load.steps) {
    if (!text.empty()) text += ';';
    text += std::to_string(offset / std::chrono::seconds(1)) + ":" + std::to_string(gpus);
  }
  return text;
}

Status ValidateServiceLoad(const ServiceLoad& load, int reserved) {
  for (size_t i = 0; i < load.steps.size(); ++i) {
    const auto& [offset, gpus] = load.steps[i];
    const std::string step = "service load step " + std::to_string(i + 1) + ": ";
    if (i == 0 && offset != Duration(0)) return InvalidArgument(step + "the first must be at 0");
    if (i > 0 && offset <= load.steps[i - 1].first) {
      return InvalidArgument(step + "offsets must ascend");
    }
    if (offset >= ServiceLoad::kPeriod) {
      return InvalidArgument(step + "offset must be within the day (< 86400 s)");
    }
    if (gpus < 0 || gpus > reserved) {
      return InvalidArgument(step + "needs " + std::to_string(gpus) + " GPUs; want 0.." +
                             std::to_string(reserved) + " (its num_gpus)");
    }
  }
  return Status::Ok();
}

Duration JobSpec::ideal_duration() const { return Seconds(iterations / ref_iters_per_s); }

namespace {

// per_unit x units, capped at `cap` (both factors non-negative).
int64_t TimesCapped(int64_t per_unit, int64_t units, int64_t cap) {
  if (units > 0 && per_unit > cap / units) return cap;
  return per_unit * units;
}

}  // namespace

HostRequest EffectiveHostRequest(const JobSpec& spec, const HostDefaults& defaults) {
  HostRequest request{spec.cpus, spec.host_memory_mib};
  // Capped: a gang no cluster holds must not overflow into a small request.
  if (request.cpus == 0) {
    request.cpus = static_cast<int>(
        TimesCapped(defaults.cpus_per_gpu, spec.num_gpus, std::numeric_limits<int>::max()));
  }
  if (request.memory_mib == 0) {
    request.memory_mib = TimesCapped(defaults.memory_mib_per_gpu, spec.num_gpus,
                                     std::numeric_limits<int64_t>::max());
  }
  return request;
}

HostRequest SplitHostRequest(const HostRequest& whole, int job_gpus, int part_gpus) {
  if (job_gpus <= 0 || part_gpus >= job_gpus) return whole;
  const auto share = [&](int64_t amount) {
    return (amount * part_gpus + job_gpus - 1) / job_gpus;  // amount >= 0: ceil
  };
  return {static_cast<int>(share(whole.cpus)), share(whole.memory_mib)};
}

Status ValidateJobSpec(const JobSpec& spec) {
  if (spec.num_gpus < 0) {
    return InvalidArgument("num_gpus must not be negative, got " + std::to_string(spec.num_gpus));
  }
  if (spec.cpus < 0) return InvalidArgument("cpus must not be negative");
  if (spec.host_memory_mib < 0) return InvalidArgument("host_memory_mib must not be negative");
  if (spec.num_gpus == 0 && spec.cpus == 0) {
    return InvalidArgument("a job with no GPUs (a CPU job) must request cpus");
  }
  if (spec.num_gpus == 0 && spec.service) {
    return InvalidArgument("an online service needs at least one GPU");
  }
  if (!(spec.iterations > 0) || !std::isfinite(spec.iterations)) {
    return InvalidArgument("the job has no work: iterations/duration must be positive");
  }
  if (!(spec.ref_iters_per_s > 0) || !std::isfinite(spec.ref_iters_per_s)) {
    return InvalidArgument("ref_iters_per_s must be positive");
  }
  if (spec.memory_mib < 0) return InvalidArgument("memory_mib must not be negative");
  if (spec.service) return ValidateServiceLoad(*spec.service, spec.num_gpus);
  return Status::Ok();
}

Duration JobView::current_segment() const {
  return job_->state == JobState::kRunning ? now_ - job_->segment_start : Duration(0);
}

Duration JobView::attained_gpu_time() const {
  return job_->attained_gpu_time + current_segment() * job_->spec.num_gpus;
}

Duration JobView::attained_gpu_time_at(Timestamp t) const {
  if (job_->state != JobState::kRunning) return job_->attained_gpu_time;
  const Timestamp until = std::clamp(t, job_->segment_start, now_);
  return job_->attained_gpu_time + (until - job_->segment_start) * job_->spec.num_gpus;
}

Duration JobView::run_time() const { return job_->run_time + current_segment(); }

JobId JobTable::Add(JobSpec spec) {
  const JobId id(static_cast<uint32_t>(jobs_.size()));
  Job& job = jobs_.emplace_back();
  job.id = id;
  job.spec = std::move(spec);
  return id;
}

}  // namespace dlsched
