#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace dlsched::sim {
namespace {

TEST(EventQueueTest, PopsByTimeThenPushOrder) {
  EventQueue events;
  events.Push(AtSeconds(2), SimEventKind::kFinish, JobId(1));
  events.Push(AtSeconds(1), SimEventKind::kFinish, JobId(2));
  events.Push(AtSeconds(2), SimEventKind::kKilled, JobId(3));
  events.Push(AtSeconds(1), SimEventKind::kWake);
  std::vector<JobId> order;
  while (!events.empty()) order.push_back(events.Pop().job);
  EXPECT_EQ(order, (std::vector<JobId>{JobId(2), JobId(), JobId(1), JobId(3)}));
}

TEST(EventQueueTest, CleanDropsStaleEventsOnlyOnceTheQueueHasGrown) {
  EventQueue events;
  const auto odd = [](const SimEvent& e) { return e.job.value() % 2 == 1; };
  for (uint32_t i = 0; i < 1000; ++i) events.Push(AtSeconds(i), SimEventKind::kFinish, JobId(i));
  events.Clean(odd);  // 1000 events: below the first threshold (1024), kept
  size_t kept = 0;
  {
    EventQueue copy = events;
    while (!copy.empty()) {
      copy.Pop();
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1000u);
  for (uint32_t i = 1000; i < 2000; ++i) events.Push(AtSeconds(i), SimEventKind::kFinish, JobId(i));
  events.Clean(odd);
  std::vector<uint32_t> left;
  while (!events.empty()) left.push_back(events.Pop().job.value());
  ASSERT_EQ(left.size(), 1000u);
  for (size_t k = 0; k < left.size(); ++k) EXPECT_EQ(left[k], 2 * k);
}

}  // namespace
}  // namespace dlsched::sim
