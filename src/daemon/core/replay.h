#pragma once

// Replays a daemon's event log (event_log.h) in a fresh Scheduler and compares its decisions
// with the ones the daemon logged: `dlsched simulate --replay DB`.
//
// The replay reads the log in order, with the logged time as `now` (a VirtualClock: no wall
// time is read). A `start` row builds a Scheduler from the logged profile, cluster and seed,
// exactly as Daemon::Create does; a later `start` (the daemon restarted) builds a new one and
// restores the jobs replayed so far into it as Daemon::Restore restores its rows (RestartJob),
// and, when the run's profile is the previous run's, hands the new policy the replayed one's
// state (SchedulingPolicy::SaveState), as the daemon restores it from its store; a restored state
// that differs from the one the start record logged is a divergence. The estimator is the one
// the run logged (the built-in model, or a predictor fitted to the profile store it names).
// Inputs are applied as the daemon applied them (Scheduler::Submit with the spec from the jobs
// table, Handle for cancellations and executor reports, SetNodeOnline for node reports), a
// `cycle` row runs RunCycle, and each logged decision must be the next one the replay made:
// the same kind, job and detail (the placement of a launch, the reason of a rejection). The
// daemon's wall-clock timing, its processes and its HTTP requests are all in the log already,
// so nothing else is needed and the replay is deterministic.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/perf/throughput_model.h"
#include "io/profile.h"

namespace dlsched::daemon {

struct ReplayOptions {
  // Replays with this profile (any kind) instead of the one each daemon run logged: a what-if,
  // whose decisions are expected to differ from the log's.
  std::optional<PolicyProfile> profile;
  // The policies' estimator instead of the one each run logged (the built-in model, or a
  // predictor fitted again to the profile store the daemon named: `serve --predictor`).
  std::shared_ptr<const ThroughputModel> estimator;
};

// A decision as the daemon logged it or as the replay made it.
struct ReplayedDecision {
  Timestamp time;
  int64_t job = -1;
  std::string kind;    // launch, preempt, kill or reject
  std::string detail;  // a launch's placement, a rejection's reason

  // "launch job 4 on n0000:0,1 at <time>".
  std::string Describe() const;
  friend bool operator==(const ReplayedDecision&, const ReplayedDecision&) = default;
};

struct ReplayReport {
  int64_t events = 0;                 // log rows read
  int runs = 0;                       // daemon starts
  std::vector<std::string> profiles;  // the profile each run was replayed with, in order
  int64_t inputs = 0;                 // submissions, cancellations, executor and node reports
  int64_t cycles = 0;
  int64_t decisions = 0;  // logged decisions the replay made identically

  // The first place where the replay and the log disagree. Unset: every decision matched.
  struct Divergence {
    int64_t seq = 0;       // the log row where it showed
    std::string logged;    // what the daemon logged there
    std::string replayed;  // what the replay did instead
  };
  std::optional<Divergence> divergence;
};

// Replays the event log of the daemon database at `db_path`. Errors are the replay's own
// (NotFound: no database; FailedPrecondition: a log without the `start` rows of this version;
// InvalidArgument: a malformed row); a divergence is a result, not an error.
Result<ReplayReport> ReplayEventLog(const std::string& db_path, const ReplayOptions& options);

// A few lines for a person: what was replayed, and "all N decisions identical" or the first
// divergence with both sides.
std::string FormatReplayReport(const ReplayReport& report, const std::string& db_path);

}  // namespace dlsched::daemon
