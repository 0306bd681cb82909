#include "daemon/api/http_front.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "dlsched/common/status.h"

namespace dlsched::daemon {
namespace {

using Fault = ConnectionStream::Fault;
using Clock = ConnectionStream::Clock;

// A connected socket pair: `server` is the stream's, `client` the test's.
struct Pair {
  Pair() {
    int fds[2];
    DS_CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    server = fds[0];
    client = fds[1];
  }
  ~Pair() { ::close(client); }
  // The client sends no more (a stream's Close then drains nothing).
  void Hangup() const { ::shutdown(client, SHUT_WR); }
  void Send(const std::string& text) const {
    DS_CHECK(::send(client, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
  }
  int server = -1;
  int client = -1;
};

// Reads until `n` bytes, a failure or the end; returns what was read.
std::string ReadUpTo(ConnectionStream& stream, size_t n) {
  std::string out;
  char buf[7];  // odd-sized, so reads straddle the stream's buffer
  while (out.size() < n) {
    const ssize_t got = stream.read(buf, std::min(sizeof(buf), n - out.size()));
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

TEST(ConnectionStreamTest, DeliversBytesWithinTheHeadAndBodyBudgets) {
  Pair pair;
  ConnectionStream stream(pair.server, /*body_budget=*/10);
  stream.BeginRequest(Clock::now() + std::chrono::seconds(60));
  pair.Send("GET / HTTP/1.1\r\n\r\n0123456789");
  EXPECT_EQ(ReadUpTo(stream, 18), "GET / HTTP/1.1\r\n\r\n");
  stream.EndHead();
  EXPECT_EQ(ReadUpTo(stream, 10), "0123456789");
  EXPECT_EQ(stream.fault(), Fault::kNone);
  stream.Close();
}

TEST(ConnectionStreamTest, AReadPastTheBodyBudgetFails) {
  Pair pair;
  ConnectionStream stream(pair.server, /*body_budget=*/4);
  stream.BeginRequest(Clock::now() + std::chrono::seconds(60));
  stream.EndHead();
  pair.Send("0123456789");
  EXPECT_EQ(ReadUpTo(stream, 10), "0123");
  char c;
  EXPECT_EQ(stream.read(&c, 1), -1);
  EXPECT_EQ(stream.fault(), Fault::kBodyTooLarge);
  pair.Hangup();
  stream.Close();
}

TEST(ConnectionStreamTest, AHeadPastItsBudgetFails) {
  Pair pair;
  ConnectionStream stream(pair.server, /*body_budget=*/0);
  stream.BeginRequest(Clock::now() + std::chrono::seconds(60));
  std::thread writer([&pair] { pair.Send(std::string(kMaxHeadBytes + 100, 'a')); });
  EXPECT_EQ(ReadUpTo(stream, kMaxHeadBytes + 100).size(), kMaxHeadBytes);
  EXPECT_EQ(stream.fault(), Fault::kHeadTooLarge);
  writer.join();
  pair.Hangup();
  stream.Close();
}

TEST(ConnectionStreamTest, AReadAfterTheDeadlineFailsWithTimeout) {
  Pair pair;
  ConnectionStream stream(pair.server, /*body_budget=*/100);
  stream.BeginRequest(Clock::now() - std::chrono::milliseconds(1));
  char c;
  EXPECT_EQ(stream.read(&c, 1), -1);
  EXPECT_EQ(stream.fault(), Fault::kTimeout);
  pair.Hangup();
  stream.Close();
}

TEST(ConnectionStreamTest, ClosingWithUnreadInputStillDeliversTheReply) {
  Pair pair;
  ConnectionStream stream(pair.server, /*body_budget=*/100);
  stream.BeginRequest(Clock::now() + std::chrono::seconds(60));
  pair.Send("unread body");
  const std::string reply = "HTTP/1.1 413 Payload Too Large\r\n\r\n";
  ASSERT_EQ(stream.write(reply.data(), reply.size()), static_cast<ssize_t>(reply.size()));
  EXPECT_TRUE(stream.wrote_reply());
  stream.CloseAfterReply();
  std::thread closer([&stream] { stream.Close(); });
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::recv(pair.client, buf, sizeof(buf), 0)) > 0) got.append(buf, n);
  pair.Hangup();  // lets the drain end at once
  closer.join();
  EXPECT_EQ(got, reply);
}

TEST(ConnectionPoolTest, StartsAThreadPerBusyTaskUpToItsMaximum) {
  ConnectionPool pool(/*warm=*/2, /*max=*/8);
  EXPECT_EQ(pool.threads(), 2u);
  // Eight tasks that each wait for all eight to run: done only if they run at once.
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  std::atomic<int> met{0};
  for (int i = 0; i < 8; ++i) {
    pool.enqueue([&] {
      std::unique_lock lock(mu);
      ++running;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(30), [&] { return running == 8; })) ++met;
    });
  }
  // A ninth waits for a free thread instead of starting one.
  std::atomic<bool> ninth{false};
  pool.enqueue([&] { ninth = true; });
  pool.shutdown();
  EXPECT_EQ(met, 8);
  EXPECT_TRUE(ninth);
  EXPECT_EQ(pool.threads(), 8u);
}

}  // namespace
}  // namespace dlsched::daemon
