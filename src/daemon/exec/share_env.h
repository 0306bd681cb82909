#pragma once

// What a job that shares a GPU sees, and how the daemon enforces sharing
// (`serve --share-enforcer`; docs/sharing.md, "Running it live"):
//   none  accounting only: the jobs run side by side on the same device index (the same
//         CUDA_VISIBLE_DEVICES), each told its memory bound (DLSCHED_GPU_MEMORY_LIMIT_MIB) so a
//         framework can cap itself; nothing stops a job going over it (as Kubernetes' KAI
//         scheduler and Slurm's shard GRES do).
//   mps   NVIDIA MPS: one MPS control daemon per GPU (MpsStartCommand), and each shared job its
//         GPU's MPS pipe and log directories, a pinned device memory limit and an active thread
//         percentage, which the driver enforces. MPS runs one server per Unix user at a time
//         and makes the others wait, so jobs of different users never share a GPU under it (the
//         live sharing knowledge puts each user in a sharing group of its own).
// Pure functions of their arguments except RunMpsCommand and FindOnPath.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"

namespace dlsched::daemon {

enum class ShareEnforcer { kNone, kMps };
std::string_view ShareEnforcerName(ShareEnforcer enforcer);  // "none", "mps"
// InvalidArgument for anything but "none" and "mps".
Result<ShareEnforcer> ParseShareEnforcer(std::string_view name);

// The MPS control daemon's program.
inline constexpr std::string_view kMpsControlProgram = "nvidia-cuda-mps-control";

// Where the MPS control daemon of GPU `gpu` of node `node` keeps its pipes and its logs:
// <workdir>/mps/<node>/<gpu>/{pipe,log}.
struct MpsDirs {
  std::string pipe;
  std::string log;
};
MpsDirs MpsDirsFor(const std::string& workdir, std::string_view node, int gpu);

// A shared job's part of its GPU, as the daemon chooses it at launch (docs/sharing.md).
struct GpuShare {
  std::string node;  // its node's name
  int gpu = 0;       // the node's GPU index
  int64_t memory_limit_mib = 0;
  int active_thread_percentage = 100;  // 1..100
};

// Sets a shared job's variables in `env` ("NAME=value", sorted by name), replacing any of the same
// name: DLSCHED_GPU_MEMORY_LIMIT_MIB always; under kMps also CUDA_MPS_PIPE_DIRECTORY and
// CUDA_MPS_LOG_DIRECTORY (its GPU's MpsDirs), CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=<N>M"),
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and CUDA_VISIBLE_DEVICES=0: the GPU's control daemon runs
// with that one GPU visible, so its clients see it as device 0 (MPS remaps devices; a client
// naming the GPU's own index would fail).
void AddShareEnv(const GpuShare& share, ShareEnforcer enforcer, const std::string& workdir,
                 std::vector<std::string>& env);

// A command the daemon runs to manage an MPS control daemon, and what it writes to its stdin.
struct MpsCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value", the complete environment
  std::string input;
};
// `<binary> -d`, with CUDA_VISIBLE_DEVICES=<gpu>, CUDA_DEVICE_ORDER=PCI_BUS_ID and the GPU's
// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, beside `path` (the daemon's PATH).
MpsCommand MpsStartCommand(const std::string& binary, const MpsDirs& dirs, int gpu,
                           std::string_view path);
// `echo quit | <binary>` with the GPU's pipe and log directories.
MpsCommand MpsQuitCommand(const std::string& binary, const MpsDirs& dirs, std::string_view path);

// Whether the control daemon of `dirs` runs: its pid file (<pipe>/nvidia-cuda-mps-control.pid)
// names a live process (a daemon restarted while jobs ran finds its control daemons still up).
bool MpsControlRunning(const MpsDirs& dirs);

// The first executable `name` in the directories of `path` (a PATH value), or "" when none.
std::string FindOnPath(std::string_view name, std::string_view path);
// Runs `command` to its end: IoError when it cannot start, or exits other than 0 (with its
// status).
Status RunMpsCommand(const MpsCommand& command);

// One MPS control daemon per GPU of a cluster of this machine (the local executor's), as
// `serve --share-enforcer mps` runs them. Not thread-safe.
class MpsControlDaemons {
 public:
  // `binary`: the control program (FindOnPath); `path`: the PATH its commands get.
  MpsControlDaemons(std::string binary, std::string workdir, std::string path)
      : binary_(std::move(binary)), workdir_(std::move(workdir)), path_(std::move(path)) {}
  // For every GPU of `cluster`: creates its MpsDirs (readable by all, for jobs run as other
  // accounts) and starts its control daemon unless one runs there already (a daemon restarted
  // while jobs ran). Stops at the first failure.
  Status Start(const Cluster& cluster);
  // Quits the control daemons Start started or found; tries every one, returns the first error.
  Status Stop();

 private:
  std::string binary_;
  std::string workdir_;
  std::string path_;
  std::vector<MpsDirs> running_;
};

}  // namespace dlsched::daemon
