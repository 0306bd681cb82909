#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched {

struct SchedulingContext;

// Arguments of one plugin instance, from a profile: scalar JSON values as text, arrays as
// comma-separated text. Typed getters validate and name the bad key.
class PluginArgs {
 public:
  PluginArgs() = default;
  explicit PluginArgs(std::map<std::string, std::string, std::less<>> values)
      : values_(std::move(values)) {}
  // PluginArgs({{"min_run_s", "60"}}).
  PluginArgs(std::initializer_list<std::pair<const std::string, std::string>> values)
      : values_(values) {}

  bool Has(std::string_view key) const { return values_.contains(key); }
  Result<double> GetDouble(std::string_view key, double fallback) const;
  Result<int64_t> GetInt(std::string_view key, int64_t fallback) const;
  Result<bool> GetBool(std::string_view key, bool fallback) const;
  Result<std::vector<double>> GetDoubleList(std::string_view key,
                                            std::vector<double> fallback) const;
  // "name=value,name=value" (a JSON object of numbers in a profile); empty when absent.
  Result<std::map<std::string, double, std::less<>>> GetDoubleMap(std::string_view key) const;
  // Fails naming any key not in `known` (catches typos in profiles).
  Status CheckKnown(std::initializer_list<std::string_view> known) const;
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

// Every plugin has a static kName, a static Create(const PluginArgs&) and is listed in
// RegisterInTreePlugins. Plugins are immutable after Create and hold no per-run state: all
// they know of the world comes through JobView and SchedulingContext.
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

// The outcome of a yes/no check: not an error. `Fit::Unfit("needs 8 GPUs of type A100")`.
// `retry_at`: when an Unfit answer may turn into a yes with nothing else changing (a minimum
// run time expiring, say); the pipeline wakes then. kTimeNever = only an event can change it.
struct Fit {
  bool ok = true;
  std::string reason;
  Timestamp retry_at = kTimeNever;
  static Fit Yes() { return {}; }
  static Fit Unfit(std::string why, Timestamp retry_at = kTimeNever) {
    return {false, std::move(why), retry_at};
  }
};

// Admit: may this job enter the queue at all? Runs once per job, on its first cycle.
class AdmitPlugin : public Plugin {
 public:
  virtual Fit Admit(const JobView& job, const SchedulingContext& ctx) const = 0;
};

// A job's place in a queue order: lower ranks run first, equal ranks by submit time, then id,
// so every order is total. Plain integers: an ordered index of keys compares without calls.
struct RankKey {
  int64_t rank = 0;
  Timestamp submit;
  JobId id;
  friend auto operator<=>(const RankKey&, const RankKey&) = default;
};

// QueueSort: who goes first. Rank must not change for a job while it waits: the scheduler keeps
// waiting jobs in an ordered index of their keys. So it may read only what is frozen while a
// job waits (spec, attained service, estimates, queued_since) — never "now". Between two
// running jobs the order may change only at the times NextRankChange announces: the scheduler
// keeps running jobs in an ordered index too, compares them at one instant, and re-keys a job
// then.
class QueueSortPlugin : public Plugin {
 public:
  // Lower runs first.
  virtual int64_t Rank(const JobView& job) const = 0;
  // For a running job: the earliest time after `now` at which its rank against other jobs can
  // change (e.g. it crosses a Tiresias threshold). The scheduler re-keys it then, and the
  // pipeline wakes to consider preemption. kTimeNever: its rank among running jobs never
  // changes (and against waiting jobs it never falls).
  virtual Timestamp NextRankChange(const JobView& running, Timestamp now) const {
    return kTimeNever;
  }
  // Between its announced changes, a running job's Rank moves by exactly this much per
  // microsecond (srtf: -1, its remaining time shrinks as it runs), so Rank - drift x now is
  // constant there: the running index orders running jobs by that. Ordering by it must equal
  // ordering by Rank at any one instant — true when all running jobs drift alike, or when jobs
  // of different drifts never interleave (laxity: jobs with a deadline, drifting, always rank
  // before jobs without one, which do not).
  virtual int64_t RankDrift(const JobView& running) const { return 0; }

  RankKey KeyOf(const JobView& job) const { return {Rank(job), job.submit_time(), job.id()}; }
  // Whether `a` runs before `b`.
  bool Less(const JobView& a, const JobView& b) const { return KeyOf(a) < KeyOf(b); }
};

// Filter: can this job use this node at all (GPU type, labels, ...)? Cheap; called per node.
class FilterPlugin : public Plugin {
 public:
  virtual Fit FilterNode(const JobView& job, NodeId node, const SchedulingContext& ctx) const = 0;
};

// Score: how good is putting `gpus` GPUs of the job on `node`, which has `free_gpus` free before
// the choice? Higher is better; the pipeline adds weighted scores and takes the best node.
class ScorePlugin : public Plugin {
 public:
  virtual double ScoreNode(const JobView& job, NodeId node, int free_gpus, int gpus,
                           const SchedulingContext& ctx) const = 0;
};

// Preempt: may `victim` (running) be suspended so that `job` (waiting, ranked above it by the
// queue order) can run? Guards against preemption storms live here, in two parts:
// - VictimFrom, the job-independent guard (a minimum run time, a preemption budget): the
//   earliest time from which `victim` may be preempted in its current run — at or before the
//   view's time when it may be now, kTimeNever when not in this run. It may read only what is
//   frozen while a job runs (its segment start, its preemption count), and once a job may be a
//   victim it stays one for the rest of the run: the scheduler files each running job by it
//   when the job starts (RunningIndex) and victim searches never visit a guarded job.
// - MayPreempt, for each (job, victim) pair a search considers.
class PreemptPlugin : public Plugin {
 public:
  virtual Timestamp VictimFrom(const JobView& victim) const = 0;
  virtual Fit MayPreempt(const JobView& job, const JobView& victim,
                         const SchedulingContext& ctx) const {
    return Fit::Yes();
  }
  // A refusal MayPreempt gives the job for every victim (the same Fit), or Fit::Yes() where its
  // answer depends on the victim: when this plugin is the first asked, a victim search for a
  // job refused here stops at the first victim it would ask about.
  virtual Fit MayPreemptAny(const JobView& job, const SchedulingContext& ctx) const {
    return Fit::Yes();
  }
  // True where MayPreempt refuses, for every job, each victim whose rank (RankKey::rank, the
  // victim's as the running index files it) is not above the job's, with no retry time: a
  // victim search, which meets victims lowest rank first, stops at the first such victim when
  // this plugin is the first to be asked.
  virtual bool LowerRankOnly() const { return false; }
  // True where MayPreempt answers every victim as MayPreemptAny answers the job (the answer
  // never depends on the victim): a victim search whose job every such plugin accepts needs to
  // ask none of them about a victim it may leave out.
  virtual bool VictimBlind() const { return false; }
};

}  // namespace dlsched
