#include "dlsched/perf/runtime_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using testing::MakeJob;

JobSpec Spec(std::string user, std::string model, int gpus, Duration ideal = hours(1)) {
  JobSpec spec = MakeJob(1).Gpus(gpus).Work(ideal).Spec();
  spec.user = std::move(user);
  spec.model = std::move(model);
  return spec;
}

HistoryRuntimeEstimator::Options Options(int min_samples) {
  HistoryRuntimeEstimator::Options options;
  options.min_samples = min_samples;
  options.prior = hours(2);
  return options;
}

TEST(HistoryRuntimeEstimatorTest, UsesOnlyJobsFinishedByNow) {
  HistoryRuntimeEstimator history(Options(1));
  const JobSpec job = Spec("alice", "bert", 2, hours(5));
  // Observed before their finish times come: a driver that knew the future could not leak it.
  history.Observe(job, seconds(100), AtSeconds(50));
  history.Observe(job, seconds(400), AtSeconds(500));
  EXPECT_EQ(history.EstimateTotal(job, AtSeconds(10)), hours(2)) << "nothing finished yet";
  EXPECT_EQ(history.observed(), 0);
  EXPECT_EQ(history.EstimateTotal(job, AtSeconds(50)), seconds(100)) << "finished at now counts";
  EXPECT_EQ(history.observed(), 1);
  EXPECT_EQ(history.EstimateTotal(job, AtSeconds(499)), seconds(100));
  EXPECT_EQ(history.EstimateTotal(job, AtSeconds(500)), seconds(200)) << "geometric mean";
  EXPECT_EQ(history.observed(), 2);
}

TEST(HistoryRuntimeEstimatorTest, NeverReadsTheJobsOwnWork) {
  HistoryRuntimeEstimator history(Options(1));
  history.Observe(Spec("alice", "bert", 1), seconds(600), AtSeconds(0));
  // Two jobs that differ only in their true work get the same estimate.
  EXPECT_EQ(history.EstimateTotal(Spec("alice", "bert", 1, hours(1)), AtSeconds(1)),
            history.EstimateTotal(Spec("alice", "bert", 1, hours(30)), AtSeconds(1)));
}

TEST(HistoryRuntimeEstimatorTest, PrefersTheMostSpecificGroupWithEnoughSamples) {
  struct Case {
    std::string name;
    JobSpec job;
    Duration want;
  };
  HistoryRuntimeEstimator history(Options(2));
  const auto observe = [&](const JobSpec& spec, Duration run, int times) {
    for (int i = 0; i < times; ++i) history.Observe(spec, run, AtSeconds(0));
  };
  observe(Spec("alice", "bert", 4), seconds(1000), 2);  // level 1 for (alice, bert, 4)
  observe(Spec("alice", "gpt", 8), seconds(4000), 2);   // (alice, *, 8) and (alice)
  observe(Spec("bob", "gpt", 1), seconds(10), 1);       // one sample: below min_samples
  observe(Spec("carol", "x", 16), seconds(90000), 2);   // (*, 16)
  JobSpec stated = Spec("dave", "y", 2);
  stated.runtime_estimate = seconds(777);
  const std::vector<Case> cases = {
      {"same user, model and GPUs", Spec("alice", "bert", 4), seconds(1000)},
      {"same user and GPUs", Spec("alice", "resnet", 8), seconds(4000)},
      {"same user", Spec("alice", "resnet", 2), seconds(2000)},  // sqrt(1000 x 4000)
      {"a user's statement before the cluster's groups", stated, seconds(777)},
      {"same GPU count", Spec("erin", "z", 16), seconds(90000)},
      {"one sample is not enough: everyone", Spec("bob", "gpt", 1),
       Seconds(std::exp(
           (2 * std::log(1000.0) + 2 * std::log(4000.0) + std::log(10.0) + 2 * std::log(90000.0)) /
           7))},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NEAR(ToSeconds(history.EstimateTotal(c.job, AtSeconds(1))), ToSeconds(c.want), 1e-3);
  }
}

TEST(HistoryRuntimeEstimatorTest, TellsLongNamesApartThatDifferOnlyAtTheEnd) {
  // Names longer than a short string's inline buffer, looked up without copies: the groups must
  // still tell users and models apart by their last character.
  HistoryRuntimeEstimator history(Options(1));
  const std::string user = "team-vision-research-user-0001";
  const std::string model = "resnet-50-imagenet-batch-256-a";
  history.Observe(Spec(user, model, 4), seconds(1000), AtSeconds(0));
  history.Observe(Spec(user + "x", model, 4), seconds(9000), AtSeconds(0));
  history.Observe(Spec(user, model + "x", 4), seconds(4000), AtSeconds(0));
  const auto estimate = [&](const JobSpec& spec) {
    return ToSeconds(history.EstimateTotal(spec, AtSeconds(1)));
  };
  EXPECT_NEAR(estimate(Spec(user, model, 4)), 1000.0, 1e-3);
  EXPECT_NEAR(estimate(Spec(user + "x", model, 4)), 9000.0, 1e-3);
  EXPECT_NEAR(estimate(Spec(user, model + "x", 4)), 4000.0, 1e-3);
  // The user's other models: (user, *, 4) holds 1000 s and 4000 s.
  EXPECT_NEAR(estimate(Spec(user, "another-model-name-longer", 4)), 2000.0, 1e-3);
}

TEST(HistoryRuntimeEstimatorTest, WithoutHistoryTakesTheStatementThenThePrior) {
  HistoryRuntimeEstimator history(Options(1));
  JobSpec stated = Spec("a", "m", 1);
  stated.runtime_estimate = seconds(42);
  EXPECT_EQ(history.EstimateTotal(stated, AtSeconds(0)), seconds(42));
  EXPECT_EQ(history.EstimateTotal(Spec("a", "m", 1), AtSeconds(0)), hours(2));
}

TEST(HistoryRuntimeEstimatorTest, IsDeterministicWhateverTheObservationOrder) {
  // Same observations in another order (a daemon restoring its history by id) give the same
  // estimates at every instant.
  struct Obs {
    JobSpec spec;
    Duration run;
    Timestamp finish;
  };
  const std::vector<Obs> obs = {{Spec("u", "m", 1), seconds(30), AtSeconds(10)},
                                {Spec("u", "m", 1), seconds(70), AtSeconds(20)},
                                {Spec("v", "m", 2), seconds(500), AtSeconds(20)},
                                {Spec("u", "n", 1), seconds(9), AtSeconds(40)}};
  HistoryRuntimeEstimator forward(Options(1));
  HistoryRuntimeEstimator backward(Options(1));
  for (const Obs& o : obs) forward.Observe(o.spec, o.run, o.finish);
  for (auto it = obs.rbegin(); it != obs.rend(); ++it)
    backward.Observe(it->spec, it->run, it->finish);
  for (int t : {0, 10, 15, 20, 39, 40, 100}) {
    SCOPED_TRACE(t);
    for (const Obs& o : obs) {
      EXPECT_EQ(forward.EstimateTotal(o.spec, AtSeconds(t)),
                backward.EstimateTotal(o.spec, AtSeconds(t)));
    }
  }
}

TEST(EstimateRuntimeTest, RemainingIsTheEstimateLessTheWorkDone) {
  StatedRuntimeEstimator stated;
  JobSpec spec = MakeJob(1).Work(seconds(1000)).Spec();  // 1000 iterations at 1 it/s
  spec.runtime_estimate = seconds(400);
  struct Case {
    std::string name;
    double done;
    Duration total;
    Duration remaining;
  };
  const std::vector<Case> cases = {
      {"not started", 0, seconds(400), seconds(400)},
      {"within its estimate", 100, seconds(400), seconds(300)},
      {"outlived it: doubled once", 400, seconds(800), seconds(400)},
      {"outlived it: doubled until it exceeds the work done", 900, seconds(1600), seconds(700)},
      {"done", 1000, seconds(400), seconds(0)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const RuntimeEstimate e = EstimateRuntime(stated, spec, c.done, AtSeconds(0));
    EXPECT_EQ(e.total, c.total);
    EXPECT_EQ(e.remaining, c.remaining);
  }
}

TEST(StatedRuntimeEstimatorTest, IsTheStatementElseTheIdealDuration) {
  StatedRuntimeEstimator stated;
  JobSpec spec = MakeJob(1).Work(seconds(1000)).Spec();
  EXPECT_EQ(stated.EstimateTotal(spec, AtSeconds(0)), seconds(1000));
  spec.runtime_estimate = seconds(5);
  EXPECT_EQ(stated.EstimateTotal(spec, AtSeconds(0)), seconds(5));
}

}  // namespace
}  // namespace dlsched
