#include "daemon/api/http_api.h"

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "daemon/api/progress_request.h"
#include "daemon/api/render.h"
#include "daemon/exec/job_files.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
// Connections the kernel queues before accept(). Debian's compiled cpp-httplib listens with a
// backlog of 5: a burst of clients connecting at once then loses handshakes, and a client sees a
// failed first request (1 s later). Listening again on the bound socket raises the backlog.
constexpr int kListenBacklog = 1024;

// httplib::Server with access to its listening socket.
class ListeningServer final : public httplib::Server {
 public:
  bool RaiseBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};
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

// Errors without a StatusCode of their own (401, 403, 413).
void ReplyError(httplib::Response& res, int http, std::string_view code, std::string message) {
  Reply(res, http, {{"error", {{"code", std::string(code)}, {"message", std::move(message)}}}});
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
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

ApiServer::ApiServer(Daemon& daemon, ApiOptions options)
    : daemon_(&daemon), options_(options), server_(std::make_unique<ListeningServer>()) {
  const int threads = std::max(1, options_.threads);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
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
    if (!static_cast<ListeningServer&>(*server_).RaiseBacklog(kListenBacklog)) {
      return IoError("cannot listen on " + host + ": " + std::strerror(errno));
    }
    return bound;
  } catch (const std::exception& e) {
    return IoError("cannot listen on " + host + ": " + e.what());
  }
}

void ApiServer::Serve() {
  try {
    server_->listen_after_bind();
  } catch (const std::exception& e) {
    std::cerr << "dlsched: HTTP server stopped: " << e.what() << "\n";
  }
}

void ApiServer::Stop() {
  if (server_) server_->stop();
}

void ApiServer::Routes() {
  httplib::Server& server = *server_;
  Daemon& daemon = *daemon_;
  const ApiOptions options = options_;

  // The caller, or an error already written to `res`.
  auto authenticate = [options](const httplib::Request& req,
                                httplib::Response& res) -> std::optional<Principal> {
    if (options.tokens == nullptr) return Principal{"", Role::kAdmin};
    const std::optional<std::string_view> token =
        BearerToken(req.get_header_value("Authorization"));
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
  };

  // The job named in the path, if it exists and the caller may see it; else an error reply.
  auto find_job = [&daemon](const httplib::Request& req, httplib::Response& res,
                            const Principal& who,
                            std::shared_ptr<const Snapshot>& snapshot) -> const JobRecord* {
    snapshot = daemon.snapshot();
    const std::optional<int64_t> id = ParseInt(req.matches[1].str());
    const JobRecord* job = id && *id >= 0 && *id < UINT32_MAX
                               ? snapshot->jobs.Find(JobId(static_cast<uint32_t>(*id)))
                               : nullptr;
    if (job == nullptr) {
      ReplyError(res, NotFound("no job " + req.matches[1].str()));
      return nullptr;
    }
    if (!who.MayAccess(job->user())) {
      ReplyError(res, 403, "PERMISSION_DENIED",
                 "job " + std::to_string(job->id.value()) + " belongs to another user");
      return nullptr;
    }
    return job;
  };

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
  // httplib's own errors (no route, 413 for an oversized body, ...) get a JSON body too.
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [max = options.max_body_bytes](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 413) {
          ReplyError(res, 413, "PAYLOAD_TOO_LARGE",
                     "body: larger than " + std::to_string(max) + " bytes");
        } else if (res.status == 404) {
          ReplyError(res, 404, "NOT_FOUND", "no such endpoint");
        } else {
          ReplyError(res, res.status, "HTTP_ERROR", "HTTP status " + std::to_string(res.status));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));

  server.Get("/healthz", [&daemon](const httplib::Request&, httplib::Response& res) {
    const std::shared_ptr<const Snapshot> s = daemon.snapshot();
    if (const std::optional<Status> failure = daemon.failure()) {
      Reply(res, 503, {{"status", "failed"}, {"error", failure->ToString()}});
      return;
    }
    Reply(res, 200,
          {{"status", "ok"},
           {"policy", s->profile},
           {"jobs", s->jobs.size()},
           {"gpus", s->cluster->total_gpus()},
           {"started_at", TimeJson(s->started_at)}});
  });

  server.Get("/metrics", [&daemon](const httplib::Request&, httplib::Response& res) {
    const std::shared_ptr<const Snapshot> s = daemon.snapshot();
    res.set_content(MetricsText(*s, SystemClock().Now(), ResidentBytes()),
                    "text/plain; version=0.0.4");
  });

  server.Post("/v1/jobs", [&daemon, authenticate, options](const httplib::Request& req,
                                                           httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    const std::string default_user = who->user.empty() ? "anonymous" : who->user;
    Result<JobRequest> request = ParseJobRequest(req.body, default_user);
    if (!request.ok()) return ReplyError(res, request.status());
    if (!who->MayAccess(request->spec.user)) {
      return ReplyError(res, 403, "PERMISSION_DENIED", "user: you may submit only as " + who->user);
    }
    const Status fits = CheckFitsCluster(*request, daemon.cluster(), daemon.multi_node_gangs());
    if (!fits.ok()) return ReplyError(res, fits);
    std::future<SubmitResult> future = daemon.Submit(std::move(request).value());
    const std::optional<SubmitResult> result = Await(future, options.reply_timeout);
    if (!result) {
      return ReplyError(res, Status(StatusCode::kUnavailable, "the scheduler did not answer"));
    }
    if (!result->ok()) return ReplyError(res, result->status());
    const JobRecord& job = ***result;
    res.set_header("Location", "/v1/jobs/" + std::to_string(job.id.value()));
    Reply(res, 201, JobJson(job, SystemClock().Now()));
  });

  server.Get("/v1/jobs", [&daemon, authenticate](const httplib::Request& req,
                                                 httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::set<JobState> states;
    for (const std::string& name : SplitCommas(req.get_param_value("state"))) {
      Result<JobState> state = ParseJobState(name);
      if (!state.ok())
        return ReplyError(res, InvalidArgument("state: " + state.status().message()));
      states.insert(*state);
    }
    std::string user = req.get_param_value("user");
    if (!who->admin()) {
      if (!user.empty() && user != who->user) {
        return ReplyError(res, 403, "PERMISSION_DENIED", "user: you may list only your own jobs");
      }
      user = who->user;
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
    const std::shared_ptr<const Snapshot> s = daemon.snapshot();
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
  });

  server.Get(R"(/v1/jobs/(\d+))", [&daemon, authenticate, find_job, options](
                                      const httplib::Request& req, httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::shared_ptr<const Snapshot> s;
    const JobRecord* job = find_job(req, res, *who, s);
    if (!job) return;
    PendingReason reason;
    const PendingReason* why = nullptr;
    if (IsWaiting(job->state) && req.get_param_value("explain") != "false") {
      std::future<Result<QueueView>> future = daemon.Queue();
      const std::optional<Result<QueueView>> view = Await(future, options.reply_timeout);
      if (view && view->ok()) {
        auto it = (*view)->reasons.find(job->id);
        reason =
            it != (*view)->reasons.end()
                ? it->second
                : PendingReason{job->id, "not looked at in the last cycle", PendingCause::kOther};
        why = &reason;
      }
    }
    Reply(res, 200,
          JobJson(*job, SystemClock().Now(), ReadProgress(daemon.JobDir(job->id)), why,
                  s->prediction(job->id)));
  });

  server.Delete(R"(/v1/jobs/(\d+))", [&daemon, authenticate, find_job, options](
                                         const httplib::Request& req, httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::shared_ptr<const Snapshot> s;
    const JobRecord* job = find_job(req, res, *who, s);
    if (!job) return;
    const JobId id = job->id;
    std::future<Status> future = daemon.Cancel(id);
    const std::optional<Status> status = Await(future, options.reply_timeout);
    if (!status) {
      return ReplyError(res, Status(StatusCode::kUnavailable, "the scheduler did not answer"));
    }
    if (!status->ok()) return ReplyError(res, *status);
    // The reply follows the snapshot that includes the cancellation.
    s = daemon.snapshot();
    const JobRecord* now_job = s->jobs.Find(id);
    Reply(res, now_job->state == JobState::kRunning ? 202 : 200,
          JobJson(*now_job, SystemClock().Now()));
  });

  server.Post(R"(/v1/jobs/(\d+)/progress)", [&daemon, authenticate, find_job](
                                                const httplib::Request& req,
                                                httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::shared_ptr<const Snapshot> s;
    const JobRecord* job = find_job(req, res, *who, s);
    if (!job) return;
    const Result<Progress> progress = ParseProgressReport(req.body);
    if (!progress.ok()) return ReplyError(res, progress.status());
    if (job->state != JobState::kRunning) {
      return ReplyError(res, FailedPrecondition("job " + std::to_string(job->id.value()) + " is " +
                                                std::string(JobStateName(job->state)) +
                                                ": only a running job reports progress"));
    }
    // The same file the job itself may write: the daemon reads progress from one place only.
    const Status written = WriteProgress(daemon.JobDir(job->id), *progress);
    if (!written.ok()) return ReplyError(res, written);
    Reply(res, 200, JobJson(*job, SystemClock().Now(), *progress, nullptr, s->prediction(job->id)));
  });

  server.Get(R"(/v1/jobs/(\d+)/logs)", [&daemon, authenticate, find_job](
                                           const httplib::Request& req, httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::shared_ptr<const Snapshot> s;
    const JobRecord* job = find_job(req, res, *who, s);
    if (!job) return;
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
        ReadLogRange(daemon.JobDir(job->id) + "/" + stream + ".log", offset, limit);
    if (!read.ok()) return ReplyError(res, read.status());
    const std::string& text = *read;
    res.set_header("X-Next-Offset", std::to_string(offset + static_cast<int64_t>(text.size())));
    res.set_header("X-Job-State", std::string(JobStateName(job->state)));
    res.set_content(text, "text/plain; charset=utf-8");
  });

  server.Get("/v1/nodes",
             [&daemon, authenticate](const httplib::Request& req, httplib::Response& res) {
               if (!authenticate(req, res)) return;
               Reply(res, 200, NodesJson(*daemon.snapshot()));
             });

  server.Get("/v1/queue", [&daemon, authenticate, options](const httplib::Request& req,
                                                           httplib::Response& res) {
    const std::optional<Principal> who = authenticate(req, res);
    if (!who) return;
    std::future<Result<QueueView>> future = daemon.Queue();
    const std::optional<Result<QueueView>> view = Await(future, options.reply_timeout);
    if (!view) {
      return ReplyError(res, Status(StatusCode::kUnavailable, "the scheduler did not answer"));
    }
    if (!view->ok()) return ReplyError(res, view->status());
    // The view was computed before the snapshot the reply reads, so every id is in it.
    const std::shared_ptr<const Snapshot> s = daemon.snapshot();
    std::vector<QueueEntry> entries;
    int position = 0;
    for (JobId id : (*view)->order) {
      ++position;
      const JobRecord* job = s->jobs.Find(id);
      if (job == nullptr || !who->MayAccess(job->user())) continue;
      auto it = (*view)->reasons.find(id);
      if (it == (*view)->reasons.end()) {
        entries.push_back({position, job, "", PendingCause::kOther});
      } else {
        entries.push_back({position, job, it->second.reason, it->second.cause});
      }
    }
    Reply(res, 200, QueueJson(entries, (*view)->at, *s));
  });
}

}  // namespace dlsched::daemon
