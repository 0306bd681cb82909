#include "daemon/core/gpu_sampler.h"

#include <iostream>

namespace dlsched::daemon {

GpuSampler::GpuSampler(GpuMonitor& monitor, Duration period, const Clock& clock, Sink sink)
    : monitor_(&monitor), period_(period), clock_(&clock), sink_(std::move(sink)) {
  DS_CHECK(period_ > Duration::zero()) << "GPU sample period must be positive";
}

GpuSampler::~GpuSampler() { Stop(); }

void GpuSampler::Start() {
  DS_CHECK(!thread_.joinable()) << "GpuSampler started twice";
  thread_ = std::thread([this] { Run(); });
}

void GpuSampler::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuSampler::Run() {
  bool failing = false;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Result<GpuSample> sample = monitor_->Sample();
    const Timestamp at = clock_->Now();
    if (sample.ok()) {
      if (failing) std::cerr << "dlsched: GPU monitor: sampling works again" << std::endl;
      failing = false;
      sink_(std::move(sample).value(), at);
    } else if (!failing) {
      failing = true;
      std::cerr << "dlsched: GPU monitor: " << sample.status().message()
                << " (retrying every period; logged once)" << std::endl;
    }
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace dlsched::daemon
