// The daemon under a sharing profile with its live knowledge (live_sharing.h): jobs that share a
// GPU get the same device and their memory bound, and, under the MPS enforcer, their GPU's MPS
// variables, never beside another user's job. The fake executor records each launch's
// environment; the real processes are test/integration/live_sharing_test.cc's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/core/daemon_test_fixture.h"

namespace dlsched::daemon {
namespace {

using ::testing::Contains;
using ::testing::Not;

// Two built-in lstm jobs (5632 MiB each, no memory request) fit one V100.
constexpr const char* kLstm = R"("script": "train", "gpus": 1, "model": "lstm", "batch_size": 128)";

class DaemonSharingTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixture::SetUp();
    // Packed, memory only: whether two jobs fit does not hang on the interference model.
    Result<PolicyProfile> profile = LoadPolicyProfile("naive-share");
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    profile_json_ = PolicyProfileToJson(*profile);
  }
  JobId SubmitAs(const std::string& user, const std::string& fields) {
    Result<JobRequest> request = ParseJobRequest("{" + fields + "}", user);
    EXPECT_TRUE(request.ok()) << request.status().ToString();
    if (!request.ok()) return JobId();
    SubmitResult result = Await(daemon_->Submit(*request));
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? (*result)->id : JobId();
  }
  int64_t GpuMib() const {
    return testing::MakeCluster("1x1xV100").node(NodeId(0)).gpus[0].memory_mib;
  }
};

TEST_F(DaemonSharingTest, SharedJobsGetTheSameDeviceAndTheirMemoryBound) {
  StartDaemon("1x1xV100");
  const JobId a = Submit(kLstm);
  const JobId b = Submit(kLstm);
  ASSERT_EQ(State(a), JobState::kRunning);
  ASSERT_EQ(State(b), JobState::kRunning) << Record(b).reason;
  EXPECT_EQ(Record(a).share, ShareMode::kPacked);
  EXPECT_EQ(Record(b).share, ShareMode::kPacked);
  // a came first, alone: the whole GPU; b: what a's demand (its type's 5632 MiB) leaves.
  EXPECT_THAT(machine_.env(a), Contains("CUDA_VISIBLE_DEVICES=0"));
  EXPECT_THAT(machine_.env(b), Contains("CUDA_VISIBLE_DEVICES=0"));
  EXPECT_THAT(machine_.env(a),
              Contains("DLSCHED_GPU_MEMORY_LIMIT_MIB=" + std::to_string(GpuMib())));
  EXPECT_THAT(machine_.env(b),
              Contains("DLSCHED_GPU_MEMORY_LIMIT_MIB=" + std::to_string(GpuMib() - 5632)));
  EXPECT_THAT(machine_.env(b), Not(Contains("CUDA_VISIBLE_DEVICES=1")));
  for (const std::string& var : machine_.env(b)) EXPECT_FALSE(var.starts_with("CUDA_MPS_")) << var;
  // A job with a memory request is bounded by it (the OOM watchdog's limit).
  const JobId c = Submit(R"("script": "train", "gpus": 1, "memory_mib": 4000)");
  EXPECT_EQ(State(c), JobState::kQueued) << "two jobs per GPU";
  machine_.Exit(a, 0);
  Step();
  ASSERT_EQ(State(c), JobState::kRunning) << Record(c).reason;
  EXPECT_THAT(machine_.env(c), Contains("DLSCHED_GPU_MEMORY_LIMIT_MIB=4000"));
}

TEST_F(DaemonSharingTest, UnderMpsNoTwoUsersShareAGpuAndEachGetsItsServer) {
  share_enforcer_ = ShareEnforcer::kMps;
  StartDaemon("1x1xV100");
  const JobId a = SubmitAs("ann", kLstm);
  ASSERT_EQ(State(a), JobState::kRunning);
  const JobId bob = SubmitAs("bob", kLstm);
  EXPECT_EQ(State(bob), JobState::kQueued) << "MPS would make bob's job wait for ann's";
  const JobId ann2 = SubmitAs("ann", kLstm);
  ASSERT_EQ(State(ann2), JobState::kRunning) << Record(ann2).reason;
  EXPECT_EQ(Record(ann2).placement, Record(a).placement);
  EXPECT_EQ(State(bob), JobState::kQueued);
  const std::string dir = (dir_ / "work").string() + "/mps/n0/0";
  const std::vector<std::string> env = machine_.env(ann2);
  EXPECT_THAT(env, Contains("CUDA_VISIBLE_DEVICES=0"));
  EXPECT_THAT(env, Contains("CUDA_MPS_PIPE_DIRECTORY=" + dir + "/pipe"));
  EXPECT_THAT(env, Contains("CUDA_MPS_LOG_DIRECTORY=" + dir + "/log"));
  EXPECT_THAT(env, Contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"));
  EXPECT_THAT(
      env, Contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" + std::to_string(GpuMib() - 5632) + "M"));
  EXPECT_THAT(env, Contains("DLSCHED_GPU_MEMORY_LIMIT_MIB=" + std::to_string(GpuMib() - 5632)));
  EXPECT_THAT(machine_.env(a),
              Contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=" + std::to_string(GpuMib()) + "M"));
  // Once ann's jobs have left, bob's runs.
  machine_.Exit(a, 0);
  machine_.Exit(ann2, 0);
  Step();
  EXPECT_EQ(State(bob), JobState::kRunning);
}

}  // namespace
}  // namespace dlsched::daemon
