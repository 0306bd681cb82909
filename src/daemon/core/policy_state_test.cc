#include "daemon/core/policy_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

namespace dlsched::daemon {
namespace {

class PolicyStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dlsched_policy_state_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Result<std::unique_ptr<Store>> store = Store::Open((dir_ / "state.db").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Save(const PolicyProfile& profile, const std::string& state) {
    ASSERT_TRUE(store_->Begin().ok());
    ASSERT_TRUE(SavePolicyState(*store_, profile, state).ok());
    ASSERT_TRUE(store_->Commit().ok());
  }
  std::string Load(const PolicyProfile& profile) {
    Result<std::string> state = LoadPolicyState(*store_, profile);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? *state : "error";
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(PolicyStateTest, TheStateComesBackOnlyForTheProfileItWasSavedUnder) {
  const PolicyProfile las = *LoadPolicyProfile("hetero-las");
  const PolicyProfile greedy = *LoadPolicyProfile("hetero-greedy");
  EXPECT_EQ(Load(las), "");  // nothing stored yet
  Save(las, "round-policy 1 ...");
  EXPECT_EQ(Load(las), "round-policy 1 ...");
  // Another profile (a daemon restarted with another --profile) starts afresh.
  EXPECT_EQ(Load(greedy), "");
  Save(greedy, "");
  EXPECT_EQ(Load(las), "");
  // A row this version cannot read is no state.
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetMeta(kPolicyStateKey, "not json").ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(Load(las), "");
}

}  // namespace
}  // namespace dlsched::daemon
