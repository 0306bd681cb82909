#include "daemon/api/http_api.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "daemon/api/dashboard.h"
#include "daemon/api/http_front.h"
#include "daemon/api/openapi_document.h"
#include "daemon/api/progress_request.h"
#include "daemon/api/render.h"
#include "daemon/api/render_gpu.h"
#include "daemon/exec/job_files.h"
#include "daemon/job/job_request.h"
#include "dlsched/common/text.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
// Connections the kernel queues before accept(). Debian's compiled cpp-httplib listens with a
// backlog of 5: a burst of clients connecting at once then loses handshakes, and a client sees a
// failed first request (1 s later). Listening again on the bound socket raises the backlog.
constexpr int kListenBacklog = 1024;
constexpr size_t kDefaultListLimit = 1000;
constexpr size_t kMaxListLimit = 100000;
constexpr int64_t kDefaultLogBytes = 1 << 20;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump() + "\n", kJson);
}

void ReplyError(httplib::Response& res, const Status& status) {
  Reply(res, HttpStatus(status.code()), ErrorJson(status));
}
// Errors without a StatusCode of their own (401, 403, 405, 408, 411, 413, 415, 431).
using ::dlsched::daemon::ReplyError;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// True for "application/json", with parameters ("; charset=utf-8") or not.
bool IsJsonContentType(std::string_view value) {
  return Lower(Trim(value.substr(0, value.find(';')), " \t")) == kJson;
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  int64_t resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

template <typename T>
std::optional<T> Await(std::future<T>& future, std::chrono::milliseconds timeout) {
  if (future.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return future.get();
}

}  // namespace

namespace {

// The caller, or nullopt with a 401 written to `res`. Without tokens every caller is an admin.
std::optional<Principal> Authenticate(const ApiOptions& options, const httplib::Request& req,
                                      httplib::Response& res) {
  if (options.tokens == nullptr) return Principal{"", Role::kAdmin};
  // The header's text must outlive the token, a view into it.
  const std::string header = req.get_header_value("Authorization");
  const std::optional<std::string_view> token = BearerToken(header);
  if (!token) {
    res.set_header("WWW-Authenticate", "Bearer");
    ReplyError(res, 401, "UNAUTHENTICATED", "missing 'Authorization: Bearer <token>' header");
    return std::nullopt;
  }
  std::optional<Principal> principal = options.tokens->Find(*token);
  if (!principal) {
    res.set_header("WWW-Authenticate", "Bearer");
    ReplyError(res, 401, "UNAUTHENTICATED", "unknown token");
  }
  return principal;
}

// Reads a request body of at most options.max_body_bytes into `body`; false with the error
// written to `res` (413 past the limit), the connection then closing after the reply.
bool ReadBody(const httplib::ContentReader& reader, const ApiOptions& options, std::string& body,
              httplib::Response& res) {
  bool too_large = false;
  const bool read = reader([&](const char* data, size_t n) {
    if (n > options.max_body_bytes - body.size()) {
      too_large = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (read && !too_large) return true;
  CloseAfterReply(res);
  if (too_large) {
    FaultReply(ConnectionStream::Fault::kBodyTooLarge, options, res);
  } else if (CurrentConnection() != nullptr &&
             CurrentConnection()->fault() != ConnectionStream::Fault::kNone) {
    FaultReply(CurrentConnection()->fault(), options, res);
  } else {
    ReplyError(res, 400, "INVALID_ARGUMENT",
               "body: could not be read (bad chunked encoding, or the connection closed)");
  }
  return false;
}

// Checks a request from its head alone, before any of its body is read: framing, endpoint and
// method, without tokens its Host and Origin (a web page of another site, or a DNS-rebound
// name, must not reach a daemon that trusts every caller), the token, the Content-Type of a
// write and its Content-Length. True when it wrote the reply. A reply that leaves a body unread
// closes the connection, and so does any body the POST handlers do not read (httplib reads
// none for GET, nor a chunked one for DELETE, and would parse it as the next request).
bool CheckHead(const Endpoint* endpoint, const ApiOptions& options, const httplib::Request& req,
               httplib::Response& res) {
  const bool chunked = req.has_header("Transfer-Encoding");
  const size_t lengths = req.get_header_value_count("Content-Length");
  const bool has_body = chunked || (lengths > 0 && req.get_header_value("Content-Length") != "0");
  auto reject = [&](int status, std::string_view code, std::string message) {
    if (has_body) CloseAfterReply(res);
    ReplyError(res, status, code, std::move(message));
    return true;
  };
  if (chunked && (req.get_header_value_count("Transfer-Encoding") > 1 ||
                  Lower(Trim(req.get_header_value("Transfer-Encoding"), " \t")) != "chunked")) {
    return reject(501, "NOT_IMPLEMENTED", "Transfer-Encoding: only 'chunked' is supported");
  }
  if (chunked && lengths > 0) {
    return reject(400, "INVALID_ARGUMENT", "both Content-Length and Transfer-Encoding given");
  }
  if (lengths > 1) return reject(400, "INVALID_ARGUMENT", "more than one Content-Length");
  int64_t length = 0;
  if (lengths == 1) {
    const std::optional<int64_t> l = ParseInt(req.get_header_value("Content-Length"));
    if (!l || *l < 0) return reject(400, "INVALID_ARGUMENT", "Content-Length: not a byte count");
    length = *l;
  }
  if (req.has_header("Content-Encoding") &&
      Lower(Trim(req.get_header_value("Content-Encoding"), " \t")) != "identity") {
    return reject(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Encoding: only 'identity' is accepted");
  }
  if (endpoint == nullptr) return reject(404, "NOT_FOUND", "no such endpoint");
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  if (std::find(endpoint->methods.begin(), endpoint->methods.end(), method) ==
      endpoint->methods.end()) {
    std::string allow;
    for (const std::string& m : endpoint->methods) allow += (allow.empty() ? "" : ", ") + m;
    res.set_header("Allow", allow);
    return reject(405, "METHOD_NOT_ALLOWED",
                  req.method + " " + req.path + ": not allowed; allowed: " + allow);
  }
  if (options.tokens == nullptr) {
    const std::string host = req.get_header_value("Host");
    if (req.has_header("Host") && !IsLoopbackHost(HostOfHostHeader(host))) {
      return reject(403, "PERMISSION_DENIED",
                    "Host: '" + host +
                        "' is not a loopback name; without --tokens the daemon answers only "
                        "requests addressed to localhost, 127.0.0.1 or [::1]");
    }
    if (req.has_header("Origin") && !IsLoopbackOrigin(req.get_header_value("Origin"))) {
      return reject(403, "PERMISSION_DENIED",
                    "Origin: '" + req.get_header_value("Origin") +
                        "' is not a loopback origin; without --tokens the daemon refuses "
                        "requests from web pages of other sites");
    }
  }
  if (endpoint->authenticated && !Authenticate(options, req, res)) {
    if (has_body) CloseAfterReply(res);
    return true;
  }
  const bool writes_body = method == "POST" || method == "PUT" || method == "PATCH";
  if ((writes_body || has_body) && method != "GET" &&
      !IsJsonContentType(req.get_header_value("Content-Type"))) {
    return reject(
        415, "UNSUPPORTED_MEDIA_TYPE",
        "Content-Type: want application/json, got '" + req.get_header_value("Content-Type") + "'");
  }
  if (writes_body && lengths == 0 && !chunked) {
    return reject(411, "LENGTH_REQUIRED", "want Content-Length or Transfer-Encoding: chunked");
  }
  if (static_cast<uint64_t>(length) > options.max_body_bytes) {
    return reject(413, "PAYLOAD_TOO_LARGE",
                  "body: larger than " + std::to_string(options.max_body_bytes) + " bytes");
  }
  if (has_body && method != "POST") CloseAfterReply(res);
  return false;
}

// One request as a handler sees it: the exchange, the daemon it reads and posts to, the options
// and, for a POST, the body (read within options.max_body_bytes; empty for other methods).
struct Call {
  Daemon& daemon;
  const ApiOptions& options;
  const httplib::Request& req;
  httplib::Response& res;
  const std::string& body;
};

using CallHandler = std::function<void(const Call&)>;
using CallerHandler = std::function<void(const Call&, const Principal&)>;
// `job` lies in `snapshot`, the one it was looked up in.
using JobHandler = void (*)(const Call&, const Principal& who, const Snapshot& snapshot,
                            const JobRecord& job);

// A route's handler and whether its endpoint needs a token (the table CheckHead reads).
struct Access {
  bool authenticated = true;
  CallHandler handler;
};

// Served to anyone, without a token.
Access Public(void (*handler)(const Call&)) { return {false, handler}; }

// Served to an authenticated caller; 401 otherwise. (CheckHead refused a missing or unknown
// token already; this finds the caller again.)
Access Authorised(CallerHandler handler) {
  return {true, [handler = std::move(handler)](const Call& call) {
            const std::optional<Principal> who = Authenticate(call.options, call.req, call.res);
            if (who) handler(call, *who);
          }};
}

// Served for the job the path names (its first capture), looked up in the latest snapshot, to
// an authenticated caller who may access it: 401, 404 (no such job) or 403 (another user's job)
// otherwise.
Access ForJob(JobHandler handler) {
  return Authorised([handler](const Call& call, const Principal& who) {
    const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
    const std::string named = call.req.matches[1].str();
    const std::optional<int64_t> id = ParseInt(named);
    const JobRecord* job = id && *id >= 0 && *id < UINT32_MAX
                               ? s->jobs.Find(JobId(static_cast<uint32_t>(*id)))
                               : nullptr;
    if (job == nullptr) return ReplyError(call.res, NotFound("no job " + named));
    if (!who.MayAccess(job->user())) {
      return ReplyError(call.res, 403, "PERMISSION_DENIED",
                        "job " + std::to_string(job->id.value()) + " belongs to another user");
    }
    handler(call, who, *s, *job);
  });
}

// The scheduler's answer to `future`, or nullopt with a 503 saying `unanswered` when it does not
// come within options.reply_timeout.
template <typename T>
std::optional<T> AwaitScheduler(std::future<T> future, const Call& call,
                                std::string unanswered = "the scheduler did not answer") {
  std::optional<T> answer = Await(future, call.options.reply_timeout);
  if (!answer) ReplyError(call.res, Status(StatusCode::kUnavailable, std::move(unanswered)));
  return answer;
}

void HandleOpenApi(const Call& call) {
  call.res.set_content(std::string(OpenApiDocument()), "application/yaml");
}

void HandleHealth(const Call& call) {
  const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
  if (const std::optional<Status> failure = call.daemon.failure()) {
    return Reply(call.res, 503, {{"status", "failed"}, {"error", failure->ToString()}});
  }
  Reply(call.res, 200,
        {{"status", "ok"},
         {"policy", s->profile},
         {"jobs", s->jobs.size()},
         {"gpus", s->cluster->total_gpus()},
         {"started_at", TimeJson(s->started_at)}});
}

void HandleMetrics(const Call& call) {
  const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
  call.res.set_content(MetricsText(*s, SystemClock().Now(), ResidentBytes()) + GpuMetricsText(*s),
                       "text/plain; version=0.0.4");
}

// Takes the Idempotency-Key header, if given, into `request`: it must be valid, given once, and
// agree with the body's idempotency_key.
Status TakeIdempotencyKey(const httplib::Request& req, JobRequest& request) {
  if (!req.has_header("Idempotency-Key")) return Status::Ok();
  const std::string key = req.get_header_value("Idempotency-Key");
  if (req.get_header_value_count("Idempotency-Key") > 1) {
    return InvalidArgument("Idempotency-Key: given more than once");
  }
  DS_RETURN_IF_ERROR(ValidateIdempotencyKey(key));
  if (!request.idempotency_key.empty() && request.idempotency_key != key) {
    return InvalidArgument("Idempotency-Key: differs from idempotency_key");
  }
  request.idempotency_key = key;
  return Status::Ok();
}

void HandleSubmit(const Call& call, const Principal& who) {
  const std::string default_user = who.user.empty() ? "anonymous" : who.user;
  Result<JobRequest> request = ParseJobRequest(call.body, default_user);
  if (!request.ok()) return ReplyError(call.res, request.status());
  if (Status key = TakeIdempotencyKey(call.req, *request); !key.ok()) {
    return ReplyError(call.res, key);
  }
  if (!who.MayAccess(request->spec.user)) {
    return ReplyError(call.res, 403, "PERMISSION_DENIED",
                      "user: you may submit only as " + who.user);
  }
  const Status fits =
      CheckFitsCluster(*request, call.daemon.cluster(), call.daemon.multi_node_gangs());
  if (!fits.ok()) return ReplyError(call.res, fits);
  const std::optional<SubmitResult> result =
      AwaitScheduler(call.daemon.Submit(std::move(request).value()), call,
                     "the scheduler did not answer in time; the job may still be stored and "
                     "started (retry with the same Idempotency-Key)");
  if (!result) return;
  if (!result->ok()) return ReplyError(call.res, result->status());
  const JobRecord& job = ***result;
  call.res.set_header("Location", "/v1/jobs/" + std::to_string(job.id.value()));
  Reply(call.res, (*result)->existing ? 200 : 201, JobJson(job, SystemClock().Now()));
}

void HandleListJobs(const Call& call, const Principal& who) {
  const httplib::Request& req = call.req;
  httplib::Response& res = call.res;
  std::set<JobState> states;
  for (const std::string& name : SplitNonEmpty(req.get_param_value("state"), ',')) {
    Result<JobState> state = ParseJobState(name);
    if (!state.ok()) return ReplyError(res, InvalidArgument("state: " + state.status().message()));
    states.insert(*state);
  }
  std::string user = req.get_param_value("user");
  if (!who.admin()) {
    if (!user.empty() && user != who.user) {
      return ReplyError(res, 403, "PERMISSION_DENIED", "user: you may list only your own jobs");
    }
    user = who.user;
  }
  size_t limit = kDefaultListLimit;
  if (req.has_param("limit")) {
    const std::optional<int64_t> l = ParseInt(req.get_param_value("limit"));
    if (!l || *l < 1 || *l > static_cast<int64_t>(kMaxListLimit)) {
      return ReplyError(res, InvalidArgument("limit: want 1.." + std::to_string(kMaxListLimit)));
    }
    limit = static_cast<size_t>(*l);
  }
  const bool descending = req.get_param_value("order") == "desc";
  if (req.has_param("order") && !descending && req.get_param_value("order") != "asc") {
    return ReplyError(res, InvalidArgument("order: want asc or desc"));
  }
  const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
  const int64_t n = static_cast<int64_t>(s->jobs.size());
  int64_t start = descending ? n - 1 : 0;
  if (req.has_param("after")) {
    const std::optional<int64_t> after = ParseInt(req.get_param_value("after"));
    if (!after) return ReplyError(res, InvalidArgument("after: want a job id"));
    start = descending ? std::min(n - 1, *after - 1) : std::max<int64_t>(0, *after + 1);
  }
  const Timestamp now = SystemClock().Now();
  json jobs = json::array();
  json next = nullptr;
  for (int64_t i = start; i >= 0 && i < n; i += descending ? -1 : 1) {
    const JobRecord& job = s->jobs.at(static_cast<size_t>(i));
    if (!states.empty() && !states.contains(job.state)) continue;
    if (!user.empty() && job.user() != user) continue;
    if (jobs.size() == limit) {
      next = jobs.back()["id"];
      break;
    }
    jobs.push_back(JobJson(job, now));
  }
  Reply(res, 200, {{"jobs", jobs}, {"next_after", next}});
}

// Why a waiting job waits, from the last cycle's queue view; nullopt when the scheduler does not
// answer in time (the job is then shown without a reason).
std::optional<PendingReason> WhyWaiting(const Call& call, const JobRecord& job) {
  std::future<Result<QueueView>> future = call.daemon.Queue();
  const std::optional<Result<QueueView>> view = Await(future, call.options.reply_timeout);
  if (!view || !view->ok()) return std::nullopt;
  auto it = (*view)->reasons.find(job.id);
  if (it == (*view)->reasons.end()) {
    return PendingReason{job.id, "not looked at in the last cycle", PendingCause::kOther};
  }
  return it->second;
}

void HandleGetJob(const Call& call, const Principal&, const Snapshot& s, const JobRecord& job) {
  std::optional<PendingReason> why;
  if (IsWaiting(job.state) && call.req.get_param_value("explain") != "false") {
    why = WhyWaiting(call, job);
  }
  nlohmann::json j = JobJson(job, SystemClock().Now(), ReadProgress(call.daemon.JobDir(job.id)),
                             why ? &*why : nullptr, s.prediction(job.id));
  j["gpu_usage"] = GpuUsageJson(s.gpu_usage_of(job.id));
  j["timeline"] = JobTimelineJson(job);
  Reply(call.res, 200, j);
}

void HandleCancel(const Call& call, const Principal&, const Snapshot&, const JobRecord& job) {
  const JobId id = job.id;
  const std::optional<Status> status = AwaitScheduler(call.daemon.Cancel(id), call);
  if (!status) return;
  if (!status->ok()) return ReplyError(call.res, *status);
  // The reply follows the snapshot that includes the cancellation. Stopping a running job is
  // asynchronous (202) even when its process was quick to die and the snapshot already shows it
  // killed; a waiting job is dropped at once (200).
  const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
  const JobRecord* now_job = s->jobs.Find(id);
  const bool was_running = job.state == JobState::kRunning || now_job->state == JobState::kRunning;
  Reply(call.res, was_running ? 202 : 200, JobJson(*now_job, SystemClock().Now()));
}

void HandleProgress(const Call& call, const Principal&, const Snapshot& s, const JobRecord& job) {
  const Result<Progress> progress = ParseProgressReport(call.body);
  if (!progress.ok()) return ReplyError(call.res, progress.status());
  if (job.state != JobState::kRunning) {
    return ReplyError(call.res, FailedPrecondition("job " + std::to_string(job.id.value()) +
                                                   " is " + std::string(JobStateName(job.state)) +
                                                   ": only a running job reports progress"));
  }
  // The same file the job itself may write: the daemon reads progress from one place only.
  const Status written = WriteProgress(call.daemon.JobDir(job.id), *progress);
  if (!written.ok()) return ReplyError(call.res, written);
  Reply(call.res, 200, JobJson(job, SystemClock().Now(), *progress, nullptr, s.prediction(job.id)));
}

void HandleLogs(const Call& call, const Principal&, const Snapshot&, const JobRecord& job) {
  const httplib::Request& req = call.req;
  httplib::Response& res = call.res;
  const std::string stream =
      req.has_param("stream") ? req.get_param_value("stream") : std::string("stdout");
  if (stream != "stdout" && stream != "stderr") {
    return ReplyError(res, InvalidArgument("stream: want stdout or stderr"));
  }
  int64_t offset = 0;
  int64_t limit = kDefaultLogBytes;
  if (req.has_param("offset")) {
    const std::optional<int64_t> o = ParseInt(req.get_param_value("offset"));
    if (!o || *o < 0) return ReplyError(res, InvalidArgument("offset: want a byte offset"));
    offset = *o;
  }
  if (req.has_param("limit")) {
    const std::optional<int64_t> l = ParseInt(req.get_param_value("limit"));
    if (!l || *l < 1 || *l > 64 * kDefaultLogBytes) {
      return ReplyError(res, InvalidArgument("limit: want 1..67108864 bytes"));
    }
    limit = *l;
  }
  // The job may have replaced its log with a link to a file it may not read: never followed.
  const Result<std::string> read =
      ReadLogRange(call.daemon.JobDir(job.id) + "/" + stream + ".log", offset, limit);
  if (!read.ok()) return ReplyError(res, read.status());
  const std::string& text = *read;
  res.set_header("X-Next-Offset", std::to_string(offset + static_cast<int64_t>(text.size())));
  res.set_header("X-Job-State", std::string(JobStateName(job.state)));
  res.set_content(text, "text/plain; charset=utf-8");
}

void HandleNodes(const Call& call, const Principal& who) {
  Reply(call.res, 200, NodesJson(*call.daemon.snapshot(), who));
}

// EstimateStarts over the queue `order` (every waiting job, whoever's): the GPUs free now and
// the running jobs with an estimated end (EstimatedEnd), less those that share a GPU (their end
// may free none). All unknown on a cluster of several GPU types, where a count of GPUs says
// nothing of a job's type.
std::vector<std::optional<Timestamp>> QueueStarts(const Call& call, const Snapshot& s,
                                                  const std::vector<JobId>& order) {
  std::vector<int> waiting;
  waiting.reserve(order.size());
  for (JobId id : order) {
    const JobRecord* job = s.jobs.Find(id);
    waiting.push_back(job == nullptr ? 0 : job->request->spec.num_gpus);
  }
  if (s.cluster->num_gpu_types() != 1) return std::vector<std::optional<Timestamp>>(order.size());
  std::map<JobId, int> held;  // running job -> GPUs it holds alone
  std::set<JobId> sharing;
  for (const std::vector<GpuHolding>& node : s.nodes->gpus) {
    for (const GpuHolding& gpu : node) {
      for (JobId h : gpu.holders) {
        ++held[h];
        if (gpu.holders.size() > 1) sharing.insert(h);
      }
    }
  }
  const Timestamp now = SystemClock().Now();
  std::vector<std::pair<Timestamp, int>> ends;
  for (const auto& [id, gpus] : held) {
    const JobRecord* job = s.jobs.Find(id);
    if (job == nullptr || sharing.count(id) > 0) continue;
    const std::optional<Timestamp> end =
        EstimatedEnd(*job, now, ReadProgress(call.daemon.JobDir(id)), s.prediction(id));
    if (end) ends.push_back({*end, gpus});
  }
  return EstimateStarts(waiting, s.cluster->total_gpus() - s.gpus_allocated, std::move(ends));
}

void HandleQueue(const Call& call, const Principal& who) {
  const std::optional<Result<QueueView>> view = AwaitScheduler(call.daemon.Queue(), call);
  if (!view) return;
  if (!view->ok()) return ReplyError(call.res, view->status());
  // The view was computed before the snapshot the reply reads, so every id is in it.
  const std::shared_ptr<const Snapshot> s = call.daemon.snapshot();
  const std::vector<std::optional<Timestamp>> starts = QueueStarts(call, *s, (*view)->order);
  std::vector<QueueEntry> entries;
  int position = 0;
  for (JobId id : (*view)->order) {
    ++position;
    const JobRecord* job = s->jobs.Find(id);
    if (job == nullptr || !who.MayAccess(job->user())) continue;
    auto it = (*view)->reasons.find(id);
    QueueEntry entry{position, job, "", PendingCause::kOther};
    if (it != (*view)->reasons.end()) {
      entry.reason = it->second.reason;
      entry.cause = it->second.cause;
    }
    // Only for a job that waits for GPUs to free: the estimate counts nothing else.
    if (entry.cause == PendingCause::kGpusBusy || entry.cause == PendingCause::kHeadOfLine ||
        entry.cause == PendingCause::kLowerPriority) {
      entry.estimated_start = starts[position - 1];
    }
    entries.push_back(std::move(entry));
  }
  Reply(call.res, 200, QueueJson(entries, (*view)->at, *s));
}

// The dashboard's files (dashboard.h), without a token: they hold no data, and the page asks for
// the token it then sends.
void HandleWeb(const Call& call) {
  const WebAsset* asset = FindWebAsset(call.req.path);
  if (asset == nullptr) return ReplyError(call.res, NotFound("no such file: " + call.req.path));
  for (const auto& [name, value] : WebHeaders()) {
    call.res.set_header(std::string(name), std::string(value));
  }
  call.res.set_content(std::string(asset->bytes), std::string(WebContentType(asset->name)));
}

void HandleTenants(const Call& call, const Principal&) {
  Reply(call.res, 200, TenantsJson(*call.daemon.snapshot(), call.daemon.tenant_quotas()));
}

// An endpoint: its method (GET also answers HEAD, httplib's rule), a regex of the whole path,
// and its handler.
struct Route {
  std::string method;
  std::string pattern;
  Access access;
};

// Declares `route` in the table CheckHead reads and registers it with httplib. A POST handler
// gets its body read through httplib's content reader, so that it is bounded in every transfer
// encoding (httplib 0.11 applies its payload limit to Content-Length bodies only, and buffered a
// chunked body of any size).
void Register(HttpFront& server, Daemon& daemon, const ApiOptions& options, const Route& route) {
  server.Declare(route.method, route.pattern, route.access.authenticated);
  auto run = [&daemon, options, handler = route.access.handler](
                 const httplib::Request& req, httplib::Response& res, const std::string& body) {
    handler(Call{daemon, options, req, res, body});
  };
  if (route.method == "POST") {
    server.Post(route.pattern,
                httplib::Server::HandlerWithContentReader(
                    [run, options](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
                      std::string body;
                      if (ReadBody(reader, options, body, res)) run(req, res, body);
                    }));
    return;
  }
  const httplib::Server::Handler handler =
      [run](const httplib::Request& req, httplib::Response& res) { run(req, res, std::string()); };
  if (route.method == "GET") {
    server.Get(route.pattern, handler);
  } else {
    DS_CHECK(route.method == "DELETE") << "no route for method " << route.method;
    server.Delete(route.pattern, handler);
  }
}

// Replies for what no route answers: an exception out of a handler (500), httplib's own errors
// (a request it could not parse, or one a connection limit cut short) with a JSON body, and the
// checks of each request's head (CheckHead) before it is routed.
void HandleOutsideRoutes(HttpFront& server, const ApiOptions& options) {
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        ReplyError(res, Internal("internal error: " + what));
      });
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [options](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        // httplib could not parse or finish the request: what follows on the connection is not
        // known to start a request, so it closes.
        CloseAfterReply(res);
        if (CurrentConnection() != nullptr &&
            CurrentConnection()->fault() != ConnectionStream::Fault::kNone) {
          FaultReply(CurrentConnection()->fault(), options, res);
        } else if (res.status == 413) {
          ReplyError(res, 413, "PAYLOAD_TOO_LARGE",
                     "body: larger than " + std::to_string(options.max_body_bytes) + " bytes");
        } else if (res.status == 404) {
          ReplyError(res, 404, "NOT_FOUND", "no such endpoint");
        } else {
          ReplyError(res, res.status, "HTTP_ERROR", "HTTP status " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_pre_routing_handler(
      [&server, options](const httplib::Request& req, httplib::Response& res) {
        if (CurrentConnection() != nullptr) CurrentConnection()->EndHead();
        return CheckHead(server.Find(req.path), options, req, res)
                   ? httplib::Server::HandlerResponse::Handled
                   : httplib::Server::HandlerResponse::Unhandled;
      });
}

}  // namespace

ApiServer::ApiServer(Daemon& daemon, ApiOptions options)
    : daemon_(&daemon),
      options_(options),
      server_(std::make_unique<HttpFront>(options_)),
      history_(std::make_unique<History>([&daemon] { return daemon.snapshot(); })) {
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_keep_alive_max_count(10000);
  server_->set_tcp_nodelay(true);
  Routes();
}

ApiServer::~ApiServer() { Stop(); }

Result<int> ApiServer::Bind(const std::string& host, int port) {
  try {
    int bound = port;
    if (port == 0) {
      bound = server_->bind_to_any_port(host);
      if (bound <= 0) return IoError("cannot listen on " + host + " (any port)");
    } else if (!server_->bind_to_port(host, port)) {
      return IoError("cannot listen on " + host + ":" + std::to_string(port) +
                     " (in use, or not an address of this machine)");
    }
    if (!server_->RaiseBacklog(kListenBacklog)) {
      return IoError("cannot listen on " + host + ": " + std::strerror(errno));
    }
    return bound;
  } catch (const std::exception& e) {
    return IoError("cannot listen on " + host + ": " + e.what());
  }
}

void ApiServer::Serve() {
  serving_ = true;
  if (stopping_) {
    serving_ = false;
    return;
  }
  history_->Start();
  try {
    server_->listen_after_bind();
  } catch (const std::exception& e) {
    std::cerr << "dlsched: HTTP server stopped: " << e.what() << "\n";
  }
  serving_ = false;
}

void ApiServer::Stop() {
  stopping_ = true;
  // httplib's stop() does nothing until listen_after_bind is running (a SIGTERM right after
  // start-up used to leave Serve listening for ever), so it is asked until Serve is out.
  while (serving_) {
    if (server_) server_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (history_) history_->Stop();
}

void ApiServer::Routes() {
  HandleOutsideRoutes(*server_, options_);
  const std::string job = R"(/v1/jobs/(\d+))";
  const Route routes[] = {
      {"GET", "/v1/openapi.yaml", Public(HandleOpenApi)},
      {"GET", "/healthz", Public(HandleHealth)},
      {"GET", "/metrics", Public(HandleMetrics)},
      {"POST", "/v1/jobs", Authorised(HandleSubmit)},
      {"GET", "/v1/jobs", Authorised(HandleListJobs)},
      {"GET", job, ForJob(HandleGetJob)},
      {"DELETE", job, ForJob(HandleCancel)},
      {"POST", job + "/progress", ForJob(HandleProgress)},
      {"GET", job + "/logs", ForJob(HandleLogs)},
      {"GET", "/v1/nodes", Authorised(HandleNodes)},
      {"GET", "/v1/queue", Authorised(HandleQueue)},
      {"GET", "/v1/tenants", Authorised(HandleTenants)},
      {"GET", "/v1/history",
       Authorised([history = history_.get()](const Call& call, const Principal&) {
         Reply(call.res, 200, HistoryJson(*history));
       })},
      {"GET", "/", Public(HandleWeb)},
      {"GET", "/ui/?", Public(HandleWeb)},
      {"GET", "/ui/[A-Za-z0-9._-]+", Public(HandleWeb)},
  };
  for (const Route& route : routes) Register(*server_, *daemon_, options_, route);
}

}  // namespace dlsched::daemon
