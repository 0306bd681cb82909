#include "daemon/exec/slurm_executor.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "daemon/exec/job_files.h"
#include "daemon/exec/slurm_batch.h"

extern char** environ;

namespace dlsched::daemon {
namespace {

namespace fs = std::filesystem;

std::optional<int> ReadExitFile(const std::string& job_dir) {
  const std::string text = ReadSmallFile(job_dir + "/exit");
  int code = 0;
  std::istringstream in(text);
  if (!(in >> code) || code < 0 || code > 255) return std::nullopt;
  return code;
}

void Log(const std::string& message) { std::cerr << "dlsched: slurm: " << message << std::endl; }

// The daemon's own environment with `extra` ("NAME=value") set over it.
std::vector<std::string> DaemonEnvironment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    env[entry.substr(0, entry.find('='))] = entry;
  }
  for (const std::string& entry : extra) env[entry.substr(0, entry.find('='))] = entry;
  std::vector<std::string> out;
  for (auto& [name, entry] : env) out.push_back(std::move(entry));
  return out;
}

}  // namespace

bool SlurmExecutor::Listed::ended() const {
  return std::all_of(states.begin(), states.end(),
                     [](const std::string& s) { return s.empty() || IsTerminalJobState(s); });
}

bool SlurmExecutor::Listed::running() const {
  return std::any_of(states.begin(), states.end(), [](const std::string& s) {
    return s == "RUNNING" || s == "COMPLETING" || s == "SUSPENDED" || s == "STOPPED" ||
           s == "SIGNALING" || s == "STAGE_OUT";
  });
}

std::string SlurmExecutor::Listed::final_state() const {
  // A component that lost its node decides for the whole job.
  for (const std::string& s : states) {
    if (s == "NODE_FAIL" || s == "BOOT_FAIL") return s;
  }
  return states.empty() ? std::string() : states.front();
}

SlurmExecutor::SlurmExecutor(Options options, std::vector<SlurmNodeSite> sites, Sink sink,
                             NodeSink node_sink)
    : options_(std::move(options)),
      sites_(std::move(sites)),
      sink_(std::move(sink)),
      node_sink_(std::move(node_sink)) {
  // As discovery saw the nodes: a node out of service then gets no job before the first poll.
  for (const SlurmNodeSite& site : sites_) {
    health_.push_back(ClassifyNodeState(site.state));
    health_why_.push_back(site.state + (site.reason.empty() ? "" : ": " + site.reason));
  }
}

SlurmExecutor::~SlurmExecutor() { Stop(); }

Status SlurmExecutor::Start() {
  for (size_t n = 0; n < sites_.size(); ++n) {
    if (health_[n] == NodeHealth::kUp) continue;
    Log("node " + sites_[n].name + " is out (" + health_why_[n] + ")");
    node_sink_({NodeId(static_cast<uint32_t>(n)), false, health_why_[n]});
  }
  worker_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void SlurmExecutor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

CommandOptions SlurmExecutor::Command() const {
  CommandOptions c;
  c.timeout = options_.command_timeout;
  return c;
}

void SlurmExecutor::Launch(const Job& job, const Placement& placement, Result<LaunchSpec> spec) {
  if (!spec.ok()) {
    queued_.push_back({Action::kLaunch, job.id, std::nullopt, placement});
    sink_({JobLaunchFailed{job.id, spec.status().message()}, std::nullopt});
    return;
  }
  if (job.share != ShareMode::kExclusive && !options_.shards) {
    queued_.push_back({Action::kLaunch, job.id, std::nullopt, placement});
    sink_({JobLaunchFailed{job.id,
                           "a shared GPU needs Slurm's shard GRES, and this daemon runs "
                           "a non-sharing profile"},
           std::nullopt});
    return;
  }
  queued_.push_back({Action::kLaunch, job.id, std::move(spec).value(), placement,
                     options_.shards && placement.num_gpus() == 1});
}

void SlurmExecutor::Preempt(const Job& job, Timestamp) {
  queued_.push_back({Action::kPreempt, job.id, std::nullopt, {}});
}

void SlurmExecutor::Kill(const Job& job, Timestamp) {
  queued_.push_back({Action::kKill, job.id, std::nullopt, {}});
}

std::vector<JobExecutor::QueuedAction> SlurmExecutor::Queued() const {
  std::vector<QueuedAction> actions;
  for (const Action& a : queued_) actions.push_back({a.job, kActionKinds[a.kind]});
  return actions;
}

void SlurmExecutor::Flush() {
  // The previous segment's records (Slurm id, exit status, stop intent) go only now that its
  // outcome and this launch are durable: until then a restart must still find them to report
  // that segment rightly; from now on, one it finds belongs to the new segment.
  std::error_code ec;
  for (const Action& a : queued_) {
    if (!a.launch) continue;
    for (const char* old : {"/exit", "/stop", "/slurm_job"})
      fs::remove(a.launch->job_dir + old, ec);
  }
  {
    std::lock_guard lock(mu_);
    for (Action& a : queued_) {
      if (a.kind == Action::kLaunch) {
        if (!a.launch) continue;
        launching_[a.job] = a.launch->job_dir;
        pending_.push_back(std::move(a));
        continue;
      }
      // The stop is acknowledged now: its intent goes to <job dir>/stop at once, not when the
      // worker gets to it (after a poll, which can take long), so a restart in between still
      // finishes it. The run itself is the worker's to change.
      const Intent intent = a.kind == Action::kKill ? Intent::kKill : Intent::kPreempt;
      if (const auto run = runs_.find(a.job); run != runs_.end()) {
        RecordStopLocked(run->second.job_dir, intent);
      } else if (const auto launch = launching_.find(a.job); launch != launching_.end()) {
        // Its launch is not yet carried out (its directory may not exist yet).
        fs::create_directories(launch->second, ec);
        RecordStopLocked(launch->second, intent);
      }
      // Neither: the segment already ended (its outcome is on its way).
      pending_.push_back(std::move(a));
    }
  }
  queued_.clear();
  cv_.notify_all();
}

void SlurmExecutor::RecordStopLocked(const std::string& job_dir, Intent intent) {
  // As DoStop decides: a kill overrides any other stop, another stop none.
  const std::string path = job_dir + "/stop";
  if (intent != Intent::kKill && ParseStopIntent(ReadSmallFile(path)) != Intent::kNone) return;
  WriteSmallFile(path, std::string(StopIntentName(intent)));
}

void SlurmExecutor::Adopt(JobId job, const std::string& job_dir, std::optional<Duration> time_left,
                          const Placement&) {
  Run run;
  run.job = job;
  run.job_dir = job_dir;
  run.unmatched = true;
  const SlurmJobRecord record = ParseSlurmJobRecord(ReadSmallFile(job_dir + "/slurm_job"));
  run.slurm_id = record.slurm_id;
  for (const std::string& name : record.nodes) {
    for (size_t n = 0; n < sites_.size(); ++n) {
      if (sites_[n].name == name) run.nodes.push_back(NodeId(static_cast<uint32_t>(n)));
    }
  }
  // A record without the mode is an older dlsched's, whose batch script ran the command through
  // srun exactly when it has an srun line.
  run.command_in_batch_step = record.command_in_batch_step.value_or(
      ReadSmallFile(job_dir + "/slurm-batch.sh").find("\nsrun ") == std::string::npos);
  run.intent = ParseStopIntent(ReadSmallFile(job_dir + "/stop"));
  if (run.intent == Intent::kNodeLost || run.intent == Intent::kNotStarted) {
    run.why = "stopped by the previous daemon (" + std::string(StopIntentName(run.intent)) + ")";
  }
  // A stop under way when the previous daemon died is finished after one grace period.
  const auto now = Clock::now();
  if (run.intent != Intent::kNone) {
    run.kill_at = now + std::chrono::duration_cast<Clock::duration>(options_.grace);
  }
  if (time_left) run.deadline = now + std::chrono::duration_cast<Clock::duration>(*time_left);
  run.start_by = now + std::chrono::duration_cast<Clock::duration>(options_.start_timeout);
  std::lock_guard lock(mu_);
  runs_[job] = std::move(run);
}

std::optional<JobExecutor::ProcessInfo> SlurmExecutor::Info(JobId job) const {
  std::lock_guard lock(mu_);
  const auto it = runs_.find(job);
  if (it == runs_.end()) return std::nullopt;
  const Intent intent = it->second.intent;
  // A lost node's or a never-started job's stop returns it to the queue, like a preemption.
  const bool requeues = intent == Intent::kNodeLost || intent == Intent::kNotStarted;
  return ProcessInfo{0, 0, requeues ? "preempt" : std::string(StopIntentName(intent))};
}

void SlurmExecutor::KillAll() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [job, run] : runs_) {
      if (!run.slurm_id.empty()) ids.push_back(run.slurm_id);
    }
  }
  for (const std::string& id : ids) Scancel(id, /*term=*/false, /*full=*/false);
}

bool SlurmExecutor::Scancel(const std::string& slurm_id, bool term, bool full) {
  std::vector<std::string> argv = {"scancel"};
  if (term) argv.push_back("--signal=TERM");
  if (term && full) argv.push_back("--full");
  argv.push_back(slurm_id);
  Result<std::string> out = RunChecked(argv, Command());
  if (!out.ok()) Log(out.status().message());
  return out.ok();
}

void SlurmExecutor::Loop() {
  auto next_poll = Clock::now();  // the first poll at once: adoption and node health
  while (true) {
    std::vector<Action> actions;
    {
      std::unique_lock lock(mu_);
      const auto wake = std::min(next_poll, NextTimer());
      cv_.wait_until(lock, wake, [&] { return stopping_ || !pending_.empty(); });
      actions.swap(pending_);
      if (stopping_ && actions.empty()) return;
    }
    for (Action& a : actions) {
      if (a.kind == Action::kLaunch) {
        DoLaunch(a);
        std::lock_guard lock(mu_);
        launching_.erase(a.job);
        continue;
      }
      const auto it = runs_.find(a.job);
      // Not followed: the segment already ended (its outcome is on its way).
      if (it == runs_.end()) continue;
      DoStop(it->second, a.kind == Action::kKill ? Intent::kKill : Intent::kPreempt, "");
    }
    if (Clock::now() >= next_poll) {
      Poll();
      next_poll =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(options_.poll_interval);
    }
    RunTimers(Clock::now());
  }
}

SlurmExecutor::Clock::time_point SlurmExecutor::NextTimer() const {
  auto next = Clock::time_point::max();
  for (const auto& [job, run] : runs_) {
    if (run.intent == Intent::kNone) {
      next = std::min(next, run.deadline);
      if (!run.started) next = std::min(next, run.start_by);
    }
    if (!run.cancelled && !run.slurm_id.empty()) next = std::min(next, run.kill_at);
  }
  return next;
}

void SlurmExecutor::DoLaunch(Action& action) {
  const LaunchSpec& spec = *action.launch;
  const JobId job = spec.job;
  auto fail = [&](const std::string& why) {
    Log("job " + std::to_string(job.value()) + " not launched: " + why);
    sink_({JobLaunchFailed{job, why}, std::nullopt});
  };
  DS_CHECK(!runs_.contains(job)) << "job " << job << " launched twice";
  for (const NodeGpus& part : action.placement.parts) {
    if (health_[part.node.index()] != NodeHealth::kUp) {
      return fail("Slurm node " + sites_[part.node.index()].name + " is not available (" +
                  health_why_[part.node.index()] + ")");
    }
  }
  std::error_code ec;
  fs::create_directories(spec.job_dir + "/checkpoint", ec);
  if (ec) return fail("cannot create " + spec.job_dir + ": " + ec.message());
  for (const auto& [path, content] : spec.files) {
    if (!WriteSmallFile(path, content)) return fail("cannot write " + path);
  }
  const SlurmSubmission sub =
      BuildSlurmSubmission(spec, action.placement, sites_, options_.partition, action.shard);
  if (!WriteSmallFile(sub.task_path, sub.task_script, 0755) ||
      !WriteSmallFile(sub.batch_path, sub.batch_script, 0755)) {
    return fail("cannot write the batch script in " + spec.job_dir);
  }
  Run run;
  run.job = job;
  run.job_dir = spec.job_dir;
  run.command_in_batch_step = sub.command_in_batch_step;
  SlurmJobRecord record;
  record.command_in_batch_step = sub.command_in_batch_step;
  for (const NodeGpus& part : action.placement.parts) {
    run.nodes.push_back(part.node);
    record.nodes.push_back(sites_[part.node.index()].name);
  }
  // Before sbatch runs, so a restart knows the nodes and the mode even without the id.
  if (!WriteSmallFile(spec.job_dir + "/slurm_job", FormatSlurmJobRecord(record))) {
    return fail("cannot write " + spec.job_dir + "/slurm_job");
  }
  CommandOptions command = Command();
  if (!options_.extra_env.empty()) command.env = DaemonEnvironment(options_.extra_env);
  Result<std::string> out = RunChecked(sub.argv, command);
  Result<std::string> id = out.ok() ? ParseSbatchJobId(*out) : Result<std::string>(out.status());
  if (id.ok()) {
    run.slurm_id = *id;
    record.slurm_id = *id;
    WriteSmallFile(spec.job_dir + "/slurm_job", FormatSlurmJobRecord(record));
  } else {
    // The submission may have got in although its answer did not come back (an overloaded
    // slurmctld can even accept it after sbatch gave up). Nothing is reported until a poll's
    // squeue has looked for it by name and comment.
    Log("sbatch for dlsched job " + std::to_string(job.value()) +
        " failed; looking for it in squeue: " + id.status().message());
    run.unmatched = true;
    run.submit_error = id.status().message();
  }
  const auto now = Clock::now();
  run.start_by = now + std::chrono::duration_cast<Clock::duration>(options_.start_timeout);
  if (spec.time_limit) {
    run.deadline = now + std::chrono::duration_cast<Clock::duration>(*spec.time_limit);
  }
  std::lock_guard lock(mu_);
  runs_[job] = std::move(run);
}

void SlurmExecutor::DoStop(Run& run, Intent intent, const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (run.intent == Intent::kNone || intent == Intent::kKill) {
      run.intent = intent;
      run.why = why;
    }
    // Under mu_: Flush writes the file too.
    WriteSmallFile(run.job_dir + "/stop", std::string(StopIntentName(run.intent)));
  }
  if (run.slurm_id.empty() || run.cancelled) return;  // matched (or reported lost) at the poll
  const auto now = Clock::now();
  if (!run.started) {
    // Nothing runs yet that could checkpoint: cancel outright.
    run.cancelled = Scancel(run.slurm_id, /*term=*/false, false);
    if (!run.cancelled) run.kill_at = now;  // retried by the timer
    return;
  }
  Scancel(run.slurm_id, /*term=*/true, run.command_in_batch_step);
  run.kill_at =
      std::min(run.kill_at, now + std::chrono::duration_cast<Clock::duration>(options_.grace));
}

void SlurmExecutor::RunTimers(Clock::time_point now) {
  for (auto& [job, run] : runs_) {
    if (run.intent == Intent::kNone && now >= run.deadline) {
      DoStop(run, Intent::kTimeout, "");
    }
    if (run.intent == Intent::kNone && !run.started && now >= run.start_by) {
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(options_.start_timeout).count();
      DoStop(run, Intent::kNotStarted,
             "Slurm did not start job " + run.slurm_id + " within " + std::to_string(seconds) +
                 " s (pending: " + run.pending_reason + "); cancelled");
    }
    if (!run.cancelled && now >= run.kill_at && !run.slurm_id.empty()) {
      run.cancelled = Scancel(run.slurm_id, /*term=*/false, false);
      // Retried at the next poll when slurmctld did not take it.
      run.kill_at = run.cancelled
                        ? Clock::time_point::max()
                        : now + std::chrono::duration_cast<Clock::duration>(options_.poll_interval);
    }
  }
}

void SlurmExecutor::Poll() {
  PollNodes();
  PollJobs();
}

void SlurmExecutor::PollNodes() {
  Result<std::string> out = RunChecked({"scontrol", "show", "node", "-o"}, Command());
  Result<std::vector<SlurmNode>> nodes =
      out.ok() ? ParseNodes(*out) : Result<std::vector<SlurmNode>>(out.status());
  if (!nodes.ok()) {
    Log(nodes.status().message());  // node health stays as last seen
    return;
  }
  for (size_t n = 0; n < sites_.size(); ++n) {
    const NodeId id(static_cast<uint32_t>(n));
    const auto it = std::find_if(nodes->begin(), nodes->end(),
                                 [&](const SlurmNode& s) { return s.name == sites_[n].name; });
    const NodeHealth health = it == nodes->end() ? NodeHealth::kOut : ClassifyNodeState(it->state);
    const std::string why = it == nodes->end()
                                ? "no longer in Slurm"
                                : it->state + (it->reason.empty() ? "" : ": " + it->reason);
    const bool was_up = health_[n] == NodeHealth::kUp;
    health_[n] = health;
    health_why_[n] = why;
    if (was_up != (health == NodeHealth::kUp)) {
      Log("node " + sites_[n].name + (health == NodeHealth::kUp ? " is back" : " is out") + " (" +
          why + ")");
      node_sink_({id, health == NodeHealth::kUp, why});
    }
    if (health != NodeHealth::kOut) continue;
    for (auto& [job, run] : runs_) {
      if (run.intent != Intent::kNone ||
          std::find(run.nodes.begin(), run.nodes.end(), id) == run.nodes.end()) {
        continue;
      }
      DoStop(run, Intent::kNodeLost,
             "Slurm node " + sites_[n].name + " is out of service (" + why + "); requeued");
    }
  }
}

void SlurmExecutor::PollJobs() {
  Result<std::string> out =
      RunChecked({"squeue", "--noheader", "--me", "--states=all",
                  "--partition=" + options_.partition, "--format=" + std::string(kSqueueFormat)},
                 Command());
  if (!out.ok()) {
    Log(out.status().message());  // nothing is judged on a failed poll
    return;
  }
  std::map<std::string, Listed> listed;
  for (SlurmQueueEntry& e : ParseSqueue(*out)) {
    Listed& l = listed[e.job_id];
    if (static_cast<int>(l.states.size()) <= e.component) l.states.resize(e.component + 1);
    l.states[e.component] = e.state;
    if (e.component == 0 || l.name.empty()) {
      l.reason = e.reason;
      l.name = e.name;
      l.comment = e.comment;
    }
  }
  // Slurm job id -> numeric order, to prefer the newest of several candidates.
  const auto newer = [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  };

  std::set<std::string> owned;
  std::vector<std::pair<JobId, ExecutorReport>> ended;
  for (auto& [job, run] : runs_) {
    const std::string comment = SlurmJobComment(run.job_dir);
    if (run.unmatched) {
      // <job dir>/slurm_job names the segment's Slurm job (Flush removes an earlier segment's).
      // Without the id sbatch failed, or the daemon died before recording it: then the newest
      // live job with this job's name and comment is the segment, and an ended one only if the
      // segment's exit file shows that it ran.
      if (run.slurm_id.empty()) {
        std::string live, done;
        for (const auto& [id, l] : listed) {
          if (l.comment != comment || l.name != SlurmJobName(job)) continue;
          std::string& best = l.ended() ? done : live;
          if (best.empty() || newer(best, id)) best = id;
        }
        {
          std::lock_guard lock(mu_);
          run.slurm_id = !live.empty() ? live : ReadExitFile(run.job_dir) ? done : std::string();
        }
        if (!run.slurm_id.empty() && !run.submit_error.empty()) {
          Log("sbatch failed but Slurm has job " + run.slurm_id + " for dlsched job " +
              std::to_string(job.value()) + "; following it");
          SlurmJobRecord record = ParseSlurmJobRecord(ReadSmallFile(run.job_dir + "/slurm_job"));
          record.slurm_id = run.slurm_id;
          WriteSmallFile(run.job_dir + "/slurm_job", FormatSlurmJobRecord(record));
        }
      }
      run.unmatched = false;
      const auto found = listed.find(run.slurm_id);
      if (found != listed.end() && found->second.comment == comment && !found->second.ended()) {
        run.started = found->second.running();
        // Finish a stop the previous daemon began (signalled again: it may not have been), or
        // one decided while the submission was unconfirmed.
        if (run.intent != Intent::kNone) DoStop(run, run.intent, run.why);
      }
    }
    owned.insert(run.slurm_id);
    const auto it = listed.find(run.slurm_id);
    // A Slurm job id Slurm reused for someone else's job (its state was reset) is not ours.
    if (it == listed.end() || it->second.comment != comment) {
      ended.emplace_back(job, Outcome(run, "", ""));
      continue;
    }
    const Listed& l = it->second;
    if (l.ended()) {
      ended.emplace_back(job, Outcome(run, l.final_state(), l.reason));
      continue;
    }
    if (l.running()) {
      run.started = true;
    } else {
      run.pending_reason = l.reason;
    }
  }
  for (auto& [job, report] : ended) Finish(job, std::move(report));

  // Orphans: live Slurm jobs of this daemon's job directory that no followed segment owns (a
  // submission accepted after dlsched gave it up, one of a job requeued at a restart, ...).
  const std::string prefix = SlurmJobComment(options_.jobs_dir + "/");
  std::set<std::string> cancelled;
  for (const auto& [id, l] : listed) {
    if (l.ended() || owned.contains(id) || !l.comment.starts_with(prefix)) continue;
    if (cancelled_orphans_.contains(id)) {
      cancelled.insert(id);  // on its way out: not cancelled (and logged) again
      continue;
    }
    Log("cancelling Slurm job " + id + " (" + l.comment +
        "): no running dlsched job of this daemon owns it");
    if (Scancel(id, /*term=*/false, false)) cancelled.insert(id);
  }
  cancelled_orphans_ = std::move(cancelled);
}

ExecutorReport SlurmExecutor::Outcome(const Run& run, const std::string& final_state,
                                      const std::string& reason) {
  const std::string slurm = "Slurm job " + (run.slurm_id.empty() ? "?" : run.slurm_id);
  std::optional<int> exit_code;
  if (final_state == "COMPLETED") {
    exit_code = 0;
  } else if (!final_state.empty()) {
    Result<std::string> shown =
        RunChecked({"scontrol", "show", "job", "-o", run.slurm_id}, Command());
    if (shown.ok()) {
      for (const SlurmRecord& r : ParseScontrolRecords(*shown)) {
        const auto it = r.find("ExitCode");
        if (it != r.end()) {
          exit_code = ParseExitCode(it->second);
          break;  // the first component ran the batch script
        }
      }
    }
  }
  if (!exit_code) exit_code = ReadExitFile(run.job_dir);

  switch (run.intent) {
    case Intent::kPreempt:
      return {JobSuspended{run.job, 0}, exit_code};
    case Intent::kKill:
      return {JobFinished{run.job, JobState::kKilled, "cancelled"}, exit_code};
    case Intent::kTimeout:
      return {JobFinished{run.job, JobState::kFailed, "max run time exceeded"}, exit_code};
    case Intent::kNodeLost:
    case Intent::kNotStarted:
      return {JobLaunchFailed{run.job, run.why}, exit_code};
    case Intent::kNone:
      break;
  }
  const std::string in_state = slurm + " ended " + final_state +
                               (reason.empty() || reason == "None" ? "" : " (" + reason + ")");
  if (final_state.empty()) {
    if (!exit_code) {
      // A failed sbatch whose job Slurm does not list: it never got in.
      return {JobLaunchFailed{run.job, !run.submit_error.empty()
                                           ? run.submit_error
                                           : slurm + " is gone and left no exit status"},
              std::nullopt};
    }
  } else if (final_state == "NODE_FAIL" || final_state == "BOOT_FAIL" ||
             final_state == "PREEMPTED" || final_state == "REVOKED") {
    // Name the nodes: the node check may not have seen them go down yet.
    std::string on;
    for (NodeId node : run.nodes) on += (on.empty() ? " on " : ",") + sites_[node.index()].name;
    return {JobLaunchFailed{run.job, in_state + on + "; requeued"}, exit_code};
  } else if (final_state.starts_with("CANCELLED")) {
    return {
        JobFinished{run.job, JobState::kKilled, slurm + " was cancelled in Slurm, not by dlsched"},
        exit_code};
  } else if (final_state != "COMPLETED" && final_state != "FAILED") {
    return {JobFinished{run.job, JobState::kFailed, in_state}, exit_code};
  }
  if (exit_code == 0) return {JobFinished{run.job, JobState::kSucceeded, "exit code 0"}, 0};
  return {JobFinished{run.job, JobState::kFailed,
                      exit_code ? "exit code " + std::to_string(*exit_code) : in_state},
          exit_code};
}

void SlurmExecutor::Finish(JobId job, ExecutorReport report) {
  {
    std::lock_guard lock(mu_);
    const auto it = runs_.find(job);
    if (it == runs_.end()) return;
    runs_.erase(it);
  }
  sink_(std::move(report));
}

Result<SlurmDiscovery> DiscoverSlurmCluster(std::string partition, Duration timeout) {
  CommandOptions command;
  command.timeout = timeout;
  if (partition.empty()) {
    DS_ASSIGN_OR_RETURN(const std::string partitions,
                        RunChecked({"scontrol", "show", "partition", "-o"}, command));
    DS_ASSIGN_OR_RETURN(partition, DefaultPartition(partitions));
  }
  DS_ASSIGN_OR_RETURN(const std::string text,
                      RunChecked({"scontrol", "show", "node", "-o"}, command));
  DS_ASSIGN_OR_RETURN(std::vector<SlurmNode> nodes, ParseNodes(text));
  DS_ASSIGN_OR_RETURN(SlurmCluster cluster, BuildSlurmCluster(nodes, partition));
  return SlurmDiscovery{std::move(partition), std::move(cluster)};
}

}  // namespace dlsched::daemon
