// Fuzz target: a job's progress, as reported over HTTP (POST /v1/jobs/{id}/progress,
// daemon/api/progress_request.h) and as the line of its progress file (ParseProgress,
// daemon/exec/job_env.h). Checks that no input crashes or throws, that an accepted report holds
// finite, non-negative values, and that FormatProgress reads back to the same values.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/api/progress_request.h"
#include "daemon/exec/job_env.h"
#include "dlsched/common/status.h"

namespace {

void CheckProgress(const dlsched::daemon::Progress& progress) {
  DS_CHECK(std::isfinite(progress.done) && progress.done >= 0) << "done " << progress.done;
  DS_CHECK(std::isfinite(progress.total) && progress.total >= 0) << "total " << progress.total;
  const std::string line = dlsched::daemon::FormatProgress(progress);
  const std::optional<dlsched::daemon::Progress> again = dlsched::daemon::ParseProgress(line);
  DS_CHECK(again.has_value()) << "FormatProgress wrote '" << line << "', which does not parse";
  DS_CHECK(again->done == progress.done && again->total == progress.total)
      << "'" << line << "' reads back as " << again->done << "/" << again->total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const dlsched::Result<dlsched::daemon::Progress> report =
      dlsched::daemon::ParseProgressReport(text);
  if (report.ok()) CheckProgress(*report);
  const std::optional<dlsched::daemon::Progress> line = dlsched::daemon::ParseProgress(text);
  if (line.has_value()) CheckProgress(*line);
  return 0;
}
