#include "daemon/exec/share_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

TEST(ShareEnvTest, EveryEnforcerParsesBackAndNothingElse) {
  for (ShareEnforcer e : {ShareEnforcer::kNone, ShareEnforcer::kMps}) {
    EXPECT_EQ(*ParseShareEnforcer(ShareEnforcerName(e)), e);
  }
  EXPECT_EQ(ParseShareEnforcer("MPS").status().code(), StatusCode::kInvalidArgument);
}

TEST(ShareEnvTest, WithoutAnEnforcerASharedJobIsOnlyToldItsBound) {
  std::vector<std::string> env = {"CUDA_VISIBLE_DEVICES=3", "DLSCHED_GPU_MEMORY_LIMIT_MIB=1",
                                  "PATH=/bin"};
  AddShareEnv({"n0000", 3, 6144, 50}, ShareEnforcer::kNone, "/w", env);
  EXPECT_THAT(
      env, ElementsAre("CUDA_VISIBLE_DEVICES=3", "DLSCHED_GPU_MEMORY_LIMIT_MIB=6144", "PATH=/bin"));
}

TEST(ShareEnvTest, UnderMpsASharedJobGetsItsGpusServerAndLimits) {
  std::vector<std::string> env = {"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=3",
                                  "PATH=/bin"};
  AddShareEnv({"n0000", 3, 6144, 50}, ShareEnforcer::kMps, "/w", env);
  EXPECT_THAT(env,
              ElementsAre("CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50",
                          "CUDA_MPS_LOG_DIRECTORY=/w/mps/n0000/3/log",
                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=6144M",
                          "CUDA_MPS_PIPE_DIRECTORY=/w/mps/n0000/3/pipe", "CUDA_VISIBLE_DEVICES=0",
                          "DLSCHED_GPU_MEMORY_LIMIT_MIB=6144", "PATH=/bin"));
}

TEST(ShareEnvTest, TheControlDaemonOfAGpuSeesOnlyThatGpu) {
  const MpsDirs dirs = MpsDirsFor("/w", "n0000", 2);
  const MpsCommand start = MpsStartCommand("/usr/bin/nvidia-cuda-mps-control", dirs, 2, "/bin");
  EXPECT_THAT(start.argv, ElementsAre("/usr/bin/nvidia-cuda-mps-control", "-d"));
  EXPECT_THAT(start.env, ElementsAre("CUDA_DEVICE_ORDER=PCI_BUS_ID",
                                     "CUDA_MPS_LOG_DIRECTORY=/w/mps/n0000/2/log",
                                     "CUDA_MPS_PIPE_DIRECTORY=/w/mps/n0000/2/pipe",
                                     "CUDA_VISIBLE_DEVICES=2", "PATH=/bin"));
  EXPECT_EQ(start.input, "");
  const MpsCommand quit = MpsQuitCommand("/usr/bin/nvidia-cuda-mps-control", dirs, "/bin");
  EXPECT_THAT(quit.argv, ElementsAre("/usr/bin/nvidia-cuda-mps-control"));
  EXPECT_THAT(quit.env, IsSupersetOf({"CUDA_MPS_PIPE_DIRECTORY=/w/mps/n0000/2/pipe"}));
  EXPECT_EQ(quit.input, "quit\n");
}

class ShareEnvFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("dlsched_share_env_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "bin");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A stand-in for the MPS control program: records its arguments, environment and input.
  std::string FakeControl(int exit_status) {
    const std::string path = (dir_ / "bin" / std::string(kMpsControlProgram)).string();
    std::ofstream(path) << "#!/bin/sh\necho \"$@\" > " << (dir_ / "args").string() << "\nenv > "
                        << (dir_ / "env").string() << "\ncat > " << (dir_ / "input").string()
                        << "\nexit " << exit_status << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  std::string Read(const char* name) const {
    std::ifstream in(dir_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::filesystem::path dir_;
};

TEST_F(ShareEnvFilesTest, TheControlProgramIsFoundOnPathAndRunWithItsInput) {
  EXPECT_EQ(FindOnPath(kMpsControlProgram, "/nonexistent:" + (dir_ / "bin").string()), "");
  const std::string binary = FakeControl(0);
  EXPECT_EQ(FindOnPath(kMpsControlProgram, "/nonexistent::" + (dir_ / "bin").string()), binary);
  const MpsDirs dirs = MpsDirsFor(dir_.string(), "n0000", 1);
  ASSERT_TRUE(RunMpsCommand(MpsQuitCommand(binary, dirs, "/usr/bin:/bin")).ok());
  EXPECT_EQ(Read("input"), "quit\n");
  EXPECT_NE(Read("env").find("CUDA_MPS_PIPE_DIRECTORY=" + dirs.pipe), std::string::npos);
  ASSERT_TRUE(RunMpsCommand(MpsStartCommand(binary, dirs, 1, "/usr/bin:/bin")).ok());
  EXPECT_EQ(Read("args"), "-d\n");
  EXPECT_NE(Read("env").find("CUDA_VISIBLE_DEVICES=1"), std::string::npos);

  EXPECT_FALSE(RunMpsCommand(MpsQuitCommand(FakeControl(3), dirs, "/bin")).ok());
  EXPECT_FALSE(RunMpsCommand(MpsQuitCommand((dir_ / "missing").string(), dirs, "/bin")).ok());
}

TEST_F(ShareEnvFilesTest, AControlDaemonRunsWhileItsPidFileNamesALiveProcess) {
  const MpsDirs dirs = MpsDirsFor(dir_.string(), "n0000", 0);
  EXPECT_FALSE(MpsControlRunning(dirs));
  std::filesystem::create_directories(dirs.pipe);
  std::ofstream(dirs.pipe + "/nvidia-cuda-mps-control.pid") << getpid() << "\n";
  EXPECT_TRUE(MpsControlRunning(dirs));
  std::ofstream(dirs.pipe + "/nvidia-cuda-mps-control.pid") << "0\n";
  EXPECT_FALSE(MpsControlRunning(dirs));
}

// The daemon's MPS management, with a stand-in for the control program (no GPU here): one
// control daemon per GPU, each seeing only its GPU; one that runs already is left alone; Stop
// quits each through its own pipe directory.
TEST_F(ShareEnvFilesTest, OneControlDaemonPerGpuIsStartedAndQuit) {
  const std::string binary = (dir_ / "bin" / std::string(kMpsControlProgram)).string();
  std::ofstream(binary) << "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES $CUDA_MPS_PIPE_DIRECTORY $*\" "
                           ">> "
                        << (dir_ / "calls").string() << "\ncat >> " << (dir_ / "input").string()
                        << "\n";
  chmod(binary.c_str(), 0755);
  const std::string workdir = (dir_ / "work").string();
  // GPU 1's control daemon runs already (this process stands in for it).
  const MpsDirs running = MpsDirsFor(workdir, "n0", 1);
  std::filesystem::create_directories(running.pipe);
  std::ofstream(running.pipe + "/nvidia-cuda-mps-control.pid") << getpid() << "\n";

  const Cluster cluster = testing::MakeCluster("1x3xV100");
  ASSERT_EQ(cluster.node(NodeId(0)).name, "n0");
  MpsControlDaemons mps(binary, workdir, "/usr/bin:/bin");
  ASSERT_TRUE(mps.Start(cluster).ok());
  EXPECT_EQ(Read("calls"),
            "0 " + workdir + "/mps/n0/0/pipe -d\n2 " + workdir + "/mps/n0/2/pipe -d\n");
  EXPECT_TRUE(std::filesystem::is_directory(workdir + "/mps/n0/2/log"));
  ASSERT_TRUE(mps.Stop().ok());
  EXPECT_EQ(Read("input"), "quit\nquit\nquit\n");
}

}  // namespace
}  // namespace dlsched::daemon
