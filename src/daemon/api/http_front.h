#pragma once

// The connection layer under the REST API (http_api.h): cpp-httplib 0.11's server with the
// limits it lacks. httplib bounds each recv (5 s) but not a request, so a client sending a byte
// every few seconds held a worker thread forever, and it serves a fixed pool of threads, so 16
// such clients took every endpoint down. HttpFront replaces httplib's connection loop with one
// over ConnectionStream (a deadline and byte budgets per request), runs each connection on a
// thread of its own (ConnectionPool) and caps the connections of one peer address; parsing,
// routing and writing replies stay httplib's (Server::process_request).

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/api/http_api.h"

namespace dlsched::daemon {

// Request line and headers together; httplib's line reader would buffer a line of any length.
inline constexpr size_t kMaxHeadBytes = 64 * 1024;
// A chunked body may take this many times the body limit in chunk framing (sizes, extensions).
inline constexpr size_t kChunkFramingFactor = 4;

// A connection's socket as httplib's Stream, with limits per request: all of it must arrive
// before a deadline, at most kMaxHeadBytes before its head is parsed (EndHead) and at most a
// body budget after. A read past a limit fails, which httplib turns into an error reply;
// fault() says which limit it was. Reads are buffered (httplib reads headers a byte at a time).
// Not thread-safe: one connection, one thread.
class ConnectionStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Fault { kNone, kTimeout, kHeadTooLarge, kBodyTooLarge };

  // Takes ownership of `fd` (Close closes it).
  ConnectionStream(int fd, size_t body_budget) : fd_(fd), body_budget_(body_budget) {}

  // Waits up to `idle` for the next request's first byte, in slices of 100 ms so that a
  // stopping server (`listening` turns false) does not wait for idle connections. False: none
  // came.
  bool WaitForRequest(std::chrono::milliseconds idle, const std::function<bool()>& listening);
  // Starts the limits of one request: all of it by `deadline`, the head budget.
  void BeginRequest(Clock::time_point deadline);
  // The head is parsed (the pre-routing handler runs): the body budget starts.
  void EndHead();
  // The reply leaves input unread: the connection closes after it.
  void CloseAfterReply() { close_ = true; }
  bool close_after_reply() const { return close_; }
  Fault fault() const { return fault_; }
  // Whether anything of a reply to the current request was written.
  bool wrote_reply() const { return written_ > 0; }
  // Closes the socket. When input was left unread (CloseAfterReply, a fault), shuts the write
  // side and drains the input for up to 1 s and 16 MiB first: closing a socket with unread
  // input sends a RST, which can destroy the reply before the client has read it.
  void Close();

  // httplib::Stream.
  bool is_readable() const override;
  bool is_writable() const override;  // within 5 s
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;  // waits up to 5 s for room
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // The numeric address and port of a socket address.
  static void Name(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port);

 private:
  // Waits for input until the deadline; false on an error or, with fault() kTimeout, when the
  // deadline passed.
  bool WaitReadable();
  // Rounded up, so that a wait ends at or after the deadline, never just before it.
  int MillisecondsLeft() const;

  const int fd_;
  const size_t body_budget_;
  char buffer_[16384];
  size_t begin_ = 0;
  size_t end_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
  size_t budget_ = kMaxHeadBytes;
  bool in_head_ = true;
  bool close_ = false;
  size_t written_ = 0;  // bytes of the current request's reply
  Fault fault_ = Fault::kNone;
};

// The connection the calling thread serves (HttpFront sets it for each connection), or
// nullptr: httplib 0.11 gives handlers no way to reach it, and a connection is served start to
// end on one thread.
ConnectionStream* CurrentConnection();

// Marks the reply as the connection's last (its input was not read to the end) and says so in
// a `Connection: close` header.
void CloseAfterReply(httplib::Response& res);

// {"error": {"code": CODE, "message": MESSAGE}} as `res`'s JSON body, with `http` as status.
void ReplyError(httplib::Response& res, int http, std::string_view code, std::string message);

// The reply (408, 431 or 413) for a request a connection limit cut short; `fault` is not kNone.
void FaultReply(ConnectionStream::Fault fault, const ApiOptions& options, httplib::Response& res);

// Runs each task on a thread of its own: `warm` threads at once, more started as tasks arrive
// while every thread is busy, up to `max` (later tasks wait in order). Threads are kept until
// shutdown, which runs the tasks already queued and joins them. Thread-safe.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t warm, size_t max);
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;
  size_t threads() const;

 private:
  void Work();

  const size_t max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool shutdown_ = false;
};

// An endpoint: a regex of the whole path and the methods served on it.
struct Endpoint {
  std::string pattern;
  std::regex regex;
  std::vector<std::string> methods;  // sorted
  bool authenticated = true;         // false: served without a token
};

// httplib::Server with ConnectionStream's limits, ConnectionPool's threads, a cap of
// options.max_connections_per_peer connections per peer address (more get 503 and are
// closed), and the table of endpoints the API's pre-routing checks consult.
class HttpFront final : public httplib::Server {
 public:
  explicit HttpFront(const ApiOptions& options);

  // Listens again on the bound socket with a larger backlog.
  bool RaiseBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
  // Records that `method` is served on `pattern` (a regex of the whole path). Call before
  // serving.
  void Declare(const std::string& method, const std::string& pattern, bool authenticated);
  // The endpoint whose pattern matches `path`, or nullptr.
  const Endpoint* Find(const std::string& path) const;

 private:
  // Replaces httplib's connection loop (over its SocketStream) with one over ConnectionStream;
  // each request is then httplib's process_request.
  bool process_and_close_socket(socket_t sock) override;
  // Writes FaultReply's reply itself: httplib gives up silently on a request line it could not
  // read.
  void WriteFaultReply(ConnectionStream& stream);
  bool AdmitPeer(const std::string& peer);
  void ReleasePeer(const std::string& peer);

  const ApiOptions options_;
  std::vector<Endpoint> endpoints_;
  std::mutex peers_mu_;
  std::map<std::string, int> peers_;  // open connections per peer address
};

}  // namespace dlsched::daemon
