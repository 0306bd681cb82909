#pragma once

// A scheduling world for plugin and placement tests: a cluster, its state, empty queues and
// the built-in estimator, from which a SchedulingContext is made at any time.

#include <string>
#include <vector>

#include "dlsched/model/cluster_state.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/policy/context.h"
#include "support/builders.h"

namespace dlsched::testing {

struct World {
  // See MakeCluster for the arguments.
  explicit World(const std::string& spec, int nodes_per_rack = 8,
                 const std::vector<std::string>& labels = {})
      : cluster(MakeCluster(spec, nodes_per_rack, labels)),
        state(cluster),
        queue(jobs, RankOrder::Fifo()),
        running(jobs, RankOrder::Fifo()) {}
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  SchedulingContext Context(Timestamp now = kTimeZero) {
    return SchedulingContext{now, cluster, state, jobs, queue, {}, running, model, rng};
  }

  Cluster cluster;
  ClusterState state;
  JobTable jobs;
  JobQueue queue;
  RunningIndex running;
  SimpleThroughputModel model;
  Rng rng;
};

}  // namespace dlsched::testing
