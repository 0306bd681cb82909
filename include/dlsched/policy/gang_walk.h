#pragma once

#include <algorithm>
#include <array>
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
    size_t count = 0;
    for (const auto& [gang, index] : by_gang) count += !index.empty();
    // A walk is set up every cycle: up to kInlineHeads gang sizes (the common case by far) the
    // heap lives in the walk itself, beyond them in a vector.
    if (count > kInlineHeads) overflow_.resize(count);
    heads_ = count > kInlineHeads ? overflow_.data() : inline_heads_.data();
    for (const auto& [gang, index] : by_gang) {
      if (!index.empty()) heads_[size_++] = {gang, index.begin(), index.end()};
    }
    std::make_heap(heads_, heads_ + size_, Later());
  }
  // heads_ may point into the walk itself.
  GangWalk(const GangWalk&) = delete;
  GangWalk& operator=(const GangWalk&) = delete;

  // The first remaining element of a gang of at most `max_gang` GPUs, advancing past it.
  std::optional<Value> Next(int max_gang) {
    while (size_ > 0) {
      std::pop_heap(heads_, heads_ + size_, Later());
      Head& head = heads_[size_ - 1];
      if (head.gang > max_gang) {
        --size_;
        continue;
      }
      const Value value = *head.it++;
      if (head.it == head.end) {
        --size_;
      } else {
        std::push_heap(heads_, heads_ + size_, Later());
      }
      return value;
    }
    return std::nullopt;
  }

 private:
  static constexpr size_t kInlineHeads = 32;
  struct Head {
    int gang = 0;
    typename Index::const_iterator it;
    typename Index::const_iterator end;
  };
  // Heap order: the head whose element comes first is on top.
  auto Later() const {
    return [this](const Head& a, const Head& b) { return less_(*b.it, *a.it); };
  }

  Less less_;
  std::array<Head, kInlineHeads> inline_heads_;
  std::vector<Head> overflow_;
  Head* heads_ = nullptr;  // the heap: inline_heads_ or overflow_
  size_t size_ = 0;
};

}  // namespace dlsched
