#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace dlsched::daemon {

// A multi-producer, single-consumer queue: HTTP threads and the process monitor post, the
// scheduler thread drains everything at once (so one store transaction covers a batch).
// Bounded: Post fails when `capacity` items wait, or after Close. Thread-safe.
template <typename T>
class Inbox {
 public:
  explicit Inbox(size_t capacity) : capacity_(capacity) {}

  // False (and `item` is left untouched) when closed, or full unless `ignore_capacity` (for
  // items that must not be lost, such as process exits).
  bool Post(T& item, bool ignore_capacity = false) {
    {
      std::lock_guard lock(mu_);
      if (closed_ || (!ignore_capacity && items_.size() >= capacity_)) return false;
      items_.push_back(std::move(item));
    }
    cv_.notify_one();
    return true;
  }

  // Moves every waiting item to `out` (appending). Waits until there is one, the inbox is
  // closed, or `deadline` passes. Returns false once closed and empty.
  bool WaitAndDrain(std::vector<T>& out, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return closed_ || !items_.empty(); });
    for (T& item : items_) out.push_back(std::move(item));
    items_.clear();
    return !closed_ || !out.empty();
  }

  // Refuses further posts and wakes the consumer. Items already posted can still be drained.
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace dlsched::daemon
