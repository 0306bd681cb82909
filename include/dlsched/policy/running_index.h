#pragma once

#include <functional>
#include <queue>
#include <set>
#include <vector>

#include "dlsched/model/job.h"

namespace dlsched {

// The running jobs in a policy's rank order, kept across cycles so a victim search walks them
// from the lowest rank up without a scan of every running job. Valid for orders among running
// jobs that change only at the times `next_change` announces (every shipped queue sort: see
// QueueSortPlugin::NextRankChange); the index re-keys a job when its time comes.
// Owned by the Scheduler; single-threaded.
class RunningIndex {
 public:
  using Less = std::function<bool(const JobView&, const JobView&)>;
  using NextChange = std::function<Timestamp(const JobView&, Timestamp)>;

  // `jobs` resolves ids and must outlive the index.
  RunningIndex(const JobTable& jobs, Less less, NextChange next_change);

  // Adds a job that has just started running at `now`. Call Refresh(now) first.
  void Insert(JobId id, Timestamp now);
  // Adds a running job at the next Refresh (when the time to compare ranks at is known).
  void InsertAtNextRefresh(JobId id) { deferred_.push_back(id); }
  // Removes a job that stopped running. Safe at any time: it compares nothing.
  void Erase(JobId id);
  // Re-keys every job whose rank may have changed by `now`. Call before reading or inserting.
  void Refresh(Timestamp now);

  // The earliest announced rank change among running jobs (kTimeNever if none).
  Timestamp next_change() const;

  class Compare {
   public:
    Compare(const RunningIndex* index) : index_(index) {}  // NOLINT
    bool operator()(JobId a, JobId b) const;

   private:
    const RunningIndex* index_;
  };
  using Order = std::set<JobId, Compare>;
  // Running jobs, highest rank first: iterate in reverse for the lowest first.
  const Order& by_rank() const { return order_; }
  size_t size() const { return order_.size(); }

 private:
  struct Due {
    Timestamp at;
    JobId job;
    bool operator>(const Due& other) const {
      return at != other.at ? at > other.at : job > other.job;
    }
  };

  void Schedule(JobId id, Timestamp now);
  void Grow(JobId id);

  const JobTable* jobs_;
  Less less_;
  NextChange next_change_;
  Timestamp now_;  // the instant comparisons are made at
  Order order_;
  std::vector<Order::iterator> where_;  // per job: position in order_ while inside
  std::vector<uint8_t> inside_;         // per job: 1 while inside
  std::vector<Timestamp> due_at_;       // per job: its pending re-key time
  // Lazily deleted; next_change() drops stale tops, which changes no observable state.
  mutable std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  std::vector<JobId> deferred_;  // InsertAtNextRefresh
};

}  // namespace dlsched
