#include "sim/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/cpu_sensitivity.h"
#include "sim/workload_synthetic.h"

namespace dlsched::sim {
namespace {

namespace fs = std::filesystem;

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR "../shared/traces"
#endif

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        fs::temp_directory_path() / ("dlsched_workload_" + std::string(info->test_suite_name()) +
                                     "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  // Writes `content` to <dir>/<name> and returns the path.
  std::string Write(const std::string& name, const std::string& content) const {
    const fs::path file = path_ / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

Workload MustLoad(const std::string& spec, const ReadOptions& options = {}) {
  Result<Workload> w = LoadWorkload(spec, options);
  EXPECT_TRUE(w.ok()) << spec << ": " << w.status().ToString();
  return w.ok() ? std::move(w).value() : Workload{};
}

double SubmitS(const JobSpec& spec) { return ToSeconds(spec.submit_time); }

void ExpectSameSpec(const JobSpec& a, const JobSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.queue, b.queue);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.num_gpus, b.num_gpus);
  EXPECT_EQ(a.gpu_type, b.gpu_type);
  EXPECT_EQ(a.submit_time, b.submit_time);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.ref_iters_per_s, b.ref_iters_per_s);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.deadline, b.deadline);
  EXPECT_EQ(a.qos, b.qos);
  EXPECT_EQ(a.memory_mib, b.memory_mib);
  EXPECT_EQ(a.runtime_estimate, b.runtime_estimate);
}

// ---------------------------------------------------------------------------------------------
// philly:

constexpr char kPhillyHeader[] = "timestamp,duration,num_gpus,gpu_time,cluster\n";

// A file whose line 3 is bad (between two good rows) fails naming `path:3` and `want`; with
// skip_bad_rows the two good rows load and the bad one is counted.
void ExpectLine3FailsUnlessSkipped(const std::string& workload, const std::string& path,
                                   const std::string& want) {
  Result<Workload> w = LoadWorkload(workload, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message().rfind(path + ":3: ", 0), 0u) << w.status().message();
  EXPECT_NE(w.status().message().find(want), std::string::npos) << w.status().message();

  ReadOptions skip;
  skip.skip_bad_rows = true;
  const Workload kept = MustLoad(workload, skip);
  EXPECT_EQ(kept.jobs.size(), 2u);
  EXPECT_EQ(kept.skipped_rows, 1);
  EXPECT_EQ(kept.excluded_rows, 0);
}

TEST(PhillyReaderTest, SortsStablyAndShiftsToZero) {
  TempDir dir;
  const std::string path =
      dir.Write("philly.csv", std::string(kPhillyHeader) +
                                  "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                  "2017-10-09 06:13:03,2951.0,4,11804.0,6214e9\n"
                                  "\n"
                                  "2017-10-09 07:01:55,10,2,20,aaaaaa\n"
                                  "2017-10-09 06:13:00,5.5,1,5.5,6214e9\n");
  const Workload w = MustLoad("philly:" + path);
  EXPECT_EQ(w.source, "philly:" + path);
  EXPECT_EQ(w.skipped_rows, 0);
  ASSERT_EQ(w.jobs.size(), 4u);
  // Names are 1-based data row numbers (the blank line still counts as a line).
  const std::vector<std::string> names = {"5", "2", "1", "4"};
  const std::vector<double> submits = {0, 3, 2935, 2935};
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(w.jobs[i].name, names[i]);
    EXPECT_DOUBLE_EQ(SubmitS(w.jobs[i]), submits[i]);
    EXPECT_EQ(w.jobs[i].ref_iters_per_s, 1.0);
  }
  EXPECT_EQ(w.jobs[1].queue, "6214e9");
  EXPECT_EQ(w.jobs[1].num_gpus, 4);
  EXPECT_EQ(w.jobs[1].iterations, 2951.0);
  EXPECT_EQ(w.jobs[1].ideal_duration(), Seconds(2951));
  EXPECT_EQ(w.jobs[0].iterations, 5.5);
  EXPECT_EQ(w.jobs[3].queue, "aaaaaa");  // same time as row 1: file order kept
}

TEST(PhillyReaderTest, TimestampsAreUtcAcrossCalendarBoundaries) {
  TempDir dir;
  const std::string path = dir.Write("philly.csv", std::string(kPhillyHeader) +
                                                       "2016-02-28 23:59:59,1,1,1,a\n"
                                                       "2016-03-01 00:00:00,1,1,1,a\n"
                                                       "2017-12-31 23:59:59,1,1,1,a\n"
                                                       "2018-01-01 00:00:00,1,1,1,a\n");
  const Workload w = MustLoad("philly:" + path);
  ASSERT_EQ(w.jobs.size(), 4u);
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[1]), 86400 + 1);  // 2016 is a leap year
  // 2016-02-28 23:59:59 -> 2017-12-31 23:59:59: 672 days.
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[2]), 672.0 * 86400);
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[3]), 672.0 * 86400 + 1);
}

struct BadRowCase {
  std::string name;
  std::string row;
  std::string want;  // substring of the message after "<path>:3: "
};

TEST(PhillyReaderTest, BadRowsNameFileAndLine) {
  const std::vector<BadRowCase> cases = {
      {"zero gpus", "2017-10-09 07:01:55,66.0,0,0,a", "bad num_gpus '0'"},
      {"negative gpus", "2017-10-09 07:01:55,66.0,-2,0,a", "bad num_gpus '-2'"},
      {"fractional gpus", "2017-10-09 07:01:55,66.0,1.5,0,a", "bad num_gpus '1.5'"},
      {"bad timestamp", "2017-13-09 07:01:55,66.0,1,66,a", "bad timestamp '2017-13-09 07:01:55'"},
      {"feb 30", "2017-02-30 07:01:55,66.0,1,66,a", "bad timestamp"},
      {"short timestamp", "2017-10-09,66.0,1,66,a", "bad timestamp"},
      {"zero duration", "2017-10-09 07:01:55,0,1,0,a", "bad duration '0'"},
      {"nan duration", "2017-10-09 07:01:55,nan,1,0,a", "bad duration 'nan'"},
      {"text duration", "2017-10-09 07:01:55,long,1,0,a", "bad duration 'long'"},
      {"too few fields", "2017-10-09 07:01:55,66.0,1", "expected 5 fields, got 3"},
      {"too many fields", "2017-10-09 07:01:55,66.0,1,66,a,b", "expected 5 fields, got 6"},
  };
  TempDir dir;
  for (const BadRowCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        dir.Write("bad.csv", std::string(kPhillyHeader) + "2017-10-09 07:01:55,66.0,1,66.0,a\n" +
                                 c.row + "\n2017-10-09 07:01:55,66.0,1,66.0,a\n");
    ExpectLine3FailsUnlessSkipped("philly:" + path, path, c.want);
  }
}

TEST(PhillyReaderTest, HeaderProblemsAreNotSkippable) {
  TempDir dir;
  ReadOptions skip;
  skip.skip_bad_rows = true;
  const std::string no_cluster = dir.Write("a.csv", "timestamp,duration,num_gpus\n");
  Result<Workload> w = LoadWorkload("philly:" + no_cluster, skip);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), no_cluster + ":1: missing column 'cluster'");
  const std::string empty = dir.Write("b.csv", "");
  w = LoadWorkload("philly:" + empty, skip);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("empty file"), std::string::npos);
}

TEST(PhillyReaderTest, SkipCountsEveryBadRowAndMaxJobsTruncatesAfterSorting) {
  TempDir dir;
  const std::string path = dir.Write("p.csv", std::string(kPhillyHeader) +
                                                  "2017-10-09 00:00:30,1,1,1,a\n"
                                                  "garbage\n"
                                                  "2017-10-09 00:00:10,1,0,1,a\n"
                                                  "2017-10-09 00:00:20,1,1,1,a\n"
                                                  "2017-10-09 00:00:00,x,1,1,a\n"
                                                  "2017-10-09 00:00:40,1,1,1,a\r\n");
  ReadOptions options;
  options.skip_bad_rows = true;
  options.max_jobs = 2;
  const Workload w = MustLoad("philly:" + path, options);
  EXPECT_EQ(w.skipped_rows, 3);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].name, "4");
  EXPECT_EQ(w.jobs[1].name, "1");
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[1]), 10);
}

// ---------------------------------------------------------------------------------------------
// Spec strings and files

TEST(LoadWorkloadTest, RejectsUnknownPrefixesAndMissingFiles) {
  Result<Workload> w = LoadWorkload("borg:x.csv", {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  for (const char* prefix : {"philly:", "gavel:", "tiresias:", "alibaba:", "csv:", "synthetic"}) {
    EXPECT_NE(w.status().message().find(prefix), std::string::npos) << prefix;
  }
  w = LoadWorkload("philly:", {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  w = LoadWorkload("csv", {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);

  TempDir dir;
  const std::string missing = dir.path() + "/nope.csv";
  for (const std::string format : {"philly:", "gavel:", "tiresias:", "alibaba:", "csv:"}) {
    SCOPED_TRACE(format);
    w = LoadWorkload(format + missing, {});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
    EXPECT_NE(w.status().message().find(missing), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// alibaba:

constexpr std::string_view kAlibabaHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST(AlibabaReaderTest, OneJobPerPodThatRanCpuOnlyPodsIncluded) {
  TempDir dir;
  const std::string path =
      dir.Write("pods.csv", std::string(kAlibabaHeader) +
                                "pod-a,12000,16384,1,1000,,LS,Running,500,4100,600\n"
                                "pod-cpu,4000,8192,0,0,,BE,Running,400,900,400\n"  // a CPU job
                                "pod-b,6000,12288,1,460,V100M16|V100M32,BE,Failed,300,1300,350\r\n"
                                "\n"
                                "pod-pending,8000,8192,1,1000,,BE,Pending,700,800,\n"  // never ran
                                "pod-queued,8000,8192,1,1000,,BE,Pending,700,800,750\n"
                                "pod-cpu-pending,8000,8192,0,0,,BE,Pending,700,800,\n"
                                "pod-c,64000,262144,8,1000,G2,Guaranteed,Succeeded,300,7500,3900\n"
                                "pod-d,1500,0,1,1,,Burstable,Succeeded,800,801,800\n");
  const Workload w = MustLoad("alibaba:" + path);
  EXPECT_EQ(w.skipped_rows, 0);
  EXPECT_EQ(w.excluded_rows, 3);
  struct Want {
    const char* name;
    double submit_s;
    int num_gpus;
    double run_s;
    int priority;
    int64_t memory_mib;
    int cpus;
    int64_t host_memory_mib;
  };
  // Sorted by creation time (file order among equals), shifted so the first is at 0.
  const std::vector<Want> want = {
      {"pod-b", 0, 1, 950, 0, 7537, 6, 12288},  // ceil(460 / 1000 x 16384) = ceil(7536.64)
      {"pod-c", 0, 8, 3600, 1, 0, 64, 262144},
      {"pod-cpu", 100, 0, 500, 0, 0, 4, 8192},
      {"pod-a", 200, 1, 3500, 1, 0, 12, 16384},
      {"pod-d", 500, 1, 1, 0, 17, 2, 0},  // ceil(16.384); ceil(1.5) cores; memory unstated
  };
  ASSERT_EQ(w.jobs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    const JobSpec& spec = w.jobs[i];
    EXPECT_EQ(spec.name, want[i].name);
    EXPECT_DOUBLE_EQ(SubmitS(spec), want[i].submit_s);
    EXPECT_EQ(spec.num_gpus, want[i].num_gpus);
    EXPECT_DOUBLE_EQ(spec.iterations, want[i].run_s);
    EXPECT_DOUBLE_EQ(spec.ref_iters_per_s, 1.0);
    EXPECT_EQ(spec.ideal_duration(), Seconds(want[i].run_s));
    EXPECT_EQ(spec.priority, want[i].priority);
    EXPECT_EQ(spec.memory_mib, want[i].memory_mib);
    EXPECT_EQ(spec.cpus, want[i].cpus);
    EXPECT_EQ(spec.host_memory_mib, want[i].host_memory_mib);
    EXPECT_EQ(spec.gpu_type, "");  // gpu_spec is ignored
  }
}

TEST(AlibabaReaderTest, BadRowsNameFileAndLine) {
  const std::vector<BadRowCase> cases = {
      {"text gpus", "p,1,1,two,1000,,LS,Running,0,10,0", "bad num_gpu 'two'"},
      {"negative gpus", "p,1,1,-1,1000,,LS,Running,0,10,0", "bad num_gpu '-1'"},
      {"milli above one gpu", "p,1,1,1,1500,,LS,Running,0,10,0", "bad gpu_milli '1500'"},
      {"zero milli on one gpu", "p,1,1,1,0,,LS,Running,0,10,0", "bad gpu_milli '0'"},
      {"unknown qos", "p,1,1,1,1000,,Gold,Running,0,10,0", "bad qos 'Gold'"},
      {"unknown phase", "p,1,1,1,1000,,LS,Lost,0,10,0", "bad pod_phase 'Lost'"},
      {"text creation", "p,1,1,1,1000,,LS,Running,soon,10,0", "bad creation_time 'soon'"},
      {"empty deletion", "p,1,1,1,1000,,LS,Running,0,,0", "bad deletion_time ''"},
      {"text scheduled", "p,1,1,1,1000,,LS,Running,0,10,x", "bad scheduled_time 'x'"},
      {"deleted before scheduled", "p,1,1,1,1000,,LS,Failed,0,10,20",
       "deletion_time 10 is before scheduled_time 20"},
      {"no run time", "p,1,1,1,1000,,LS,Failed,0,20,20", "no work"},
      {"empty name", ",1,1,1,1000,,LS,Running,0,10,0", "empty name"},
      {"too few fields", "p,1,1,1,1000,,LS,Running,0,10", "expected 11 fields, got 10"},
      {"text cpu_milli", "p,many,1,1,1000,,LS,Running,0,10,0", "bad cpu_milli 'many'"},
      {"negative cpu_milli", "p,-1,1,1,1000,,LS,Running,0,10,0",
       "bad cpu_milli '-1': want an integer in 0..1000000000"},
      {"cpu_milli above a million cores", "p,1000000001,1,1,1000,,LS,Running,0,10,0",
       "bad cpu_milli '1000000001'"},
      {"negative memory", "p,1,-5,1,1000,,LS,Running,0,10,0", "bad memory_mib '-5'"},
      {"CPU pod without CPUs", "p,0,1024,0,0,,LS,Running,0,10,0",
       "a job with no GPUs (a CPU job) must request cpus"},
  };
  TempDir dir;
  for (const BadRowCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string good = "ok,1,1,1,1000,,LS,Running,0,10,0\n";
    const std::string path =
        dir.Write("bad.csv", std::string(kAlibabaHeader) + good + c.row + "\n" + good);
    ExpectLine3FailsUnlessSkipped("alibaba:" + path, path, c.want);
  }
}

TEST(AlibabaReaderTest, PodListWithoutTimesIsRejectedNamingTheMissingColumns) {
  TempDir dir;
  // The layout of openb_pod_list_multigpu50.csv.
  const std::string path = dir.Write("multigpu50.csv",
                                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                     "openb-pod-0000,12000,16384,1,1000\n");
  ReadOptions skip;
  skip.skip_bad_rows = true;  // a header problem is never skipped
  Result<Workload> w = LoadWorkload("alibaba:" + path, skip);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message().rfind(path + ":1: missing columns qos, pod_phase, creation_time, "
                                              "deletion_time, scheduled_time",
                                       0),
            0u)
      << w.status().message();
  const std::string other = dir.Write("no_cpus.csv",
                                      "name,num_gpu,gpu_milli,qos,pod_phase,creation_time,"
                                      "deletion_time,scheduled_time\n");
  Result<Workload> no_cpus = LoadWorkload("alibaba:" + other, {});
  ASSERT_FALSE(no_cpus.ok());
  EXPECT_EQ(no_cpus.status().message(), other +
                                            ":1: missing columns cpu_milli, memory_mib: an "
                                            "Alibaba pod list needs the pods' requests, QoS, "
                                            "phase and times");
}

// ---------------------------------------------------------------------------------------------
// gavel:

TEST(GavelReaderTest, ReadsMsrLayout) {
  TempDir dir;
  const std::string path =
      dir.Write("6214e9.trace",
                "ResNet-50 (batch size 64)\tcmd a\t-step\t1\t14612\t100.500000\t2\n"
                "A3C\tcmd b\t-n\t0\t3000\t0.000000\t1\n"
                "LM (batch size 5)\tcmd c\t-step\t1\t77\t50\t8\n");
  const Workload w = MustLoad("gavel:" + path);
  ASSERT_EQ(w.jobs.size(), 3u);
  const JobSpec& a3c = w.jobs[0];
  EXPECT_EQ(a3c.name, "2");
  EXPECT_EQ(a3c.model, "A3C");
  EXPECT_EQ(a3c.batch_size, 0);
  EXPECT_EQ(a3c.queue, "6214e9");
  const JobSpec& lm = w.jobs[1];
  EXPECT_EQ(lm.model, "LM");
  EXPECT_EQ(lm.batch_size, 5);
  EXPECT_EQ(lm.num_gpus, 8);
  EXPECT_DOUBLE_EQ(SubmitS(lm), 50);
  const JobSpec& resnet = w.jobs[2];
  EXPECT_EQ(resnet.name, "1");
  EXPECT_EQ(resnet.model, "ResNet-50");
  EXPECT_EQ(resnet.batch_size, 64);
  EXPECT_EQ(resnet.num_gpus, 2);
  EXPECT_EQ(resnet.iterations, 14612);
  EXPECT_EQ(resnet.ref_iters_per_s, 1.0);  // placeholder; the Gavel model has the real rate
  EXPECT_DOUBLE_EQ(SubmitS(resnet), 100.5);
  EXPECT_EQ(resnet.priority, 0);
}

TEST(GavelReaderTest, ReadsPhysicalClusterLayout) {
  TempDir dir;
  const std::string path = dir.Write(
      "small.trace",
      "ResNet-50 (batch size 64)\tcmd\timage_classification/imagenet\t--num_minibatches\t1\t2931"
      "\t4\t2.6\t-1.000000\t30\n"
      "Transformer (batch size 16)\tcmd\ttranslation\t-step\t1\t11005\t1\t1\t-1.000000\t0\n");
  const Workload w = MustLoad("gavel:" + path);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].model, "Transformer");
  EXPECT_EQ(w.jobs[0].priority, 1);
  EXPECT_EQ(w.jobs[0].queue, "");
  EXPECT_EQ(w.jobs[1].num_gpus, 4);
  EXPECT_EQ(w.jobs[1].iterations, 2931);
  EXPECT_EQ(w.jobs[1].priority, 3);  // round(2.6)
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[1]), 30);
}

TEST(GavelReaderTest, BadRows) {
  const std::vector<BadRowCase> cases = {
      {"other layout", "A3C\tc\t-n\t0\t3000\t0\t1\t1\t-1\t0", "expected 7 fields, got 10"},
      {"zero gpus", "A3C\tc\t-n\t0\t3000\t0\t0", "bad scale_factor '0'"},
      {"bad steps", "A3C\tc\t-n\t0\tmany\t0\t1", "bad total_steps 'many'"},
      {"bad arrival", "A3C\tc\t-n\t0\t10\tsoon\t1", "bad arrival_time 'soon'"},
      {"bad type", "ResNet (batch size x)\tc\t-n\t0\t10\t0\t1", "bad job_type"},
  };
  TempDir dir;
  for (const BadRowCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.Write("t.trace", "A3C\tc\t-n\t0\t3000\t0\t1\n\n" + c.row + "\n");
    Result<Workload> w = LoadWorkload("gavel:" + path, {});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().message().rfind(path + ":3: ", 0), 0u) << w.status().message();
    EXPECT_NE(w.status().message().find(c.want), std::string::npos) << w.status().message();
    ReadOptions skip;
    skip.skip_bad_rows = true;
    const Workload kept = MustLoad("gavel:" + path, skip);
    EXPECT_EQ(kept.jobs.size(), 1u);
    EXPECT_EQ(kept.skipped_rows, 1);
  }
  const std::string unknown_layout = dir.Write("u.trace", "A3C\tc\t3000\n");
  Result<Workload> w = LoadWorkload("gavel:" + unknown_layout, {});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(unknown_layout + ":1: expected 7 (msr) or 10"),
            std::string::npos);
}

TEST(GavelReaderTest, ReadsADirectoryOfTracesInNameOrder) {
  TempDir dir;
  dir.Write("traces/bbb.trace", "A3C\tc\t-n\t0\t10\t5\t1\n");
  dir.Write("traces/aaa.trace", "CycleGAN\tc\t-n\t0\t10\t5\t1\nA3C\tc\t-n\t0\t10\t1\t1\n");
  dir.Write("traces/notes.txt", "ignored");
  const Workload w = MustLoad("gavel:" + dir.path() + "/traces");
  ASSERT_EQ(w.jobs.size(), 3u);
  EXPECT_EQ(w.jobs[0].name, "aaa:2");
  EXPECT_EQ(w.jobs[1].name, "aaa:1");  // ties keep file-name order, then row order
  EXPECT_EQ(w.jobs[2].name, "bbb:1");
  EXPECT_EQ(w.jobs[2].queue, "bbb");
}

// ---------------------------------------------------------------------------------------------
// tiresias:

TEST(TiresiasReaderTest, DerivesSpeedFromIterationsAndDuration) {
  TempDir dir;
  const std::string path = dir.Write("60_job.csv",
                                     "job_id,num_gpu,submit_time,iterations,model_name,duration,"
                                     "interval\n"
                                     "0,1,10,606,vgg19,164,30\n"
                                     "1,8,40,133,vgg11,147,23\n");
  const Workload w = MustLoad("tiresias:" + path);
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[1].name, "1");
  EXPECT_EQ(w.jobs[1].model, "vgg11");
  EXPECT_EQ(w.jobs[1].num_gpus, 8);
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs[1]), 30);
  EXPECT_EQ(w.jobs[1].iterations, 133);
  EXPECT_DOUBLE_EQ(w.jobs[1].ref_iters_per_s, 133.0 / 147);
  EXPECT_EQ(w.jobs[1].ideal_duration(), Seconds(147));
  EXPECT_EQ(w.jobs[0].ideal_duration(), Seconds(164));

  const std::string bad = dir.Write("bad.csv",
                                    "job_id,num_gpu,submit_time,iterations,model_name,duration,"
                                    "interval\n"
                                    "0,1,10,606,vgg19,0,30\n");
  Result<Workload> r = LoadWorkload("tiresias:" + bad, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), bad + ":2: bad duration '0': want seconds > 0");
}

// ---------------------------------------------------------------------------------------------
// csv: (native)

TEST(NativeCsvReaderTest, ReadsAllColumnsInAnyOrder) {
  TempDir dir;
  const std::string path = dir.Write(
      "jobs.csv",
      "duration,num_gpus,job_id,user,queue,model,batch_size,gpu_type,deadline,qos_class,priority,"
      "memory_mib,iterations,submit_time,runtime_estimate\n"
      "3600,4,train-1,alice,research,ResNet-50,64,V100,7200,strict,2,16000,36000,100.5,5400\n"
      "60,1,,,,,,,,,,,,50,\n");
  const Workload w = MustLoad("csv:" + path);
  ASSERT_EQ(w.jobs.size(), 2u);
  const JobSpec& small = w.jobs[0];
  EXPECT_EQ(small.name, "2");  // no job_id: the data row number
  EXPECT_EQ(small.num_gpus, 1);
  EXPECT_EQ(small.iterations, 60);
  EXPECT_EQ(small.ref_iters_per_s, 1.0);
  EXPECT_EQ(small.deadline, std::nullopt);
  EXPECT_EQ(small.qos, QosClass::kBestEffort);
  EXPECT_EQ(small.submit_time, kTimeZero);
  EXPECT_EQ(small.runtime_estimate, std::nullopt);
  const JobSpec& big = w.jobs[1];
  EXPECT_EQ(big.name, "train-1");
  EXPECT_EQ(big.user, "alice");
  EXPECT_EQ(big.queue, "research");
  EXPECT_EQ(big.model, "ResNet-50");
  EXPECT_EQ(big.batch_size, 64);
  EXPECT_EQ(big.gpu_type, "V100");
  EXPECT_EQ(big.num_gpus, 4);
  EXPECT_EQ(big.qos, QosClass::kStrict);
  EXPECT_EQ(big.priority, 2);
  EXPECT_EQ(big.memory_mib, 16000);
  EXPECT_EQ(big.iterations, 36000);
  EXPECT_DOUBLE_EQ(big.ref_iters_per_s, 10);
  EXPECT_EQ(big.ideal_duration(), Hours(1));
  EXPECT_EQ(big.runtime_estimate, Minutes(90));
  EXPECT_DOUBLE_EQ(SubmitS(big), 50.5);
  ASSERT_TRUE(big.deadline.has_value());
  EXPECT_EQ(*big.deadline - big.submit_time, Hours(2));  // relative, shifted with the submit
}

TEST(NativeCsvReaderTest, HeaderErrors) {
  struct Case {
    std::string name;
    std::string header;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"unknown", "submit_time,num_gpus,duration,colour", ":1: unknown column 'colour'"},
      {"twice", "submit_time,num_gpus,duration,user,user", ":1: column 'user' appears twice"},
      {"missing", "submit_time,duration", ":1: missing required column 'num_gpus'"},
      {"empty name", "submit_time,num_gpus,,duration", ":1: empty column name at position 3"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.Write("h.csv", c.header + "\n");
    Result<Workload> w = LoadWorkload("csv:" + path, {});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(w.status().message().rfind(path + c.want, 0), 0u) << w.status().message();
  }
}

TEST(NativeCsvReaderTest, BadRowsNameFileAndLine) {
  const std::vector<BadRowCase> cases = {
      {"zero gpus, no cpus", "0,0,60,", "a job with no GPUs (a CPU job) must request cpus"},
      {"negative gpus", "0,-1,60,", "bad num_gpus '-1': want an integer >= 0"},
      {"empty required", "0,,60,", "empty num_gpus"},
      {"negative duration", "0,1,-5,", "bad duration '-5'"},
      {"bad submit", "soon,1,60,", "bad submit_time 'soon'"},
      {"bad qos", "0,1,60,urgent", "unknown qos_class 'urgent'"},
      {"field count", "0,1,60", "expected 4 fields, got 3"},
  };
  TempDir dir;
  for (const BadRowCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path =
        dir.Write("b.csv", "submit_time,num_gpus,duration,qos_class\n0,1,60,soft\n" + c.row + "\n");
    Result<Workload> w = LoadWorkload("csv:" + path, {});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().message().rfind(path + ":3: ", 0), 0u) << w.status().message();
    EXPECT_NE(w.status().message().find(c.want), std::string::npos) << w.status().message();
    ReadOptions skip;
    skip.skip_bad_rows = true;
    const Workload kept = MustLoad("csv:" + path, skip);
    EXPECT_EQ(kept.jobs.size(), 1u);
    EXPECT_EQ(kept.skipped_rows, 1);
    EXPECT_EQ(kept.jobs[0].qos, QosClass::kSoft);
  }
}

// cpus and host_memory_mib are the whole job's; a row with 0 GPUs is a CPU job and must state
// cpus; empty or 0 leaves them to the cluster's per-GPU defaults.
TEST(NativeCsvReaderTest, HostResourceColumnsAndCpuJobs) {
  TempDir dir;
  const std::string path = dir.Write("host.csv",
                                     "submit_time,num_gpus,duration,cpus,host_memory_mib\n"
                                     "0,2,60,24,196608\n"
                                     "1,0,60,8,\n"
                                     "2,1,60,,\n"
                                     "3,4,60,0,0\n");
  const Workload w = MustLoad("csv:" + path);
  ASSERT_EQ(w.jobs.size(), 4u);
  EXPECT_EQ(w.jobs[0].cpus, 24);
  EXPECT_EQ(w.jobs[0].host_memory_mib, 196608);
  EXPECT_EQ(w.jobs[1].num_gpus, 0);
  EXPECT_EQ(w.jobs[1].cpus, 8);
  EXPECT_EQ(w.jobs[1].host_memory_mib, 0);
  for (size_t i : {2u, 3u}) {
    EXPECT_EQ(w.jobs[i].cpus, 0);
    EXPECT_EQ(w.jobs[i].host_memory_mib, 0);
  }

  const std::vector<BadRowCase> cases = {
      {"negative cpus", "0,1,60,-1,", "bad cpus '-1': want an integer in 0..10000000"},
      {"too many cpus", "0,1,60,10000001,", "bad cpus '10000001'"},
      {"fractional cpus", "0,1,60,1.5,", "bad cpus '1.5'"},
      {"negative memory", "0,1,60,,-1",
       "bad host_memory_mib '-1': want an integer in 0..1125899906842624"},
      {"memory with a unit", "0,1,60,,8g", "bad host_memory_mib '8g'"},
      {"CPU job without cpus", "0,0,60,,1024", "a job with no GPUs (a CPU job) must request cpus"},
  };
  for (const BadRowCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string bad =
        dir.Write("bad.csv", "submit_time,num_gpus,duration,cpus,host_memory_mib\n0,1,60,,\n" +
                                 c.row + "\n0,1,60,,\n");
    ExpectLine3FailsUnlessSkipped("csv:" + bad, bad, c.want);
  }
}

TEST(NativeCsvReaderTest, ServiceRowsCarryTheirLoad) {
  TempDir dir;
  const std::string path = dir.Write("svc.csv",
                                     "submit_time,num_gpus,duration,kind,service_load\n"
                                     "0,8,86400,service,0:2;28800:8\n"
                                     "0,4,86400,service,\n"
                                     "0,1,60,training,\n");
  const Workload w = MustLoad("csv:" + path);
  ASSERT_EQ(w.jobs.size(), 3u);
  ASSERT_TRUE(w.jobs[0].is_service());
  EXPECT_EQ(FormatServiceLoad(*w.jobs[0].service), "0:2;28800:8");
  ASSERT_TRUE(w.jobs[1].is_service());
  EXPECT_TRUE(w.jobs[1].service->steps.empty());  // all its GPUs all day
  EXPECT_FALSE(w.jobs[2].is_service());

  const struct {
    const char* row;
    const char* want;
  } bad[] = {
      {"0,8,60,online,", "bad kind 'online': want training or service"},
      {"0,8,60,training,0:2", "service_load is for rows of kind service"},
      {"0,8,60,service,0:9", "needs 9 GPUs; want 0..8"},
      {"0,8,60,service,8h:2", "want SECONDS:GPUS"},
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(c.row);
    const std::string file = dir.Write(
        "bad.csv", std::string("submit_time,num_gpus,duration,kind,service_load\n") + c.row + "\n");
    Result<Workload> r = LoadWorkload("csv:" + file, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().rfind(file + ":2: ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

// ---------------------------------------------------------------------------------------------
// synthetic

TEST(SyntheticWorkloadTest, ServicesComeFirstAndLeaveTheTrainingJobsAsTheyWere) {
  const Workload plain = MustLoad("synthetic:jobs=200,gpus=64");
  const Workload with = MustLoad("synthetic:jobs=200,gpus=64,services=3,service_gpus=8");
  ASSERT_EQ(with.jobs.size(), 203u);
  for (size_t k = 0; k < 3; ++k) {
    const JobSpec& service = with.jobs[k];
    ASSERT_TRUE(service.is_service());
    EXPECT_EQ(service.name, "svc" + std::to_string(k + 1));
    EXPECT_EQ(service.num_gpus, 8);
    EXPECT_EQ(service.submit_time, kTimeZero);
    EXPECT_EQ(FormatServiceLoad(*service.service), "0:2;28800:8;72000:2");
    EXPECT_EQ(service.ideal_duration(),
              plain.jobs.back().submit_time.time_since_epoch() + Hours(24 * 7));
  }
  for (size_t i = 0; i < plain.jobs.size(); ++i) ExpectSameSpec(with.jobs[i + 3], plain.jobs[i]);
}

TEST(SyntheticWorkloadTest, SameOptionsGiveIdenticalJobs) {
  const Workload a = MustLoad("synthetic:jobs=500,seed=7,load=0.6,gpus=64,users=5");
  const Workload b = MustLoad("synthetic:jobs=500,seed=7,load=0.6,gpus=64,users=5");
  ASSERT_EQ(a.jobs.size(), 500u);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameSpec(a.jobs[i], b.jobs[i]);
  }
  const Workload c = MustLoad("synthetic:jobs=500,seed=8,load=0.6,gpus=64,users=5");
  size_t differing = 0;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    differing += a.jobs[i].iterations != c.jobs[i].iterations ||
                 a.jobs[i].submit_time != c.jobs[i].submit_time;
  }
  EXPECT_GT(differing, 450u);
}

TEST(SyntheticWorkloadTest, DefaultsAndShape) {
  const Workload w = MustLoad("synthetic");
  EXPECT_EQ(w.source, "synthetic");
  ASSERT_EQ(w.jobs.size(), 4000u);
  EXPECT_EQ(w.jobs.front().submit_time, kTimeZero);
  EXPECT_TRUE(std::is_sorted(w.jobs.begin(), w.jobs.end(), [](const JobSpec& a, const JobSpec& b) {
    return a.submit_time < b.submit_time;
  }));
  std::set<std::string> users, queues, names;
  for (const JobSpec& spec : w.jobs) {
    EXPECT_TRUE(ValidateJobSpec(spec).ok());
    users.insert(spec.user);
    queues.insert(spec.queue);
    names.insert(spec.name);
    EXPECT_GE(spec.priority, 0);
    EXPECT_LE(spec.priority, 2);
    EXPECT_LE(spec.ideal_duration(), Hours(7 * 24));
  }
  EXPECT_EQ(users.size(), 8u);
  EXPECT_EQ(queues.size(), 4u);
  EXPECT_EQ(names.size(), 4000u);
  EXPECT_NEAR(OfferedLoad(w.jobs, 128), 1.0, 0.01);
}

TEST(SyntheticWorkloadTest, StatisticsFollowPhilly) {
  SyntheticOptions options;
  options.jobs = 20000;
  options.seed = 3;
  options.load = 1.2;
  options.gpus = 256;
  const std::vector<JobSpec> jobs = GenerateSyntheticJobs(options);
  std::map<int, int> by_size;
  std::vector<double> run_times;
  int with_model = 0;
  for (const JobSpec& spec : jobs) {
    ++by_size[spec.num_gpus];
    run_times.push_back(ToSeconds(spec.ideal_duration()));
    with_model += !spec.model.empty();
  }
  const double n = static_cast<double>(jobs.size());
  EXPECT_NEAR(by_size[1] / n, 0.932, 0.015);  // philly.csv: 93.2% single-GPU
  for (const auto& [size, count] : by_size) {
    EXPECT_TRUE(size == 1 || size == 2 || size == 4 || size == 8 || size == 16 || size == 32)
        << size;
  }
  std::sort(run_times.begin(), run_times.end());
  const double median = run_times[run_times.size() / 2];
  EXPECT_GT(median, 600);  // philly.csv: 1,144 s
  EXPECT_LT(median, 2400);
  EXPECT_GT(run_times[run_times.size() * 99 / 100], 86400 / 2.0);  // a heavy tail
  EXPECT_NEAR(with_model / n, 0.6, 0.03);
  EXPECT_NEAR(OfferedLoad(jobs, 256), 1.2, 0.012);
}

TEST(SyntheticWorkloadTest, SmallClusterCapsJobSizes) {
  const Workload w = MustLoad("synthetic:jobs=3000,gpus=4,load=0.5");
  for (const JobSpec& spec : w.jobs) EXPECT_LE(spec.num_gpus, 4);
  EXPECT_NEAR(OfferedLoad(w.jobs, 4), 0.5, 0.005);
  const Workload one = MustLoad("synthetic:jobs=1");
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.jobs[0].submit_time, kTimeZero);
}

// mix=dataload is the Philly-like mix with data-loading models: same sizes, run times and
// arrivals for the same seed; models drawn by their mix weights; no host requests.
TEST(SyntheticWorkloadTest, DataLoadingMixKeepsThePhillyJobsAndDrawsModelsByWeight) {
  const Workload philly = MustLoad("synthetic:jobs=4000,seed=7,gpus=64");
  const Workload dataload = MustLoad("synthetic:mix=dataload,jobs=4000,seed=7,gpus=64");
  ASSERT_EQ(dataload.jobs.size(), philly.jobs.size());
  std::map<std::string, int> by_model;
  for (size_t i = 0; i < dataload.jobs.size(); ++i) {
    const JobSpec& a = philly.jobs[i];
    const JobSpec& b = dataload.jobs[i];
    ASSERT_EQ(b.num_gpus, a.num_gpus);
    ASSERT_EQ(b.submit_time, a.submit_time);
    ASSERT_EQ(b.iterations, a.iterations);
    ASSERT_EQ(b.user, a.user);
    ASSERT_EQ(b.cpus, 0);
    ASSERT_EQ(b.host_memory_mib, 0);
    ++by_model[b.model];
  }
  for (const DataLoadingModel& m : DataLoadingModels()) {
    SCOPED_TRACE(std::string(m.model));
    // Binomial: 4,000 draws at p <= 0.2 have a standard deviation of at most 25 jobs.
    EXPECT_NEAR(by_model[std::string(m.model)], 4000 * m.mix_weight, 100);
    by_model.erase(std::string(m.model));
  }
  EXPECT_TRUE(by_model.empty()) << by_model.begin()->first;
  EXPECT_TRUE(LoadWorkload("synthetic:mix=dataload,load=0.8,services=2", {}).ok());
  const Result<Workload> rate = LoadWorkload("synthetic:mix=dataload,rate=4", {});
  ASSERT_FALSE(rate.ok());
  EXPECT_NE(rate.status().message().find("'rate' does not apply to mix=dataload"),
            std::string::npos)
      << rate.status().message();
}

TEST(SyntheticWorkloadTest, RejectsBadOptions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"synthetic:jobs=0", "jobs=0"},           {"synthetic:load=-1", "load=-1"},
      {"synthetic:gpus=x", "gpus=x"},           {"synthetic:users=0", "users=0"},
      {"synthetic:colour=red", "colour"},       {"synthetic:jobs=5,jobs=6", "twice"},
      {"synthetic:jobs", "key=value"},          {"synthetic:seed=-3", "seed=-3"},
      {"synthetic:services=-1", "services=-1"}, {"synthetic:service_gpus=0", "service_gpus=0"},
  };
  for (const auto& [spec, want] : cases) {
    SCOPED_TRACE(spec);
    Result<Workload> w = LoadWorkload(spec, {});
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(w.status().message().find(want), std::string::npos) << w.status().message();
  }
  EXPECT_TRUE(LoadWorkload("synthetic:", {}).ok());
}

TEST(SyntheticWorkloadTest, MaxJobsKeepsTheFirstArrivals) {
  ReadOptions options;
  options.max_jobs = 10;
  const Workload w = MustLoad("synthetic:jobs=100", options);
  const Workload all = MustLoad("synthetic:jobs=100");
  ASSERT_EQ(w.jobs.size(), 10u);
  for (size_t i = 0; i < w.jobs.size(); ++i) ExpectSameSpec(w.jobs[i], all.jobs[i]);
}

TEST(OfferedLoadTest, GpuTimeOverSpanTimesGpus) {
  std::vector<JobSpec> jobs(2);
  jobs[0].num_gpus = 2;
  jobs[0].iterations = 100;
  jobs[1].num_gpus = 1;
  jobs[1].iterations = 200;
  jobs[1].ref_iters_per_s = 2;  // 100 s
  jobs[1].submit_time = AtSeconds(100);
  EXPECT_DOUBLE_EQ(OfferedLoad(jobs, 3), 300.0 / (100 * 3));
  jobs[1].submit_time = kTimeZero;
  EXPECT_EQ(OfferedLoad(jobs, 3), 0.0);
  EXPECT_EQ(OfferedLoad({}, 3), 0.0);
}

// ---------------------------------------------------------------------------------------------
// The published traces (skipped when shared/traces is absent)

TEST(PublishedTracesTest, ReadsTheWholePhillyTrace) {
  const std::string path = std::string(DLSCHED_TRACES_DIR) + "/pollux/philly.csv";
  if (!fs::exists(path)) GTEST_SKIP() << "traces not found at " << path;
  const Workload w = MustLoad("philly:" + path);
  ASSERT_EQ(w.jobs.size(), 82247u);
  EXPECT_EQ(w.skipped_rows, 0);
  EXPECT_EQ(w.jobs.front().submit_time, kTimeZero);
  EXPECT_EQ(w.jobs.front().name, "31567");  // 2017-09-04 10:30:41, 8 GPUs, VC 7f04ca
  EXPECT_EQ(w.jobs.front().num_gpus, 8);
  EXPECT_DOUBLE_EQ(SubmitS(w.jobs.back()), 9408690);  // .. 2017-12-22 08:02:11
  int single = 0;
  for (const JobSpec& spec : w.jobs) single += spec.num_gpus == 1;
  EXPECT_EQ(single, 76627);
}

TEST(PublishedTracesTest, ReadsGavelAndTiresiasTraces) {
  const std::string gavel = std::string(DLSCHED_TRACES_DIR) + "/gavel/traces";
  const std::string tiresias = std::string(DLSCHED_TRACES_DIR) + "/tiresias/60_job.csv";
  if (!fs::exists(gavel) || !fs::exists(tiresias)) {
    GTEST_SKIP() << "traces not found at " << DLSCHED_TRACES_DIR;
  }
  EXPECT_EQ(MustLoad("gavel:" + gavel + "/msr_seed0").jobs.size(), 15264u);
  EXPECT_EQ(MustLoad("gavel:" + gavel + "/physical_cluster").jobs.size(), 287u);
  EXPECT_EQ(MustLoad("tiresias:" + tiresias).jobs.size(), 60u);
}

TEST(PublishedTracesTest, ReadsTheAlibabaPodLists) {
  const std::string dir = std::string(DLSCHED_TRACES_DIR) + "/alibaba-gpu-v2023";
  if (!fs::exists(dir)) GTEST_SKIP() << "traces not found at " << dir;
  struct Case {
    const char* file;
    size_t jobs;     // pods that were scheduled (not Pending)
    int excluded;    // never-run pods
    int fractional;  // single-GPU pods with gpu_milli < 1000
    int cpu_jobs;    // CPU-only pods that ran
    int64_t cpus;    // their CPU requests summed, GPU pods' too
  };
  for (const Case& c : {Case{"openb_pod_list_default.csv", 7255, 897, 2573, 1052, 79457},
                        Case{"openb_pod_list_gpushare100.csv", 6943, 1209, 5891, 1052, 54607}}) {
    SCOPED_TRACE(c.file);
    const Workload w = MustLoad("alibaba:" + dir + "/" + c.file);
    ASSERT_EQ(w.jobs.size(), c.jobs);
    EXPECT_EQ(w.excluded_rows, c.excluded);
    EXPECT_EQ(w.skipped_rows, 0);
    EXPECT_EQ(w.jobs.front().submit_time, kTimeZero);
    int fractional = 0;
    int cpu_jobs = 0;
    int64_t cpus = 0;
    for (const JobSpec& spec : w.jobs) {
      fractional += spec.memory_mib > 0;
      cpu_jobs += spec.num_gpus == 0;
      cpus += spec.cpus;
    }
    EXPECT_EQ(fractional, c.fractional);
    EXPECT_EQ(cpu_jobs, c.cpu_jobs);
    EXPECT_EQ(cpus, c.cpus);
  }
  Result<Workload> multigpu = LoadWorkload("alibaba:" + dir + "/openb_pod_list_multigpu50.csv", {});
  ASSERT_FALSE(multigpu.ok());
  EXPECT_NE(multigpu.status().message().find("missing columns qos"), std::string::npos);
}

}  // namespace
}  // namespace dlsched::sim
