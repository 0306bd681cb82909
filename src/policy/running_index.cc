#include "dlsched/policy/running_index.h"

#include <algorithm>
#include <string>

#include "dlsched/common/status.h"

namespace dlsched {
namespace {

// Rebuilds the re-key heap without its stale entries (jobs that stopped or were re-keyed since)
// once they outnumber the live ones, which are at most `live`; after a rebuild the heap must
// grow by `live` + 64 entries before the next, so the cost is amortised over the pushes. Most
// running jobs stop before their announced rank change (Tiresias' next queue threshold), so without
// this the heap grows with every launch of the run and each pop walks a heap of hundreds of
// thousands. Keeps the order of the live entries, so nothing observable changes.
template <typename Heap>
void DropStale(Heap& due, const std::vector<Timestamp>& due_at, size_t live) {
  if (due.size() <= 2 * live + 64) return;
  std::vector<std::remove_cvref_t<decltype(due.top())>> kept;  // ascending: a valid heap
  for (; !due.empty(); due.pop()) {
    const auto& entry = due.top();
    // The same (time, job) can be queued twice: a job stopped and restarted before its
    // announced change (a grid-aligned one, as las' quantum) is queued again at the same time.
    const bool repeated =
        !kept.empty() && kept.back().at == entry.at && kept.back().job == entry.job;
    if (due_at[entry.job.index()] == entry.at && !repeated) kept.push_back(entry);
  }
  due = Heap(typename Heap::value_compare(), std::move(kept));
}

std::string At(Timestamp now) {
  return "t=" + std::to_string(now.time_since_epoch().count()) + " us";
}

}  // namespace

RunningIndex::RunningIndex(const JobTable& jobs, const RankOrder& order)
    : jobs_(&jobs), order_(&order) {}

void RunningIndex::Grow(JobId id) {
  if (id.index() >= where_.size()) {
    const size_t n = std::max(id.index() + 1, where_.size() * 2);
    where_.resize(n, kOutside);
    stored_.resize(n);
    drift_.resize(n, 0);
    in_victims_.resize(n);
    in_guarded_.resize(n);
    due_at_.resize(n, kTimeNever);
    if (order_->by_tenant()) in_tenant_.resize(n);
  }
}

void RunningIndex::Insert(JobId id, Timestamp now) {
  Grow(id);
  const size_t i = id.index();
  DS_CHECK(where_[i] == kOutside) << "job " << id << " is already in the running index";
  const Job& job = jobs_->at(id);
  const JobView view(job, now);
  drift_[i] = order_->RankDrift(view);
  stored_[i] = order_->KeyOf(view);
  stored_[i].rank -= drift_[i] * now.time_since_epoch().count();
  const Timestamp victim_at = order_->VictimFrom(view);
  if (victim_at <= now && job.preempt_requested) {
    ++stopping_victims_;
    where_[i] = kStoppingVictim;
  } else if (victim_at <= now) {
    const auto [filed, inserted] = victims_.insert(stored_[i]);
    DS_CHECK(inserted) << "job " << id << " is already running";
    in_victims_[i] = filed;
    where_[i] = kVictim;
    if (order_->by_tenant()) {
      const JobSpec& spec = view.spec();
      auto it = victims_by_tenant_.find(spec.queue);
      if (it == victims_by_tenant_.end())
        it = victims_by_tenant_.emplace(spec.queue, TenantVictims()).first;
      TenantVictims& tenant = it->second;
      in_tenant_[i] = {&tenant, tenant.victims.insert(stored_[i]).first, spec.num_gpus == 0};
      if (in_tenant_[i].cpu) ++tenant.cpu_jobs;
    }
  } else if (victim_at == kTimeNever) {
    ++never_victims_;
    where_[i] = kNeverVictim;
  } else {
    in_guarded_[i] = guarded_.insert({victim_at, id}).first;
    where_[i] = kGuarded;
  }
  const Timestamp at = order_->NextRankChange(view, now);
  // An unchanged time means its entry is still queued (a guarded job refiled as a victim):
  // pushing it again would only add a duplicate.
  if (at != kTimeNever && at != due_at_[i]) due_.push({at, id});
  due_at_[i] = at;
}

void RunningIndex::EraseVictim(size_t i) {
  victims_.erase(in_victims_[i]);
  if (order_->by_tenant()) {  // every victim is filed under its tenant
    InTenant& filed = in_tenant_[i];
    filed.tenant->victims.erase(filed.at);
    if (filed.cpu) --filed.tenant->cpu_jobs;
    filed = InTenant();
  }
}

void RunningIndex::Take(JobId id) {
  const size_t i = id.index();
  switch (where_[i]) {
    case kVictim:
      EraseVictim(i);
      break;
    case kGuarded:
      guarded_.erase(in_guarded_[i]);
      break;
    case kNeverVictim:
      --never_victims_;
      break;
    case kStoppingVictim:
      --stopping_victims_;
      break;
    case kOutside:
      break;
  }
  where_[i] = kOutside;
}

void RunningIndex::Erase(JobId id) {
  if (auto it = std::find(deferred_.begin(), deferred_.end(), id); it != deferred_.end()) {
    deferred_.erase(it);
    return;
  }
  DS_CHECK(id.index() < where_.size() && where_[id.index()] != kOutside)
      << "job " << id << " is not in the running index";
  Take(id);
  due_at_[id.index()] = kTimeNever;  // its queued re-key is now stale
}

void RunningIndex::Stopping(JobId id) {
  const size_t i = id.index();
  if (i >= where_.size() || where_[i] != kVictim) return;  // guarded, never a victim, or deferred
  EraseVictim(i);
  ++stopping_victims_;
  where_[i] = kStoppingVictim;
}

void RunningIndex::Refresh(Timestamp now) {
  std::vector<JobId>& refile = refile_;
  refile.clear();
  while (!due_.empty() && due_.top().at <= now) {
    const Due due = due_.top();
    due_.pop();
    if (where_[due.job.index()] != kOutside && due_at_[due.job.index()] == due.at) {
      Take(due.job);
      refile.push_back(due.job);
    }
  }
  while (!guarded_.empty() && guarded_.begin()->first <= now) {
    const JobId id = guarded_.begin()->second;
    Take(id);
    refile.push_back(id);
  }
  for (JobId id : refile) Insert(id, now);
  for (JobId id : deferred_) Insert(id, now);
  deferred_.clear();
  DropStale(due_, due_at_, size());  // every running job is filed: size() bounds the live entries
#ifndef NDEBUG
  const Status order = CheckOrder(now);
  DS_CHECK(order.ok()) << order.message();
#endif
}

Status RunningIndex::CheckOrder(Timestamp now) const {
  const auto key_mismatch = [&](JobId id) -> Status {
    const RankKey want = order_->KeyOf(JobView(jobs_->at(id), now));
    const RankKey have = KeyAt(id, now);
    if (have == want) return Status::Ok();
    return Internal("running index: job " + std::to_string(id.value()) + " is filed at rank " +
                    std::to_string(have.rank) + " at " + At(now) + ", its order ranks it " +
                    std::to_string(want.rank));
  };
  const RankKey* previous = nullptr;
  RankKey previous_now;
  for (const RankKey& stored : victims_) {
    DS_RETURN_IF_ERROR(key_mismatch(stored.id));
    const RankKey key = KeyAt(stored.id, now);
    if (previous != nullptr && !(previous_now < key)) {
      return Internal("running index: job " + std::to_string(previous->id.value()) +
                      " is walked before job " + std::to_string(stored.id.value()) +
                      ", which its order ranks first at " + At(now));
    }
    previous = &stored;
    previous_now = key;
  }
  for (const auto& [at, id] : guarded_) DS_RETURN_IF_ERROR(key_mismatch(id));
  if (!order_->by_tenant()) return Status::Ok();
  size_t filed = 0;
  for (const auto& [tenant, filed_victims] : victims_by_tenant_) {
    size_t cpu_jobs = 0;
    for (const RankKey& stored : filed_victims.victims) {
      const Job& job = jobs_->at(stored.id);
      if (where_[stored.id.index()] != kVictim || !(stored_[stored.id.index()] == stored) ||
          job.spec.queue != tenant) {
        return Internal("running index: job " + std::to_string(stored.id.value()) +
                        " is filed as a victim of tenant '" + tenant + "', which it is not");
      }
      if (job.spec.num_gpus == 0) ++cpu_jobs;
    }
    if (cpu_jobs != filed_victims.cpu_jobs) {
      return Internal("running index: tenant '" + tenant + "' counts " +
                      std::to_string(filed_victims.cpu_jobs) + " CPU victims, it has " +
                      std::to_string(cpu_jobs));
    }
    filed += filed_victims.victims.size();
  }
  if (filed != victims_.size()) {
    return Internal("running index: " + std::to_string(filed) + " victims filed by tenant, " +
                    std::to_string(victims_.size()) + " in all");
  }
  return Status::Ok();
}

Timestamp RunningIndex::next_change() const {
  // Entries of jobs that stopped, or were re-keyed, are dropped here rather than on Erase.
  while (!due_.empty() && due_at_[due_.top().job.index()] != due_.top().at) due_.pop();
  return due_.empty() ? kTimeNever : due_.top().at;
}

}  // namespace dlsched
