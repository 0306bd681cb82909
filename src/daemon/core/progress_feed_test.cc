#include "daemon/core/progress_feed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/builders.h"

namespace dlsched::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A 1-GPU job of model "m" at batch 8 whose runtime estimate is `estimate_s` (its JobSpec
// work), reporting `iterations` in all when given.
JobRequest Request(double estimate_s, double iterations = 0) {
  std::string body = R"({"command": ["train"], "gpus": 1, "model": "m", "batch_size": 8, )"
                     R"("runtime_estimate_s": )" +
                     std::to_string(estimate_s);
  if (iterations > 0) body += R"(, "iterations": )" + std::to_string(iterations);
  Result<JobRequest> request = ParseJobRequest(body + "}", "ann");
  DS_CHECK(request.ok()) << request.status().ToString();
  return *request;
}

std::shared_ptr<const PerfPredictor> Predictor() {
  const std::vector<PerfProfile> profiles = {
      {"test", "m", 8, "V100", 1, true, 10, {}},
      {"test", "m", 8, "V100", 2, true, 18, {}},
  };
  Result<PerfPredictor> fitted =
      PerfPredictor::Fit(profiles, std::make_shared<const SimpleThroughputModel>());
  DS_CHECK(fitted.ok()) << fitted.status().ToString();
  return std::make_shared<const PerfPredictor>(std::move(fitted).value());
}

TEST(ProgressFeedTest, ReportsMapOntoTheJobSpecsWork) {
  struct Case {
    std::string name;
    Progress progress;
    double request_iterations;
    std::optional<double> want;
  };
  const std::vector<Case> cases = {
      {"total in the report", {25, 100}, 0, 250},      {"total from the request", {25, 0}, 50, 500},
      {"the report's total wins", {25, 100}, 50, 250}, {"no total", {25, 0}, 0, std::nullopt},
      {"past the total", {150, 100}, 0, 1000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SpecIterationsDone(c.progress, Request(1000, c.request_iterations)), c.want);
  }
}

TEST(ProgressFeedTest, SegmentSpeedCountsOnlyTheSegmentsOwnWork) {
  struct Case {
    std::string name;
    double done_now;
    double done_at_start;
    Duration elapsed;
    std::optional<double> want;
  };
  const std::vector<Case> cases = {
      {"from the start", 100, 0, seconds(50), 2.0},
      {"resumed from a checkpoint", 300, 200, seconds(20), 5.0},
      {"no work yet", 200, 200, seconds(20), std::nullopt},
      {"behind its checkpoint", 150, 200, seconds(20), std::nullopt},
      {"just started", 10, 0, Duration(0), std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SegmentItersPerSecond(c.done_now, c.done_at_start, c.elapsed), c.want);
  }
}

TEST(ProgressFeedTest, ObservedSpeedCorrectsThePrediction) {
  ProgressFeed feed(Predictor());
  const JobRequest request = Request(1000, 100);  // predicted: 1000 s of work in 1000 s
  const GpuShape shape{"V100", 1, true};
  const JobId id(3);
  Timestamp now = AtSeconds(100);
  const Timestamp start = now;

  // Nothing reported yet: the plain prediction.
  EXPECT_TRUE(feed.Due(id, now));
  std::optional<JobPrediction> p = feed.Read(id, request, shape, std::nullopt, 0, now - start, now);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->iters_per_s, 1.0);
  EXPECT_DOUBLE_EQ(p->correction, 1.0);
  EXPECT_FALSE(feed.Due(id, now + milliseconds(500)));
  EXPECT_TRUE(feed.Due(id, now + ProgressFeed::kReadInterval));

  // The job runs twice as fast as predicted: each read moves the correction toward 2, from below.
  double previous = 1.0;
  for (int i = 1; i <= 6; ++i) {
    SCOPED_TRACE(i);
    now = start + seconds(10 * i);
    const Progress progress{2.0 * i, 100};  // 20 s of work per 10 s
    p = feed.Read(id, request, shape, progress, 0, now - start, now);
    ASSERT_TRUE(p.has_value());
    EXPECT_GT(p->correction, previous);
    EXPECT_LT(p->correction, 2.0);
    EXPECT_DOUBLE_EQ(p->iters_per_s, p->correction);
    previous = p->correction;
  }
  EXPECT_NEAR(previous, 2.0, 0.05);

  // A new job of the same type starts from the type's correction; the ended one is forgotten.
  feed.Forget(id);
  EXPECT_TRUE(feed.Due(id, now));
  p = feed.Read(JobId(4), request, shape, std::nullopt, 0, Duration(0), now);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->correction, 1.5);

  // No prediction on a GPU type the profiles do not know.
  EXPECT_FALSE(
      feed.Read(JobId(5), request, GpuShape{"T4", 1, true}, std::nullopt, 0, Duration(0), now)
          .has_value());
}

}  // namespace
}  // namespace dlsched::daemon
