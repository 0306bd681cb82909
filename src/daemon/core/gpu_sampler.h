#pragma once

// The thread that samples a GpuMonitor every period and hands each sample on (the daemon posts
// it to its inbox; the scheduler thread attributes it to jobs, records and persists it).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/exec/gpu_monitor.h"
#include "dlsched/common/time.h"
#include "dlsched/runtime/executor.h"

namespace dlsched::daemon {

class GpuSampler {
 public:
  // Called on the sampler's thread with each sample and the clock's time it was taken.
  using Sink = std::function<void(GpuSample sample, Timestamp at)>;

  // `period` > 0. `monitor` and `clock` must outlive the sampler.
  GpuSampler(GpuMonitor& monitor, Duration period, const Clock& clock, Sink sink);
  // Stop().
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Starts the thread: a first sample at once, then one every period. A failed sample is
  // logged on stderr (once, until a sample succeeds again) and skipped.
  void Start();
  // Wakes the thread and joins it; no sink call follows. Idempotent.
  void Stop();

 private:
  void Run();

  GpuMonitor* monitor_;
  Duration period_;
  const Clock* clock_;
  Sink sink_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dlsched::daemon
