#include "sim/meters.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dlsched::sim {

void TypeUsageMeter::Observe(Timestamp now, const ClusterState& state, bool completed) {
  const double dt = ToSeconds(now - last_);
  for (size_t t = 0; t < allocated_.size(); ++t) {
    gpu_s_[t] += dt * allocated_[t];
    const GpuTypeId type(static_cast<uint32_t>(t));
    allocated_[t] = cluster_.gpus_of_type(type) - state.free_of_type(type);
  }
  last_ = now;
  if (completed) at_last_completion_ = gpu_s_;
}

std::vector<GpuTypeUsage> TypeUsageMeter::Usage() const {
  std::vector<GpuTypeUsage> usage;
  for (size_t t = 0; t < allocated_.size(); ++t) {
    const GpuTypeId type(static_cast<uint32_t>(t));
    usage.push_back({cluster_.gpu_type_name(type), cluster_.gpus_of_type(type),
                     at_last_completion_.empty() ? 0.0 : at_last_completion_[t]});
  }
  return usage;
}

void PendingSampler::MaybeSample(Timestamp now, Scheduler& scheduler) {
  if (every_ <= Duration::zero() || now < next_) return;
  Account(now);
  last_.clear();
  const size_t waiting = scheduler.queue().size();
  if (waiting > 0) {
    for (const PendingReason& p : scheduler.ExplainPending(now, /*with_text=*/false)) {
      last_.emplace_back(p.job, p.cause);
    }
  }
  next_ = now + every_ * static_cast<int64_t>(std::max<size_t>(1, waiting / kJobsPerInterval));
}

void PendingSampler::Finish(Timestamp end, std::vector<JobRecord>& jobs) {
  if (every_ <= Duration::zero()) return;
  Account(end);
  for (size_t i = 0; i < jobs.size() && i < by_job_.size(); ++i) {
    jobs[i].pending_s_by_cause = by_job_[i];
  }
}

void PendingSampler::Account(Timestamp now) {
  const double dt = ToSeconds(now - sampled_at_);
  for (const auto& [job, cause] : last_) {
    if (job.index() < by_job_.size()) by_job_[job.index()][static_cast<size_t>(cause)] += dt;
  }
  sampled_at_ = now;
}

}  // namespace dlsched::sim
