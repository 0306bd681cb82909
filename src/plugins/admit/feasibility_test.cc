#include "plugins/admit/feasibility.h"

#include <gtest/gtest.h>

#include "support/builders.h"
#include "support/world.h"

namespace dlsched {
namespace {

using testing::MakeJob;
using testing::World;

TEST(FeasibilityAdmitTest, Table) {
  // Two V100 nodes (one with NVLink) and one K80 node.
  World world("2x4xV100+1x8xK80", 8, {"nvlink=true"});
  const SchedulingContext ctx = world.Context();
  FeasibilityAdmit admit;
  const struct {
    const char* name;
    Job job;
    const char* error;  // "" = admitted
  } kCases[] = {
      {"fits the largest pool", MakeJob(1).Gpus(8).Build(), ""},
      {"larger than any one type", MakeJob(2).Gpus(9).Build(),
       "needs 9 GPUs; the largest pool of one GPU type has 8"},
      {"unknown type", MakeJob(3).GpuType("A100").Build(),
       "needs GPU type A100; the cluster has none"},
      {"selector with room", MakeJob(4).Gpus(4).Selector("nvlink=true").Build(), ""},
      {"selector too small", MakeJob(5).Gpus(5).Selector("nvlink=true").Build(),
       "needs 5 GPUs on nodes labelled nvlink=true; the cluster has 4 of one type there"},
      {"selector and type disagree", MakeJob(6).GpuType("K80").Selector("nvlink=true").Build(),
       "needs 1 GPU on nodes labelled nvlink=true; the cluster has 0 of one type there"},
      {"selector matches nothing", MakeJob(7).Selector("gpu=H100").Build(),
       "needs 1 GPU on nodes labelled gpu=H100; the cluster has 0 of one type there"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const Fit fit = admit.Admit(JobView(c.job, kTimeZero), ctx);
    EXPECT_EQ(fit.ok, std::string(c.error).empty());
    EXPECT_EQ(fit.reason, c.error);
  }
}

}  // namespace
}  // namespace dlsched
