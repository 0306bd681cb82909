#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/report.h"
#include "support/report_runs.h"

namespace dlsched::sim {
namespace {

using testing::SyntheticRun;

TEST(WriteJobsCsvTest, HeaderAndRows) {
  RunResult run;
  JobRecord done;
  done.id = JobId(3);
  done.name = "resnet, big";
  done.user = "alice";
  done.queue = "prod";
  done.num_gpus = 4;
  done.final_state = JobState::kSucceeded;
  done.submit_time = AtSeconds(10);
  done.first_start = AtSeconds(12.5);
  done.finish_time = AtSeconds(52.5);
  done.ideal_duration = Seconds(20);
  done.run_time = Seconds(40);
  done.preemptions = 1;
  done.pending_s_by_cause[static_cast<size_t>(PendingCause::kGpusBusy)] = 1;
  done.pending_s_by_cause[static_cast<size_t>(PendingCause::kFragmentation)] = 2;  // the largest
  JobRecord rejected;
  rejected.id = JobId(4);
  rejected.name = "j4";
  rejected.final_state = JobState::kRejected;
  rejected.submit_time = AtSeconds(11);
  rejected.reason = "asks \"8\" GPUs";
  run.jobs = {done, rejected};
  std::ostringstream out;
  ASSERT_TRUE(WriteJobsCsv(run, out).ok());
  EXPECT_EQ(out.str(),
            "job_id,name,user,queue,num_gpus,state,submit_s,start_s,finish_s,jct_s,queue_s,"
            "ideal_s,run_s,slowdown,preemptions,wait_cause,reason\n"
            "3,\"resnet, big\",alice,prod,4,succeeded,10.000,12.500,52.500,42.500,2.500,20.000,"
            "40.000,2.125,1,fragmentation,\n"
            "4,j4,,,0,rejected,11.000,,,,,0.000,0.000,,0,,\"asks \"\"8\"\" GPUs\"\n");
}

TEST(WriteJobsCsvTest, ReportsAFailedStream) {
  RunResult run = SyntheticRun("fifo", 5, 1, 1);
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteJobsCsv(run, out).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace dlsched::sim
