#include "daemon/api/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

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

TEST(AuthTest, AFourthColumnNamesTheUnixAccount) {
  Result<TokenTable> table = TokenTable::Parse(
      "t-ann,ann,user,60001\nt-ann2,ann,user,60001\nt-bob,bob,user,bob_unix\nt-cy,cy,user\n", "f");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->AccountSpec("ann"), "60001");
  EXPECT_EQ(table->AccountSpec("bob"), "bob_unix");
  // Without one: the Unix user of the same name.
  EXPECT_EQ(table->AccountSpec("cy"), "cy");
  EXPECT_EQ(table->AccountSpec("dan"), "dan");

  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"t,u,user,\n", "f:1: empty unix_account"},
      {"t,u,user,1\nt2,u,admin,2\n", "f:2: user 'u' has another unix_account ('1')"},
      {"t,u,user\nt2,u,user,2\n", "f:1: user 'u' has no unix_account here but '2'"},
      {"t,u,user,1,x\n", "f:1: want token,user,role[,unix_account]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<TokenTable> bad = TokenTable::Parse(c.text, "f");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message().rfind(c.want, 0), 0u) << bad.status().message();
  }
}

TEST(AuthTest, ATokensFileOthersMayWriteIsRefusedOneTheyMayReadWarned) {
  const std::string path = ::testing::TempDir() + "/auth_test_tokens_" + std::to_string(getpid());
  std::ofstream(path) << "t,u,admin\n";
  std::string warning;
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(CheckTokensFileMode(path, warning).ok());
  EXPECT_EQ(warning, "");
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  EXPECT_TRUE(CheckTokensFileMode(path, warning).ok());
  EXPECT_NE(warning.find("may be read by other users"), std::string::npos) << warning;
  for (mode_t mode : {0620, 0602}) {
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
    const Status status = CheckTokensFileMode(path, warning);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << mode;
    EXPECT_NE(status.message().find("may be written by other users"), std::string::npos);
  }
  unlink(path.c_str());
  EXPECT_EQ(CheckTokensFileMode(path, warning).code(), StatusCode::kNotFound);
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
