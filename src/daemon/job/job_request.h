#pragma once

// A submission to the daemon: the scheduler's JobSpec plus what it takes to run the job as a
// process. The JSON form (POST /v1/jobs, docs/api/openapi.yaml) is parsed strictly: unknown and
// duplicate keys, wrong types, out-of-range numbers and times, oversized strings and control
// bytes where they make no sense are errors whose message starts with the offending field's name
// (limits below and in docs/api/README.md). Whatever parses is restorable: its canonical form
// (JobRequestToJson) parses again to an equal request, so a restart never meets a stored job it
// cannot read back. Error messages never echo raw input bytes: a byte outside printable ASCII is
// written as \xNN, and echoed values are cut short.

#include <cstdint>
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
  // name, user, queue, model, batch_size, num_gpus (0: a CPU job), gpu_type, priority,
  // deadline, qos, memory_mib, cpus, host_memory_mib and runtime_estimate as the policies see
  // them. submit_time is set when the
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
  // The submitter's Idempotency-Key (POST /v1/jobs header, stored as "idempotency_key"): a
  // second submission by the same user with the same key gets this job back instead of a new
  // one. Empty = none.
  std::string idempotency_key;
};

// Bounds on the string fields (bytes). Names and identifiers (name, model, user, queue, gpu_type,
// workdir, label keys and values) refuse control bytes (below 0x20, and 0x7f); command
// arguments, the script and env values refuse only NUL, which execve cannot pass.
inline constexpr size_t kMaxNameBytes = 1024;     // name, model
inline constexpr size_t kMaxIdentBytes = 256;     // user, queue, gpu_type, env names
inline constexpr size_t kMaxWorkdirBytes = 4095;  // PATH_MAX less its NUL
inline constexpr size_t kMaxArgs = 4096;          // command: argv entries
inline constexpr size_t kMaxEnvVars = 1024;
inline constexpr size_t kMaxLabels = 64;       // selector, prefer: entries each
inline constexpr size_t kMaxLabelBytes = 256;  // a label key or value
inline constexpr size_t kMaxServiceLoadBytes = 4096;
inline constexpr size_t kMaxIdempotencyKeyBytes = 255;
inline constexpr int kMaxJsonDepth = 16;  // nesting of arrays and objects in a request body
// Bounds on the host resources a request may state: cpus (cores) and host_memory_mib (1 PiB).
inline constexpr int64_t kMaxRequestCpus = 1 << 16;
inline constexpr int64_t kMaxRequestHostMemoryMib = int64_t{1} << 30;

// The times a request may name (deadline): 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z,
// after any UTC offset, in the scheduler's microseconds.
inline constexpr Timestamp kMinRequestTime{Duration(0)};
inline constexpr Timestamp kMaxRequestTime{Duration(253402300799999999)};

// Limits a request must respect beyond its own consistency.
struct RequestLimits {
  // argv (or the script) and env together, each string with its NUL: under execve's 128 KiB
  // per-string limit, so an accepted command can always be started.
  size_t max_command_bytes = 128 * 1024;
};

// Parses a request body. `default_user` fills a missing "user". Errors are InvalidArgument
// whose message starts with the field name ("gpus: must be at least 1, got 0", "env.A: duplicate
// key"), or "body: ..." for malformed JSON (invalid UTF-8 included) or nesting deeper than
// kMaxJsonDepth. Does not look at the cluster (see CheckFitsCluster). Safe on arbitrary bytes:
// it neither throws nor crashes, whatever `body` holds (the fuzz targets' entry point).
Result<JobRequest> ParseJobRequest(std::string_view body, std::string_view default_user,
                                   const RequestLimits& limits = {});
Result<JobRequest> ParseJobRequestJson(const nlohmann::json& doc, std::string_view default_user,
                                       const RequestLimits& limits = {});

// InvalidArgument naming the field when the cluster can never run the job: an unknown
// gpu_type, more GPUs than one node (of that type) has, or more CPUs or host memory (the
// request's, or the cluster's per-GPU defaults for what it leaves unstated) than one node
// states (nodes that state none never limit). The process executor runs a job's
// gang on one node, so a gang larger than the largest node is refused here; with
// `multi_node_gangs` (the Slurm executor) the limit is the cluster's GPUs of one type instead.
Status CheckFitsCluster(const JobRequest& request, const Cluster& cluster,
                        bool multi_node_gangs = false);

// The canonical JSON form: what the store keeps and the API returns as "spec". Parsing it
// again (ParseJobRequestJson) gives back an equal request.
nlohmann::json JobRequestToJson(const JobRequest& request);

// InvalidArgument naming `field` unless `key` is a valid Idempotency-Key: 1 to
// kMaxIdempotencyKeyBytes bytes of printable ASCII (0x20..0x7e).
Status ValidateIdempotencyKey(std::string_view key, std::string_view field = "Idempotency-Key");

// `text` with every byte outside printable ASCII written as \xNN, cut after `max_bytes` bytes
// of output (then "..."): what a message may quote of untrusted bytes (a JSON body cannot carry
// invalid UTF-8, and control bytes have no place in a message).
std::string Escaped(std::string_view text, size_t max_bytes);

// A host memory size as flags write it (`submit --mem`, `serve --mem-per-gpu`), in MiB: digits
// with an optional unit, m (MiB, also the unit of bare digits), g (GiB) or t (TiB), either case
// ("512m", "64g", "64G", "2048"). InvalidArgument on anything else or above
// kMaxRequestHostMemoryMib.
Result<int64_t> ParseMemoryMib(std::string_view text);

// RFC 3339 UTC with seconds ("2024-05-01T12:00:00Z") for Unix-epoch timestamps; sub-second
// parts are written as a fraction when non-zero.
std::string FormatTime(Timestamp t);
// Accepts RFC 3339 ("2024-05-01T12:00:00Z", "...+02:00", fractional seconds, a leap second as
// 23:59:60, read as the next second) or a number of seconds since the Unix epoch (as text).
// Impossible dates (2024-02-31) and times outside kMinRequestTime..kMaxRequestTime are errors;
// digits past microseconds are dropped. For every accepted time t, ParseTime(FormatTime(t)) == t.
Result<Timestamp> ParseTime(std::string_view text);

}  // namespace dlsched::daemon
