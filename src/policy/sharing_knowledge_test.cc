#include "dlsched/policy/sharing_knowledge.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace dlsched {
namespace {

SharingKnowledge TwoTypes() { return SharingKnowledge({BuiltInInterferenceModel(), nullptr}); }

TEST(SharingKnowledgeTest, DeclaredPeakUntilObservedThenThePercentileOfTheHistory) {
  SharingKnowledge k = TwoTypes();
  const sharing::SharingJob features{sharing::SharingJob::kUnknownType, 0.5, 0.3, 4096};
  k.Set(JobId(2), features, 4096);
  EXPECT_FALSE(k.Has(JobId(0)));
  EXPECT_TRUE(k.Has(JobId(2)));
  EXPECT_EQ(k.Features(JobId(2)).sm_util, 0.5);
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 95), 4096);
  for (int64_t mib : {1000, 2000, 3000, 4000}) k.Observe(JobId(2), {mib, 0.4});
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 50), 2000);
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 50), 2000);  // the cache answers the same
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 100), 4000);
  k.Observe(JobId(2), {9000, 0.4});  // a new sample invalidates the cached answer
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 100), 9000);
  EXPECT_EQ(k.History(JobId(2)).size(), 5u);

  sharing::DemandHistory kept(8);
  kept.Add({700, 0.1});
  k.SetHistory(JobId(2), kept);
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 100), 700);

  k.Set(JobId(2), features, 0);  // re-declared: history cleared, a declared peak of at least 1
  EXPECT_TRUE(k.History(JobId(2)).empty());
  EXPECT_EQ(k.MemoryDemandMib(JobId(2), 100), 1);
}

// FiguresOf answers for each job what Features, MemoryDemandMib and ShareGroup answer, and so
// does SharingView's own loop over them (the one a view without its own FiguresOf uses).
TEST(SharingKnowledgeTest, FiguresOfAnswersAsTheOneByOneCalls) {
  SharingKnowledge k = TwoTypes();
  k.Set(JobId(0), {sharing::SharingJob::kUnknownType, 0.5, 0.3, 4096}, 4096);
  k.Set(JobId(1), {3, 0.9, 0.7, 8192}, 6000);
  k.Set(JobId(3), {sharing::SharingJob::kUnknownType, 0.2, 0.1, 1024}, 1024);
  k.SetShareGroup(JobId(1), 7);
  for (int64_t mib : {1000, 2000, 3000, 4000}) k.Observe(JobId(0), {mib, 0.4});
  const std::vector<JobId> jobs = {JobId(3), JobId(0), JobId(1), JobId(0)};
  for (const double p : {50.0, 100.0}) {
    std::vector<SharingFigures> batch(jobs.size());
    std::vector<SharingFigures> loop(jobs.size());
    k.FiguresOf(jobs, p, batch);
    k.SharingView::FiguresOf(jobs, p, loop);
    for (size_t i = 0; i < jobs.size(); ++i) {
      for (const SharingFigures* figures : {&batch[i], &loop[i]}) {
        const sharing::SharingJob want = k.Features(jobs[i]);
        EXPECT_EQ(figures->features.type, want.type) << i;
        EXPECT_EQ(figures->features.sm_util, want.sm_util) << i;
        EXPECT_EQ(figures->features.mem_bw_util, want.mem_bw_util) << i;
        EXPECT_EQ(figures->features.memory_mib, want.memory_mib) << i;
        EXPECT_EQ(figures->memory_demand_mib, k.MemoryDemandMib(jobs[i], p)) << i;
        EXPECT_EQ(figures->group, k.ShareGroup(jobs[i])) << i;
      }
    }
    EXPECT_EQ(batch[1].memory_demand_mib, p == 50.0 ? 2000 : 4000);
    EXPECT_EQ(batch[2].group, 7u);
  }
}

// Every change of what MemoryDemandMib may answer gives a new demand revision; a copy keeps it.
TEST(SharingKnowledgeTest, TheDemandRevisionMovesWithEveryChangeOfDemand) {
  SharingKnowledge k = TwoTypes();
  const SharingKnowledge other = TwoTypes();
  EXPECT_NE(k.DemandRevision(), other.DemandRevision());
  std::vector<std::optional<uint64_t>> seen = {k.DemandRevision()};
  const sharing::SharingJob features{sharing::SharingJob::kUnknownType, 0.5, 0.3, 4096};
  k.Set(JobId(0), features, 4096);
  seen.push_back(k.DemandRevision());
  k.Observe(JobId(0), {1000, 0.4});
  seen.push_back(k.DemandRevision());
  k.SetHistory(JobId(0), sharing::DemandHistory(8));
  seen.push_back(k.DemandRevision());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i], seen[i - 1]) << i;
  const SharingKnowledge copy = k;
  EXPECT_EQ(copy.DemandRevision(), k.DemandRevision());
  k.MemoryDemandMib(JobId(0), 95);
  EXPECT_EQ(copy.DemandRevision(), k.DemandRevision()) << "reading changes nothing";
}

// DemandChangedSince names the job of every Set, Observe, SetHistory and SetShareGroup since a
// revision, and knows no other knowledge's revisions.
TEST(SharingKnowledgeTest, DemandChangedSinceNamesTheChangedJobs) {
  SharingKnowledge k = TwoTypes();
  const sharing::SharingJob features{sharing::SharingJob::kUnknownType, 0.5, 0.3, 4096};
  k.Set(JobId(0), features, 4096);
  k.Set(JobId(1), features, 4096);
  const uint64_t declared = *k.DemandRevision();
  std::vector<JobId> jobs = {JobId(9)};
  EXPECT_TRUE(k.DemandChangedSince(declared, jobs));
  EXPECT_TRUE(jobs.empty());
  k.Observe(JobId(1), {1000, 0.4});
  k.SetHistory(JobId(0), sharing::DemandHistory(8));
  const uint64_t before_group = *k.DemandRevision();
  k.SetShareGroup(JobId(1), 3);
  EXPECT_NE(*k.DemandRevision(), before_group) << "a group change moves the revision too";
  EXPECT_TRUE(k.DemandChangedSince(declared, jobs));
  EXPECT_EQ(jobs, (std::vector<JobId>{JobId(1), JobId(0), JobId(1)}));
  k.MemoryDemandMib(JobId(1), 95);
  EXPECT_TRUE(k.DemandChangedSince(*k.DemandRevision(), jobs)) << "reading changes nothing";
  EXPECT_TRUE(jobs.empty());
  EXPECT_FALSE(k.DemandChangedSince(*TwoTypes().DemandRevision(), jobs));
}

TEST(SharingKnowledgeTest, ATypeWithoutAModelIsNotShared) {
  const SharingKnowledge k = TwoTypes();
  EXPECT_NE(k.Interference(GpuTypeId(0)), nullptr);
  EXPECT_EQ(k.Interference(GpuTypeId(1)), nullptr);
  EXPECT_EQ(k.Interference(GpuTypeId(2)), nullptr);
}

TEST(SharingKnowledgeTest, BuiltInTypesAndTheNearestBatchSize) {
  const sharing::JobTypeCatalog catalog = BuiltInSharingJobTypes();
  EXPECT_EQ(catalog.size(), 8);
  struct Case {
    std::string model;
    int batch_size;
    std::optional<int> want_batch;  // nullopt: no type
  };
  const std::vector<Case> cases = {
      {"large-cnn", 64, 64},  {"large-cnn", 100, 128}, {"large-cnn", 70, 64},
      {"large-cnn", 0, 64},   {"lstm", 4, 128},        {"gpt", 64, std::nullopt},
      {"", 64, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model + "@" + std::to_string(c.batch_size));
    const std::optional<int> type = FindSharingJobType(catalog, c.model, c.batch_size);
    ASSERT_EQ(type.has_value(), c.want_batch.has_value());
    if (type) {
      EXPECT_EQ(catalog.at(*type).key.model, c.model);
      EXPECT_EQ(catalog.at(*type).key.batch_size, *c.want_batch);
    }
  }
}

}  // namespace
}  // namespace dlsched
