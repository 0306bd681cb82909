#pragma once

// Table-driven checks of a QueueSortPlugin: each case states whether Less(a, b) holds for two
// waiting jobs (viewed at t = 0), and every case also checks the order is strict.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlsched/policy/plugin.h"

namespace dlsched::testing {

struct OrderCase {
  std::string name;
  Job a;
  Job b;
  bool want;  // Less(a, b)
};

inline void ExpectOrder(const QueueSortPlugin& sort, const std::vector<OrderCase>& cases) {
  for (const OrderCase& c : cases) {
    SCOPED_TRACE(c.name);
    const JobView a(c.a, kTimeZero);
    const JobView b(c.b, kTimeZero);
    EXPECT_EQ(sort.Less(a, b), c.want);
    // A strict order: never both ways, and a job is never less than itself.
    EXPECT_FALSE(sort.Less(a, b) && sort.Less(b, a));
    EXPECT_FALSE(sort.Less(a, a));
  }
}

}  // namespace dlsched::testing
