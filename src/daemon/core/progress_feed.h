#pragma once

// Progress reports feed the daemon's predictor (`serve --predictor FILE`): the scheduler thread
// reads each running job's progress file (the one-line protocol of job_env.h) at most once a
// second, turns it into the observed speed of the job's current run segment, and gives that to
// an OnlineCorrector, whose corrected prediction GET /v1/jobs/{id} turns into the ETA.
//
// Units: the daemon's JobSpec counts work in seconds at the job's reference speed
// (spec.iterations = its runtime estimate, spec.ref_iters_per_s = 1; see job_request.h), and the
// predictor and the corrector work in those units. A progress report counts in the job's own
// iterations; `done / total` (total from the report, else the request's "iterations") maps it
// onto spec.iterations.

#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "daemon/core/snapshot.h"
#include "daemon/exec/job_env.h"
#include "daemon/job/job_request.h"
#include "dlsched/common/ids.h"
#include "dlsched/common/time.h"
#include "dlsched/perf/predictor.h"

namespace dlsched::daemon {

// The work a progress report says is done, in JobSpec units: clamp(done / total, 0, 1) x
// spec.iterations. nullopt when no total is known (neither in the report nor in the request).
std::optional<double> SpecIterationsDone(const Progress& progress, const JobRequest& request);

// The observed speed of a run segment, in JobSpec units per second: (work done now - work done
// when the segment started) / its elapsed time. `done_at_start` is the scheduler's
// Job::iterations_done (the checkpoint the segment resumed from). nullopt when the elapsed time
// is not positive or no work was done in the segment (a job that has not reported yet).
std::optional<double> SegmentItersPerSecond(double done_now, double done_at_start,
                                            Duration elapsed);

// The scheduler thread's side of the feed: an OnlineCorrector and when each job was last read.
// Not thread-safe (the scheduler thread owns it); what it computes is published in snapshots.
class ProgressFeed {
 public:
  static constexpr Duration kReadInterval = std::chrono::seconds(1);

  explicit ProgressFeed(std::shared_ptr<const PerfPredictor> predictor)
      : corrector_(std::move(predictor)) {}

  // Whether running job `id` is due for a read at `now`: never read, or last read at least
  // kReadInterval ago.
  bool Due(JobId id, Timestamp now) const;

  // One read of running job `id` at `now`: its request, the shape of its placement, what its
  // progress file holds (nullopt: nothing or malformed), Job::iterations_done and the time since
  // its segment started. Observes the segment's speed when there is one, then returns the
  // corrected prediction on `shape` (nullopt when the predictor has none there).
  std::optional<JobPrediction> Read(JobId id, const JobRequest& request, const GpuShape& shape,
                                    const std::optional<Progress>& progress, double done_at_start,
                                    Duration segment_elapsed, Timestamp now);

  // Drops an ended job (its job type's correction stays for later jobs of the type).
  void Forget(JobId id);

  const OnlineCorrector& corrector() const { return corrector_; }

 private:
  OnlineCorrector corrector_;
  std::map<JobId, Timestamp> last_read_;
};

}  // namespace dlsched::daemon
