#include "daemon/core/replay.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "daemon/core/event_log.h"
#include "daemon/core/gpu_usage.h"
#include "daemon/core/live_sharing.h"
#include "daemon/core/restore.h"
#include "daemon/exec/job_env.h"
#include "daemon/exec/share_env.h"
#include "daemon/job/job_request.h"
#include "daemon/store/store.h"
#include "dlsched/perf/predictor.h"
#include "dlsched/perf/throughput_model.h"
#include "dlsched/runtime/executor.h"
#include "dlsched/runtime/scheduler.h"
#include "io/profile_store.h"

namespace dlsched::daemon {
namespace {

// Events are read in pages of this many rows.
constexpr int64_t kPage = 10000;

// Takes the Scheduler's executor calls as decisions, in order.
class RecordingExecutor final : public Executor {
 public:
  RecordingExecutor(const Cluster& cluster, std::deque<ReplayedDecision>& out)
      : cluster_(&cluster), out_(&out) {}
  void Launch(const Job& job, const Placement& placement, Timestamp now) override {
    Add(now, job.id, event_kind::kLaunch, PlacementText(*cluster_, placement));
  }
  void Preempt(const Job& job, Timestamp now) override {
    Add(now, job.id, event_kind::kPreempt, "");
  }
  void Kill(const Job& job, Timestamp now) override { Add(now, job.id, event_kind::kKill, ""); }

 private:
  void Add(Timestamp now, JobId job, std::string_view kind, std::string detail) {
    out_->push_back({now, job.value(), std::string(kind), std::move(detail)});
  }
  const Cluster* cluster_;
  std::deque<ReplayedDecision>* out_;
};

// What the replay has of one daemon run: its cluster, and a Scheduler that decides on it.
struct DaemonRun {
  std::string profile_json;  // PolicyProfileToJson of the profile it decides with
  std::shared_ptr<const ThroughputModel> estimator;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<RecordingExecutor> executor;
  // With a sharing profile: the knowledge its scheduler sees, refreshed before each cycle.
  std::unique_ptr<LiveSharingKnowledge> sharing;
  std::unique_ptr<Scheduler> scheduler;
};

bool IsDecision(std::string_view kind) {
  return kind == event_kind::kLaunch || kind == event_kind::kPreempt || kind == event_kind::kKill ||
         kind == event_kind::kReject;
}

class Replayer {
 public:
  Replayer(Store& store, const ReplayOptions& options) : store_(&store), options_(&options) {}

  Result<ReplayReport> Replay() {
    DS_ASSIGN_OR_RETURN(const int64_t last, store_->LastEventSeq());
    // Jobs whose submissions are in the log up to `last` (rows commit with their submit event,
    // so a daemon writing meanwhile adds only rows the replay does not read).
    DS_ASSIGN_OR_RETURN(rows_, store_->LoadJobs());
    int64_t after = 0;
    while (after < last && !report_.divergence) {
      DS_ASSIGN_OR_RETURN(std::vector<EventRow> page,
                          store_->LoadEvents(after, std::min(kPage, last - after)));
      if (page.empty()) break;
      for (const EventRow& e : page) {
        if (e.seq > last) break;
        ++report_.events;
        DS_RETURN_IF_ERROR(
            Step(e).WithPrefix("event " + std::to_string(e.seq) + " (" + e.kind + ")"));
        if (report_.divergence) break;
      }
      after = page.back().seq;
    }
    if (report_.runs == 0) {
      return FailedPrecondition(store_->path() +
                                ": the event log has no 'start' record (written by a dlsched "
                                "older than replay, or not a daemon database)");
    }
    if (!report_.divergence) CheckNoneLeft(last, "the end of the log");
    return report_;
  }

 private:
  Status Step(const EventRow& e) {
    const Timestamp now = e.time;
    if (e.kind == event_kind::kStart) return Start(e);
    if (!run_.scheduler) {
      return FailedPrecondition("the log does not begin with a 'start' record");
    }
    if (IsDecision(e.kind)) {
      Compare(e);
      return Status::Ok();
    }
    if (e.kind == event_kind::kGpuSample) return RecordSample(e);
    if (e.kind == event_kind::kCycle) {
      // The previous cycle's decisions must all have been logged before this one.
      CheckLeftBefore(e.seq, cycles_run_ + 1);
      if (report_.divergence) return Status::Ok();
      if (run_.sharing) run_.sharing->Refresh(run_.scheduler->jobs(), usage_);
      CycleResult cycle = run_.scheduler->RunCycle(now);
      ++cycles_run_;
      ++report_.cycles;
      AddRejections(now, std::move(cycle.rejections));
      for (size_t i = tagged_; i < made_.size(); ++i) made_tags_.push_back(cycles_run_);
      tagged_ = made_.size();
      return Status::Ok();
    }
    // An input: the previous cycle's decisions must all have been logged before it.
    CheckLeftBefore(e.seq, cycles_run_ + 1);
    if (report_.divergence) return Status::Ok();
    ++report_.inputs;
    Status applied = Apply(e, now);
    // Decisions an input makes (a cancel's kill) belong to the next cycle's block.
    for (size_t i = tagged_; i < made_.size(); ++i) made_tags_.push_back(cycles_run_ + 1);
    tagged_ = made_.size();
    if (applied.code() == StatusCode::kFailedPrecondition ||
        applied.code() == StatusCode::kNotFound) {
      // The daemon logs only inputs it applied: one the replayed state refuses means the states
      // differ.
      Diverge(e.seq, "applied " + Describe(e), "refused it: " + applied.message());
      return Status::Ok();
    }
    return applied;
  }

  Status Apply(const EventRow& e, Timestamp now) {
    Scheduler& s = *run_.scheduler;
    if (e.kind == event_kind::kSubmit) {
      const JobId want(static_cast<uint32_t>(s.jobs().size()));
      if (e.job != static_cast<int64_t>(want.value())) {
        return FailedPrecondition("the next job id is " + std::to_string(want.value()));
      }
      DS_ASSIGN_OR_RETURN(JobSpec spec, SpecOf(e.job));
      spec.submit_time = now;
      return s.Submit(std::move(spec), now).status();
    }
    if (e.kind == event_kind::kNodeUp || e.kind == event_kind::kNodeDown) {
      const std::string name = e.detail.substr(0, e.detail.find(": "));
      for (int n = 0; n < run_.cluster->num_nodes(); ++n) {
        if (run_.cluster->node(NodeId(n)).name == name) {
          return s.SetNodeOnline(NodeId(n), e.kind == event_kind::kNodeUp);
        }
      }
      return NotFound("no node '" + name + "' in the logged cluster");
    }
    if (e.job < 0 || e.job >= static_cast<int64_t>(s.jobs().size())) {
      return NotFound("no job " + std::to_string(e.job));
    }
    Result<Event> event = ParseEvent(e.kind, JobId(static_cast<uint32_t>(e.job)), e.detail);
    if (!event.ok()) return event.status();
    return s.Handle(*event, now);
  }

  // A monitor's sample of a job, as the daemon recorded it (RecordGpuSamples).
  Status RecordSample(const EventRow& e) {
    if (e.job < 0 || e.job >= static_cast<int64_t>(run_.scheduler->jobs().size())) {
      return NotFound("no job " + std::to_string(e.job));
    }
    DS_ASSIGN_OR_RETURN(const LoggedGpuSample sample, ParseGpuSampleDetail(e.detail));
    const JobId job(static_cast<uint32_t>(e.job));
    usage_.Record({job, sample.memory_mib, sample.utilization}, e.time);
    samples_[e.job].push_back({e.job, e.time, sample.memory_mib, sample.utilization});
    if (run_.sharing) run_.sharing->Observed(job);
    return Status::Ok();
  }

  // The usage book as a restarted daemon reloads it from its store (Daemon::Restore): each job's
  // sample count and peak, and its newest GpuUsageBook::kHistory samples in time order.
  void ReloadUsage() {
    std::vector<GpuSampleTotals> totals;
    std::vector<GpuSampleRow> newest;
    for (auto& [job, rows] : samples_) {
      std::ranges::stable_sort(rows, {}, &GpuSampleRow::time);
      GpuSampleTotals t{job, static_cast<int64_t>(rows.size()), 0};
      for (const GpuSampleRow& row : rows)
        t.peak_memory_mib = std::max(t.peak_memory_mib, row.memory_mib);
      totals.push_back(t);
      const size_t keep = std::min(rows.size(), GpuUsageBook::kHistory);
      newest.insert(newest.end(), rows.end() - static_cast<std::ptrdiff_t>(keep), rows.end());
    }
    usage_.Restore(totals, newest);
  }

  // A new daemon run: a fresh Scheduler, with the jobs replayed so far restored into it.
  Status Start(const EventRow& e) {
    CheckNoneLeft(e.seq, "the daemon's restart");
    if (report_.divergence) return Status::Ok();
    DS_ASSIGN_OR_RETURN(StartRecord record, ParseStartDetail(e.detail));
    const PolicyProfile& profile = options_->profile ? *options_->profile : record.profile;
    DS_ASSIGN_OR_RETURN(std::unique_ptr<SchedulingPolicy> policy, BuildPolicy(profile));
    DaemonRun next;
    next.profile_json = PolicyProfileToJson(profile);
    if (run_.scheduler && run_.profile_json == next.profile_json) {
      const std::string state = run_.scheduler->policy().SaveState();
      if (!options_->profile && state != record.policy_state) {
        Diverge(e.seq, "restored the policy's state '" + Shortened(record.policy_state) + "'",
                "had '" + Shortened(state) + "'");
        return Status::Ok();
      }
      DS_RETURN_IF_ERROR(policy->RestoreState(state));
    }
    DS_ASSIGN_OR_RETURN(next.estimator, EstimatorOf(record));
    next.cluster = std::make_unique<Cluster>(std::move(record.cluster));
    next.executor = std::make_unique<RecordingExecutor>(*next.cluster, made_);
    next.scheduler = std::make_unique<Scheduler>(*next.cluster, std::move(policy), *next.executor,
                                                 *next.estimator, record.seed);
    int64_t running = 0;
    const size_t jobs = run_.scheduler ? run_.scheduler->jobs().size() : 0;
    if (!run_.scheduler && record.jobs > 0) {
      return FailedPrecondition("the log begins with a daemon start that restored " +
                                std::to_string(record.jobs) +
                                " jobs: they were submitted before the log records them");
    }
    next.scheduler->ReserveJobs(jobs);
    for (size_t i = 0; i < jobs; ++i) {
      const Job& job = run_.scheduler->jobs().at(JobId(static_cast<uint32_t>(i)));
      RestartedJob restarted =
          RestartJob(RowOf(job, *run_.cluster), job.spec, *next.cluster, *next.scheduler, e.time);
      running += restarted.keeps_gpus;
      DS_ASSIGN_OR_RETURN(const JobId id, next.scheduler->Restore(std::move(restarted.job)));
      DS_CHECK(id.value() == i) << "restore assigned id " << id << " to job " << i;
    }
    // The daemon restores the order it saved, the order its scheduler had (as this one had).
    if (run_.scheduler) next.scheduler->RestoreRunningOrder(run_.scheduler->running());
    if (record.jobs != static_cast<int64_t>(jobs) || record.running != running) {
      Diverge(
          e.seq,
          "restarted with " + std::to_string(record.jobs) + " jobs, " +
              std::to_string(record.running) + " of them running",
          "has " + std::to_string(jobs) + " jobs, " + std::to_string(running) + " of them running");
      return Status::Ok();
    }
    ReloadUsage();
    if (std::holds_alternative<SharingProfile>(profile.kind)) {
      DS_ASSIGN_OR_RETURN(SharingModels models,
                          LoadSharingModels(record.sharing_data, *next.cluster));
      next.sharing = std::make_unique<LiveSharingKnowledge>(
          *next.cluster, std::move(models),
          record.share_enforcer == ShareEnforcerName(ShareEnforcer::kMps));
      next.scheduler->set_sharing_view(&next.sharing->knowledge());
    }
    run_ = std::move(next);
    ++report_.runs;
    report_.profiles.push_back(profile.name());
    return Status::Ok();
  }

  // The run's estimator: the option's, else the predictor the run logged (fitted again to its
  // profile store, once per store), else the built-in model.
  Result<std::shared_ptr<const ThroughputModel>> EstimatorOf(const StartRecord& record) {
    if (options_->estimator) return options_->estimator;
    if (record.predictor.empty()) return builtin_;
    auto it = predictors_.find(record.predictor);
    if (it == predictors_.end()) {
      Result<PerfPredictor> fitted = FitProfileStore(record.predictor);
      if (!fitted.ok()) {
        return FailedPrecondition("the daemon's predictor was fitted to " + record.predictor +
                                  ", which cannot be read (" + fitted.status().message() +
                                  "); give --predictor");
      }
      it = predictors_
               .emplace(record.predictor,
                        std::make_shared<const PerfPredictor>(std::move(fitted).value()))
               .first;
    }
    return it->second;
  }

  // At most 200 characters of a policy state, for a message.
  static std::string Shortened(const std::string& state) {
    return state.size() <= 200 ? state : state.substr(0, 200) + "...";
  }

  // The stored job as Daemon::Restore would read its row.
  static JobRow RowOf(const Job& job, const Cluster& cluster) {
    JobRow row;
    row.id = job.id.value();
    row.user = job.spec.user;
    row.lifecycle() = job.lifecycle();
    row.submit_time = job.spec.submit_time;
    row.placement = PlacementText(cluster, job.placement);
    row.share = job.share;
    row.migrations = job.migrations;
    return row;
  }

  Result<JobSpec> SpecOf(int64_t id) const {
    if (id < 0 || id >= static_cast<int64_t>(rows_.size()) || rows_[id].id != id) {
      return InvalidArgument("job " + std::to_string(id) + " is logged but has no row");
    }
    const JobRow& row = rows_[id];
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(row.spec_json);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument("job " + std::to_string(id) +
                             ": stored spec is not JSON: " + e.what());
    }
    DS_ASSIGN_OR_RETURN(JobRequest request, ParseJobRequestJson(doc, row.user));
    return std::move(request.spec);
  }

  // The rejections of the cycle just run, by job id, after its executor decisions (as logged).
  void AddRejections(Timestamp now, std::vector<CycleResult::Rejection> rejections) {
    std::ranges::sort(rejections, {}, &CycleResult::Rejection::job);
    for (CycleResult::Rejection& r : rejections) {
      made_.push_back({now, r.job.value(), std::string(event_kind::kReject), std::move(r.reason)});
    }
  }

  void Compare(const EventRow& e) {
    const ReplayedDecision logged{e.time, e.job, e.kind, e.detail};
    if (made_.empty()) {
      Diverge(e.seq, logged.Describe(), "decided nothing more");
      return;
    }
    const ReplayedDecision& made = made_.front();
    if (!(made == logged)) {
      Diverge(e.seq, logged.Describe(), made.Describe());
      return;
    }
    Pop();
    ++report_.decisions;
  }

  void Pop() {
    made_.pop_front();
    made_tags_.pop_front();
    --tagged_;
  }

  // Replayed decisions of cycles before `cycle` that the log has not shown by row `seq`.
  void CheckLeftBefore(int64_t seq, int64_t cycle) {
    if (!made_tags_.empty() && made_tags_.front() < cycle) {
      Diverge(seq, "nothing more", made_.front().Describe());
    }
  }
  void CheckNoneLeft(int64_t seq, const std::string& where) {
    if (!made_.empty()) {
      Diverge(seq, "nothing more before " + where, made_.front().Describe());
    }
  }

  void Diverge(int64_t seq, std::string logged, std::string replayed) {
    if (report_.divergence) return;
    report_.divergence = ReplayReport::Divergence{seq, std::move(logged), std::move(replayed)};
  }

  static std::string Describe(const EventRow& e) {
    std::string text = e.kind;
    if (e.job >= 0) text += " of job " + std::to_string(e.job);
    if (!e.detail.empty()) text += " (" + e.detail + ")";
    return text + " at " + FormatTime(e.time);
  }

  Store* store_;
  const ReplayOptions* options_;
  std::vector<JobRow> rows_;
  // The built-in model, and the predictors fitted to the profile stores runs logged.
  std::shared_ptr<const ThroughputModel> builtin_ = std::make_shared<const SimpleThroughputModel>();
  std::map<std::string, std::shared_ptr<const ThroughputModel>> predictors_;
  DaemonRun run_;
  // The monitor's samples as logged: the usage book the knowledge reads, and every sample by job
  // (what a restarted daemon reloads from its store).
  GpuUsageBook usage_;
  std::map<int64_t, std::vector<GpuSampleRow>> samples_;
  // Decisions the replay made and the log has not shown yet, oldest first, each tagged with the
  // cycle whose block of the log must show it.
  std::deque<ReplayedDecision> made_;
  std::deque<int64_t> made_tags_;
  size_t tagged_ = 0;  // made_[tagged_..] have no tag yet
  int64_t cycles_run_ = 0;
  ReplayReport report_;
};

}  // namespace

std::string ReplayedDecision::Describe() const {
  std::string text = kind + " job " + std::to_string(job);
  if (kind == event_kind::kLaunch) text += " on " + detail;
  if (kind == event_kind::kReject) text += " (" + detail + ")";
  return text + " at " + FormatTime(time);
}

Result<ReplayReport> ReplayEventLog(const std::string& db_path, const ReplayOptions& options) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::OpenReadOnly(db_path));
  Replayer replayer(*store, options);
  return replayer.Replay();
}

std::string FormatReplayReport(const ReplayReport& report, const std::string& db_path) {
  std::string profiles;
  for (const std::string& p : report.profiles) {
    if (profiles.find(p) == std::string::npos) profiles += (profiles.empty() ? "" : ", ") + p;
  }
  std::string text = "replayed " + db_path + ": " + std::to_string(report.events) + " events, " +
                     std::to_string(report.runs) + " daemon run" + (report.runs == 1 ? "" : "s") +
                     " (profile " + profiles + "), " + std::to_string(report.inputs) + " inputs, " +
                     std::to_string(report.cycles) + " cycles\n";
  const std::string decisions =
      std::to_string(report.decisions) + (report.decisions == 1 ? " decision" : " decisions");
  if (!report.divergence) {
    return text + "all " + decisions +
           " identical (launches with placements, preemptions, kills, rejections)\n";
  }
  const ReplayReport::Divergence& d = *report.divergence;
  return text + decisions + " identical, then the first divergence at event " +
         std::to_string(d.seq) + ":\n  daemon logged: " + d.logged +
         "\n  replay:        " + d.replayed + "\n";
}

}  // namespace dlsched::daemon
