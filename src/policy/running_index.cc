#include "dlsched/policy/running_index.h"

#include <algorithm>
#include <bit>
#include <map>
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
    dead_.resize(n, 0);
    shared_slot_.resize(n, kNotShared);
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
  SharedGpu* shared = nullptr;
  if (const size_t slot = SharedSlotOf(job); slot != kNotShared) {
    if (slot >= shared_gpus_.size()) shared_gpus_.resize(slot + kMaxGpusPerNode);
    shared_slot_[i] = slot;
    shared = &shared_gpus_[slot];
    shared->holders.push_back(id);
  }
  const Timestamp victim_at = order_->VictimFrom(view);
  if (victim_at <= now && job.preempt_requested) {
    ++stopping_victims_;
    where_[i] = kStoppingVictim;
  } else if (victim_at <= now) {
    where_[i] = kVictim;
    FileVictim(i, view.spec());
  } else if (victim_at == kTimeNever) {
    ++never_victims_;
    where_[i] = kNeverVictim;
  } else {
    in_guarded_[i] = guarded_.insert({victim_at, id}).first;
    where_[i] = kGuarded;
  }
  if (shared != nullptr && where_[i] != kVictim) CountNotVictim(i, *shared, 1);
  const Timestamp at = order_->NextRankChange(view, now);
  // An unchanged time means its entry is still queued (a guarded job refiled as a victim):
  // pushing it again would only add a duplicate.
  if (at != kTimeNever && at != due_at_[i]) due_.push({at, id});
  due_at_[i] = at;
}

size_t RunningIndex::SharedSlotOf(const Job& job) {
  if (job.share == ShareMode::kExclusive || job.placement.parts.empty()) return kNotShared;
  const NodeGpus& part = job.placement.parts.front();
  return part.node.index() * kMaxGpusPerNode + static_cast<size_t>(std::countr_zero(part.gpus));
}

void RunningIndex::FileVictim(size_t i, const JobSpec& spec) {
  const size_t slot = shared_slot_[i];
  dead_[i] = slot != kNotShared && shared_gpus_[slot].not_victims > 0;
  const auto [filed, inserted] = (dead_[i] ? dead_victims_ : victims_).insert(stored_[i]);
  DS_CHECK(inserted) << "job " << stored_[i].id << " is already running";
  in_victims_[i] = filed;
  if (order_->by_tenant()) {
    auto it = victims_by_tenant_.find(spec.queue);
    if (it == victims_by_tenant_.end()) {
      it = victims_by_tenant_.emplace(spec.queue, TenantVictims()).first;
    }
    TenantVictims& tenant = it->second;
    in_tenant_[i] = {&tenant, (dead_[i] ? tenant.dead : tenant.victims).insert(stored_[i]).first,
                     spec.num_gpus == 0};
    if (in_tenant_[i].cpu) ++tenant.cpu_jobs;
  }
}

void RunningIndex::EraseVictim(size_t i) {
  (dead_[i] ? dead_victims_ : victims_).erase(in_victims_[i]);
  if (order_->by_tenant()) {  // every victim is filed under its tenant
    InTenant& filed = in_tenant_[i];
    (dead_[i] ? filed.tenant->dead : filed.tenant->victims).erase(filed.at);
    if (filed.cpu) --filed.tenant->cpu_jobs;
    filed = InTenant();
  }
}

void RunningIndex::SetDead(size_t i, bool dead) {
  if (dead_[i] == dead) return;
  // Moves the set nodes themselves: no allocation, and the stored key is unchanged.
  const auto transfer = [](std::set<RankKey>& from, std::set<RankKey>& to,
                           std::set<RankKey>::iterator at) {
    return to.insert(from.extract(at)).position;
  };
  in_victims_[i] = dead ? transfer(victims_, dead_victims_, in_victims_[i])
                        : transfer(dead_victims_, victims_, in_victims_[i]);
  if (order_->by_tenant()) {
    InTenant& filed = in_tenant_[i];
    TenantVictims& tenant = *filed.tenant;
    filed.at = dead ? transfer(tenant.victims, tenant.dead, filed.at)
                    : transfer(tenant.dead, tenant.victims, filed.at);
  }
  dead_[i] = dead;
}

void RunningIndex::CountNotVictim(size_t i, SharedGpu& gpu, int sign) {
  gpu.not_victims += sign;
  DS_CHECK(gpu.not_victims >= 0) << "a shared GPU's holders were miscounted";
  // Only the first such holder to come and the last to go change the victims' standing.
  if (gpu.not_victims != (sign > 0 ? 1 : 0)) return;
  for (JobId holder : gpu.holders) {
    const size_t h = holder.index();
    if (h != i && where_[h] == kVictim) SetDead(h, sign > 0);
  }
}

void RunningIndex::Take(JobId id) {
  const size_t i = id.index();
  if (const size_t slot = shared_slot_[i]; slot != kNotShared) {
    SharedGpu& gpu = shared_gpus_[slot];
    std::erase(gpu.holders, id);
    if (where_[i] != kVictim) CountNotVictim(i, gpu, -1);
    shared_slot_[i] = kNotShared;
  }
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
  if (shared_slot_[i] != kNotShared) CountNotVictim(i, shared_gpus_[shared_slot_[i]], 1);
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
  // Every victim, live and dead, by stored key: the order a merge of the two sets walks.
  std::vector<RankKey> all(victims_.begin(), victims_.end());
  all.insert(all.end(), dead_victims_.begin(), dead_victims_.end());
  std::ranges::sort(all);
  const RankKey* previous = nullptr;
  RankKey previous_now;
  for (const RankKey& stored : all) {
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
  DS_RETURN_IF_ERROR(CheckDead());
  if (!order_->by_tenant()) return Status::Ok();
  size_t filed = 0;
  for (const auto& [tenant, filed_victims] : victims_by_tenant_) {
    size_t cpu_jobs = 0;
    for (const bool dead : {false, true}) {
      for (const RankKey& stored : dead ? filed_victims.dead : filed_victims.victims) {
        const Job& job = jobs_->at(stored.id);
        const size_t i = stored.id.index();
        if (where_[i] != kVictim || dead_[i] != dead || !(stored_[i] == stored) ||
            job.spec.queue != tenant) {
          return Internal("running index: job " + std::to_string(stored.id.value()) +
                          " is filed as a victim of tenant '" + tenant + "', which it is not");
        }
        if (job.spec.num_gpus == 0) ++cpu_jobs;
      }
    }
    if (cpu_jobs != filed_victims.cpu_jobs) {
      return Internal("running index: tenant '" + tenant + "' counts " +
                      std::to_string(filed_victims.cpu_jobs) + " CPU victims, it has " +
                      std::to_string(cpu_jobs));
    }
    filed += filed_victims.victims.size() + filed_victims.dead.size();
  }
  if (filed != all.size()) {
    return Internal("running index: " + std::to_string(filed) + " victims filed by tenant, " +
                    std::to_string(all.size()) + " in all");
  }
  return Status::Ok();
}

Status RunningIndex::CheckDead() const {
  // The shared GPUs' filed holders as the job table's placements say.
  std::map<size_t, std::vector<size_t>> holders;
  for (size_t i = 0; i < where_.size(); ++i) {
    if (where_[i] == kOutside) continue;
    const Job& job = jobs_->all()[i];
    const size_t slot = SharedSlotOf(job);
    if (slot != kNotShared) holders[slot].push_back(i);
    if (slot != shared_slot_[i]) {
      return Internal("running index: job " + std::to_string(job.id.value()) +
                      " is filed on another shared GPU than it holds");
    }
  }
  for (const auto& [slot, on_gpu] : holders) {
    const SharedGpu& gpu = shared_gpus_[slot];
    const auto not_victim = [&](size_t h) { return where_[h] != kVictim; };
    if (gpu.holders.size() != on_gpu.size() ||
        gpu.not_victims != std::ranges::count_if(on_gpu, not_victim)) {
      return Internal("running index: a shared GPU's holders are miscounted");
    }
    for (size_t i : on_gpu) {
      if (where_[i] != kVictim) continue;
      const bool dead = std::ranges::any_of(on_gpu, [&](size_t h) { return not_victim(h); });
      if (dead != static_cast<bool>(dead_[i])) {
        return Internal("running index: job " + std::to_string(jobs_->all()[i].id.value()) +
                        " is filed " + (dead_[i] ? "dead" : "alive") + ", which it is not");
      }
    }
  }
  for (const RankKey& stored : victims_) {
    if (dead_[stored.id.index()]) return Internal("running index: a dead victim is filed alive");
  }
  return Status::Ok();
}

Timestamp RunningIndex::next_change() const {
  // Entries of jobs that stopped, or were re-keyed, are dropped here rather than on Erase.
  while (!due_.empty() && due_at_[due_.top().job.index()] != due_.top().at) due_.pop();
  return due_.empty() ? kTimeNever : due_.top().at;
}

}  // namespace dlsched
