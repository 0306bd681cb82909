#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/runtime/scheduler.h"
#include "sim/metrics.h"

// What the simulator measures over a run besides its time series: GPU-time per GPU type and why
// waiting jobs wait.

namespace dlsched::sim {

// Integrates allocated GPU-time per GPU type over [t = 0, last completion]: the allocation after
// an instant's cycle holds until the next instant.
class TypeUsageMeter {
 public:
  explicit TypeUsageMeter(const Cluster& cluster)
      : cluster_(cluster), allocated_(cluster.num_gpu_types(), 0), gpu_s_(allocated_.size(), 0) {}

  // After the cycle at `now`; `completed`: a job completed at `now`.
  void Observe(Timestamp now, const ClusterState& state, bool completed);

  std::vector<GpuTypeUsage> Usage() const;

 private:
  const Cluster& cluster_;
  Timestamp last_ = kTimeZero;
  std::vector<int> allocated_;  // per type, since `last_`
  std::vector<double> gpu_s_;
  std::vector<double> at_last_completion_;
};

// Integrates, over [t = 0, last completion], the GPU-time that sat idle for lack of host CPUs or
// memory: after each cycle, the free GPUs of every node whose free CPUs (memory) are below the
// smallest per-GPU share any waiting GPU job asks (EffectiveHostRequest / num_gpus, rounded up),
// while at least one GPU job waits. So no waiting job could take even one of those GPUs with its
// share of host resources; its GPU type and labels are not looked at (a lower bound on the GPUs
// blocked by host resources alone, an upper one where types also block). Free CPUs and memory
// are ClusterState's. Nodes that state neither never count, and on a cluster where no GPU node
// states them the meter does nothing.
class HostBlockedMeter {
 public:
  explicit HostBlockedMeter(const Cluster& cluster);

  bool active() const { return active_; }
  // After the cycle at `now`; `completed`: a job completed at `now`.
  void Observe(Timestamp now, const Scheduler& scheduler, bool completed);
  // GPU-seconds idle for lack of host resources up to the last completion.
  double blocked_gpu_s() const { return at_last_completion_; }

 private:
  const Cluster& cluster_;
  bool active_ = false;
  Timestamp last_ = kTimeZero;
  int blocked_ = 0;  // GPUs host-blocked since `last_`
  double gpu_s_ = 0;
  double at_last_completion_ = 0;
};

// Samples why waiting jobs wait: each sample's explanation counts until the next sample. A
// sample costs a walk of the whole queue, so with more than kJobsPerInterval jobs waiting the
// next one comes proportionally later: a run with a queue of 30,000 (fifo on Philly) would
// otherwise spend most of its time explaining, and jobs behind such a queue wait far longer
// than the stretched interval anyway.
class PendingSampler {
  static constexpr size_t kJobsPerInterval = 2000;

 public:
  PendingSampler(Duration every, size_t jobs) : every_(every) {
    if (every_ > Duration::zero()) by_job_.resize(jobs);
  }

  void MaybeSample(Timestamp now, Scheduler& scheduler);

  // Counts the last sample up to the end of the run and hands the per-job totals to `jobs`.
  void Finish(Timestamp end, std::vector<JobRecord>& jobs);

 private:
  void Account(Timestamp now);

  Duration every_;
  Timestamp next_ = kTimeZero;
  Timestamp sampled_at_ = kTimeZero;
  std::vector<std::pair<JobId, PendingCause>> last_;
  std::vector<std::array<double, kNumPendingCauses>> by_job_;
};

}  // namespace dlsched::sim
