#include "daemon/core/gpu_usage.h"

#include <unistd.h>

#include <algorithm>

namespace dlsched::daemon {

std::vector<JobGpuObservation> AttributeGpuSample(const GpuSample& sample,
                                                  const std::map<int, JobId>& job_of_group,
                                                  const std::function<int(int pid)>& group_of) {
  struct Seen {
    int64_t memory_mib = 0;
    double utilization_sum = 0;
    int devices = 0;
  };
  std::map<JobId, Seen> seen;
  std::map<int, JobId> job_of_pid;  // one getpgid per process, even on several devices
  for (const GpuDeviceSample& device : sample.devices) {
    std::map<JobId, int64_t> on_device;  // memory per job on this device
    for (const GpuProcessSample& p : device.processes) {
      auto found = job_of_pid.find(p.pid);
      if (found == job_of_pid.end()) {
        const int group = group_of(p.pid);
        const auto job = group > 0 ? job_of_group.find(group) : job_of_group.end();
        found = job_of_pid.emplace(p.pid, job == job_of_group.end() ? JobId() : job->second).first;
      }
      if (!found->second.valid()) continue;
      on_device[found->second] += std::max<int64_t>(0, p.used_mib);
    }
    for (const auto& [job, memory_mib] : on_device) {
      Seen& s = seen[job];
      s.memory_mib = std::max(s.memory_mib, memory_mib);
      s.utilization_sum += device.utilization;
      ++s.devices;
    }
  }
  std::vector<JobGpuObservation> observations;
  observations.reserve(seen.size());
  for (const auto& [job, s] : seen) {
    observations.push_back({job, s.memory_mib, s.utilization_sum / s.devices});
  }
  return observations;
}

int ProcessGroupOf(int pid) { return pid > 0 ? static_cast<int>(getpgid(pid)) : -1; }

namespace {

// `recent` with `point` appended and the oldest dropped beyond JobGpuUsage::kRecent.
std::shared_ptr<const std::vector<GpuUsagePoint>> Appended(
    const std::shared_ptr<const std::vector<GpuUsagePoint>>& recent, const GpuUsagePoint& point) {
  auto next = std::make_shared<std::vector<GpuUsagePoint>>();
  if (recent) {
    const size_t keep = std::min(recent->size(), JobGpuUsage::kRecent - 1);
    next->reserve(keep + 1);
    next->assign(recent->end() - static_cast<std::ptrdiff_t>(keep), recent->end());
  }
  next->push_back(point);
  return next;
}

}  // namespace

bool operator==(const JobGpuUsage& a, const JobGpuUsage& b) {
  static const std::vector<GpuUsagePoint> kNone;
  return a.latest_memory_mib == b.latest_memory_mib && a.peak_memory_mib == b.peak_memory_mib &&
         a.latest_utilization == b.latest_utilization && a.samples == b.samples &&
         a.latest_at == b.latest_at &&
         (a.recent ? *a.recent : kNone) == (b.recent ? *b.recent : kNone);
}

void GpuUsageBook::Record(const JobGpuObservation& o, Timestamp at) {
  Entry& entry = jobs_[o.job];
  JobGpuUsage& u = entry.usage;
  u.latest_memory_mib = o.memory_mib;
  u.peak_memory_mib = std::max(u.peak_memory_mib, o.memory_mib);
  u.latest_utilization = o.utilization;
  u.latest_at = at;
  ++u.samples;
  u.recent = Appended(u.recent, {at, o.memory_mib, o.utilization});
  entry.history.Add({o.memory_mib, o.utilization});
  published_.reset();
}

void GpuUsageBook::Restore(std::span<const GpuSampleTotals> totals,
                           std::span<const GpuSampleRow> newest) {
  jobs_.clear();
  published_.reset();
  for (const GpuSampleRow& row : newest) {
    Entry& entry = jobs_[JobId(static_cast<uint32_t>(row.job))];
    entry.usage.latest_memory_mib = row.memory_mib;
    entry.usage.latest_utilization = row.utilization;
    entry.usage.latest_at = row.time;
    entry.usage.recent = Appended(entry.usage.recent, {row.time, row.memory_mib, row.utilization});
    entry.history.Add({row.memory_mib, row.utilization});
  }
  for (const GpuSampleTotals& t : totals) {
    JobGpuUsage& u = jobs_[JobId(static_cast<uint32_t>(t.job))].usage;
    u.samples = t.samples;
    u.peak_memory_mib = t.peak_memory_mib;
  }
}

const JobGpuUsage* GpuUsageBook::Find(JobId job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second.usage;
}

const sharing::DemandHistory* GpuUsageBook::History(JobId job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() || it->second.history.empty() ? nullptr : &it->second.history;
}

std::shared_ptr<const std::map<JobId, JobGpuUsage>> GpuUsageBook::Published() {
  if (!published_) {
    auto copy = std::make_shared<std::map<JobId, JobGpuUsage>>();
    for (const auto& [job, entry] : jobs_) copy->emplace(job, entry.usage);
    published_ = std::move(copy);
  }
  return published_;
}

}  // namespace dlsched::daemon
