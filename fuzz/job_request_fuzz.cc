// Fuzz target: the body of POST /v1/jobs (daemon/job/job_request.h). Checks that no input
// crashes or throws, and that an accepted request survives its canonical form: JobRequestToJson
// parses back (ParseJobRequestJson) to a request with the same canonical form.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "daemon/job/job_request.h"
#include "dlsched/common/status.h"
#include "io/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dlsched::daemon::JobRequest;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The HTTP layer's entry point, and the JSON one on the same document.
  (void)dlsched::daemon::ParseJobRequest(text, "fuzz-user");
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  const dlsched::Result<JobRequest> request =
      dlsched::daemon::ParseJobRequestJson(doc, "fuzz-user");
  if (!request.ok()) return 0;

  const nlohmann::json canonical = dlsched::daemon::JobRequestToJson(*request);
  const dlsched::Result<JobRequest> again =
      dlsched::daemon::ParseJobRequestJson(canonical, "other-user");
  DS_CHECK(again.ok()) << "the canonical form " << canonical.dump()
                       << " does not parse: " << again.status().message();
  DS_CHECK(dlsched::daemon::JobRequestToJson(*again) == canonical)
      << "the canonical form changes when parsed again: " << canonical.dump() << " -> "
      << dlsched::daemon::JobRequestToJson(*again).dump();

  static const dlsched::Cluster* const cluster =
      new dlsched::Cluster(*dlsched::ParseClusterShorthand("2x4xV100+1x8xA100"));
  (void)dlsched::daemon::CheckFitsCluster(*request, *cluster);
  (void)dlsched::daemon::CheckFitsCluster(*request, *cluster, /*multi_node_gangs=*/true);
  return 0;
}
