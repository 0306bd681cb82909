// The dashboard's server side end to end (issue 22): the page is served without a token from
// the binary, its data endpoints need one, and a token of any length authenticates. The page
// itself is tested in a browser by test/browser/dashboard_test.py.

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

class DashboardTest : public DaemonIntegrationTest {};

TEST_F(DashboardTest, ThePageIsServedFromTheBinaryWithoutATokenAndItsDataNeedsOne) {
  // Tokens longer than a short string's inline buffer: the token read from the header must
  // outlive the header's copy (it once pointed into a freed string, and no long token matched).
  const std::string admin = "t-admin-0123456789abcdef0123456789";
  const std::string ann = "t-ann-0123456789abcdef0123456789";
  const fs::path tokens = dir_ / "tokens";
  std::ofstream(tokens) << admin << ",admin,admin\n" << ann << ",ann,user,60001\n";
  ASSERT_EQ(chmod(tokens.c_str(), 0600), 0);
  StartDaemon({"--tokens", tokens.string()});
  EXPECT_NE(ReadTextFile(dir_ / "daemon.err").find("dlsched serve: dashboard at " + url_ + "/"),
            std::string::npos);

  for (const std::string path : {"/", "/ui", "/ui/", "/ui/app.js", "/ui/style.css"}) {
    SCOPED_TRACE(path);
    auto res = client_->Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_FALSE(res->body.empty());
    EXPECT_NE(res->get_header_value("Content-Security-Policy").find("default-src 'none'"),
              std::string::npos);
  }
  EXPECT_EQ(client_->Get("/")->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(client_->Get("/ui/app.js")->get_header_value("Content-Type"),
            "text/javascript; charset=utf-8");
  EXPECT_EQ(Get("/ui/nope.js").first, 404);
  EXPECT_EQ(client_->Post("/", "{}", "application/json")->status, 405);

  for (const std::string path : {"/v1/tenants", "/v1/history"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(Get(path).first, 401);
    EXPECT_EQ(Get(path, "t-unknown-0123456789abcdef").first, 401);
    EXPECT_EQ(Get(path, ann).first, 200);
    EXPECT_EQ(Get(path, admin).first, 200);
  }
  auto [status, history] = Get("/v1/history", ann);
  ASSERT_EQ(status, 200);
  EXPECT_DOUBLE_EQ(history["interval_s"].get<double>(), 10);
  EXPECT_EQ(history["capacity"], 1440);
  ASSERT_GE(history["samples"].size(), 1u);
  EXPECT_EQ(history["samples"][0]["gpus_total"], 4);
  auto [s2, tenants] = Get("/v1/tenants", admin);
  EXPECT_EQ(tenants["gpus_total"], 4);
  EXPECT_EQ(tenants["tenants"], json::array());
}

}  // namespace
}  // namespace dlsched::integration
