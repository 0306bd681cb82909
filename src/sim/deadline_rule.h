#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"

namespace dlsched::sim {

// Deadlines for traces that have none (Philly, Tiresias, Gavel; issue 4's "documented rule").
// Each training job without a deadline draws, from its own generator (seed, position), a QoS
// class: strict with probability `strict`, soft with probability `soft`, else it stays
// best-effort without a deadline. A strict or soft job gets
//   deadline = submit_time + slack x ideal_duration,  slack uniform in [slack_lo, slack_hi],
// its ideal duration being its run time alone on the reference GPUs, consolidated. Jobs that
// already have a deadline, and services, are left alone. A job's draw does not depend on any
// other job, so cutting a trace (--max-jobs) keeps the first jobs' deadlines.
struct DeadlineRule {
  double slack_lo = 1.5;
  double slack_hi = 3.0;
  double strict = 1.0;  // share of jobs made strict, [0, 1]
  double soft = 0.0;    // share made soft, [0, 1 - strict]
  uint64_t seed = 1;
};

// "k=v,k=v" over the defaults; keys: slack (LO:HI, or one value for both; 0 < LO <= HI), strict,
// soft, seed. InvalidArgument naming the key.
Result<DeadlineRule> ParseDeadlineRule(std::string_view text);

// Applies the rule in place; returns how many jobs it gave a deadline.
int ApplyDeadlineRule(const DeadlineRule& rule, std::vector<JobSpec>& jobs);

}  // namespace dlsched::sim
