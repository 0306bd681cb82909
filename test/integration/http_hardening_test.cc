// The daemon's HTTP front under hostile clients (issue 16): bodies bounded in every encoding and
// before authentication, no web page driving an unauthenticated daemon, slow clients cut off
// without starving others, 405 for a wrong method, the OpenAPI document served, and the nodes
// view (services' GPUs, other users' job ids). Raw sockets speak HTTP where httplib's client
// would not misbehave.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

class HttpHardeningTest : public DaemonIntegrationTest {
 protected:
  int Port() const { return std::stoi(url_.substr(url_.rfind(':') + 1)); }

  // A TCP connection to the daemon from `source` (a loopback address), or -1.
  int Connect(const std::string& source = "127.0.0.1") const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(Port()));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  static bool SendAll(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // What the daemon writes until it closes the connection, or `within` passes.
  static std::string ReadUntilClosed(int fd, Clock::duration within = seconds(10)) {
    std::string text;
    const auto deadline = Clock::now() + within;
    char buf[4096];
    while (Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    return text;
  }

  // The status code of a raw reply ("HTTP/1.1 413 ..."), or 0.
  static int StatusOf(const std::string& reply) {
    if (reply.rfind("HTTP/1.1 ", 0) != 0 || reply.size() < 12) return 0;
    return std::atoi(reply.substr(9, 3).c_str());
  }

  // Sends `head` and then 64 KiB chunks of a JSON string, up to `total` bytes, until the daemon
  // answers; returns its reply and the body bytes sent before it did.
  std::pair<std::string, size_t> ChunkedUpload(const std::string& head, size_t total) {
    const int fd = Connect();
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(SendAll(fd, head));
    std::string chunk = R"({"script": ")";
    chunk.resize(64 * 1024, 'x');
    char size_line[32];
    std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
    const std::string framed = size_line + chunk + "\r\n";
    size_t sent = 0;
    while (sent < total) {
      pollfd p{fd, POLLIN | POLLOUT, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) break;
      if (!SendAll(fd, framed)) break;
      sent += chunk.size();
    }
    std::string reply = ReadUntilClosed(fd, seconds(5));
    ::close(fd);
    return {reply, sent};
  }

  // The daemon's resident memory, in KiB.
  int64_t DaemonRssKib() const {
    std::istringstream status(ReadTextFile("/proc/" + std::to_string(pid_) + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    }
    return -1;
  }

  std::string Tokens() {
    const fs::path tokens = dir_ / "tokens";
    // Numeric accounts: the daemon runs jobs as them when it is root (no passwd entry needed).
    std::ofstream(tokens) << "t-ann,ann,user,60011\nt-bob,bob,user,60012\nt-root,root,admin\n";
    return tokens.string();
  }

  static constexpr size_t kUpload = 64 << 20;  // far beyond the 256 KiB limit
  static constexpr int64_t kRssSlackKib = 16 << 10;
};

constexpr const char* kChunkedHead =
    "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n";

TEST_F(HttpHardeningTest, AChunkedBodyPastTheLimitGets413AndIsNeitherBufferedNorStored) {
  StartDaemon();
  ASSERT_EQ(Get("/healthz").first, 200);
  const int64_t rss_before = DaemonRssKib();
  const auto [reply, sent] = ChunkedUpload(std::string(kChunkedHead) + "\r\n", kUpload);
  EXPECT_EQ(StatusOf(reply), 413) << reply.substr(0, 300);
  EXPECT_NE(reply.find("PAYLOAD_TOO_LARGE"), std::string::npos);
  EXPECT_NE(reply.find("Connection: close"), std::string::npos);
  EXPECT_LT(sent, kUpload / 4) << "the daemon kept reading";
  EXPECT_LT(DaemonRssKib() - rss_before, kRssSlackKib);
  EXPECT_EQ(StoredJobs(), 0);

  // A chunked body within the limit is a job like any other.
  const int fd = Connect();
  const std::string body = Script("true", 1).dump();
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", body.size());
  ASSERT_TRUE(SendAll(fd, std::string(kChunkedHead) + "Connection: close\r\n\r\n" + size_line +
                              body + "\r\n0\r\n\r\n"));
  const std::string accepted = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(StatusOf(accepted), 201) << accepted;
  EXPECT_EQ(StoredJobs(), 1);
}

TEST_F(HttpHardeningTest, ADeclaredOversizedLengthGets413BeforeTheBodyIsSent) {
  StartDaemon();
  const int fd = Connect();
  ASSERT_TRUE(SendAll(fd,
                      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      "application/json\r\nContent-Length: 314572800\r\n\r\n"));
  const auto start = Clock::now();
  const std::string reply = ReadUntilClosed(fd, seconds(5));
  ::close(fd);
  EXPECT_EQ(StatusOf(reply), 413) << reply;
  EXPECT_LT(Clock::now() - start, seconds(3));
  EXPECT_EQ(StoredJobs(), 0);
}

TEST_F(HttpHardeningTest, AChunkedBodyWithoutATokenGets401BeforeItIsRead) {
  StartDaemon({"--tokens", Tokens()});
  ASSERT_EQ(Get("/healthz").first, 200);
  const int64_t rss_before = DaemonRssKib();
  const auto [reply, sent] = ChunkedUpload(std::string(kChunkedHead) + "\r\n", kUpload);
  EXPECT_EQ(StatusOf(reply), 401) << reply.substr(0, 300);
  EXPECT_LT(sent, kUpload / 4) << "the daemon kept reading";
  EXPECT_LT(DaemonRssKib() - rss_before, kRssSlackKib);
  // With a token the same upload is cut at the limit.
  const auto [limited, _] =
      ChunkedUpload(std::string(kChunkedHead) + "Authorization: Bearer t-ann\r\n\r\n", kUpload);
  EXPECT_EQ(StatusOf(limited), 413) << limited.substr(0, 300);
  EXPECT_LT(DaemonRssKib() - rss_before, kRssSlackKib);
  EXPECT_EQ(StoredJobs(), 0);
}

// Without --tokens every caller is an admin, so a browser must not be usable as one: a page of
// another site can send a "simple" cross-origin POST (text/plain, no preflight), and a
// DNS-rebound name reaches 127.0.0.1 with a foreign Host.
TEST_F(HttpHardeningTest, WithoutTokensWebPagesAndForeignHostsAreRefused) {
  StartDaemon();
  const std::string job = Script("true", 1).dump();
  struct Case {
    std::string name;
    httplib::Headers headers;
    std::string content_type;
    int want;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"text/plain", {}, "text/plain", 415, "Content-Type"},
      {"form", {}, "application/x-www-form-urlencoded", 415, "Content-Type"},
      {"foreign origin",
       {{"Origin", "http://evil.example"}},
       "application/json",
       403,
       "Origin: 'http://evil.example'"},
      {"null origin", {{"Origin", "null"}}, "application/json", 403, "Origin"},
      {"foreign host",
       {{"Host", "evil.example:8642"}},
       "application/json",
       403,
       "Host: 'evil.example:8642'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = client_->Post("/v1/jobs", c.headers, job, c.content_type.c_str());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.want) << res->body;
    EXPECT_NE(res->body.find(c.says), std::string::npos) << res->body;
  }
  // A foreign Host cannot read either (DNS rebinding).
  auto read = client_->Get("/v1/jobs", {{"Host", "rebind.evil.example"}});
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403);
  EXPECT_EQ(StoredJobs(), 0);

  // Loopback origins and names are the daemon's own clients.
  for (const std::string& origin :
       {"http://127.0.0.1:" + std::to_string(Port()), std::string("http://localhost:3000")}) {
    auto res = client_->Post("/v1/jobs", {{"Origin", origin}}, job, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 201) << origin << ": " << res->body;
  }
  auto local = client_->Get("/v1/jobs", {{"Host", "localhost:" + std::to_string(Port())}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
  // The CLI sends what the daemon wants.
  const RunResult submitted = Cli({"submit", "--", "true"});
  EXPECT_EQ(submitted.code, 0) << submitted.err;
  EXPECT_EQ(StoredJobs(), 3);
}

// 32 clients each sending a header byte every 500 ms held every worker thread (and /healthz)
// forever; each is now cut off at the request deadline and the others are served meanwhile.
TEST_F(HttpHardeningTest, SlowClientsAreCutOffAtTheDeadlineAndDoNotStarveOthers) {
  StartDaemon({"--request-timeout", "3"});
  constexpr int kSlow = 32;
  std::vector<int> slow;
  for (int i = 0; i < kSlow; ++i) {
    const int fd = Connect();
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    slow.push_back(fd);
  }
  const auto opened = Clock::now();
  std::vector<std::string> replies(kSlow);
  std::vector<Clock::duration> closed_after(kSlow, Clock::duration::max());
  std::thread drip([&] {
    std::vector<bool> open(kSlow, true);
    while (Clock::now() - opened < seconds(8)) {
      for (int i = 0; i < kSlow; ++i) {
        if (!open[i]) continue;
        char buf[4096];
        ssize_t n;
        while ((n = ::recv(slow[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
          replies[i].append(buf, static_cast<size_t>(n));
        }
        if (n == 0 || ::send(slow[i], "x", 1, MSG_NOSIGNAL) != 1) {
          open[i] = false;
          closed_after[i] = Clock::now() - opened;
        }
      }
      std::this_thread::sleep_for(milliseconds(500));
    }
  });
  std::this_thread::sleep_for(milliseconds(700));  // every slow connection is being served
  const auto asked = Clock::now();
  EXPECT_EQ(Get("/healthz").first, 200);
  EXPECT_EQ(Submit(Script("true", 1)).first, 201);
  EXPECT_LT(Clock::now() - asked, seconds(2));
  drip.join();
  for (int i = 0; i < kSlow; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(StatusOf(replies[i]), 408) << replies[i];
    EXPECT_GE(closed_after[i], milliseconds(2500));
    EXPECT_LE(closed_after[i], seconds(6));
    ::close(slow[i]);
  }
}

// One peer cannot hold every connection: past the cap its connections get 503 at once, while
// another peer is served.
TEST_F(HttpHardeningTest, OnePeerMayHoldOnlySoManyConnections) {
  StartDaemon();
  auto hold = [this] {
    const int fd = Connect("127.0.0.2");
    SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    return fd;
  };
  std::vector<int> held;
  for (int i = 0; i < 64; ++i) held.push_back(hold());
  std::string refused;
  ASSERT_TRUE(Eventually([&] {
    // A probe racing ahead of a held connection took its slot: hold it again.
    for (int& fd : held) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        ::close(fd);
        fd = hold();
      }
    }
    const int fd = Connect("127.0.0.2");
    refused = ReadUntilClosed(fd, milliseconds(500));
    ::close(fd);
    return StatusOf(refused) == 503 && refused.find("too many connections") != std::string::npos;
  })) << refused;
  EXPECT_EQ(Get("/healthz").first, 200);
  for (int fd : held) ::close(fd);
  std::string last;
  EXPECT_TRUE(Eventually([&] {
    const int fd = Connect("127.0.0.2");
    SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    last = ReadUntilClosed(fd, seconds(1));
    ::close(fd);
    return StatusOf(last) == 200;
  })) << last;
}

TEST_F(HttpHardeningTest, AnOversizedHeadGets431) {
  StartDaemon();
  const int fd = Connect();
  SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(200 * 1024, 'a') +
                  "\r\n\r\n");
  const std::string reply = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(StatusOf(reply), 431) << reply.substr(0, 300);
}

TEST_F(HttpHardeningTest, AWrongMethodGets405WithAllow) {
  StartDaemon();
  struct Case {
    std::string method;
    std::string path;
    std::string allow;
  };
  for (const Case& c : std::vector<Case>{{"PUT", "/v1/jobs", "GET, POST"},
                                         {"DELETE", "/healthz", "GET"},
                                         {"POST", "/v1/jobs/3", "DELETE, GET"},
                                         {"PATCH", "/v1/nodes", "GET"},
                                         {"GET", "/v1/jobs/3/progress", "POST"}}) {
    SCOPED_TRACE(c.method + " " + c.path);
    httplib::Request req;
    req.method = c.method;
    req.path = c.path;
    if (c.method != "GET") req.set_header("Content-Type", "application/json");
    auto res = client_->send(req);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 405) << res->body;
    EXPECT_EQ(res->get_header_value("Allow"), c.allow);
    EXPECT_NE(res->body.find("METHOD_NOT_ALLOWED"), std::string::npos);
  }
  EXPECT_EQ(Get("/v1/nope").first, 404);
}

TEST_F(HttpHardeningTest, TheOpenApiDocumentIsServedAsInTheSourceTree) {
  StartDaemon();
  auto res = client_->Get("/v1/openapi.yaml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/yaml");
  EXPECT_EQ(res->body, ReadTextFile(fs::path(DLSCHED_SOURCE_DIR) / "docs/api/openapi.yaml"));
}

// `dlsched nodes` and GET /v1/nodes count a service's GPUs like a training job's, and a user
// sees the ids of their own jobs only.
TEST_F(HttpHardeningTest, NodesListServicesAndHideOtherUsersJobIds) {
  StartDaemon({"--tokens", Tokens()});
  const fs::path go = dir_ / "go";
  const std::string wait_go = "while [ ! -e " + go.string() + " ]; do sleep 0.02; done";
  auto [s1, ann_job] = Submit(Script(wait_go, 2), "t-ann");
  json service = Script(wait_go, 1);
  service["kind"] = "service";
  auto [s2, bob_service] = Submit(service, "t-bob");
  ASSERT_EQ(s1, 201) << ann_job;
  ASSERT_EQ(s2, 201) << bob_service;
  ASSERT_TRUE(Eventually([&] {
    return Get("/v1/jobs/" + std::to_string(ann_job["id"].get<int>()), "t-root")
                   .second.value("state", "") == "running" &&
           Get("/v1/jobs/" + std::to_string(bob_service["id"].get<int>()), "t-root")
                   .second.value("state", "") == "running";
  }));

  const json admin = Get("/v1/nodes", "t-root").second;
  EXPECT_EQ(admin["gpus_allocated"], 3);
  int listed = 0;
  std::set<int> ids;
  for (const json& gpu : admin["nodes"][0]["gpus"]) {
    listed += gpu["allocated"].get<bool>();
    if (!gpu["job"].is_null()) ids.insert(gpu["job"].get<int>());
  }
  EXPECT_EQ(listed, 3);
  EXPECT_EQ(ids, (std::set<int>{ann_job["id"], bob_service["id"]}));

  const json ann = Get("/v1/nodes", "t-ann").second;
  EXPECT_EQ(ann["gpus_allocated"], 3);
  int others = 0;
  for (const json& gpu : ann["nodes"][0]["gpus"]) {
    if (gpu["holder"] == "other") {
      ++others;
      EXPECT_TRUE(gpu["job"].is_null());
    } else if (gpu["allocated"].get<bool>()) {
      EXPECT_EQ(gpu["job"], ann_job["id"]);
    }
  }
  EXPECT_EQ(others, 1);

  const RunResult table = Cli({"nodes", "--token", "t-root"});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("3 of 4 GPUs allocated"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(bob_service["id"].dump() + "(service)"), std::string::npos) << table.out;
  const RunResult mine = Cli({"nodes", "--token", "t-ann"});
  EXPECT_NE(mine.out.find(":other"), std::string::npos) << mine.out;
  EXPECT_EQ(mine.out.find(bob_service["id"].dump() + "(service)"), std::string::npos);
  std::ofstream(go) << "";
}

}  // namespace
}  // namespace dlsched::integration
