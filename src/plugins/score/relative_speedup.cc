#include "plugins/score/relative_speedup.h"

#include <vector>

#include "dlsched/policy/context.h"
#include "plugins/score/deadline_fit.h"

namespace dlsched {
namespace {

// One node of each GPU type (a homogeneous one where there is one), by type index; invalid
// ids for types no node has.
std::vector<NodeId> NodePerType(const Cluster& cluster) {
  std::vector<NodeId> nodes(cluster.num_gpu_types());
  int found = 0;
  for (int i = 0; i < cluster.num_nodes() && found < cluster.num_gpu_types(); ++i) {
    const NodeId id(i);
    if (!cluster.node_homogeneous(id) || cluster.node(id).gpus.empty()) continue;
    NodeId& slot = nodes[cluster.node_gpu_type(id).index()];
    if (!slot.valid()) {
      slot = id;
      ++found;
    }
  }
  return nodes;
}

// a_j(t) of the header for every type: the job's single-GPU speed on each type over its mean
// across the types; 0 for a type with no node or where the job makes no progress. Empty when the
// job runs nowhere.
std::vector<double> Affinities(const JobSpec& spec, const Cluster& cluster,
                               const std::vector<NodeId>& node_per_type,
                               const ThroughputModel& estimator) {
  std::vector<double> speed(node_per_type.size(), 0);
  double sum = 0;
  int types = 0;
  for (size_t t = 0; t < node_per_type.size(); ++t) {
    if (!node_per_type[t].valid()) continue;
    Placement placement;
    placement.parts.push_back({node_per_type[t], LowestGpus(1)});
    speed[t] = estimator.ItersPerSecond(spec, cluster, placement);
    if (!(speed[t] > 0)) speed[t] = 0;
    sum += speed[t];
    ++types;
  }
  if (!(sum > 0)) return {};
  const double mean = sum / types;
  for (double& s : speed) s /= mean;
  return speed;
}

}  // namespace

Result<std::unique_ptr<Plugin>> RelativeSpeedupScore::Create(const PluginArgs& args) {
  DS_RETURN_IF_ERROR(args.CheckKnown({"compare_jobs", "deadline_fallback"}));
  DS_ASSIGN_OR_RETURN(const int64_t compare_jobs, args.GetInt("compare_jobs", 16));
  if (compare_jobs < 0 || compare_jobs > 1024) {
    return InvalidArgument("compare_jobs must be in [0, 1024]");
  }
  DS_ASSIGN_OR_RETURN(const bool deadline_fallback, args.GetBool("deadline_fallback", true));
  return std::unique_ptr<Plugin>(
      std::make_unique<RelativeSpeedupScore>(static_cast<int>(compare_jobs), deadline_fallback));
}

const std::vector<NodeId>& RelativeSpeedupScore::NodesPerType(const SchedulingContext& ctx) const {
  if (cached_cluster_ != &ctx.cluster || cached_estimator_ != &ctx.estimator) {
    cached_cluster_ = &ctx.cluster;
    cached_estimator_ = &ctx.estimator;
    node_per_type_ = NodePerType(ctx.cluster);
    affinities_.clear();
    known_.clear();
  }
  return node_per_type_;
}

const std::vector<double>& RelativeSpeedupScore::AffinitiesOf(JobId id,
                                                              const SchedulingContext& ctx) const {
  NodesPerType(ctx);
  const size_t index = id.index();
  if (index >= known_.size()) {
    known_.resize(index + 1, false);
    affinities_.resize(index + 1);
  }
  if (!known_[index]) {
    affinities_[index] =
        Affinities(ctx.jobs.at(id).spec, ctx.cluster, node_per_type_, ctx.estimator);
    known_[index] = true;
  }
  return affinities_[index];
}

double RelativeSpeedupScore::ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                                       const SchedulingContext& ctx) const {
  if (ctx.cluster.num_gpu_types() <= 1) return 0;
  const JobSpec& spec = job.spec();
  if (deadline_fallback_ && spec.deadline) {
    return DeadlineFitScore().ScoreNode(job, node, free_gpus, gpus, ctx);
  }
  const size_t type = ctx.cluster.node_gpu_type(node).index();
  // The scored job's own from its view (it need not be in the table yet); the others' cached.
  const std::vector<double> own_affinities =
      Affinities(spec, ctx.cluster, NodesPerType(ctx), ctx.estimator);
  if (own_affinities.empty() || !(own_affinities[type] > 0)) return 0;
  const double own = own_affinities[type];
  double others = 0;
  int compared = 0;
  auto walk = ctx.queue.WalkInOrder();
  for (int seen = 0; seen < compare_jobs_;) {
    const std::optional<RankKey> next = walk.Next(kAnyGang);
    if (!next) break;
    if (next->id == job.id()) continue;
    ++seen;
    const std::vector<double>& theirs = AffinitiesOf(next->id, ctx);
    if (theirs.empty()) continue;
    others += theirs[type];
    ++compared;
  }
  const double x = compared > 0 && others > 0 ? own / (others / compared) : own;
  return x / (1 + x);
}

}  // namespace dlsched
