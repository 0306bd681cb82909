#include "plugins/queue_sort/multi_priority.h"

#include <cmath>

#include "dlsched/policy/job_queue.h"

namespace dlsched {

Result<std::unique_ptr<Plugin>> MultiPrioritySort::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(
      args.CheckKnown({"queue_weights", "priority_weight", "wait_weight", "remaining_weight",
                       "size_weight", "slack_weight", "no_deadline_horizon_s"}));
  Weights w;
  DS_ASSIGN_OR_RETURN(w.queue_weights, args.GetDoubleMap("queue_weights"));
  DS_ASSIGN_OR_RETURN(w.priority_weight, args.GetDouble("priority_weight", w.priority_weight));
  DS_ASSIGN_OR_RETURN(w.wait_weight, args.GetDouble("wait_weight", w.wait_weight));
  DS_ASSIGN_OR_RETURN(w.remaining_weight, args.GetDouble("remaining_weight", w.remaining_weight));
  DS_ASSIGN_OR_RETURN(w.size_weight, args.GetDouble("size_weight", w.size_weight));
  DS_ASSIGN_OR_RETURN(w.slack_weight, args.GetDouble("slack_weight", w.slack_weight));
  DS_ASSIGN_OR_RETURN(const double horizon_s,
                      args.GetDouble("no_deadline_horizon_s", ToSeconds(w.no_deadline_horizon)));
  if (horizon_s <= 0) return InvalidArgument("no_deadline_horizon_s must be positive");
  w.no_deadline_horizon = Seconds(horizon_s);
  return std::unique_ptr<Plugin>(std::make_unique<MultiPrioritySort>(std::move(w)));
}

int64_t MultiPrioritySort::Rank(const JobView& job) const {
  const JobSpec& spec = job.spec();
  const auto hours = [](Timestamp t) { return ToSeconds(t - kTimeZero) / 3600.0; };
  const auto it = weights_.queue_weights.find(spec.queue);
  double score = it == weights_.queue_weights.end() ? 0.0 : it->second;
  score += weights_.priority_weight * spec.priority;
  score -= weights_.wait_weight * hours(spec.submit_time);  // + wait_weight x (now - submit)
  score -= weights_.remaining_weight * ToSeconds(job.estimated_remaining()) / 3600.0;
  score -= weights_.size_weight * spec.num_gpus;
  if (weights_.slack_weight != 0) {
    const Timestamp latest_start = spec.deadline ? JobQueue::LatestStart(job.job())
                                                 : spec.submit_time + weights_.no_deadline_horizon;
    score -= weights_.slack_weight * hours(latest_start);  // + slack_weight x (now - latest)
  }
  return std::llround(-score * 1000.0);
}

}  // namespace dlsched
