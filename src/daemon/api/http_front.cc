#include "daemon/api/http_front.h"

#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dlsched::daemon {
namespace {

using SteadyClock = ConnectionStream::Clock;

// How long one write may wait for the peer to take bytes (httplib's default).
constexpr int kWriteTimeoutMs = 5000;
// After a reply that leaves input unread: how long, and how much, the rest is drained.
constexpr auto kLingerTime = std::chrono::milliseconds(1000);
constexpr size_t kLingerBytes = 16 << 20;

thread_local ConnectionStream* t_connection = nullptr;

nlohmann::json ErrorBody(std::string_view code, std::string message) {
  return {{"error", {{"code", std::string(code)}, {"message", std::move(message)}}}};
}

}  // namespace

bool ConnectionStream::WaitForRequest(std::chrono::milliseconds idle,
                                      const std::function<bool()>& listening) {
  if (begin_ < end_) return true;
  const auto until = SteadyClock::now() + idle;
  while (listening()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - SteadyClock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
  return false;
}

void ConnectionStream::BeginRequest(Clock::time_point deadline) {
  deadline_ = deadline;
  budget_ = kMaxHeadBytes;
  in_head_ = true;
  written_ = 0;
}

void ConnectionStream::EndHead() {
  in_head_ = false;
  budget_ = body_budget_;
}

void ConnectionStream::Close() {
  if (close_ || fault_ != Fault::kNone) {
    ::shutdown(fd_, SHUT_WR);
    const auto until = SteadyClock::now() + kLingerTime;
    size_t drained = 0;
    char sink[16384];
    while (drained < kLingerBytes) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - SteadyClock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = ::recv(fd_, sink, sizeof(sink), 0);
      if (n <= 0) break;
      drained += static_cast<size_t>(n);
    }
  }
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
}

bool ConnectionStream::is_readable() const {
  if (begin_ < end_) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, MillisecondsLeft()) > 0;
}

bool ConnectionStream::WaitReadable() {
  while (true) {
    if (SteadyClock::now() >= deadline_) {
      fault_ = Fault::kTimeout;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, MillisecondsLeft());
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

bool ConnectionStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  return ::poll(&p, 1, kWriteTimeoutMs) > 0;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (budget_ == 0) {
    fault_ = in_head_ ? Fault::kHeadTooLarge : Fault::kBodyTooLarge;
    return -1;
  }
  if (begin_ == end_) {
    if (!WaitReadable()) return -1;
    ssize_t n;
    do {
      n = ::recv(fd_, buffer_, sizeof(buffer_), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    begin_ = 0;
    end_ = static_cast<size_t>(n);
  }
  const size_t n = std::min({size, end_ - begin_, budget_});
  std::memcpy(ptr, buffer_ + begin_, n);
  begin_ += n;
  budget_ -= n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  ssize_t n;
  do {
    n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n > 0) written_ += static_cast<size_t>(n);
  return n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    Name(addr, len, ip, port);
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    Name(addr, len, ip, port);
  }
}

void ConnectionStream::Name(const sockaddr_storage& addr, socklen_t len, std::string& ip,
                            int& port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), serv,
                    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

int ConnectionStream::MillisecondsLeft() const {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - SteadyClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
}

ConnectionStream* CurrentConnection() { return t_connection; }

void CloseAfterReply(httplib::Response& res) {
  if (t_connection != nullptr) t_connection->CloseAfterReply();
  res.set_header("Connection", "close");
}

void ReplyError(httplib::Response& res, int http, std::string_view code, std::string message) {
  res.status = http;
  res.set_content(ErrorBody(code, std::move(message)).dump() + "\n", "application/json");
}

void FaultReply(ConnectionStream::Fault fault, const ApiOptions& options, httplib::Response& res) {
  switch (fault) {
    case ConnectionStream::Fault::kTimeout:
      ReplyError(res, 408, "REQUEST_TIMEOUT",
                 "the request was not received within " +
                     std::to_string(options.request_timeout.count()) + " ms of its first byte");
      break;
    case ConnectionStream::Fault::kHeadTooLarge:
      ReplyError(
          res, 431, "HEADERS_TOO_LARGE",
          "request line and headers: larger than " + std::to_string(kMaxHeadBytes) + " bytes");
      break;
    case ConnectionStream::Fault::kBodyTooLarge:
      ReplyError(res, 413, "PAYLOAD_TOO_LARGE",
                 "body: larger than " + std::to_string(options.max_body_bytes) + " bytes");
      break;
    case ConnectionStream::Fault::kNone:
      break;
  }
}

ConnectionPool::ConnectionPool(size_t warm, size_t max) : max_(std::max<size_t>(1, max)) {
  std::lock_guard lock(mu_);
  while (threads_.size() < std::min(warm, max_)) threads_.emplace_back([this] { Work(); });
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(fn));
    if (idle_ < tasks_.size() && threads_.size() < max_) {
      threads_.emplace_back([this] { Work(); });
    }
  }
  cv_.notify_one();
}

void ConnectionPool::shutdown() {
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ConnectionPool::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lock, [this] { return shutdown_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

size_t ConnectionPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

HttpFront::HttpFront(const ApiOptions& options) : options_(options) {
  const auto warm = static_cast<size_t>(std::max(1, options.threads));
  const auto max = static_cast<size_t>(std::max(options.threads, options.max_connections));
  new_task_queue = [warm, max] { return new ConnectionPool(warm, max); };
}

void HttpFront::Declare(const std::string& method, const std::string& pattern, bool authenticated) {
  for (Endpoint& e : endpoints_) {
    if (e.pattern == pattern) {
      e.methods.insert(std::upper_bound(e.methods.begin(), e.methods.end(), method), method);
      return;
    }
  }
  endpoints_.push_back({pattern, std::regex(pattern), {method}, authenticated});
}

const Endpoint* HttpFront::Find(const std::string& path) const {
  for (const Endpoint& e : endpoints_) {
    if (std::regex_match(path, e.regex)) return &e;
  }
  return nullptr;
}

bool HttpFront::process_and_close_socket(socket_t sock) {
  std::string peer;
  {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int port = 0;
    if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ConnectionStream::Name(addr, len, peer, port);
    }
  }
  ConnectionStream stream(sock, kChunkFramingFactor * options_.max_body_bytes + kMaxHeadBytes);
  if (!AdmitPeer(peer)) {
    const std::string body =
        ErrorBody("UNAVAILABLE", "too many connections from " + peer + " (at most " +
                                     std::to_string(options_.max_connections_per_peer) + ")")
            .dump() +
        "\n";
    const std::string reply =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Connection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    stream.write(reply.data(), reply.size());
    stream.Close();
    return false;
  }
  t_connection = &stream;
  bool ok = true;
  const auto idle = std::chrono::seconds(keep_alive_timeout_sec_);
  for (size_t served = 0; served < keep_alive_max_count_; ++served) {
    if (!stream.WaitForRequest(idle, [this] { return svr_sock_ != INVALID_SOCKET; })) break;
    stream.BeginRequest(SteadyClock::now() + options_.request_timeout);
    bool connection_closed = false;
    ok = process_request(stream, served + 1 == keep_alive_max_count_, connection_closed, nullptr);
    if (stream.fault() != ConnectionStream::Fault::kNone && !stream.wrote_reply()) {
      // httplib gives up silently on a request line it could not read.
      WriteFaultReply(stream);
    }
    if (!ok || connection_closed || stream.close_after_reply() ||
        stream.fault() != ConnectionStream::Fault::kNone) {
      break;
    }
  }
  t_connection = nullptr;
  stream.Close();
  ReleasePeer(peer);
  return ok;
}

void HttpFront::WriteFaultReply(ConnectionStream& stream) {
  httplib::Response res;
  FaultReply(stream.fault(), options_, res);
  const char* reason = res.status == 408   ? "Request Timeout"
                       : res.status == 413 ? "Payload Too Large"
                                           : "Request Header Fields Too Large";
  std::string reply = "HTTP/1.1 " + std::to_string(res.status) + " " + reason +
                      "\r\nContent-Type: application/json\r\nConnection: close\r\n"
                      "Content-Length: " +
                      std::to_string(res.body.size()) + "\r\n\r\n" + res.body;
  stream.write(reply.data(), reply.size());
}

bool HttpFront::AdmitPeer(const std::string& peer) {
  std::lock_guard lock(peers_mu_);
  int& open = peers_[peer];
  if (open >= options_.max_connections_per_peer) {
    if (open == 0) peers_.erase(peer);
    return false;
  }
  ++open;
  return true;
}

void HttpFront::ReleasePeer(const std::string& peer) {
  std::lock_guard lock(peers_mu_);
  auto it = peers_.find(peer);
  if (it != peers_.end() && --it->second <= 0) peers_.erase(it);
}
}  // namespace dlsched::daemon
