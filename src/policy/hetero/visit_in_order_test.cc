#include "policy/hetero/visit_in_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace dlsched::hetero {
namespace {

// Pairs (key, index) with many equal keys, in a scrambled order.
std::vector<std::pair<int, int>> Scrambled(int n) {
  std::vector<std::pair<int, int>> items;
  uint64_t z = 12345;
  for (int i = 0; i < n; ++i) {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    items.emplace_back(static_cast<int>((z >> 33) % 97), i);
  }
  return items;
}

TEST(VisitInOrderTest, VisitsThePrefixOfTheSortedOrderUpToTheStop) {
  const std::vector<std::pair<int, int>> items = Scrambled(3000);
  std::vector<std::pair<int, int>> sorted = items;
  std::sort(sorted.begin(), sorted.end());
  // Stops inside the first chunk, in a later one, at a chunk's edge, and never.
  for (size_t stop : {size_t{10}, size_t{256}, size_t{257}, size_t{1000}, size_t{3000}}) {
    std::vector<std::pair<int, int>> work = items;
    std::vector<std::pair<int, int>> visited;
    VisitInOrder(work, std::less<>(), [&](const std::pair<int, int>& item) {
      visited.push_back(item);
      return visited.size() < stop;
    });
    ASSERT_EQ(visited.size(), stop);
    EXPECT_TRUE(std::equal(visited.begin(), visited.end(), sorted.begin())) << "stop " << stop;
  }
}

TEST(VisitInOrderTest, VisitsNothingOfAnEmptyVector) {
  std::vector<int> empty;
  int visits = 0;
  VisitInOrder(empty, std::less<>(), [&](int) { return ++visits > 0; });
  EXPECT_EQ(visits, 0);
}

}  // namespace
}  // namespace dlsched::hetero
