#include "dlsched/model/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace dlsched {
namespace {

using ::testing::HasSubstr;

TEST(ServiceLoadTest, NeedFollowsTheTimeOfDay) {
  Result<ServiceLoad> load = ParseServiceLoad("0:2;28800:8;72000:3");
  ASSERT_TRUE(load.ok()) << load.status().ToString();
  const struct {
    double at_s;
    int need;
    double next_change_s;
  } cases[] = {
      {0, 2, 28800},
      {28799, 2, 28800},
      {28800, 8, 72000},
      {71999, 8, 72000},
      {72000, 3, 86400},
      {86399, 3, 86400},
      {86400 + 30000, 8, 86400 + 72000},  // the next day repeats
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at_s);
    EXPECT_EQ(load->NeedAt(AtSeconds(c.at_s), 8), c.need);
    EXPECT_EQ(load->NextChangeAfter(AtSeconds(c.at_s)), AtSeconds(c.next_change_s));
  }
  EXPECT_EQ(FormatServiceLoad(*load), "0:2;28800:8;72000:3");
}

TEST(ServiceLoadTest, WithoutStepsItNeedsEverythingAndNeverChanges) {
  const ServiceLoad full;
  EXPECT_EQ(full.NeedAt(AtSeconds(12345), 6), 6);
  EXPECT_EQ(full.NextChangeAfter(AtSeconds(12345)), kTimeNever);
  const ServiceLoad flat{{{Duration(0), 1}}};
  EXPECT_EQ(flat.NextChangeAfter(AtSeconds(5)), kTimeNever);
}

TEST(ServiceLoadTest, MalformedTextNamesTheStep) {
  for (const char* text : {"", "0", "0:x", "a:1", "0:1;", "0:1;3600"}) {
    SCOPED_TRACE(text);
    Result<ServiceLoad> load = ParseServiceLoad(text);
    ASSERT_FALSE(load.ok());
    EXPECT_THAT(load.status().message(), HasSubstr("SECONDS:GPUS"));
  }
}

TEST(ServiceLoadTest, ValidationChecksStepsAgainstTheReservation) {
  const struct {
    const char* load;
    const char* error;  // "" = valid
  } cases[] = {
      {"0:4;3600:0", ""},
      {"60:4", "the first must be at 0"},
      {"0:4;3600:2;3600:1", "offsets must ascend"},
      {"0:4;86400:2", "within the day"},
      {"0:5", "needs 5 GPUs; want 0..4"},
      {"0:-1", "needs -1 GPUs"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.load);
    JobSpec spec;
    spec.num_gpus = 4;
    spec.iterations = 100;
    Result<ServiceLoad> load = ParseServiceLoad(c.load);
    ASSERT_TRUE(load.ok()) << load.status().ToString();
    spec.service = *load;
    const Status status = ValidateJobSpec(spec);
    if (std::string_view(c.error).empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      EXPECT_THAT(status.message(), HasSubstr(c.error));
    }
  }
}

TEST(ValidateJobSpecTest, ACpuJobMustRequestCpus) {
  JobSpec spec;
  spec.iterations = 60;
  spec.num_gpus = 0;
  EXPECT_THAT(ValidateJobSpec(spec).message(), HasSubstr("must request cpus"));
  spec.cpus = 4;
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  spec.host_memory_mib = -1;
  EXPECT_THAT(ValidateJobSpec(spec).message(), HasSubstr("host_memory_mib"));
  spec.host_memory_mib = 0;
  spec.num_gpus = -1;
  EXPECT_THAT(ValidateJobSpec(spec).message(), HasSubstr("num_gpus must not be negative"));
}

TEST(EffectiveHostRequestTest, UnstatedResourcesComeFromThePerGpuDefaults) {
  JobSpec spec;
  spec.num_gpus = 4;
  const HostDefaults defaults{.cpus_per_gpu = 6, .memory_mib_per_gpu = 1024};
  EXPECT_EQ(EffectiveHostRequest(spec, defaults), (HostRequest{24, 4096}));
  spec.cpus = 2;
  EXPECT_EQ(EffectiveHostRequest(spec, defaults), (HostRequest{2, 4096}));
  spec.host_memory_mib = 100;
  EXPECT_EQ(EffectiveHostRequest(spec, defaults), (HostRequest{2, 100}));
  EXPECT_EQ(EffectiveHostRequest(JobSpec{}, HostDefaults{}), (HostRequest{0, 0}));
  // A gang no cluster holds saturates rather than overflowing into a small request.
  spec = JobSpec{};
  spec.num_gpus = std::numeric_limits<int>::max();
  EXPECT_EQ(EffectiveHostRequest(spec, defaults).cpus, std::numeric_limits<int>::max());
  EXPECT_GT(EffectiveHostRequest(spec, defaults).memory_mib, 0);
}

TEST(SplitHostRequestTest, PartsTakeSharesInProportionToTheirGpusRoundedUp) {
  const HostRequest whole{32, 10000};
  EXPECT_EQ(SplitHostRequest(whole, 8, 4), (HostRequest{16, 5000}));
  EXPECT_EQ(SplitHostRequest(whole, 8, 8), whole);
  EXPECT_EQ(SplitHostRequest(whole, 9, 4), (HostRequest{15, 4445}));
  EXPECT_EQ(SplitHostRequest(whole, 9, 1), (HostRequest{4, 1112}));
  EXPECT_EQ(SplitHostRequest(whole, 0, 0), whole);  // a CPU job: one node takes it all
  EXPECT_EQ(SplitHostRequest(HostRequest{}, 4, 1), HostRequest{});
}

}  // namespace
}  // namespace dlsched
