#include "daemon/core/gpu_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace dlsched::daemon {
namespace {

// Fails its first sample, then reports one GPU whose used memory counts the calls.
class CountingMonitor final : public GpuMonitor {
 public:
  Result<GpuSample> Sample() override {
    const int n = ++calls;
    if (n == 1) return Status(StatusCode::kUnavailable, "not yet");
    GpuSample sample;
    sample.devices.push_back({0, n, 100, 0, 0, {}});
    return sample;
  }
  std::atomic<int> calls = 0;
};

class FixedClock final : public Clock {
 public:
  Timestamp Now() const override { return AtSeconds(42); }
};

TEST(GpuSamplerTest, SamplesEachPeriodSkipsFailuresAndStopsForGood) {
  CountingMonitor monitor;
  FixedClock clock;
  std::mutex mu;
  std::condition_variable got;
  std::vector<int64_t> seen;
  GpuSampler sampler(monitor, std::chrono::milliseconds(1), clock,
                     [&](GpuSample sample, Timestamp at) {
                       EXPECT_EQ(at, AtSeconds(42));
                       std::lock_guard lock(mu);
                       seen.push_back(sample.devices.at(0).memory_used_mib);
                       got.notify_all();
                     });
  sampler.Start();
  {
    std::unique_lock lock(mu);
    // A generous bound: the condition, not the time, is what is checked.
    ASSERT_TRUE(got.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() >= 3; }));
  }
  sampler.Stop();
  sampler.Stop();  // idempotent
  std::lock_guard lock(mu);
  const size_t after_stop = seen.size();
  EXPECT_EQ(seen[0], 2);  // the first call failed and was skipped
  EXPECT_EQ(seen[1], 3);
  EXPECT_EQ(static_cast<int>(after_stop) + 1, monitor.calls.load()) << "no sample after Stop";
}

}  // namespace
}  // namespace dlsched::daemon
