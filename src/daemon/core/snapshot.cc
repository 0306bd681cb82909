#include "daemon/core/snapshot.h"

#include <algorithm>

#include "dlsched/common/status.h"

namespace dlsched::daemon {

void JobIndex::Set(std::shared_ptr<const JobRecord> record) {
  const size_t index = record->id.index();
  DS_CHECK(index <= size_) << "job " << index << " set out of order (size " << size_ << ")";
  const size_t c = index / kChunkSize;
  if (c == chunks_.size()) {
    chunks_.push_back(std::make_shared<Chunk>());
    chunks_.back()->reserve(kChunkSize);
    fresh_.push_back(c);
  } else if (std::find(fresh_.begin(), fresh_.end(), c) == fresh_.end()) {
    chunks_[c] = std::make_shared<Chunk>(*chunks_[c]);  // copy on first write in this batch
    chunks_[c]->reserve(kChunkSize);
    fresh_.push_back(c);
  }
  Chunk& chunk = *chunks_[c];
  if (index == size_) {
    chunk.push_back(std::move(record));
    ++size_;
  } else {
    chunk[index % kChunkSize] = std::move(record);
  }
}

void DaemonMetrics::RecordCycle(double seconds) {
  ++cycles;
  cycle_seconds_sum += seconds;
  cycle_seconds_max = std::max(cycle_seconds_max, seconds);
  size_t b = 0;
  while (b < kCycleBuckets.size() && seconds > kCycleBuckets[b]) ++b;
  ++cycle_buckets[b];
}

}  // namespace dlsched::daemon
