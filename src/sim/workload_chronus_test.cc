#include "sim/workload_chronus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sim/workload.h"

namespace dlsched::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR "../shared/traces"
#endif

constexpr char kHeader[] =
    "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
    "expect_value_list,best_effort,job_type\n";

// Writes `content` to a file unique to the running test; removes it afterwards.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("dlsched_chronus_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".csv");
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(ChronusReaderTest, MapsColumnsQosAndMinutes) {
  const TempFile file(std::string(kHeader) +
                      "7,vc_a,4,100,6000,resnet101,50,8,120,10,0,strict\n"
                      "8,vc_b,1,90,300,alexnet,10,6,20-30-45,10-8-5,0,soft\n"
                      "\n"
                      "9,vc_a,2,95,1200,vgg16,20,3,95,10,1,best\n"
                      "10,vc_c,0,97,600,alexnet,30,2,40,10,0,strict\n");
  const Result<ParsedRows> rows = ReadChronusTrace(file.path(), {});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->jobs.size(), 4u);
  EXPECT_EQ(rows->skipped_rows, 0);

  const JobSpec& strict = rows->jobs[0];  // file order: LoadWorkload sorts later
  EXPECT_EQ(strict.name, "7");
  EXPECT_EQ(strict.user, "vc_a");
  EXPECT_EQ(strict.queue, "vc_a");
  EXPECT_EQ(strict.model, "resnet101");
  EXPECT_EQ(strict.num_gpus, 4);
  EXPECT_EQ(strict.submit_time, AtSeconds(100 * 60));
  EXPECT_EQ(strict.iterations, 6000);
  EXPECT_NEAR(ToSeconds(strict.ideal_duration()), 50 * 60, 1e-5);
  EXPECT_EQ(strict.qos, QosClass::kStrict);
  EXPECT_EQ(strict.deadline, AtSeconds((100 + 120) * 60));
  ASSERT_EQ(strict.utility_steps.size(), 1u);
  EXPECT_EQ(strict.utility_steps[0].first, Minutes(120));
  EXPECT_EQ(strict.utility_steps[0].second, 10);

  const JobSpec& soft = rows->jobs[1];
  EXPECT_EQ(soft.qos, QosClass::kSoft);
  EXPECT_EQ(soft.deadline, AtSeconds((90 + 20) * 60));  // the first (full-utility) deadline
  const std::vector<std::pair<Duration, double>> want_steps = {
      {Minutes(20), 10}, {Minutes(30), 8}, {Minutes(45), 5}};
  EXPECT_EQ(soft.utility_steps, want_steps);

  const JobSpec& best = rows->jobs[2];
  EXPECT_EQ(best.qos, QosClass::kBestEffort);
  EXPECT_FALSE(best.deadline.has_value());
  EXPECT_TRUE(best.utility_steps.empty());
  for (const JobSpec& gpu_job : {strict, soft, best}) {
    EXPECT_EQ(gpu_job.cpus, 0);  // unstated: the cluster's per-GPU defaults
    EXPECT_EQ(gpu_job.host_memory_mib, 0);
  }

  // A 0-GPU row is a CPU job of kChronusCpuJobCpus cores, with its QoS like any other.
  const JobSpec& cpu = rows->jobs[3];
  EXPECT_EQ(cpu.name, "10");
  EXPECT_EQ(cpu.num_gpus, 0);
  EXPECT_EQ(cpu.cpus, kChronusCpuJobCpus);
  EXPECT_EQ(cpu.host_memory_mib, 0);
  EXPECT_NEAR(ToSeconds(cpu.ideal_duration()), 30 * 60, 1e-5);
  EXPECT_EQ(cpu.qos, QosClass::kStrict);
  EXPECT_EQ(cpu.deadline, AtSeconds((97 + 40) * 60));
}

TEST(ChronusReaderTest, LoadWorkloadSortsAndShiftsDeadlinesWithSubmitTimes) {
  const TempFile file(std::string(kHeader) +
                      "0,vc_a,1,30,100,alexnet,10,1,25,10,0,strict\n"
                      "1,vc_a,1,10,100,alexnet,10,1,15,10,0,strict\n"
                      "2,vc_a,1,20,100,alexnet,10,1,20,10,1,best\n");
  const Result<Workload> w = LoadWorkload("chronus:" + file.path(), {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_EQ(w->jobs[0].name, "1");
  EXPECT_EQ(w->jobs[0].submit_time, kTimeZero);
  EXPECT_EQ(w->jobs[0].deadline, kTimeZero + Minutes(15));
  EXPECT_EQ(w->jobs[1].name, "2");
  EXPECT_EQ(w->jobs[2].name, "0");
  EXPECT_EQ(w->jobs[2].submit_time, kTimeZero + Minutes(20));
  EXPECT_EQ(w->jobs[2].deadline, kTimeZero + Minutes(45));
}

TEST(ChronusReaderTest, BadRowsNameFileAndLineOrAreSkipped) {
  struct Case {
    std::string name;
    std::string row;
    std::string want;  // a substring of the error
  };
  const std::vector<Case> cases = {
      {"gpus not a number", "1,vc,x,5,100,alexnet,10,1,20,10,0,strict", "bad num_gpu 'x'"},
      {"negative gpus", "1,vc,-1,5,100,alexnet,10,1,20,10,0,strict",
       "bad num_gpu '-1': want an integer >= 0"},
      {"few fields", "1,vc,1,5,100,alexnet,10,1,20,10,0", "expected 12 fields, got 11"},
      {"empty job id", ",vc,1,5,100,alexnet,10,1,20,10,0,strict", "empty job_id"},
      {"bad submit", "1,vc,1,soon,100,alexnet,10,1,20,10,0,strict", "bad submit_time 'soon'"},
      {"no iterations", "1,vc,1,5,0,alexnet,10,1,20,10,0,strict", "bad iterations '0'"},
      {"zero duration", "1,vc,1,5,100,alexnet,0,1,20,10,0,strict", "bad duration '0'"},
      {"unknown job type", "1,vc,1,5,100,alexnet,10,1,20,10,0,gold", "bad job_type 'gold'"},
      {"bad best_effort", "1,vc,1,5,100,alexnet,10,1,20,10,2,strict", "bad best_effort '2'"},
      {"best_effort contradicts type", "1,vc,1,5,100,alexnet,10,1,20,10,1,strict",
       "best_effort 1 contradicts job_type strict"},
      {"best type without flag", "1,vc,1,5,100,alexnet,10,1,20,10,0,best",
       "best_effort 0 contradicts job_type best"},
      {"strict with two deadlines", "1,vc,1,5,100,alexnet,10,1,20-30,10-8,0,strict",
       "a strict job has one deadline"},
      {"list lengths differ", "1,vc,1,5,100,alexnet,10,1,20-30,10,0,soft",
       "expect_time_list has 2 entries but expect_value_list has 1"},
      {"times not ascending", "1,vc,1,5,100,alexnet,10,1,30-20,10-8,0,soft", "ascending times"},
      {"equal times", "1,vc,1,5,100,alexnet,10,1,20-20,10-8,0,soft", "ascending times"},
      {"zero deadline", "1,vc,1,5,100,alexnet,10,1,0,10,0,strict", "minutes > 0"},
      {"empty list element", "1,vc,1,5,100,alexnet,10,1,20--30,10-8-5,0,soft",
       "bad expect_time_list '20--30'"},
      {"empty time list", "1,vc,1,5,100,alexnet,10,1,,10,0,strict", "bad expect_time_list"},
      {"bad value list", "1,vc,1,5,100,alexnet,10,1,20,ten,0,strict",
       "bad expect_value_list 'ten'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // The bad row is line 3, between two good rows.
    const TempFile file(std::string(kHeader) + "0,vc,1,1,100,alexnet,10,1,20,10,0,strict\n" +
                        c.row + "\n2,vc,1,2,100,alexnet,10,1,2,10,1,best\n");
    const Result<ParsedRows> strict = ReadChronusTrace(file.path(), {});
    ASSERT_FALSE(strict.ok());
    EXPECT_EQ(strict.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(strict.status().message(), HasSubstr(file.path() + ":3: "));
    EXPECT_THAT(strict.status().message(), HasSubstr(c.want));

    ReadOptions skip;
    skip.skip_bad_rows = true;
    const Result<ParsedRows> skipped = ReadChronusTrace(file.path(), skip);
    ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
    EXPECT_EQ(skipped->jobs.size(), 2u);
    EXPECT_EQ(skipped->skipped_rows, 1);
  }
}

TEST(ChronusReaderTest, HeaderProblemsAreNotSkippable) {
  ReadOptions skip;
  skip.skip_bad_rows = true;
  const TempFile missing("job_id,user,num_gpu,submit_time,iterations,model_name,duration\n");
  const Result<ParsedRows> r = ReadChronusTrace(missing.path(), skip);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(":1: missing column 'expect_time_list'"));

  const TempFile empty("\n\n");
  EXPECT_THAT(ReadChronusTrace(empty.path(), skip).status().message(), HasSubstr("empty file"));

  const Result<ParsedRows> absent = ReadChronusTrace("/nonexistent/chronus.csv", skip);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
}

TEST(ChronusReaderTest, ColumnsByNameInAnyOrderWithoutInterval) {
  const TempFile file(
      "job_type,best_effort,expect_value_list,expect_time_list,duration,model_name,iterations,"
      "submit_time,num_gpu,user,job_id,extra\n"
      "strict,0,10,30,15,vgg16,900,2,8,vc_z,42,ignored\n");
  const Result<ParsedRows> rows = ReadChronusTrace(file.path(), {});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->jobs.size(), 1u);
  EXPECT_EQ(rows->jobs[0].name, "42");
  EXPECT_EQ(rows->jobs[0].num_gpus, 8);
  EXPECT_EQ(rows->jobs[0].deadline, AtSeconds(32 * 60));
}

// The published traces: every row loads without --skip-bad-rows, the 0-GPU ones as CPU jobs,
// with the documented class mix.
TEST(ChronusPublishedTracesTest, ReadsAllThreeTraces) {
  const std::string dir = std::string(DLSCHED_TRACES_DIR) + "/chronus";
  if (!fs::exists(dir + "/trace_job_Philly_SLO.csv")) {
    GTEST_SKIP() << "traces not found at " << dir;
  }
  struct Case {
    std::string file;
    int cpu_jobs;
    std::map<QosClass, int> classes;
  };
  const std::vector<Case> cases = {
      {"trace_job_Philly_SLO.csv", 205, {{QosClass::kStrict, 30940}}},
      {"trace_job_Philly_MIX1.csv",
       184,
       {{QosClass::kStrict, 21724}, {QosClass::kBestEffort, 9216}}},
      {"trace_job_Philly_MIX2.csv",
       194,
       {{QosClass::kSoft, 18525}, {QosClass::kStrict, 9276}, {QosClass::kBestEffort, 3139}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = dir + "/" + c.file;
    const Result<Workload> w = LoadWorkload("chronus:" + path, {});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->skipped_rows, 0);
    EXPECT_EQ(w->jobs.size(), 30940u);
    std::map<QosClass, int> classes;
    int cpu_jobs = 0;
    Duration longest{0};
    for (const JobSpec& spec : w->jobs) {
      ++classes[spec.qos];
      if (spec.num_gpus == 0) {
        ++cpu_jobs;
        EXPECT_EQ(spec.cpus, kChronusCpuJobCpus);
      }
      EXPECT_EQ(spec.deadline.has_value(), spec.qos != QosClass::kBestEffort);
      // Chronus' deadlines give every job at least 1.1x its run time.
      if (spec.deadline) {
        ASSERT_GT(*spec.deadline - spec.submit_time, spec.ideal_duration());
      }
      longest = std::max(longest, spec.ideal_duration());
    }
    EXPECT_EQ(classes, c.classes);
    EXPECT_EQ(cpu_jobs, c.cpu_jobs);
    EXPECT_EQ(w->jobs.front().submit_time, kTimeZero);
    // Minutes: the last submission is two weeks in, the longest job runs 72 hours.
    EXPECT_NEAR(ToSeconds(w->jobs.back().submit_time) / 86400, 14.0, 0.1);
    EXPECT_NEAR(ToSeconds(longest) / 3600, 72.0, 0.1);
  }
}

}  // namespace
}  // namespace dlsched::sim
