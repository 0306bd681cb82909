#pragma once

// The fixture of the Scheduler's unit tests (scheduler_test.cc, services_test.cc): a scheduler
// on a MakeCluster cluster with a pipeline policy, a RecordingExecutor and the simple
// throughput model.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlsched/policy/pipeline.h"
#include "dlsched/runtime/scheduler.h"
#include "support/builders.h"

namespace dlsched::testing {

// A pipeline with feasibility admission, `sort` as the queue order and consolidation scoring;
// with `preempt`, priority preemption that protects `min_run_s` of a victim's run.
inline PipelineConfig Profile(std::string sort, bool backfill, bool preempt = false,
                              double min_run_s = 0) {
  PipelineConfig config;
  config.name = sort;
  config.admit = {{"feasibility", {}, 1}};
  config.queue_sort = {sort, {}, 1};
  // LAS re-ranks running jobs on a grid; one second keeps these tests' arithmetic simple.
  if (sort == "las") config.queue_sort.args = PluginArgs({{"quantum_s", "1"}});
  config.score = {{"consolidate", {}, 1}};
  config.backfill = backfill;
  if (preempt) {
    config.preempt = {{"priority_preempt",
                       PluginArgs(std::map<std::string, std::string, std::less<>>{
                           {"min_run_s", std::to_string(min_run_s)}}),
                       1}};
  }
  return config;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void Start(const std::string& cluster_spec, const PipelineConfig& profile,
             const std::vector<std::string>& labels = {}) {
    cluster_ = MakeCluster(cluster_spec, 8, labels);
    auto policy = BuildPipeline(profile, InTreeRegistry());
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    scheduler_ = std::make_unique<Scheduler>(cluster_, std::move(policy).value(), executor_, model_,
                                             /*seed=*/1);
  }
  JobId Submit(const JobSpec& spec, Timestamp now = kTimeZero) {
    auto id = scheduler_->Submit(spec, now);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }
  const Job& job(JobId id) const { return scheduler_->jobs().at(id); }
  // Starts `running` at t = 0, submits `waiting` at t = 1 s and returns why it waits.
  PendingReason ExplainWaiting(const std::vector<JobSpec>& running, const JobSpec& waiting) {
    for (const JobSpec& spec : running) Submit(spec);
    scheduler_->RunCycle(kTimeZero);
    const JobId id = Submit(waiting, AtSeconds(1));
    scheduler_->RunCycle(AtSeconds(1));
    for (const PendingReason& r : scheduler_->ExplainPending(AtSeconds(1))) {
      if (r.job == id) return r;
    }
    ADD_FAILURE() << "no explanation for the waiting job";
    return PendingReason{};
  }

  Cluster cluster_;
  RecordingExecutor executor_;
  SimpleThroughputModel model_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace dlsched::testing
