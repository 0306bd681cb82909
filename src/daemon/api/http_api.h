#pragma once

// The REST API (docs/api/openapi.yaml) over cpp-httplib. Handlers run on httplib's worker
// threads and only read the Daemon's published snapshot or post to its inbox (and wait for the
// reply), besides the files of a job's directory (reading its logs, writing its progress file);
// they never touch the scheduler's state. Exceptions from httplib or nlohmann are caught here
// and become 500 responses.

#include <chrono>
#include <memory>
#include <string>

#include "daemon/api/auth.h"
#include "daemon/core/daemon.h"
#include "dlsched/common/status.h"

namespace httplib {
class Server;
}

namespace dlsched::daemon {

struct ApiOptions {
  // nullptr: authentication off (every caller acts as an admin).
  const TokenTable* tokens = nullptr;
  size_t max_body_bytes = 256 * 1024;  // larger request bodies get 413
  int threads = 16;                    // HTTP worker threads
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
  // Accepts and serves requests until Stop (blocks; run it on its own thread).
  void Serve();
  void Stop();

 private:
  void Routes();

  Daemon* daemon_;
  ApiOptions options_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace dlsched::daemon
