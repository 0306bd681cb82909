#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

// The cell `index` (from 0) of a CSV row without quoted cells.
std::string CellOf(const std::string& row, int index) {
  size_t at = 0;
  for (int comma = 0; comma < index; ++comma) at = row.find(',', at) + 1;
  return row.substr(at, row.find(',', at) - at);
}

std::string AsPrintf(double seconds) {
  char text[400];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  return text;
}

// Seconds are written as printf's "%.3f" writes them: correctly rounded, halves to even (1/16
// s and 3/16 s are exact halves at the third decimal), signed, at any magnitude: submit times
// (whole microseconds) and slowdowns (any double) chosen to hit halves and near-halves, then
// 20,000 drawn at random.
TEST(WriteJobsCsvTest, SecondsAsPrintfWritesThem) {
  std::vector<std::pair<int64_t, int64_t>> submit_and_jct = {
      {0, 1},
      {1, 3},
      {499, 7},
      {500, 1000},
      {1500, 62500},
      {62500, 187500},
      {187500, 1},
      {2562500, 999},
      {-62500, 5},
      {-1, 1},
      {123456789, 10},
      {1062500, 16},
      {999999999999, 999999999999999},
      {4000000000000000000, 3},
      {999999999999999999, 1'000'000'000'000'000'000}};
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t scale = int64_t{1} << (random() % 62);
    submit_and_jct.emplace_back(static_cast<int64_t>(random() % scale) - scale / 4,
                                static_cast<int64_t>(random() % scale) + 1);
  }
  RunResult run;
  for (const auto& [submit_us, jct_us] : submit_and_jct) {
    JobRecord job;
    job.id = JobId(static_cast<uint32_t>(run.jobs.size()));
    job.final_state = JobState::kSucceeded;
    job.submit_time = Timestamp(Duration(submit_us));
    job.first_start = job.submit_time;
    job.finish_time = Timestamp(Duration(submit_us + jct_us % (int64_t{1} << 61)));
    job.ideal_duration = Duration(1 + static_cast<int64_t>(random() % 1000000007));
    run.jobs.push_back(job);
  }
  std::ostringstream out;
  ASSERT_TRUE(WriteJobsCsv(run, out).ok());
  std::istringstream rows(out.str());
  std::string row;
  std::getline(rows, row);  // the header
  for (const JobRecord& job : run.jobs) {
    ASSERT_TRUE(std::getline(rows, row));
    EXPECT_EQ(CellOf(row, 6), AsPrintf(ToSeconds(job.submit_time))) << row;
    EXPECT_EQ(CellOf(row, 13), AsPrintf(ToSeconds(job.jct()) / ToSeconds(job.ideal_duration)))
        << row;
  }
}

TEST(WriteJobsCsvTest, ReportsAFailedStream) {
  RunResult run = SyntheticRun("fifo", 5, 1, 1);
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteJobsCsv(run, out).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace dlsched::sim
