#pragma once

#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "dlsched/model/job.h"

namespace dlsched {

// The waiting jobs (queued or suspended) in a policy's order, kept as an ordered index so a
// cycle walks them in order without sorting: insert and erase are O(log q). A second index
// orders them by the time they started waiting, for starvation guards. Both also exist split by
// gang size, so a backfill walk can visit only jobs small enough to fit the free GPUs.
// Precondition for Insert/Erase: the job's order-relevant fields do not change while it is
// inside (see QueueSortPlugin::Less).
class JobQueue {
 public:
  // `less` compares two waiting jobs; `jobs` resolves ids. Both must outlive the queue.
  JobQueue(const JobTable& jobs, std::function<bool(const JobView&, const JobView&)> less);

  void Insert(JobId id);
  void Erase(JobId id);
  size_t size() const { return by_order_.size(); }
  bool empty() const { return by_order_.empty(); }

  class Compare {
   public:
    Compare(const JobQueue* queue) : queue_(queue) {}  // NOLINT
    bool operator()(JobId a, JobId b) const;

   private:
    const JobQueue* queue_;
  };
  using OrderIndex = std::set<JobId, Compare>;
  using WaitIndex = std::set<std::pair<Timestamp, JobId>>;
  using GangOrder = std::map<int, OrderIndex>;  // gang size -> its waiting jobs, policy order
  using GangWait = std::map<int, WaitIndex>;    // gang size -> its waiting jobs, wait order

  // Waiting jobs, first to run first.
  const OrderIndex& by_order() const { return by_order_; }
  // Waiting jobs, longest waiting first: (queued_since, id).
  const WaitIndex& by_wait() const { return by_wait_; }
  const GangOrder& by_gang_order() const { return by_gang_order_; }
  const GangWait& by_gang_wait() const { return by_gang_wait_; }
  // Whether job a runs before job b in this queue's order.
  bool Before(JobId a, JobId b) const { return by_order_.key_comp()(a, b); }
  const JobTable& jobs() const { return *jobs_; }

 private:
  const JobTable* jobs_;
  std::function<bool(const JobView&, const JobView&)> less_;
  OrderIndex by_order_;
  WaitIndex by_wait_;
  GangOrder by_gang_order_;
  GangWait by_gang_wait_;
  // Per job, its positions in the two policy-order indexes, so Erase compares nothing.
  struct Position {
    bool queued = false;
    OrderIndex::iterator in_order;
    OrderIndex::iterator in_gang;
  };
  std::vector<Position> positions_;
};

}  // namespace dlsched
