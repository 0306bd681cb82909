#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "dlsched/common/ids.h"
#include "dlsched/common/time.h"

// The simulator's event queue: what the SimExecutor's jobs do in virtual time, popped in
// (time, sequence) order, so that events at the same instant keep the order they were pushed in.

namespace dlsched::sim {

enum class SimEventKind : uint8_t { kFinish, kKilled, kSuspend, kLaunchFailed, kOom, kWake };

struct SimEvent {
  Timestamp time;
  uint64_t seq;
  SimEventKind kind;
  JobId job;
  uint32_t generation;  // stale when it differs from the job's current generation
  double iterations;    // kSuspend: progress saved; kOom: the memory demanded, MiB

  bool operator>(const SimEvent& other) const {
    return time != other.time ? time > other.time : seq > other.seq;
  }
};

class EventQueue {
 public:
  void Push(Timestamp time, SimEventKind kind, JobId job = JobId(), uint32_t generation = 0,
            double iterations = 0) {
    heap_.push_back(SimEvent{time, next_seq_++, kind, job, generation, iterations});
    std::ranges::push_heap(heap_, std::greater<>());
  }
  bool empty() const { return heap_.empty(); }
  const SimEvent& top() const { return heap_.front(); }
  SimEvent Pop() {
    std::ranges::pop_heap(heap_, std::greater<>());
    SimEvent e = heap_.back();
    heap_.pop_back();
    return e;
  }
  // Drops the events `stale` says will be ignored (superseded finishes, outdated wake-ups) once
  // the queue has doubled since it was last cleaned: preemptions leave a far-future finish behind
  // for every run segment, and each pop pays for the size of the heap. Events keep their
  // (time, seq) order, so the run does not change.
  template <typename Stale>
  void Clean(const Stale& stale) {
    if (heap_.size() <= 2 * cleaned_size_ + 1024) return;
    std::erase_if(heap_, stale);
    std::ranges::make_heap(heap_, std::greater<>());
    cleaned_size_ = heap_.size();
  }

 private:
  std::vector<SimEvent> heap_;  // a min-heap by (time, seq)
  size_t cleaned_size_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace dlsched::sim
