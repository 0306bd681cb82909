#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/model/job.h"
#include "dlsched/policy/gang_walk.h"
#include "dlsched/policy/plugin.h"
#include "dlsched/policy/rank_order.h"

namespace dlsched {

// The waiting jobs (queued or suspended), kept as ordered indexes so a cycle walks them in
// order without sorting: insert and erase are O(log q). Each gang size has two indexes: its jobs
// in the policy's order (their RankKeys, computed once on insert: a waiting job's rank is
// frozen, see QueueSortPlugin::Rank) and by the time they started waiting (for starvation
// guards). A walk merges the gang sizes (GangWalk), and a backfill walk visits only the sizes
// that fit the free GPUs. Optionally the policy order is indexed per tenant too (by_tenant), so
// that a policy with tenant quotas can walk only the tenants it wants.
class JobQueue {
 public:
  // `order` ranks the waiting jobs; with RankOrder::by_tenant the queue keeps
  // by_tenant_order() as well (one more ordered insert and erase per job). `jobs` resolves ids.
  // Both must outlive the queue.
  JobQueue(const JobTable& jobs, const RankOrder& order);
  // Not copyable: it keeps each job's position in its own containers (moves keep them valid).
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;
  JobQueue(JobQueue&&) = default;
  JobQueue& operator=(JobQueue&&) = default;

  void Insert(JobId id);
  void Erase(JobId id);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  using OrderIndex = std::set<RankKey>;
  using WaitIndex = std::set<std::pair<Timestamp, JobId>>;  // (queued_since, id)
  using GangOrder = std::map<int, OrderIndex>;  // gang size -> its waiting jobs, policy order
  using GangWait = std::map<int, WaitIndex>;    // gang size -> its waiting jobs, wait order

  const GangOrder& by_gang_order() const { return by_gang_order_; }
  const GangWait& by_gang_wait() const { return by_gang_wait_; }
  // Tenant (JobSpec::queue) -> its waiting jobs by gang size, in policy order: the keys of
  // by_gang_order() split by tenant. Kept only when constructed with `by_tenant` (else empty);
  // tenants and gang sizes whose jobs all left stay, empty.
  using TenantOrder = std::map<std::string, GangOrder, std::less<>>;
  bool indexes_tenants() const { return by_tenant_; }
  const TenantOrder& by_tenant_order() const { return by_tenant_order_; }
  // Walks the waiting jobs of at most a gang size in policy order: Next(max_gang) -> RankKey.
  auto WalkInOrder() const { return GangWalk(by_gang_order_, std::less<>()); }
  // Walks them longest waiting first: Next(max_gang) -> (queued_since, id).
  auto WalkByWait() const { return GangWalk(by_gang_wait_, std::less<>()); }
  // Every waiting job, first to run first. O(q log g) for g gang sizes.
  std::vector<JobId> InOrder() const;
  // When the longest-waiting job started waiting (kTimeNever when empty). O(g).
  Timestamp oldest_wait() const;
  // Whether waiting job a runs before waiting job b.
  bool Before(JobId a, JobId b) const { return KeyOf(a) < KeyOf(b); }
  // A waiting job's key.
  const RankKey& KeyOf(JobId id) const { return *positions_[id.index()].in_gang; }
  // The waiting jobs with a deadline by their latest start: deadline - estimated_remaining, the
  // last instant at which starting on the reference placement still meets the deadline. Frozen
  // while a job waits, like its rank; the jobs already late are a prefix.
  using LatestStartIndex = std::set<std::pair<Timestamp, JobId>>;
  const LatestStartIndex& by_latest_start() const { return by_latest_start_; }
  // A job's latest start (see by_latest_start; kTimeNever for a job without a deadline).
  static Timestamp LatestStart(const Job& job);
  const JobTable& jobs() const { return *jobs_; }

 private:
  const JobTable* jobs_;
  const RankOrder* order_;
  bool by_tenant_ = false;
  size_t size_ = 0;
  GangOrder by_gang_order_;
  GangWait by_gang_wait_;
  TenantOrder by_tenant_order_;
  LatestStartIndex by_latest_start_;
  // Per job, its positions in its gang's indexes, so Erase compares nothing (a preemption and a
  // relaunch each insert and erase a job).
  struct Position {
    bool queued = false;
    OrderIndex* gang_index = nullptr;
    OrderIndex::iterator in_gang;
    WaitIndex* wait_index = nullptr;
    WaitIndex::iterator in_wait;
    OrderIndex* tenant_index = nullptr;  // by_tenant only
    OrderIndex::iterator in_tenant;
  };
  std::vector<Position> positions_;
};

inline constexpr int kAnyGang = std::numeric_limits<int>::max();

}  // namespace dlsched
