#include "plugins/admit/guarantee_admission.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "dlsched/policy/context.h"

namespace dlsched {
namespace {

// GPU-time a job still needs, in GPU-microseconds, from its estimate.
double DemandGpuUs(const JobView& job) {
  const Duration left = std::max(job.estimated_remaining() - job.current_segment(), Duration(0));
  return static_cast<double>(left.count()) * job.num_gpus();
}

}  // namespace

Result<std::unique_ptr<Plugin>> GuaranteeAdmission::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({}));
  return std::unique_ptr<Plugin>(std::make_unique<GuaranteeAdmission>());
}

Fit GuaranteeAdmission::Admit(const JobView& job, const SchedulingContext& ctx) const {
  const JobSpec& spec = job.spec();
  if (spec.qos != QosClass::kStrict || !spec.deadline) return Fit::Yes();
  // (deadline, GPU-time due) of the new job and every deadline job that can still make it.
  std::vector<std::pair<Timestamp, double>> due;
  due.emplace_back(*spec.deadline, static_cast<double>(spec.num_gpus) *
                                       static_cast<double>(job.estimated_remaining().count()));
  for (const auto& [latest_start, id] : ctx.queue.by_latest_start()) {
    if (latest_start < ctx.now) continue;  // late
    const JobView waiting = ctx.View(id);
    due.emplace_back(*waiting.spec().deadline, DemandGpuUs(waiting));
  }
  for (JobId id : ctx.running) {
    const JobView running = ctx.View(id);
    const std::optional<Timestamp>& deadline = running.spec().deadline;
    if (!deadline || *deadline - std::max(running.estimated_remaining() - running.current_segment(),
                                          Duration(0)) <
                         ctx.now) {
      continue;  // no deadline, or late
    }
    due.emplace_back(*deadline, DemandGpuUs(running));
  }
  std::sort(due.begin(), due.end());
  const double gpus = ctx.cluster.total_gpus();
  double cumulative = 0;
  for (const auto& [deadline, demand] : due) {
    cumulative += demand;
    if (deadline < *spec.deadline) continue;  // unaffected by the new job
    const double capacity = gpus * static_cast<double>((deadline - ctx.now).count());
    if (cumulative > capacity) {
      return Fit::Unfit(
          "strict deadline cannot be guaranteed beside the " + std::to_string(due.size() - 1) +
          " deadline jobs in flight: the GPU-time due by a deadline " +
          HumanDuration(deadline - ctx.now) + " away exceeds the cluster's by " +
          HumanDuration(Duration(static_cast<int64_t>((cumulative - capacity) / gpus))) +
          " of the whole cluster");
    }
  }
  return Fit::Yes();
}

}  // namespace dlsched
