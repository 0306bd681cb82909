#include "support/daemon/fake_executor.h"

#include <utility>

#include "dlsched/common/status.h"

namespace dlsched::testing {
namespace {

using daemon::ExecutorReport;
using daemon::StopIntent;

constexpr size_t kLaunch = 0;
constexpr size_t kPreempt = 1;
constexpr size_t kKill = 2;

// What ProcessExecutor::Outcome reports for a segment that exited with `exit_code` while `intent`
// was under way.
ExecutorReport Outcome(JobId job, StopIntent intent, int exit_code) {
  switch (intent) {
    case StopIntent::kPreempt:
      return {JobSuspended{job, 0}, exit_code};
    case StopIntent::kKill:
      return {JobFinished{job, JobState::kKilled, "cancelled"}, exit_code};
    default:
      break;
  }
  if (exit_code == 0) return {JobFinished{job, JobState::kSucceeded, "exit code 0"}, 0};
  return {JobFinished{job, JobState::kFailed, "exit code " + std::to_string(exit_code)}, exit_code};
}

}  // namespace

FakeMachine::~FakeMachine() {
  DS_CHECK(attached_ == nullptr) << "the machine went before its executor";
}

std::unique_ptr<daemon::JobExecutor> FakeMachine::NewExecutor(daemon::JobExecutor::Sink sink) {
  return std::make_unique<FakeExecutor>(*this, std::move(sink));
}

std::vector<std::string> FakeMachine::TakeLog() { return std::exchange(log_, {}); }

bool FakeMachine::running(JobId job) const {
  const auto it = segments_.find(job);
  return it != segments_.end() && !it->second.outcome;
}

int FakeMachine::pid(JobId job) const { return running(job) ? segments_.at(job).pid : 0; }

std::vector<std::string> FakeMachine::env(JobId job) const {
  const auto it = env_.find(job);
  return it == env_.end() ? std::vector<std::string>() : it->second;
}

void FakeMachine::Exit(JobId job, int exit_code) {
  DS_CHECK(running(job)) << "job " << job << " does not run";
  End(job, Outcome(job, segments_.at(job).intent, exit_code));
}

void FakeMachine::Lose(JobId job, std::string reason) {
  DS_CHECK(running(job)) << "job " << job << " does not run";
  End(job, {JobLaunchFailed{job, std::move(reason)}, std::nullopt});
}

void FakeMachine::FailLaunches(JobId job, int times, std::string reason) {
  failures_[job] = {times, std::move(reason)};
}

void FakeMachine::End(JobId job, ExecutorReport report) {
  if (attached_ == nullptr) {
    segments_.at(job).outcome = std::move(report);
    return;
  }
  segments_.erase(job);
  attached_->sink_(std::move(report));
}

FakeExecutor::FakeExecutor(FakeMachine& machine, Sink sink)
    : machine_(&machine), sink_(std::move(sink)) {
  DS_CHECK(machine_->attached_ == nullptr) << "two executors on one fake machine";
  machine_->attached_ = this;
}

FakeExecutor::~FakeExecutor() { Stop(); }

void FakeExecutor::Stop() {
  if (machine_->attached_ == this) machine_->attached_ = nullptr;
}

void FakeExecutor::Launch(const Job& job, const Placement&, Result<daemon::LaunchSpec> spec) {
  if (!spec.ok()) {
    queued_.push_back({kLaunch, job.id, /*resolved=*/false});
    sink_({JobLaunchFailed{job.id, spec.status().message()}, std::nullopt});
    return;
  }
  machine_->env_[job.id] = spec->env;
  queued_.push_back({kLaunch, job.id});
}

void FakeExecutor::Preempt(const Job& job, Timestamp) { queued_.push_back({kPreempt, job.id}); }

void FakeExecutor::Kill(const Job& job, Timestamp) { queued_.push_back({kKill, job.id}); }

std::vector<daemon::JobExecutor::QueuedAction> FakeExecutor::Queued() const {
  std::vector<QueuedAction> actions;
  for (const Action& a : queued_) actions.push_back({a.job, daemon::kActionKinds[a.kind]});
  return actions;
}

void FakeExecutor::Flush() {
  DS_CHECK(machine_->attached_ == this) << "Flush on a stopped executor";
  for (const Action& a : std::exchange(queued_, {})) {
    machine_->log_.push_back(std::string(daemon::kActionKinds[a.kind]) + " " +
                             std::to_string(a.job.value()));
    if (a.kind != kLaunch) {
      // A stop of a segment that has ended already changes nothing (its outcome is on its way).
      if (machine_->running(a.job)) {
        machine_->segments_.at(a.job).intent =
            a.kind == kKill ? StopIntent::kKill : StopIntent::kPreempt;
      }
      continue;
    }
    if (!a.resolved) continue;  // reported by Launch
    DS_CHECK(!machine_->segments_.contains(a.job)) << "job " << a.job << " started twice";
    if (auto it = machine_->failures_.find(a.job); it != machine_->failures_.end()) {
      const std::string reason = it->second.reason;
      if (--it->second.times == 0) machine_->failures_.erase(it);
      sink_({JobLaunchFailed{a.job, reason}, std::nullopt});
      continue;
    }
    const int pid = machine_->next_pid_++;
    machine_->segments_[a.job] = {pid, static_cast<uint64_t>(pid) * 10};
  }
}

void FakeExecutor::Adopt(JobId job, const std::string&, std::optional<Duration>, const Placement&) {
  machine_->log_.push_back("adopt " + std::to_string(job.value()));
  const auto it = machine_->segments_.find(job);
  if (it == machine_->segments_.end()) {
    sink_({JobLaunchFailed{job, "process lost while the daemon was down (no exit status)"},
           std::nullopt});
    return;
  }
  if (it->second.outcome) {
    ExecutorReport report = std::move(*it->second.outcome);
    machine_->segments_.erase(it);
    sink_(std::move(report));
  }
}

std::optional<daemon::JobExecutor::ProcessInfo> FakeExecutor::Info(JobId job) const {
  if (!machine_->running(job)) return std::nullopt;
  const FakeMachine::Segment& s = machine_->segments_.at(job);
  return ProcessInfo{s.pid, s.start_ticks, std::string(daemon::StopIntentName(s.intent))};
}

void FakeExecutor::KillAll() {
  std::vector<JobId> running;
  for (const auto& [job, segment] : machine_->segments_) {
    if (!segment.outcome) running.push_back(job);
  }
  for (JobId job : running) machine_->Exit(job, 128 + 9);
}

}  // namespace dlsched::testing
