#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlsched/policy/placement.h"
#include "dlsched/policy/policy.h"
#include "dlsched/policy/registry.h"

namespace dlsched {

struct PluginConfig {
  std::string name;
  PluginArgs args;
  double weight = 1.0;  // Score plugins only
};

// A policy profile: which plugin runs at each point, and the pipeline's own knobs. Loaded from
// JSON (profiles/*.json, see docs/profiles.md) and shared verbatim by simulator and daemon.
struct PipelineConfig {
  std::string name;
  std::string description;
  std::vector<PluginConfig> admit;
  PluginConfig queue_sort{"fifo", {}, 1.0};
  std::vector<PluginConfig> filter;
  std::vector<PluginConfig> score;
  std::vector<PluginConfig> preempt;  // empty: never preempts
  // false: strict head-of-line (stop at the first waiting job that does not fit);
  // true: later jobs may start on GPUs the blocked head cannot use.
  bool backfill = true;
  // A job waiting longer than this is considered before the policy order (starvation guard).
  Duration starvation_limit = Duration::max();
  // The guard protects only jobs without a deadline (best-effort work): a deadline job's
  // deadline is its guard, and one that missed it should not jump the queue.
  bool starvation_guard_no_deadline_only = false;
  // Blocked jobs per cycle for which victims are searched (bounds a cycle's cost).
  int max_preemption_attempts = 8;
  // A waiting job is late once it can no longer meet its deadline (past its latest start,
  // JobQueue::by_latest_start). Reject late strict jobs: a strict miss is a failure, and running
  // it would only take GPUs from jobs that can still make theirs.
  bool reject_late_strict = false;
  // Walk late jobs after all others (in latest-start order), so that under overload jobs that
  // already missed do not push the rest past their deadlines too (EDF's domino effect).
  bool late_jobs_last = false;
  // Topology-aware placement knobs (the `topo` profile).
  PlacementOptions placement;
  // Tenant quotas, by JobSpec::queue ("*": every tenant not listed; a tenant with neither has
  // no quota). A tenant never holds more than max_share of the cluster's GPUs (its jobs wait,
  // cause kQuota). While it holds less than guaranteed_share, its waiting job may preempt jobs
  // of tenants holding more than their guaranteed share (borrowers), whatever their rank:
  // borrowed GPUs are reclaimed. Victims still pass the preempt plugins' VictimFrom guards
  // (minimum run time, preemption budget), so reclaiming needs a preempt plugin.
  //
  // A share is measured as share_measure says. kDominant (the default): a tenant's share is its
  // dominant share (DRF, Ghodsi et al., NSDI'11), the largest of its shares of the cluster's
  // GPUs, CPU cores (Cluster::total_cpus) and host memory (total_host_memory_mib), a job using
  // its GPUs and EffectiveHostRequest. A quota's share then bounds every resource alike (a
  // dominant share is within s exactly when each resource's share is): a tenant within its
  // guarantee holds at most that share of each, one over its cap would exceed it in some
  // resource, and a borrower holds more than its guarantee in some resource. Resources the
  // cluster does not state (0) are not measured, so on a cluster stating no CPUs or memory
  // the dominant share is the GPU share. kGpu: GPUs only, whatever the cluster states.
  struct Quota {
    double guaranteed_share = 0;
    double max_share = 1;
  };
  std::map<std::string, Quota, std::less<>> quotas;
  enum class ShareMeasure { kDominant, kGpu };
  ShareMeasure share_measure = ShareMeasure::kDominant;
  // Which waiting job of which tenant a walk meets next. kRank: the policy order across
  // tenants. kFair: DRF's progressive filling: the next job (in policy order) of the tenant
  // whose share (share_measure) is the smallest at that point, so that tenants' shares rise
  // together; with quotas, within each quota pass. Victim searches still follow the policy
  // order. Needs backfill.
  enum class TenantOrder { kRank, kFair };
  TenantOrder tenant_order = TenantOrder::kRank;
};

// Builds the plugin pipeline policy. Fails naming the unknown plugin or bad argument.
Result<std::unique_ptr<SchedulingPolicy>> BuildPipeline(const PipelineConfig& config,
                                                        const PluginRegistry& registry);

}  // namespace dlsched
