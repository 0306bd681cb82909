#pragma once

// The REST API (docs/api/openapi.yaml) over cpp-httplib. Handlers run on httplib's worker
// threads and only read the Daemon's published snapshot or post to its inbox (and wait for the
// reply), besides the files of a job's directory (reading its logs, writing its progress file);
// they never touch the scheduler's state. Exceptions from httplib or nlohmann are caught here
// and become 500 responses.
//
// Every request is bounded before its body is read (docs/api/README.md, "Limits of the HTTP
// front"): a connection serves each request within `request_timeout` of its first byte (else
// 408) and in at most 64 KiB of request line and headers (else 431); the method, the Host and
// Origin headers (without tokens), the token, the Content-Type and the Content-Length are
// checked from the headers alone, and a body, chunked or not, is read only up to
// `max_body_bytes` (else 413). A reply sent before the body was read to its end closes the
// connection.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "daemon/api/auth.h"
#include "daemon/core/daemon.h"
#include "dlsched/common/status.h"

namespace dlsched::daemon {

class HttpFront;  // the httplib::Server underneath (http_api.cc)
class History;    // the dashboard's history of cluster-wide counts (dashboard.h)

struct ApiOptions {
  // nullptr: authentication off (every caller acts as an admin).
  const TokenTable* tokens = nullptr;
  size_t max_body_bytes = 256 * 1024;  // larger request bodies get 413, in any encoding
  // Each connection is served by a thread of its own: `threads` start at once, more as
  // connections arrive, up to `max_connections`; connections beyond that wait for a thread.
  int threads = 16;
  int max_connections = 512;
  // Connections one peer address may hold open at once; more are answered 503 and closed.
  int max_connections_per_peer = 64;
  // How long a client may take to send one request, head and body, from its first byte.
  std::chrono::milliseconds request_timeout{10000};
  // How long a handler waits for the scheduler thread before answering 503.
  std::chrono::milliseconds reply_timeout{30000};
};

class ApiServer {
 public:
  // `daemon` must outlive the server.
  ApiServer(Daemon& daemon, ApiOptions options);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds the listening socket; port 0 picks a free one. Returns the bound port.
  Result<int> Bind(const std::string& host, int port);
  // Accepts and serves requests until Stop (blocks; run it on its own thread). Also starts the
  // history GET /v1/history reads (dashboard.h): the daemon must have started. Returns at once
  // when Stop came first.
  void Serve();
  // Makes Serve return (whether it has begun listening yet or not) and stops the history.
  // Blocks until Serve has returned. Idempotent.
  void Stop();

 private:
  // Registers the endpoints, each a method, a path and its handler (http_api.cc), with the
  // replies for requests no endpoint answers.
  void Routes();

  Daemon* daemon_;
  ApiOptions options_;
  std::unique_ptr<HttpFront> server_;
  std::unique_ptr<History> history_;
  // Serve is past its check of `stopping_` and has not returned (seq_cst, so Stop sees it or
  // Serve sees `stopping_`).
  std::atomic<bool> serving_ = false;
  std::atomic<bool> stopping_ = false;
};

}  // namespace dlsched::daemon
