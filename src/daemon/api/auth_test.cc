#include "daemon/api/auth.h"

#include <gtest/gtest.h>

namespace dlsched::daemon {
namespace {

TEST(AuthTest, ParsesTokensFile) {
  Result<TokenTable> table =
      TokenTable::Parse("# comment\n\nt-ann, ann, user\nt-root,root,admin\r\n", "tokens.csv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->size(), 2u);
  const auto ann = table->Find("t-ann");
  ASSERT_TRUE(ann.has_value());
  EXPECT_EQ(ann->user, "ann");
  EXPECT_FALSE(ann->admin());
  EXPECT_TRUE(ann->MayAccess("ann"));
  EXPECT_FALSE(ann->MayAccess("bob"));
  const auto root = table->Find("t-root");
  ASSERT_TRUE(root.has_value());
  EXPECT_TRUE(root->admin());
  EXPECT_TRUE(root->MayAccess("bob"));
  EXPECT_FALSE(table->Find("t-nobody").has_value());
}

TEST(AuthTest, RejectsMalformedLinesNamingThem) {
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"a,b\n", "f:1: want token,user,role"}, {"x\na,b,c,d\n", "f:1: want"},
      {",u,user\n", "f:1: empty token"},      {"t,,user\n", "f:1: empty user"},
      {"t,u,root\n", "f:1: unknown role"},    {"t,u,user\nt,v,admin\n", "f:2: duplicate token"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<TokenTable> table = TokenTable::Parse(c.text, "f");
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().message().rfind(c.want, 0), 0u) << table.status().message();
  }
}

TEST(AuthTest, BearerHeaderAndLoopbackHosts) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_FALSE(BearerToken("Basic abc").has_value());
  EXPECT_FALSE(BearerToken("Bearer ").has_value());
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "10.0.0.1", "::", "example.com", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(AuthTest, HostHeadersAndOrigins) {
  struct Case {
    std::string value;
    std::string host;
  };
  for (const Case& c : std::vector<Case>{{"localhost:8642", "localhost"},
                                         {"127.0.0.1", "127.0.0.1"},
                                         {"[::1]:8642", "[::1]"},
                                         {"::1:8642", "::1:8642"},
                                         {"::1", "::1"},
                                         {"evil.example:80", "evil.example"}}) {
    EXPECT_EQ(HostOfHostHeader(c.value), c.host) << c.value;
  }
  for (const char* origin :
       {"http://127.0.0.1:8642", "http://localhost", "https://[::1]:3000", "http://127.0.0.2"}) {
    EXPECT_TRUE(IsLoopbackOrigin(origin)) << origin;
  }
  for (const char* origin : {"http://evil.example", "null", "", "http://localhost.evil.example",
                             "http://127.0.0.1@evil.example", "file://", "ftp://localhost"}) {
    EXPECT_FALSE(IsLoopbackOrigin(origin)) << origin;
  }
}

}  // namespace
}  // namespace dlsched::daemon
