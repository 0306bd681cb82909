#include "daemon/core/daemon.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "daemon/core/event_log.h"
#include "daemon/core/policy_state.h"
#include "daemon/core/restore.h"
#include "daemon/exec/job_env.h"
#include "daemon/exec/job_files.h"
#include "daemon/exec/process_executor.h"
#include "dlsched/common/overloaded.h"
#include "dlsched/model/job.h"

namespace dlsched::daemon {
namespace {

// A run's logs in its job directory, as LiveJob::log_start holds their sizes.
constexpr std::array<const char*, 2> kRunLogs = {"/stdout.log", "/stderr.log"};

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

// Free bytes for unprivileged users on the file system of `path`, or nullopt.
std::optional<int64_t> FreeBytes(const std::string& path) {
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

JobId EventJob(const Event& event) {
  return std::visit([](const auto& e) { return e.job; }, event);
}

JobRow RowFor(const JobRecord& r, bool with_spec) {
  JobRow row;
  row.lifecycle() = r.lifecycle();
  row.id = r.id.value();
  row.user = r.user();
  if (with_spec) row.spec_json = JobRequestToJson(*r.request).dump();
  row.submit_time = r.submit_time();
  row.placement = r.placement_text;
  row.share = r.share;
  row.pid = r.pid;
  row.pid_start = static_cast<int64_t>(r.pid_start);
  row.exit_code = r.exit_code;
  row.migrations = r.migrations;
  row.oom_restarts = r.oom_restarts;
  row.oom_in_a_row = r.oom_in_a_row;
  return row;
}

// The stored request of `row`, or why it cannot be read back.
Result<JobRequest> StoredRequest(const JobRow& row) {
  if (!row.load_error.empty()) return Internal(row.load_error);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(row.spec_json);
  } catch (const nlohmann::json::exception& e) {
    return Internal(std::string("stored spec is not JSON: ") + e.what());
  }
  Result<JobRequest> request = ParseJobRequestJson(doc, row.user);
  if (!request.ok()) return request.status().WithPrefix("stored spec");
  request->spec.submit_time = row.submit_time;
  return request;
}

// Stands in for the request of a job that cannot be restored: it keeps the job's id and user
// and never runs. Its stored spec stays as it was (rows are rewritten without their spec).
JobRequest UnrestorableRequest(const JobRow& row) {
  JobRequest request;
  request.spec.user = row.user.empty() ? "unknown" : row.user;
  request.spec.submit_time = row.submit_time;
  request.spec.iterations = 1;
  request.spec.ref_iters_per_s = 1;
  return request;
}

}  // namespace

Duration LaunchRetryDelay(const LaunchRetry& retry, int failures) {
  Duration delay = retry.first;
  for (int i = 1; i < failures && delay < retry.max; ++i) delay *= 2;
  return std::min(delay, retry.max);
}

Timestamp SystemClock::Now() const {
  return Timestamp(
      std::chrono::duration_cast<Duration>(std::chrono::system_clock::now().time_since_epoch()));
}

Daemon::Daemon(Cluster cluster, DaemonOptions options, const Clock& clock)
    : cluster_(std::move(cluster)),
      options_(std::move(options)),
      clock_(&clock),
      inherited_env_(InheritedEnv()),
      inbox_(options_.max_inbox) {
  if (options_.predictor) {
    estimator_ = options_.predictor;
    feed_ = std::make_unique<ProgressFeed>(options_.predictor);
  } else {
    estimator_ = std::make_shared<const SimpleThroughputModel>();
  }
}

Result<std::unique_ptr<Daemon>> Daemon::Create(Cluster cluster, DaemonOptions options,
                                               const Clock& clock) {
  std::unique_ptr<Daemon> d(new Daemon(std::move(cluster), std::move(options), clock));
  std::error_code ec;
  std::filesystem::create_directories(d->options_.workdir + "/jobs", ec);
  if (ec) {
    return IoError("cannot create " + d->options_.workdir + "/jobs: " + ec.message());
  }
  // Nothing is written before the lock is held and the workdir is known to be the database's.
  DS_ASSIGN_OR_RETURN(d->lock_,
                      StateLock::Acquire(d->options_.workdir, d->options_.db_path, clock.Now()));
  // Others may pass through to their own job directories (0700 each) but not list them.
  std::filesystem::permissions(d->options_.workdir + "/jobs", std::filesystem::perms(0711), ec);
  // Private before SQLite opens it (and its -wal/-shm companions), and only once the lock is held:
  // a refused second daemon creates nothing.
  DS_RETURN_IF_ERROR(MakePrivateFile(d->options_.db_path).WithPrefix("--db"));
  if (d->options_.store_factory) {
    DS_ASSIGN_OR_RETURN(d->store_, d->options_.store_factory());
  } else {
    DS_ASSIGN_OR_RETURN(d->store_, Store::Open(d->options_.db_path, d->options_.durability));
  }
  DS_RETURN_IF_ERROR(BindWorkdir(*d->store_, d->options_.db_path, d->options_.workdir));
  DS_RETURN_IF_ERROR(d->RecordOwner());
  DS_ASSIGN_OR_RETURN(std::unique_ptr<SchedulingPolicy> policy, BuildPolicy(d->options_.profile));
  DS_RETURN_IF_ERROR(d->RestorePolicyState(*policy));
  Daemon* self = d.get();
  JobExecutor::Sink sink = [self](ExecutorReport report) {
    self->Post(ReportItem{std::move(report)});
  };
  if (d->options_.executor_factory) {
    DS_ASSIGN_OR_RETURN(d->executor_,
                        d->options_.executor_factory(std::move(sink), [self](NodeReport report) {
                          self->Post(NodeItem{std::move(report)});
                        }));
  } else {
    if (d->options_.job_exec.empty()) {
      return InvalidArgument(
          "DaemonOptions::job_exec: the local executor runs jobs through the dlsched binary "
          "(`dlsched __job-exec`); give its path");
    }
    ProcessExecutor::Options exec_options;
    exec_options.grace = d->options_.grace;
    exec_options.job_exec = d->options_.job_exec;
    exec_options.max_log_bytes = d->options_.max_log_bytes;
    exec_options.host = d->options_.host_enforcer;
    d->executor_ = std::make_unique<ProcessExecutor>(exec_options, std::move(sink));
  }
  // Slurm holds its jobs to what they ask through its own cgroup plugin (slurm_batch.h).
  d->host_enforcement_ = d->options_.executor_factory ? "executor"
                         : d->options_.host_enforcer
                             ? std::string(HostEnforcementName(d->options_.host_enforcer->mode()))
                             : "none";
  d->scheduler_ = std::make_unique<Scheduler>(d->cluster_, std::move(policy), d->port_,
                                              *d->estimator_, d->options_.seed);
  if (d->options_.sharing_view != nullptr) {
    d->scheduler_->set_sharing_view(d->options_.sharing_view);
  } else if (std::holds_alternative<SharingProfile>(d->options_.profile.kind)) {
    DS_ASSIGN_OR_RETURN(SharingModels models,
                        LoadSharingModels(d->options_.sharing_data, d->cluster_));
    d->sharing_ = std::make_unique<LiveSharingKnowledge>(
        d->cluster_, std::move(models), d->options_.share_enforcer == ShareEnforcer::kMps);
    d->scheduler_->set_sharing_view(&d->sharing_->knowledge());
  }
  d->started_at_ = clock.Now();
  DS_RETURN_IF_ERROR(d->Restore());
  d->Publish(d->started_at_);
  // The first iteration runs a cycle at once: restored jobs may fit now.
  d->wake_at_ = d->started_at_;
  return d;
}

Daemon::~Daemon() { Stop(); }

std::string Daemon::JobDir(JobId id) const {
  return options_.workdir + "/jobs/" + std::to_string(id.value());
}

Status Daemon::RestorePolicyState(SchedulingPolicy& policy) {
  DS_ASSIGN_OR_RETURN(std::string state, LoadPolicyState(*store_, options_.profile));
  if (state.empty()) return Status::Ok();
  if (const Status restored = policy.RestoreState(state); !restored.ok()) {
    std::cerr << "dlsched: " << options_.db_path << ": " << restored.message()
              << "; the policy starts afresh\n";
    return Status::Ok();
  }
  saved_policy_state_ = std::move(state);
  return Status::Ok();
}

Status Daemon::Restore() {
  DS_ASSIGN_OR_RETURN(std::vector<JobRow> rows, store_->LoadJobs());
  scheduler_->ReserveJobs(rows.size() + 1024);
  const Timestamp now = clock_->Now();
  struct Adoption {
    JobId job;
    std::optional<Duration> time_left;
  };
  std::vector<Adoption> adoptions;
  std::vector<JobId> requeued_ids;
  std::vector<JobId> failed_ids;  // could not be restored
  for (size_t i = 0; i < rows.size(); ++i) {
    JobRow& row = rows[i];
    const std::string where = options_.db_path + ": job " + std::to_string(row.id);
    if (row.id != static_cast<int64_t>(i)) {
      return Internal(where + ": job ids are not dense (expected " + std::to_string(i) + ")");
    }
    Result<JobRequest> request = StoredRequest(row);
    bool adopt = false;
    bool requeued = false;
    Result<JobId> id = Internal("not restored");
    if (request.ok()) {
      RestartedJob restarted = RestartJob(row, request->spec, cluster_, *scheduler_, now);
      adopt = restarted.keeps_gpus;
      requeued = row.state == JobState::kRunning && !adopt;
      id = scheduler_->Restore(std::move(restarted.job));
      if (!id.ok()) request = id.status();
    }
    if (!request.ok()) {
      // One unreadable row must not keep the daemon down: the job keeps its id and, unless it
      // had ended, fails with the reason (a process it ran holds GPUs nobody accounts for).
      const Status error = request.status();
      std::cerr << "dlsched: " << where
                << " cannot be restored: " << Escaped(error.ToString(), 1024) << "\n";
      request = UnrestorableRequest(row);
      Scheduler::RestoredJob r = RestoredFromRow(row, request->spec);
      // A job that had ended keeps its outcome; the rest fail (with a row the store could not
      // read, the state itself is unknown).
      if (!IsTerminal(row.state) || !row.load_error.empty()) {
        if (row.state == JobState::kRunning) {
          KillRecordedWrapper(JobDir(JobId(static_cast<uint32_t>(row.id))));
        }
        r.state = JobState::kFailed;
        r.finish_time = now;
        r.reason = "cannot be restored: " + Escaped(error.message(), 1024);
        failed_ids.push_back(JobId(static_cast<uint32_t>(row.id)));
      }
      adopt = false;
      requeued = false;
      id = scheduler_->Restore(std::move(r));
      DS_CHECK(id.ok()) << "an unrestorable job's stand-in was refused: " << id.status().ToString();
    }
    // Its process holds GPUs this cluster does not give it: stopped.
    if (requeued) KillRecordedWrapper(JobDir(*id));
    DS_CHECK(id->value() == row.id) << "restore assigned id " << *id << " to row " << row.id;
    if (!request->idempotency_key.empty()) {
      by_idempotency_key_.emplace(std::pair(request->spec.user, request->idempotency_key), *id);
    }
    LiveJob live;
    live.request = std::make_shared<const JobRequest>(std::move(request).value());
    live.exit_code = row.exit_code;
    live.oom_restarts = row.oom_restarts;
    live.oom_in_a_row = row.oom_in_a_row;
    if (adopt) {
      live.pid = static_cast<int>(row.pid);
      live.pid_start = static_cast<uint64_t>(row.pid_start);
    }
    live_jobs_.push_back(std::move(live));
    is_dirty_.push_back(false);
    if (requeued) requeued_ids.push_back(*id);
    if (adopt) {
      std::optional<Duration> left;
      if (live_jobs_.back().request->max_run_time) {
        left = *live_jobs_.back().request->max_run_time - row.run_time - (now - row.segment_start);
      }
      adoptions.push_back({*id, left});
    }
    const std::shared_ptr<const JobRecord> record = BuildRecord(*id);
    ++by_state_[static_cast<size_t>(record->state)];
    index_.Set(record);
  }
  index_.Seal();
  DS_ASSIGN_OR_RETURN(const std::optional<std::string> running_order,
                      store_->GetMeta(kRunningOrderKey));
  if (running_order) scheduler_->RestoreRunningOrder(ParseRunningOrder(*running_order));
  saved_running_order_ = RunningOrderText(scheduler_->running());
  DS_ASSIGN_OR_RETURN(const std::vector<GpuSampleTotals> gpu_totals, store_->LoadGpuSampleTotals());
  DS_ASSIGN_OR_RETURN(const std::vector<GpuSampleRow> gpu_samples,
                      store_->LoadGpuSamples(GpuUsageBook::kHistory));
  gpu_usage_.Restore(gpu_totals, gpu_samples);
  // The start record (what a replay needs to restart as this run did) and the rows of the jobs
  // requeued above commit together: a crash now cannot requeue them a second time.
  DS_RETURN_IF_ERROR(store_->Begin());
  Status logged = store_->AppendEvent(
      now, -1, event_kind::kStart,
      StartDetail(options_.profile, cluster_, options_.seed, static_cast<int64_t>(rows.size()),
                  static_cast<int64_t>(adoptions.size()), saved_policy_state_,
                  options_.predictor_source, options_.sharing_data,
                  ShareEnforcerName(options_.share_enforcer)));
  for (JobId id : requeued_ids) MarkDirty(id);
  for (JobId id : failed_ids) MarkDirty(id);
  // The stored state is this run's from now on, also when it starts afresh under another profile.
  if (logged.ok()) logged = SavePolicyState(*store_, options_.profile, saved_policy_state_);
  if (logged.ok()) logged = store_->SetMeta(kRunningOrderKey, saved_running_order_);
  if (logged.ok()) logged = FlushDirty();
  if (!logged.ok()) {
    store_->Rollback();
    return logged;
  }
  DS_RETURN_IF_ERROR(store_->Commit());
  for (const Adoption& a : adoptions) {
    executor_->Adopt(a.job, JobDir(a.job), a.time_left, scheduler_->jobs().at(a.job).placement);
    index_.Set(BuildRecord(a.job));  // now with its process
  }
  index_.Seal();
  return Status::Ok();
}

Status Daemon::Start() {
  DS_RETURN_IF_ERROR(executor_->Start());
  thread_ = std::thread([this] { Loop(); });
  if (options_.gpu_monitor) {
    sampler_ = std::make_unique<GpuSampler>(*options_.gpu_monitor, options_.monitor_period, *clock_,
                                            [this](GpuSample sample, Timestamp at) {
                                              Post(GpuSampleItem{std::move(sample), at});
                                            });
    sampler_->Start();
  }
  return Status::Ok();
}

void Daemon::Stop() {
  if (sampler_) sampler_->Stop();
  inbox_.Close();
  if (thread_.joinable()) thread_.join();
  if (executor_) executor_->Stop();
}

Status Daemon::RecordOwner() {
  DS_RETURN_IF_ERROR(store_->Begin());
  if (Status set = store_->SetMeta(kOwnerKey, lock_.holder()); !set.ok()) {
    store_->Rollback();
    return set;
  }
  return store_->Commit();
}

Result<int64_t> Daemon::KillRunningJobs(std::string reason, Duration wait) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(wait);
  std::promise<Status> reply;
  std::future<Status> done = reply.get_future();
  Post(KillRunningItem{std::move(reason), std::move(reply)});
  DS_RETURN_IF_ERROR(done.get());
  while (true) {
    const int64_t running = snapshot()->count(JobState::kRunning);
    if (running == 0 || failure() || std::chrono::steady_clock::now() >= deadline) return running;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Daemon::KillAllJobs() {
  if (executor_) executor_->KillAll();
}

std::optional<Status> Daemon::failure() const {
  std::lock_guard lock(failure_mu_);
  return failure_;
}

std::shared_ptr<const Snapshot> Daemon::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

void Daemon::Post(Item item) {
  const bool must_deliver =
      std::holds_alternative<ReportItem>(item) || std::holds_alternative<NodeItem>(item);
  if (inbox_.Post(item, must_deliver)) return;
  const bool closed = inbox_.closed();
  const Status why = closed ? Unavailable("the daemon is stopping")
                            : Status(StatusCode::kResourceExhausted,
                                     "too many requests waiting for the scheduler; retry later");
  std::visit(Overloaded{
                 [&](SubmitItem& i) { i.reply.set_value(why); },
                 [&](CancelItem& i) { i.reply.set_value(why); },
                 [&](QueueItem& i) { i.reply.set_value(why); },
                 [&](KillRunningItem& i) { i.reply.set_value(why); },
                 // Lost only while stopping: the exit file lets the next daemon learn it, and
                 // the next executor reports its nodes afresh.
                 [&](ReportItem&) {},
                 [&](NodeItem&) {},
                 // Dropped when the inbox is full: the next period brings another.
                 [&](GpuSampleItem&) {},
             },
             item);
}

std::future<SubmitResult> Daemon::Submit(JobRequest request) {
  std::promise<SubmitResult> reply;
  std::future<SubmitResult> result = reply.get_future();
  if (options_.account_for) {
    // Refused now rather than failing at every launch.
    const Result<UnixAccount> account = options_.account_for(request.spec.user);
    if (!account.ok()) {
      reply.set_value(InvalidArgument("user: '" + request.spec.user +
                                      "' has no Unix account to run jobs as (" +
                                      account.status().message() +
                                      "); the operator maps users to accounts in the tokens "
                                      "file's 4th column"));
      return result;
    }
  }
  Post(SubmitItem{std::move(request), std::move(reply)});
  return result;
}

std::future<Status> Daemon::Cancel(JobId id) {
  std::promise<Status> reply;
  std::future<Status> result = reply.get_future();
  Post(CancelItem{id, std::move(reply)});
  return result;
}

std::future<Result<QueueView>> Daemon::Queue() {
  std::promise<Result<QueueView>> reply;
  std::future<Result<QueueView>> result = reply.get_future();
  Post(QueueItem{std::move(reply)});
  return result;
}

void Daemon::Loop() {
  std::vector<Item> items;
  while (true) {
    items.clear();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    if (const Timestamp wake = NextWakeAt(); wake != kTimeNever) {
      // At least a millisecond: a policy asking for a wake-up that is already due must not
      // make this loop spin.
      const Duration wait =
          std::clamp(wake - clock_->Now(), Duration(1000), Duration(std::chrono::hours(1)));
      deadline = std::chrono::steady_clock::now() + wait;
    }
    if (!inbox_.WaitAndDrain(items, deadline)) break;
    if (!Iterate(items)) break;
  }
  // After a fail-stop: refuse whatever is still waiting.
  inbox_.Close();
  items.clear();
  while (inbox_.WaitAndDrain(items, std::chrono::steady_clock::now())) {
    FailStop(failure().value_or(Unavailable("the daemon is stopping")), items);
    items.clear();
  }
}

bool Daemon::RunOnce() {
  DS_CHECK(!thread_.joinable()) << "RunOnce while the scheduler thread runs";
  std::vector<Item> items;
  if (!inbox_.WaitAndDrain(items, std::chrono::steady_clock::now())) return false;
  if (const std::optional<Status> failed = failure()) {
    FailStop(*failed, items);  // as Loop does after a fail-stop
    return false;
  }
  return Iterate(items);
}

Timestamp Daemon::NextWakeAt() const {
  Timestamp wake = wake_at_;
  if (feed_ && !scheduler_->running().empty()) {
    // Running jobs' progress is read once a second even when nothing else happens.
    wake = std::min(wake, clock_->Now() + ProgressFeed::kReadInterval);
  }
  for (const HeldReport& held : held_reports_) {
    // A job cancelled while its failed launch is held ends at once.
    const bool cancelled =
        live_jobs_[EventJob(held.report.event).index()].stopping == StopIntent::kKill;
    wake = std::min(wake, cancelled ? clock_->Now() : held.due);
  }
  return wake;
}

void Daemon::MarkDirty(JobId id) {
  if (is_dirty_[id.index()]) return;
  is_dirty_[id.index()] = true;
  dirty_.push_back(id);
}

void Daemon::ExecutorPort::Launch(const Job& job, const Placement& placement, Timestamp) {
  daemon_->executor_->Launch(job, placement, daemon_->LaunchSpecFor(job, placement));
}

void Daemon::ExecutorPort::Preempt(const Job& job, Timestamp now) {
  daemon_->executor_->Preempt(job, now);
}

void Daemon::ExecutorPort::Kill(const Job& job, Timestamp now) {
  daemon_->executor_->Kill(job, now);
}

Result<LaunchSpec> Daemon::LaunchSpecFor(const Job& job, const Placement& placement) {
  LiveJob& live = live_jobs_[job.id.index()];
  live.exit_code.reset();  // a new run segment
  for (size_t k = 0; k < kRunLogs.size(); ++k) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(JobDir(job.id) + kRunLogs[k], ec);
    live.log_start[k] = ec ? 0 : static_cast<int64_t>(size);
  }
  const int port = FrameworkPort(live.request->framework);
  std::optional<UnixAccount> account;
  if (options_.account_for) {
    Result<UnixAccount> found = options_.account_for(live.request->spec.user);
    if (!found.ok()) {
      return found.status().WithPrefix("no Unix account for user '" + live.request->spec.user +
                                       "'");
    }
    account = std::move(found).value();
  }
  LaunchSpec spec = BuildLaunchSpec(*live.request, job, placement, cluster_, JobDir(job.id),
                                    inherited_env_, port, account);
  if (job.share != ShareMode::kExclusive) {
    AddShareEnv(GpuShareFor(job, placement), options_.share_enforcer, options_.workdir, spec.env);
  }
  return spec;
}

GpuShare Daemon::GpuShareFor(const Job& job, const Placement& placement) const {
  const NodeGpus& part = placement.parts.front();
  const int gpu = std::countr_zero(part.gpus);
  const NodeSpec& node = cluster_.node(part.node);
  const int64_t gpu_mib = node.gpus[static_cast<size_t>(gpu)].memory_mib;
  GpuShare share{node.name, gpu, gpu_mib, 100};
  const auto* profile = std::get_if<SharingProfile>(&options_.profile.kind);
  if (profile != nullptr) {
    share.active_thread_percentage = 100 / std::max(1, profile->config.max_jobs_per_gpu);
  }
  // A memory request is the limit the OOM watchdog holds the job to: it is the bound.
  if (const std::optional<int64_t> requested = GpuMemoryLimitMib(job)) {
    share.memory_limit_mib = *requested;
    return share;
  }
  if (profile == nullptr || !sharing_) return share;  // no knowledge: the whole GPU
  const SharingPolicyConfig& config = profile->config;
  const SharingKnowledge& view = sharing_->knowledge();
  const int64_t own = view.MemoryDemandMib(job.id, config.memory_percentile);
  if (config.mode == ShareMode::kTimeSliced || gpu_mib <= 0) {
    share.memory_limit_mib = std::max(own, gpu_mib);
    return share;
  }
  int64_t others = 0;
  for (JobId id : scheduler_->running()) {
    const Job& other = scheduler_->jobs().at(id);
    if (id == job.id || other.share == ShareMode::kExclusive || other.placement != placement) {
      continue;
    }
    others += view.MemoryDemandMib(id, config.memory_percentile);
  }
  share.memory_limit_mib = std::max(own, gpu_mib - others);
  return share;
}

Status Daemon::LogEvent(Timestamp now, int64_t job, std::string_view kind,
                        std::string_view detail) {
  DS_RETURN_IF_ERROR(store_->AppendEvent(now, job, kind, detail));
  const JobId id(static_cast<uint32_t>(job));
  LiveJob& live = live_jobs_[id.index()];
  auto timeline = std::make_shared<std::vector<JobTimelineEvent>>();
  if (live.timeline) {
    const size_t keep = std::min(live.timeline->size(), JobRecord::kTimeline - 1);
    timeline->assign(live.timeline->end() - static_cast<std::ptrdiff_t>(keep),
                     live.timeline->end());
  }
  const bool migration = kind == event_kind::kPreempt && scheduler_->jobs().at(id).migrating;
  timeline->push_back({now, std::string(kind), migration ? "migration" : std::string(detail)});
  live.timeline = std::move(timeline);
  return Status::Ok();
}

std::shared_ptr<const JobRecord> Daemon::BuildRecord(JobId id) const {
  const Job& job = scheduler_->jobs().at(id);
  const LiveJob& live = live_jobs_[id.index()];
  auto r = std::make_shared<JobRecord>();
  r->lifecycle() = job.lifecycle();
  r->id = id;
  r->request = live.request;
  r->placement = job.placement;
  r->placement_text = PlacementText(cluster_, job.placement);
  r->share = job.share;
  r->exit_code = live.exit_code;
  r->oom_restarts = live.oom_restarts;
  r->oom_in_a_row = live.oom_in_a_row;
  r->migrations = job.migrations;
  r->timeline = live.timeline;
  if (job.state == JobState::kRunning) {
    r->stopping = StopIntentName(live.stopping);
    r->pid = live.pid;
    r->pid_start = live.pid_start;
    if (const auto info = executor_->Info(id)) {
      r->pid = info->pid;
      r->pid_start = info->start_ticks;
      if (r->stopping.empty()) r->stopping = info->stopping;  // "timeout" is the executor's own
    }
  }
  return r;
}

Status Daemon::Apply(Item& item, Timestamp now) {
  return std::visit(
      Overloaded{
          [&](SubmitItem& i) -> Status {
            const std::string& key = i.request.idempotency_key;
            if (!key.empty()) {
              const auto it = by_idempotency_key_.find({i.request.spec.user, key});
              if (it != by_idempotency_key_.end()) {
                // A retry (its first reply was lost, or came too late): the job it made.
                const JobId existing = it->second;
                if (JobRequestToJson(i.request) !=
                    JobRequestToJson(*live_jobs_[existing.index()].request)) {
                  i.reply.set_value(
                      Status(StatusCode::kAlreadyExists, "Idempotency-Key: already used for job " +
                                                             std::to_string(existing.value()) +
                                                             ", which asked for something else"));
                  return Status::Ok();
                }
                submit_replies_.push_back({existing, true, std::move(i.reply)});
                return Status::Ok();
              }
            }
            const JobId id(static_cast<uint32_t>(scheduler_->jobs().size()));
            i.request.spec.submit_time = now;
            Result<JobId> got = scheduler_->Submit(i.request.spec, now);
            // The HTTP layer validated the request; a refusal here is a bug, not user input.
            DS_CHECK(got.ok() && *got == id) << got.status().ToString();
            // Left by a launch whose decision never committed (or by a database that was
            // replaced): another job's files, which this one must not read.
            DS_ASSIGN_OR_RETURN(const std::string moved,
                                SetAsideJobDir(options_.workdir, JobDir(id), now));
            if (!moved.empty()) {
              std::cerr << "dlsched: " << JobDir(id) << " existed before job " << id.value()
                        << " was submitted: moved to " << moved << " unread\n";
            }
            if (!key.empty()) by_idempotency_key_.emplace(std::pair(i.request.spec.user, key), id);
            LiveJob live;
            live.request = std::make_shared<const JobRequest>(std::move(i.request));
            live_jobs_.push_back(std::move(live));
            is_dirty_.push_back(false);
            MarkDirty(id);
            ++metrics_.submissions;
            submit_replies_.push_back({id, false, std::move(i.reply)});
            return LogEvent(now, id.value(), event_kind::kSubmit, "");
          },
          [&](CancelItem& i) -> Status {
            Status status = scheduler_->jobs().contains(i.job)
                                ? scheduler_->Handle(JobCancelRequested{i.job}, now)
                                : NotFound("no job " + std::to_string(i.job.value()));
            if (status.ok()) MarkDirty(i.job);
            cancel_replies_.emplace_back(status, std::move(i.reply));
            if (!status.ok()) return Status::Ok();
            return LogEvent(now, i.job.value(), event_kind::kCancel, "");
          },
          [&](QueueItem& i) -> Status {
            queue_replies_.push_back(std::move(i.reply));
            return Status::Ok();
          },
          [&](ReportItem& i) -> Status {
            Event& event = i.report.event;
            const JobId id = EventJob(event);
            if (!scheduler_->jobs().contains(id)) return Status::Ok();
            LiveJob& live = live_jobs_[id.index()];
            const LaunchRetry& retry = options_.launch_retry;
            MarkOutOfMemory(i.report, id);
            if (const auto* failed = std::get_if<JobLaunchFailed>(&event);
                failed && !failed->out_of_memory) {
              if (live.stopping == StopIntent::kKill) {
                // Cancelled while it could not start: it ends as cancelled, not requeued.
                event = JobFinished{id, JobState::kKilled, "cancelled"};
              } else if (!i.held && live.launch_failures + 1 < retry.max_failures) {
                // Held back: the scheduler requeues it (and may launch it again) only after
                // the back-off.
                const Duration delay = LaunchRetryDelay(retry, live.launch_failures + 1);
                held_reports_.push_back({now + delay, std::move(i.report)});
                return Status::Ok();
              } else if (++live.launch_failures >= retry.max_failures) {
                event = JobFinished{id, JobState::kFailed,
                                    "could not be started " + std::to_string(retry.max_failures) +
                                        " times; last: " + failed->reason};
              }
            } else if (!failed) {
              live.launch_failures = 0;
            }
            ++metrics_.events;
            if (auto* suspended = std::get_if<JobSuspended>(&event)) {
              // Saved progress, in the scheduler's units (seconds of estimated work).
              if (const std::optional<Progress> p = ReadProgress(JobDir(id))) {
                if (const std::optional<double> done = SpecIterationsDone(*p, *live.request)) {
                  suspended->iterations_done = *done;
                }
              }
            }
            if (auto* finished = std::get_if<JobFinished>(&event);
                finished && live.killed_at_shutdown && finished->final_state == JobState::kKilled) {
              finished->detail = draining_.value_or(finished->detail);
            }
            if (const auto* finished = std::get_if<JobFinished>(&event);
                finished && finished->detail.starts_with(kHostMemoryKillReason)) {
              ++metrics_.host_memory_kills;
            }
            const Status handled = scheduler_->Handle(event, now);
            if (!handled.ok()) {
              // Stale (the job already ended another way): logged, otherwise ignored.
              std::cerr << "dlsched: ignoring executor report: " << handled.ToString() << "\n";
              return Status::Ok();
            }
            if (i.report.exit_code) live.exit_code = i.report.exit_code;
            if (feed_ && IsTerminal(scheduler_->jobs().at(id).state)) feed_->Forget(id);
            live.stopping = StopIntent::kNone;
            live.pid = 0;
            live.pid_start = 0;
            MarkDirty(id);
            return LogEvent(now, id.value(), EventKind(event), EventDetail(event));
          },
          [&](KillRunningItem& i) -> Status {
            draining_ = std::move(i.reason);
            cancel_replies_.emplace_back(Status::Ok(), std::move(i.reply));
            const std::vector<JobId> running = scheduler_->running();
            for (JobId id : running) {
              LiveJob& live = live_jobs_[id.index()];
              if (live.stopping == StopIntent::kKill) continue;  // a user's cancel, under way
              DS_RETURN_IF_ERROR(scheduler_->Handle(JobCancelRequested{id}, now));
              live.killed_at_shutdown = true;
              MarkDirty(id);
              DS_RETURN_IF_ERROR(LogEvent(now, id.value(), event_kind::kCancel, ""));
            }
            return Status::Ok();
          },
          [&](NodeItem& i) -> Status {
            // Taken out of the pool before the executor reports the jobs lost with it, so they
            // are not placed there again.
            const NodeReport& r = i.report;
            DS_RETURN_IF_ERROR(scheduler_->SetNodeOnline(r.node, r.available));
            ++metrics_.events;
            return store_->AppendEvent(now, -1,
                                       r.available ? event_kind::kNodeUp : event_kind::kNodeDown,
                                       cluster_.node(r.node).name + ": " + r.reason);
          },
          // RecordGpuSamples takes every sample out of the batch before its inputs are applied.
          [&](GpuSampleItem&) -> Status { return Status::Ok(); },
      },
      item);
}

Status Daemon::FlushDirty() {
  for (JobId id : dirty_) {
    is_dirty_[id.index()] = false;
    std::shared_ptr<const JobRecord> record = BuildRecord(id);
    const JobRecord* old = index_.Find(id);
    if (old == nullptr) {
      DS_RETURN_IF_ERROR(store_->InsertJob(RowFor(*record, /*with_spec=*/true)));
    } else {
      DS_RETURN_IF_ERROR(store_->UpdateJob(RowFor(*record, /*with_spec=*/false)));
      --by_state_[static_cast<size_t>(old->state)];
    }
    ++by_state_[static_cast<size_t>(record->state)];
    index_.Set(std::move(record));
  }
  dirty_.clear();
  return Status::Ok();
}

void Daemon::ReadRunningProgress(Timestamp now) {
  if (!feed_) return;
  auto next = std::make_shared<std::map<JobId, JobPrediction>>();
  bool read = false;
  for (JobId id : scheduler_->running()) {
    if (!feed_->Due(id, now)) {
      if (const auto it = predictions_->find(id); it != predictions_->end()) next->insert(*it);
      continue;
    }
    read = true;
    const Job& job = scheduler_->jobs().at(id);
    // A gang mixing GPU types has no shape; the predictor's ETA does not cover it.
    const std::optional<GpuShape> shape = ShapeOf(cluster_, job.placement);
    if (!shape) continue;
    const std::optional<JobPrediction> prediction =
        feed_->Read(id, *live_jobs_[id.index()].request, *shape, ReadProgress(JobDir(id)),
                    job.iterations_done, now - job.segment_start, now);
    if (prediction) next->emplace(id, *prediction);
  }
  if (read || next->size() != predictions_->size()) predictions_ = std::move(next);
}

std::shared_ptr<const NodeHoldings> Daemon::Holdings() {
  // The key: the offline nodes, every running job and service with its placement, and the free
  // GPUs of the services' nodes (a free GPU of a service's placement is lent).
  const ClusterState& state = scheduler_->state();
  std::vector<uint64_t> key;
  key.reserve(holdings_key_.size());
  for (int n = 0; n < cluster_.num_nodes(); ++n) {
    if (state.offline(NodeId(n))) key.push_back(static_cast<uint64_t>(n));
  }
  const auto add_job = [&](JobId id, bool service) {
    key.push_back(uint64_t{id.value()} << 1 | uint64_t{service});
    for (const NodeGpus& part : scheduler_->jobs().at(id).placement.parts) {
      key.insert(key.end(),
                 {static_cast<uint64_t>(part.node.index()), uint64_t{part.gpus},
                  static_cast<uint64_t>(part.cpus), static_cast<uint64_t>(part.memory_mib)});
      if (service) key.push_back(uint64_t{state.free_mask(part.node)});
    }
  };
  key.push_back(~uint64_t{0});
  for (JobId id : scheduler_->running()) add_job(id, false);
  key.push_back(~uint64_t{0});
  for (JobId id : scheduler_->running_services()) add_job(id, true);
  if (holdings_ && key == holdings_key_) return holdings_;
  holdings_key_ = std::move(key);
  auto h = std::make_shared<NodeHoldings>();
  h->gpus.resize(cluster_.num_nodes());
  h->offline.resize(cluster_.num_nodes());
  for (int n = 0; n < cluster_.num_nodes(); ++n) {
    h->gpus[n].resize(cluster_.node(NodeId(n)).gpus.size());
    h->offline[n] = scheduler_->state().offline(NodeId(n));
  }
  h->host_held.resize(cluster_.num_nodes());
  for (JobId id : scheduler_->running()) {
    for (const NodeGpus& part : scheduler_->jobs().at(id).placement.parts) {
      h->host_held[part.node.index()].cpus += part.cpus;
      h->host_held[part.node.index()].memory_mib += part.memory_mib;
      for (size_t g = 0; g < h->gpus[part.node.index()].size(); ++g) {
        if ((part.gpus >> g) & 1) h->gpus[part.node.index()][g].holders.push_back(id);
      }
    }
  }
  // A service holds the GPUs of its placement that it has not lent (lent ones are free, or held
  // by their borrower above).
  for (JobId id : scheduler_->running_services()) {
    for (const NodeGpus& part : scheduler_->jobs().at(id).placement.parts) {
      const GpuMask free = scheduler_->state().free_mask(part.node);
      for (size_t g = 0; g < h->gpus[part.node.index()].size(); ++g) {
        if (!((part.gpus >> g) & 1)) continue;
        GpuHolding& gpu = h->gpus[part.node.index()][g];
        if (((free >> g) & 1) || !gpu.holders.empty()) {
          gpu.lent_by = id;
        } else {
          gpu.holders.push_back(id);
        }
      }
    }
  }
  for (std::vector<GpuHolding>& node : h->gpus) {
    for (GpuHolding& gpu : node) std::sort(gpu.holders.begin(), gpu.holders.end());
  }
  holdings_ = std::move(h);
  return holdings_;
}

void Daemon::Publish(Timestamp now) {
  index_.Seal();
  auto s = std::make_shared<Snapshot>();
  s->version = ++version_;
  s->published_at = now;
  s->started_at = started_at_;
  s->cluster = &cluster_;
  s->profile = options_.profile.name();
  s->jobs = index_;
  s->nodes = Holdings();
  s->host_enforcement = host_enforcement_;
  s->jobs_by_state = by_state_;
  s->gpus_allocated = scheduler_->state().allocated_total();
  s->inbox_length = inbox_.size();
  s->metrics = metrics_;
  s->predictions = predictions_;
  s->gpu_usage = gpu_usage_.Published();
  s->gpu_devices = gpu_devices_;
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(s);
}

const std::map<std::string, PipelineConfig::Quota, std::less<>>& Daemon::tenant_quotas() const {
  static const std::map<std::string, PipelineConfig::Quota, std::less<>> kNone;
  const PipelineConfig* pipeline = std::get_if<PipelineConfig>(&options_.profile.kind);
  if (const auto* sharing = std::get_if<SharingProfile>(&options_.profile.kind)) {
    pipeline = std::get_if<PipelineConfig>(&sharing->base);
  }
  return pipeline ? pipeline->quotas : kNone;
}

Result<QueueView> Daemon::ComputeQueue(Timestamp now) {
  // Reasons depend on time too (a protected victim's minimum run time runs out), so a cached
  // view is reused for one second at most.
  if (queue_cache_ && now - queue_cache_->at < std::chrono::seconds(1)) return *queue_cache_;
  QueueView view;
  view.at = now;
  view.order = scheduler_->queue().InOrder();
  for (PendingReason& p : scheduler_->ExplainPending(now)) {
    const JobId id = p.job;
    view.reasons[id] = std::move(p);
  }
  if (!low_on_space_.empty()) {
    // No cycle runs while launches are paused, so the jobs submitted since are not admitted yet:
    // they wait behind the queue, in submission order, for the same reason.
    const std::vector<JobId>& unadmitted = scheduler_->pending_jobs();
    view.order.insert(view.order.end(), unadmitted.begin(), unadmitted.end());
    for (JobId id : view.order) view.reasons[id] = {id, low_on_space_, PendingCause::kOther};
  }
  queue_cache_ = view;
  return view;
}

void Daemon::FailStop(Status why, std::vector<Item>& items) {
  {
    std::lock_guard lock(failure_mu_);
    if (!failure_) {
      failure_ = why;
      std::cerr << "dlsched: stopping: " << why.ToString() << "\n";
    }
  }
  inbox_.Close();
  const Status refusal = Unavailable("the daemon stopped: " + why.message());
  for (SubmitReply& r : submit_replies_) r.reply.set_value(refusal);
  for (auto& [status, reply] : cancel_replies_) reply.set_value(refusal);
  for (auto& reply : queue_replies_) reply.set_value(refusal);
  submit_replies_.clear();
  cancel_replies_.clear();
  queue_replies_.clear();
  for (Item& item : items) {
    std::visit(Overloaded{
                   [&](SubmitItem& i) { i.reply.set_value(refusal); },
                   [&](CancelItem& i) { i.reply.set_value(refusal); },
                   [&](QueueItem& i) { i.reply.set_value(refusal); },
                   [&](KillRunningItem& i) { i.reply.set_value(refusal); },
                   [&](ReportItem&) {},
                   [&](NodeItem&) {},
                   [&](GpuSampleItem&) {},
               },
               item);
  }
  items.clear();
}

bool Daemon::LowOnSpace() {
  if (options_.min_free_bytes <= 0) return false;
  const Timestamp now = clock_->Now();
  if (space_checked_ && now - *space_checked_ < std::chrono::seconds(1)) {
    return !low_on_space_.empty();
  }
  space_checked_ = now;
  std::string why;
  const std::string store_dir = std::filesystem::path(options_.db_path).parent_path().string();
  for (const std::string& path :
       {store_dir.empty() ? std::string(".") : store_dir, options_.workdir}) {
    const std::optional<int64_t> free =
        options_.free_bytes ? options_.free_bytes(path) : FreeBytes(path);
    if (free && *free < options_.min_free_bytes) {
      why = "launches paused: the file system of " + path + " has " + std::to_string(*free >> 20) +
            " MiB free, less than the " + std::to_string(options_.min_free_bytes >> 20) +
            " MiB the daemon keeps for its store and job logs (serve --min-free-mib)";
      break;
    }
  }
  if (why != low_on_space_) {
    std::cerr << "dlsched: " << (why.empty() ? "disk space is back; launches resume" : why)
              << std::endl;
    low_on_space_ = std::move(why);
  }
  return !low_on_space_.empty();
}

bool Daemon::Iterate(std::vector<Item>& items) {
  const Timestamp now = clock_->Now();
  ReleaseHeldReports(items);
  if (Status recorded = RecordGpuSamples(items); !recorded.ok()) {
    FailStop(recorded, items);
    return false;
  }
  const bool act = now >= wake_at_ || std::ranges::any_of(items, [](const Item& item) {
                     return !std::holds_alternative<QueueItem>(item);
                   });
  Status status = Status::Ok();
  if (act) {
    status = JournalInputs(items, now);
    if (status.ok()) status = CommitDecisions(Decide(now), now);
  }
  Result<bool> rows_open = false;
  if (status.ok()) rows_open = CarryOut();
  if (!rows_open.ok()) status = rows_open.status();
  if (!status.ok()) {
    FailStop(status, items);
    return false;
  }
  ReadRunningProgress(now);
  Publish(now);
  Reply(items, now);
  if (*rows_open) {
    if (status = store_->Commit(); !status.ok()) {
      FailStop(status, items);
      return false;
    }
    ++metrics_.store_commits;
  }
  return true;
}

Status Daemon::RecordGpuSamples(std::vector<Item>& items) {
  std::vector<GpuSampleItem> samples;
  for (auto it = items.begin(); it != items.end();) {
    if (auto* sample = std::get_if<GpuSampleItem>(&*it)) {
      samples.push_back(std::move(*sample));
      it = items.erase(it);
    } else {
      ++it;
    }
  }
  if (samples.empty()) return Status::Ok();
  // Each running job's process leads its process group (ProcessExecutor, and adoption).
  std::map<int, JobId> job_of_group;
  for (JobId id : scheduler_->running()) {
    const std::optional<JobExecutor::ProcessInfo> info = executor_->Info(id);
    const int pid = info ? info->pid : live_jobs_[id.index()].pid;
    if (pid > 0) job_of_group.emplace(pid, id);
  }
  DS_RETURN_IF_ERROR(store_->Begin(/*durable=*/false));
  Status status = Status::Ok();
  // The watchdog may stop the jobs it finds over their limit (and not stopping already).
  const auto limit_of = [&](JobId id) -> std::optional<int64_t> {
    const LiveJob& live = live_jobs_[id.index()];
    const Job& job = scheduler_->jobs().at(id);
    if (job.state != JobState::kRunning || job.preempt_requested || !live.oom_stop.empty() ||
        live.stopping != StopIntent::kNone) {
      return std::nullopt;
    }
    return GpuMemoryLimitMib(job);
  };
  bool stopped = false;
  for (const GpuSampleItem& item : samples) {
    const std::vector<JobGpuObservation> observed =
        AttributeGpuSample(item.sample, job_of_group, ProcessGroupOf);
    for (const JobGpuObservation& o : observed) {
      gpu_usage_.Record(o, item.at);
      if (sharing_) sharing_->Observed(o.job);
      if (status.ok()) {
        status = store_->AppendGpuSample(
            {static_cast<int64_t>(o.job.value()), item.at, o.memory_mib, o.utilization});
      }
      // What the sharing knowledge is built from, for the replay (event_log.h).
      if (status.ok()) {
        status = store_->AppendEvent(item.at, o.job.value(), event_kind::kGpuSample,
                                     GpuSampleDetail(o.memory_mib, o.utilization));
      }
    }
    for (const OomVerdict& verdict : oom_watchdog_.Check(observed, limit_of)) {
      StopOutOfMemory(verdict, item.at);
      stopped = true;
    }
  }
  if (stopped && status.ok()) status = FlushDirty();  // their records show the stop
  gpu_devices_ = std::make_shared<const GpuSample>(std::move(samples.back().sample));
  if (status.ok()) status = store_->Commit();
  if (!status.ok()) store_->Rollback();
  return status;
}

void Daemon::StopOutOfMemory(const OomVerdict& verdict, Timestamp now) {
  std::cerr << "dlsched: job " << verdict.job.value() << ": " << verdict.reason << "; stopping it"
            << std::endl;
  live_jobs_[verdict.job.index()].oom_stop = verdict.reason;
  // Nothing else is queued at the start of an iteration (CarryOut flushed the last one's
  // decisions), so this flushes only the stop. It is no scheduler decision: it is not logged as
  // one (the replay would expect its policy to make it); the run's outcome is logged.
  DS_CHECK(executor_->Queued().empty()) << "an OOM stop would flush uncommitted decisions";
  executor_->Preempt(scheduler_->jobs().at(verdict.job), now);
  executor_->Flush();
  MarkDirty(verdict.job);
}

void Daemon::MarkOutOfMemory(ExecutorReport& report, JobId id) {
  LiveJob& live = live_jobs_[id.index()];
  Event& event = report.event;
  std::string reason;
  if (std::holds_alternative<JobSuspended>(event) && !live.oom_stop.empty()) {
    reason = live.oom_stop;
  } else if (const auto* finished = std::get_if<JobFinished>(&event);
             finished && finished->final_state == JobState::kFailed && report.exit_code &&
             *report.exit_code != 0 && live.stopping == StopIntent::kNone &&
             finished->detail.starts_with("exit code")) {
    // The log of this run only: from where it began, at most its last kOomLogTailBytes.
    std::string tail;
    for (size_t k = 0; k < kRunLogs.size(); ++k) {
      const std::string path = JobDir(id) + kRunLogs[k];
      std::error_code ec;
      const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
      if (ec) continue;
      const int64_t begin = live.log_start[k] <= size ? live.log_start[k] : 0;
      const int64_t from = std::max(begin, size - kOomLogTailBytes);
      if (Result<std::string> text = ReadLogRange(path, from, size - from); text.ok()) {
        tail += *text;
      }
    }
    if (const std::optional<std::string_view> pattern = FindCudaOutOfMemory(tail)) {
      reason = std::string(kOutOfMemoryReason) + "it exited with " + finished->detail +
               ", its log reporting \"" + std::string(*pattern) + "\"";
    }
  }
  live.oom_stop.clear();
  if (reason.empty()) {
    if (!std::holds_alternative<JobLaunchFailed>(event)) live.oom_in_a_row = 0;
    return;
  }
  if (++live.oom_in_a_row >= options_.oom.max_restarts) {
    event = JobFinished{id, JobState::kFailed,
                        reason + "; out of GPU memory " + std::to_string(live.oom_in_a_row) +
                            " times in a row, not restarted"};
    return;
  }
  ++live.oom_restarts;
  ++metrics_.oom_restarts;
  event = JobLaunchFailed{id, std::move(reason), /*never_started=*/false, /*out_of_memory=*/true};
}

void Daemon::ReleaseHeldReports(std::vector<Item>& items) {
  const Timestamp now = clock_->Now();
  for (auto it = held_reports_.begin(); it != held_reports_.end();) {
    const JobId job = EventJob(it->report.event);
    if (it->due > now && live_jobs_[job.index()].stopping != StopIntent::kKill) {
      ++it;
      continue;
    }
    items.push_back(ReportItem{std::move(it->report), /*held=*/true});
    it = held_reports_.erase(it);
  }
}

Status Daemon::JournalInputs(std::vector<Item>& items, Timestamp now) {
  Status status = store_->Begin();
  size_t applied = 0;
  for (; status.ok() && applied < items.size(); ++applied) status = Apply(items[applied], now);
  if (!status.ok()) store_->Rollback();
  // Items up to `applied` moved their promises into the reply lists.
  items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(applied));
  return status;
}

std::optional<CycleResult> Daemon::Decide(Timestamp now) {
  // Short of disk space: no cycle (so no launch, and no cycle record) until there is room.
  const bool paused = LowOnSpace();
  queue_cache_.reset();
  // Draining (KillRunningJobs): no cycle, so nothing starts while the jobs are killed.
  if (paused || draining_) {
    wake_at_ = paused ? now + std::chrono::seconds(1) : kTimeNever;
    return std::nullopt;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (sharing_) sharing_->Refresh(scheduler_->jobs(), gpu_usage_);
  CycleResult cycle = scheduler_->RunCycle(now);
  metrics_.RecordCycle(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  wake_at_ = cycle.wake_at;
  metrics_.launches += cycle.launched();
  metrics_.preemptions += cycle.preempted();
  for (const CycleResult::Preemption& p : cycle.preemptions) metrics_.migrations += p.migration;
  return cycle;
}

Status Daemon::CommitDecisions(std::optional<CycleResult> cycle, Timestamp now) {
  // The event log (event_log.h): every cycle, then its decisions in the order the executor got
  // them, then its rejections by job id; a replay checks it decides the same.
  Status status = Status::Ok();
  if (cycle) {
    for (JobId id : cycle->admissions) MarkDirty(id);
    for (const CycleResult::Rejection& r : cycle->rejections) MarkDirty(r.job);
    std::ranges::sort(cycle->rejections, {}, &CycleResult::Rejection::job);
    status = store_->AppendEvent(now, -1, event_kind::kCycle,
                                 "launched=" + std::to_string(cycle->launched()) +
                                     " preempted=" + std::to_string(cycle->preempted()) +
                                     " rejected=" + std::to_string(cycle->rejected()));
  }
  for (const JobExecutor::QueuedAction& a : executor_->Queued()) {
    if (!status.ok()) break;
    MarkDirty(a.job);
    if (a.kind != event_kind::kLaunch) {
      live_jobs_[a.job.index()].stopping =
          a.kind == event_kind::kKill ? StopIntent::kKill : StopIntent::kPreempt;
    }
    const std::string detail = a.kind == event_kind::kLaunch
                                   ? PlacementText(cluster_, scheduler_->jobs().at(a.job).placement)
                                   : std::string();
    status = LogEvent(now, a.job.value(), a.kind, detail);
  }
  if (cycle) {
    for (const CycleResult::Rejection& r : cycle->rejections) {
      if (!status.ok()) break;
      status = LogEvent(now, r.job.value(), event_kind::kReject, r.reason);
    }
  }
  // The policy's state moves only in cycles; it commits with the cycle's decisions.
  std::string policy_state = cycle ? scheduler_->policy().SaveState() : saved_policy_state_;
  const bool state_changed = policy_state != saved_policy_state_;
  if (status.ok() && state_changed) {
    status = SavePolicyState(*store_, options_.profile, policy_state);
  }
  std::string running_order = RunningOrderText(scheduler_->running());
  const bool order_changed = running_order != saved_running_order_;
  if (status.ok() && order_changed) status = store_->SetMeta(kRunningOrderKey, running_order);
  if (status.ok()) status = FlushDirty();
  if (status.ok()) status = store_->Commit();
  if (!status.ok()) {
    store_->Rollback();
    return status;
  }
  if (state_changed) saved_policy_state_ = std::move(policy_state);
  if (order_changed) saved_running_order_ = std::move(running_order);
  ++metrics_.store_commits;
  return Status::Ok();
}

Result<bool> Daemon::CarryOut() {
  const std::vector<JobExecutor::QueuedAction> actions = executor_->Queued();
  if (actions.empty()) return false;
  executor_->Flush();
  for (const JobExecutor::QueuedAction& a : actions) {
    MarkDirty(a.job);
    const std::optional<JobExecutor::ProcessInfo> info = executor_->Info(a.job);
    if (a.kind == event_kind::kLaunch && info) {
      live_jobs_[a.job.index()].pid = info->pid;
      live_jobs_[a.job.index()].pid_start = info->start_ticks;
    }
  }
  Status status = store_->Begin(/*durable=*/false);
  if (status.ok()) status = FlushDirty();
  if (!status.ok()) {
    store_->Rollback();
    return status;
  }
  return true;
}

void Daemon::Reply(std::vector<Item>& items, Timestamp now) {
  for (SubmitReply& r : submit_replies_) {
    r.reply.set_value(SubmittedJob{index_.Share(r.job), r.existing});
  }
  for (auto& [status, reply] : cancel_replies_) reply.set_value(status);
  // Left only when no transaction ran, and then they are all queue queries.
  for (Item& item : items) {
    if (auto* q = std::get_if<QueueItem>(&item)) queue_replies_.push_back(std::move(q->reply));
  }
  items.clear();
  if (!queue_replies_.empty()) {
    const Result<QueueView> view = ComputeQueue(now);
    for (auto& reply : queue_replies_) reply.set_value(view);
  }
  submit_replies_.clear();
  cancel_replies_.clear();
  queue_replies_.clear();
}

}  // namespace dlsched::daemon
