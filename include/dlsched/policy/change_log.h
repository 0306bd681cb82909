#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlsched {

// A stamp no ChangeLog has had before: the process-wide counter behind their revisions.
inline uint64_t NextChangeRevision() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The last changes of some state, for a reader that catches up on what changed since it last
// looked instead of reading all of it. Each Record gives the log a new revision (from the
// process-wide counter, so two logs share a revision only where one is a copy of the other with
// nothing recorded since) and keeps the item. Record is amortised O(1); Since is O(log kKeep +
// items listed). Copyable; not thread-safe.
template <typename T>
class ChangeLog {
 public:
  // How many of the last records Since knows at least.
  static constexpr size_t kKeep = 1024;

  ChangeLog() : revision_(NextChangeRevision()), base_(revision_) {}

  uint64_t revision() const { return revision_; }
  void Record(const T& item) {
    revision_ = NextChangeRevision();
    if (entries_.size() == 2 * kKeep - 1) {
      base_ = entries_[kKeep - 1].revision;
      entries_.erase(entries_.begin(), entries_.begin() + kKeep);
    }
    entries_.push_back({revision_, item});
  }
  // Whether the log still knows `since` (the current revision, or the one at any of at least the
  // last kKeep records); if so `items` (cleared first) gets each item recorded after it, oldest
  // first. False for another log's revision or one forgotten; then `items` is empty and the
  // caller must take everything as changed.
  bool Since(uint64_t since, std::vector<T>& items) const {
    items.clear();
    if (since == revision_) return true;
    size_t first = 0;
    if (since != base_) {
      // The entries' revisions ascend: the counter behind them only grows.
      const auto at = std::ranges::lower_bound(entries_, since, {}, &Entry::revision);
      if (at == entries_.end() || at->revision != since) return false;
      first = static_cast<size_t>(at - entries_.begin()) + 1;
    }
    for (size_t i = first; i < entries_.size(); ++i) items.push_back(entries_[i].item);
    return true;
  }

 private:
  struct Entry {
    uint64_t revision;
    T item;
  };
  uint64_t revision_;
  // Oldest first: at most 2 kKeep - 1 entries (at least kKeep once that many were recorded),
  // the oldest dropped kKeep at a time. base_ is the revision before the first entry's.
  std::vector<Entry> entries_;
  uint64_t base_;
};

}  // namespace dlsched
