#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace dlsched {

// Walks several ordered indexes, one per gang size, as one merged order restricted to gangs of
// at most `max_gang` GPUs. The heads sit in a heap, so Next costs O(log g) comparisons for g
// gang sizes, however many larger jobs wait. `max_gang` must not grow between calls (a cycle's
// free GPUs only shrink): a head found too large is dropped for good. `less` must order
// elements of different indexes consistently with each index's own order.
template <typename Index, typename Less>
class GangWalk {
 public:
  using Value = typename Index::value_type;

  GangWalk(const std::map<int, Index>& by_gang, Less less) : less_(less) {
    for (const auto& [gang, index] : by_gang) {
      if (!index.empty()) heads_.push_back({gang, index.begin(), index.end()});
    }
    std::make_heap(heads_.begin(), heads_.end(), Later());
  }

  // The first remaining element of a gang of at most `max_gang` GPUs, advancing past it.
  std::optional<Value> Next(int max_gang) {
    while (!heads_.empty()) {
      std::pop_heap(heads_.begin(), heads_.end(), Later());
      Head& head = heads_.back();
      if (head.gang > max_gang) {
        heads_.pop_back();
        continue;
      }
      const Value value = *head.it++;
      if (head.it == head.end) {
        heads_.pop_back();
      } else {
        std::push_heap(heads_.begin(), heads_.end(), Later());
      }
      return value;
    }
    return std::nullopt;
  }

 private:
  struct Head {
    int gang;
    typename Index::const_iterator it;
    typename Index::const_iterator end;
  };
  // Heap order: the head whose element comes first is on top.
  auto Later() const {
    return [this](const Head& a, const Head& b) { return less_(*b.it, *a.it); };
  }

  Less less_;
  std::vector<Head> heads_;
};

}  // namespace dlsched
