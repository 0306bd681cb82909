#include "dlsched/model/job.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace dlsched {
namespace {

constexpr std::array<std::string_view, 8> kJobStateNames = {
    "pending", "queued", "running", "suspended", "succeeded", "failed", "killed", "rejected"};
constexpr std::array<std::string_view, 3> kQosNames = {"best-effort", "soft", "strict"};

}  // namespace

std::string_view JobStateName(JobState state) { return kJobStateNames[static_cast<size_t>(state)]; }

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

Duration JobSpec::ideal_duration() const { return Seconds(iterations / ref_iters_per_s); }

Status ValidateJobSpec(const JobSpec& spec) {
  if (spec.num_gpus <= 0) {
    return InvalidArgument("num_gpus must be positive, got " + std::to_string(spec.num_gpus));
  }
  if (!(spec.iterations > 0) || !std::isfinite(spec.iterations)) {
    return InvalidArgument("the job has no work: iterations/duration must be positive");
  }
  if (!(spec.ref_iters_per_s > 0) || !std::isfinite(spec.ref_iters_per_s)) {
    return InvalidArgument("ref_iters_per_s must be positive");
  }
  if (spec.memory_mib < 0) return InvalidArgument("memory_mib must not be negative");
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
