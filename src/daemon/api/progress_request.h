#pragma once

// The body of POST /v1/jobs/{id}/progress (docs/api/openapi.yaml, ProgressReport): a job's
// progress reported over HTTP instead of through its progress file. Parsed strictly, like a
// submission: errors are InvalidArgument whose message starts with the offending field.

#include <string_view>

#include "daemon/exec/job_env.h"
#include "dlsched/common/status.h"

namespace dlsched::daemon {

// {"iterations_done": 1200, "iterations_total": 5000}: iterations_done is required, a finite
// number >= 0; iterations_total is optional (absent or null: the request's "iterations"), a
// finite number > 0. The values are those the progress file accepts (ParseProgress), so both
// ways of reporting mean the same; iterations_done above the total counts as done (the fraction
// is clamped to 1 where it is used). Errors: "body: ..." for malformed JSON or a non-object,
// "<field>: ..." for an unknown field or a bad value.
Result<Progress> ParseProgressReport(std::string_view body);

}  // namespace dlsched::daemon
