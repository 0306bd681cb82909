#pragma once

// The REST API's JSON and text bodies, from snapshots (docs/api/openapi.yaml is their contract).
// Pure functions: no I/O, no locking.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/api/auth.h"
#include "daemon/core/snapshot.h"
#include "daemon/exec/job_env.h"
#include "dlsched/common/status.h"
#include "dlsched/policy/context.h"

namespace dlsched::daemon {

// A job. `now` computes the running segment's share of run time and the ETA; `progress` is
// what the job reported (ReadProgress); `pending` is set for waiting jobs when known (rendered as
// "pending_reason", its text, and "pending_cause", PendingCauseName of its cause);
// `prediction` is the daemon's predictor's view of a running job (Snapshot::prediction).
//
// The ETA of a running job with progress and a known total: with a prediction of positive
// speed, now + the work left (1 - fraction) x spec.iterations at the corrected predicted speed
// (OnlineCorrector::Remaining on the job's shape), progress.eta_basis "predictor"; otherwise
// now + the run time so far x (1 - fraction) / fraction, "observed" (needs 0 < fraction < 1).
nlohmann::json JobJson(const JobRecord& job, Timestamp now,
                       const std::optional<Progress>& progress = std::nullopt,
                       const PendingReason* pending = nullptr,
                       const JobPrediction* prediction = nullptr);

// GET /v1/jobs/{id}'s "timeline": the job's JobRecord::timeline as [{"at", "kind", "detail"}, ...],
// oldest first ([] when nothing happened to it since this daemon started).
nlohmann::json JobTimelineJson(const JobRecord& job);

// The estimated end of a running job, as its progress.eta (JobJson); nullopt when it has none.
std::optional<Timestamp> EstimatedEnd(const JobRecord& job, Timestamp now,
                                      const std::optional<Progress>& progress,
                                      const JobPrediction* prediction);

// Start estimates of the waiting jobs of a queue, in its order (`waiting_gpus`: the GPUs each asks
// for): for each, the earliest estimated end among `ends` (the running jobs', as {end, GPUs it
// frees}) at which the `free_now` GPUs and those of the running jobs ended by then are enough for
// the job and every job ahead of it (each holding its GPUs from its start on); nullopt when they
// never are. A count of GPUs, not a placement: what the policy's order, its backfill, preemption,
// quotas, fragmentation or new arrivals change is not in it.
std::vector<std::optional<Timestamp>> EstimateStarts(const std::vector<int>& waiting_gpus,
                                                     int free_now,
                                                     std::vector<std::pair<Timestamp, int>> ends);

// GPUs per node with who holds each, and totals. Each GPU has "allocated", "holder"
// ("training", "service", "other" or null when free) and "job": the holder's id when `viewer`
// may see that job (Principal::MayAccess), else null ("holder" is then "other"), so a user
// learns that a GPU is taken but not by which of another user's jobs. Every count is of the
// GPUs listed as allocated: the totals are the sums of the nodes'.
nlohmann::json NodesJson(const Snapshot& snapshot, const Principal& viewer);

// Waiting jobs in order with their reasons ("reason", the text, and "cause", PendingCauseName of
// the cause); `visible` filters whose jobs are listed (positions stay global).
struct QueueEntry {
  int position = 0;  // 1-based, in the whole queue
  const JobRecord* job = nullptr;
  std::string reason;  // empty: the policy did not look at the job in the last cycle
  PendingCause cause = PendingCause::kOther;
  std::optional<Timestamp> estimated_start;  // EstimateStarts; nullopt: unknown
};
nlohmann::json QueueJson(const std::vector<QueueEntry>& entries, Timestamp at,
                         const Snapshot& snapshot);

// Prometheus text exposition format (version 0.0.4).
std::string MetricsText(const Snapshot& snapshot, Timestamp now, int64_t resident_bytes);

// {"error": {"code": "INVALID_ARGUMENT", "message": "...", "field": "gpus"}}; "field" is the
// leading "<field>:" of an InvalidArgument message, when there is one.
nlohmann::json ErrorJson(const Status& status);

// The HTTP status for a Status code (DESIGN.md: 400, 404, 409, 429, 503, 500).
int HttpStatus(StatusCode code);

// "2024-05-01T12:00:00Z", or null for kTimeNever.
nlohmann::json TimeJson(Timestamp t);

}  // namespace dlsched::daemon
