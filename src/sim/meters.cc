#include "sim/meters.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dlsched::sim {

HostBlockedMeter::HostBlockedMeter(const Cluster& cluster) : cluster_(cluster) {
  for (const NodeSpec& node : cluster.nodes()) {
    active_ = active_ || (!node.gpus.empty() && (node.cpus > 0 || node.memory_mib > 0));
  }
}

void HostBlockedMeter::Observe(Timestamp now, const Scheduler& scheduler, bool completed) {
  if (!active_) return;
  gpu_s_ += ToSeconds(now - last_) * blocked_;
  last_ = now;
  if (completed) at_last_completion_ = gpu_s_;

  // The smallest per-GPU share of CPUs and of memory among the waiting GPU jobs.
  int64_t min_cpus = -1;
  int64_t min_memory = -1;
  const HostDefaults& defaults = cluster_.host_defaults();
  for (const auto& [gang, waiting] : scheduler.queue().by_gang_order()) {
    if (gang == 0) continue;  // CPU jobs take no GPU
    for (const RankKey& key : waiting) {
      const HostRequest request = EffectiveHostRequest(scheduler.jobs().at(key.id).spec, defaults);
      const int64_t cpus = (request.cpus + gang - 1) / gang;
      const int64_t memory = (request.memory_mib + gang - 1) / gang;
      min_cpus = min_cpus < 0 ? cpus : std::min(min_cpus, cpus);
      min_memory = min_memory < 0 ? memory : std::min(min_memory, memory);
    }
  }
  blocked_ = 0;
  if (min_cpus <= 0 && min_memory <= 0) return;  // none waits, or none asks for host resources
  const ClusterState& state = scheduler.state();
  for (int n = 0; n < cluster_.num_nodes(); ++n) {
    const NodeSpec& node = cluster_.nodes()[static_cast<size_t>(n)];
    const NodeId id(static_cast<uint32_t>(n));
    const bool short_of_cpus = node.cpus > 0 && min_cpus > 0 && state.free_cpus(id) < min_cpus;
    const bool short_of_memory =
        node.memory_mib > 0 && min_memory > 0 && state.free_memory_mib(id) < min_memory;
    if (short_of_cpus || short_of_memory) blocked_ += state.free_gpus(id);
  }
}

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
