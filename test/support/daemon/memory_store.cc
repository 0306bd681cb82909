#include "support/daemon/memory_store.h"

#include <algorithm>

namespace dlsched::testing {

using daemon::EventRow;
using daemon::JobRow;

MemoryStore::~MemoryStore() { Rollback(); }

Status MemoryStore::CheckWrite() const {
  if (committed_->failure) return *committed_->failure;
  if (!open_) return Internal("memory store: a write outside a transaction");
  return Status::Ok();
}

Status MemoryStore::Begin(bool durable) {
  DS_CHECK(!open_) << "nested transaction";
  if (committed_->failure) return *committed_->failure;
  open_ = *committed_;
  lazy_ = !durable;
  return Status::Ok();
}

Status MemoryStore::Commit() {
  DS_CHECK(open_) << "commit without a transaction";
  if (committed_->failure) {
    const Status failed = *committed_->failure;
    Rollback();
    return failed;
  }
  Tables tables = std::move(*open_);
  open_.reset();
  ++tables.commits;
  if (lazy_) ++tables.lazy_commits;
  *committed_ = std::move(tables);
  return Status::Ok();
}

void MemoryStore::Rollback() { open_.reset(); }

Status MemoryStore::InsertJob(const JobRow& row) {
  DS_RETURN_IF_ERROR(CheckWrite());
  if (open_->jobs.contains(row.id))
    return AlreadyExists("job " + std::to_string(row.id) + " exists");
  JobRow& stored = open_->jobs[row.id] = row;
  stored.load_error.clear();  // never stored
  return Status::Ok();
}

Status MemoryStore::UpdateJob(const JobRow& row) {
  DS_RETURN_IF_ERROR(CheckWrite());
  const auto it = open_->jobs.find(row.id);
  if (it == open_->jobs.end()) return NotFound("no stored job " + std::to_string(row.id));
  // Everything but the immutable columns (id, user, spec_json, submit_time).
  JobRow updated = row;
  updated.user = it->second.user;
  updated.spec_json = it->second.spec_json;
  updated.submit_time = it->second.submit_time;
  updated.load_error.clear();
  it->second = std::move(updated);
  return Status::Ok();
}

Status MemoryStore::AppendEvent(Timestamp time, int64_t job, std::string_view kind,
                                std::string_view detail) {
  DS_RETURN_IF_ERROR(CheckWrite());
  // As SQLite numbers rows: one past the largest seq.
  const int64_t seq = open_->events.empty() ? 1 : open_->events.back().seq + 1;
  open_->events.push_back({seq, time, job, std::string(kind), std::string(detail)});
  return Status::Ok();
}

Result<std::vector<JobRow>> MemoryStore::LoadJobs() {
  std::vector<JobRow> rows;
  for (const auto& [id, row] : current().jobs) rows.push_back(row);
  return rows;
}

Result<std::vector<EventRow>> MemoryStore::LoadEvents(int64_t after_seq, int64_t limit) {
  const std::vector<EventRow>& all = current().events;
  auto from = std::ranges::upper_bound(all, after_seq, {}, &EventRow::seq);
  std::vector<EventRow> events;
  for (; from != all.end() && static_cast<int64_t>(events.size()) < limit; ++from) {
    events.push_back(*from);
  }
  return events;
}

Result<int64_t> MemoryStore::CountJobs() { return static_cast<int64_t>(current().jobs.size()); }

Result<std::optional<std::string>> MemoryStore::GetMeta(std::string_view key) {
  const auto it = current().meta.find(key);
  if (it == current().meta.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

Status MemoryStore::SetMeta(std::string_view key, std::string_view value) {
  DS_RETURN_IF_ERROR(CheckWrite());
  open_->meta.insert_or_assign(std::string(key), std::string(value));
  return Status::Ok();
}

Status MemoryStore::AppendGpuSample(const daemon::GpuSampleRow& row) {
  DS_RETURN_IF_ERROR(CheckWrite());
  open_->gpu_samples.push_back(row);
  return Status::Ok();
}

Result<std::vector<daemon::GpuSampleRow>> MemoryStore::LoadGpuSamples(int64_t per_job) {
  // As the SQL: per job the newest `per_job` by time (ties: the later inserted), oldest first.
  std::map<int64_t, std::vector<daemon::GpuSampleRow>> by_job;
  for (const daemon::GpuSampleRow& row : current().gpu_samples) by_job[row.job].push_back(row);
  std::vector<daemon::GpuSampleRow> rows;
  for (auto& [job, samples] : by_job) {
    std::ranges::stable_sort(samples, {}, &daemon::GpuSampleRow::time);
    const size_t keep =
        std::min(samples.size(), static_cast<size_t>(std::max<int64_t>(0, per_job)));
    rows.insert(rows.end(), samples.end() - static_cast<std::ptrdiff_t>(keep), samples.end());
  }
  return rows;
}

Result<std::vector<daemon::GpuSampleTotals>> MemoryStore::LoadGpuSampleTotals() {
  std::map<int64_t, daemon::GpuSampleTotals> totals;
  for (const daemon::GpuSampleRow& row : current().gpu_samples) {
    daemon::GpuSampleTotals& t = totals[row.job];
    t.job = row.job;
    ++t.samples;
    t.peak_memory_mib = std::max(t.peak_memory_mib, row.memory_mib);
  }
  std::vector<daemon::GpuSampleTotals> out;
  for (const auto& [job, t] : totals) out.push_back(t);
  return out;
}

}  // namespace dlsched::testing
