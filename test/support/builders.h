#pragma once

// Builders and fakes for tests: MakeJob(1).Gpus(4).Submit(10s).Build(), MakeCluster("2x4xV100"),
// a RecordingExecutor that remembers what the scheduler asked of it.

#include <string>
#include <string_view>
#include <vector>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/runtime/executor.h"

namespace dlsched::testing {

// Builds a Job (as the scheduler would hold it) or a JobSpec. Defaults: 1 GPU, submitted at 0,
// 3600 s of work at 1 iteration/s, queued.
class JobBuilder {
 public:
  explicit JobBuilder(uint32_t id);
  JobBuilder& Gpus(int n);
  JobBuilder& Submit(Duration at);
  JobBuilder& Work(Duration ideal);
  JobBuilder& Attained(Duration gpu_time);
  JobBuilder& Priority(int p);
  JobBuilder& GpuType(std::string type);
  // The job's host request: CPU cores and host memory (MiB); Gpus(0) with it makes a CPU job.
  JobBuilder& Host(int cpus, int64_t memory_mib = 0);
  // "key=value;key=value" (ParseLabels); aborts on a malformed text.
  JobBuilder& Selector(std::string_view labels);
  JobBuilder& Prefer(std::string_view labels);
  // An online service with the load "SECONDS:GPUS;..." (ParseServiceLoad; "" = all its GPUs all
  // day); aborts on a malformed text.
  JobBuilder& Service(std::string_view load = "");
  JobBuilder& Estimate(Duration total, Duration remaining);
  JobBuilder& Running(Timestamp since);
  Job Build() const { return job_; }
  JobSpec Spec() const { return job_.spec; }

 private:
  Job job_;
};
inline JobBuilder MakeJob(uint32_t id) { return JobBuilder(id); }

// A cluster from terms "NODESxGPUSxTYPE" joined by '+'; `nodes_per_rack` nodes per rack. A term
// may state its nodes' CPU cores and host memory (MiB): "2x4xV100:16c:65536m"; "2x0xcpu:32c" are
// CPU-only nodes.
// Aborts on a malformed spec (tests only). `labels[i]` ("k=v;k=v"), when given, labels node i.
Cluster MakeCluster(const std::string& spec, int nodes_per_rack = 8,
                    const std::vector<std::string>& labels = {});

// Remembers launches, preemptions and kills in order; does nothing else. The test plays the
// cluster by feeding events back to the scheduler.
class RecordingExecutor final : public Executor {
 public:
  struct Call {
    enum Kind { kLaunch, kPreempt, kKill } kind;
    JobId job;
    Placement placement;
    Timestamp at;
  };
  void Launch(const Job& job, const Placement& placement, Timestamp now) override {
    calls.push_back({Call::kLaunch, job.id, placement, now});
  }
  void Preempt(const Job& job, Timestamp now) override {
    calls.push_back({Call::kPreempt, job.id, {}, now});
  }
  void Kill(const Job& job, Timestamp now) override {
    calls.push_back({Call::kKill, job.id, {}, now});
  }
  std::vector<JobId> Launched() const;
  std::vector<JobId> Preempted() const;

  std::vector<Call> calls;
};

}  // namespace dlsched::testing
