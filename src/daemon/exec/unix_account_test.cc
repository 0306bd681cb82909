#include "daemon/exec/unix_account.h"

#include <gtest/gtest.h>

namespace dlsched::daemon {
namespace {

TEST(UnixAccountTest, NamesAndNumericIdsResolve) {
  // root is in every passwd database.
  Result<UnixAccount> root = ResolveUnixAccount("root");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->gid, 0u);
  EXPECT_EQ(root->name, "root");
  EXPECT_FALSE(root->groups.empty());

  Result<UnixAccount> numeric = ResolveUnixAccount("0");
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(numeric->name, "root");
  EXPECT_EQ(numeric->gid, 0u);

  // Ids no passwd entry names need none: the gid defaults to the uid.
  Result<UnixAccount> bare = ResolveUnixAccount("60001");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->uid, 60001u);
  EXPECT_EQ(bare->gid, 60001u);
  EXPECT_EQ(bare->groups, std::vector<gid_t>{60001u});
  EXPECT_EQ(bare->name, "60001");
  EXPECT_EQ(bare->home, "");

  Result<UnixAccount> with_gid = ResolveUnixAccount("60001:60009");
  ASSERT_TRUE(with_gid.ok());
  EXPECT_EQ(with_gid->gid, 60009u);
  EXPECT_EQ(with_gid->groups, std::vector<gid_t>{60009u});
}

TEST(UnixAccountTest, UnknownNamesAndMalformedIdsAreErrors) {
  EXPECT_EQ(ResolveUnixAccount("no-such-user-dlsched").status().code(), StatusCode::kNotFound);
  for (const char* bad : {"", "12x", "1:", "1:x", "4294967295", "99999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ResolveUnixAccount(bad).ok());
  }
}

}  // namespace
}  // namespace dlsched::daemon
