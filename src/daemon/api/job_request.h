#pragma once

// A submission to the daemon: the scheduler's JobSpec plus what it takes to run the job as a
// process. The JSON form (POST /v1/jobs, docs/api/openapi.yaml) is parsed strictly: unknown keys
// and wrong types are errors whose message starts with the offending field's name.

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/common/time.h"
#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"

namespace dlsched::daemon {

// How the job's processes find each other; decides the environment the executor sets.
enum class Framework { kCustom, kPyTorch, kTensorFlow, kMpi, kHorovod };
std::string_view FrameworkName(Framework framework);  // "custom", "pytorch", ...
Result<Framework> ParseFramework(std::string_view name);

// The run time the scheduler assumes for a job that states neither runtime_estimate_s nor
// max_run_time_s (policies such as sjf need one; it never limits the job).
inline constexpr Duration kDefaultRuntimeEstimate = std::chrono::hours(1);

struct JobRequest {
  // name, user, queue, model, batch_size, num_gpus, gpu_type, priority, deadline, qos,
  // memory_mib and runtime_estimate as the policies see them. submit_time is set when the
  // scheduler accepts the job. iterations = the run-time estimate in seconds at 1 iteration/s
  // (the daemon's jobs do not declare work in iterations).
  JobSpec spec;
  std::vector<std::string> command;  // argv; never empty once parsed
  std::string workdir;               // absolute; empty = the job's own directory
  std::map<std::string, std::string> env;
  Framework framework = Framework::kCustom;
  std::optional<Duration> max_run_time;  // total run time over all segments; unset = none
  // Iterations the job reports progress against (see docs/daemon.md); 0 = it reports fractions.
  double total_iterations = 0;
};

// Limits a request must respect beyond its own consistency.
struct RequestLimits {
  size_t max_command_bytes = 128 * 1024;  // argv and env together
};

// Parses a request body. `default_user` fills a missing "user". Errors are InvalidArgument
// whose message starts with the field name ("gpus: must be at least 1, got 0"), or "body: ..."
// for malformed JSON. Does not look at the cluster (see CheckFitsCluster).
Result<JobRequest> ParseJobRequest(std::string_view body, std::string_view default_user,
                                   const RequestLimits& limits = {});
Result<JobRequest> ParseJobRequestJson(const nlohmann::json& doc, std::string_view default_user,
                                       const RequestLimits& limits = {});

// InvalidArgument naming the field when the cluster can never run the job: an unknown
// gpu_type, or more GPUs than one node (of that type) has. The process executor runs a job's
// gang on one node, so a gang larger than the largest node is refused here; with
// `multi_node_gangs` (the Slurm executor) the limit is the cluster's GPUs of one type instead.
Status CheckFitsCluster(const JobRequest& request, const Cluster& cluster,
                        bool multi_node_gangs = false);

// The canonical JSON form: what the store keeps and the API returns as "spec". Parsing it
// again (ParseJobRequestJson) gives back an equal request.
nlohmann::json JobRequestToJson(const JobRequest& request);

// RFC 3339 UTC with seconds ("2024-05-01T12:00:00Z") for Unix-epoch timestamps; sub-second
// parts are written as a fraction when non-zero.
std::string FormatTime(Timestamp t);
// Accepts RFC 3339 ("2024-05-01T12:00:00Z", "...+02:00", fractional seconds) or a number of
// seconds since the Unix epoch (as text).
Result<Timestamp> ParseTime(std::string_view text);

}  // namespace dlsched::daemon
