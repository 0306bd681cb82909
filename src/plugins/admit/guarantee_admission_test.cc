#include "plugins/admit/guarantee_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "dlsched/policy/context.h"
#include "support/builders.h"

namespace dlsched {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeJob;

// A job of `gpus` GPUs needing `work_s` more, of class `qos`, due at `deadline_s`.
Job DeadlineJob(uint32_t id, int gpus, double work_s, QosClass qos, double deadline_s) {
  Job job = MakeJob(id).Gpus(gpus).Estimate(Seconds(work_s), Seconds(work_s)).Build();
  job.spec.qos = qos;
  job.spec.deadline = AtSeconds(deadline_s);
  return job;
}

TEST(GuaranteeAdmissionTest, Table) {
  // Two GPUs; already admitted and waiting: 2 GPUs x 1000 s due at t=1000.
  const Cluster cluster = MakeCluster("1x2xV100");
  ClusterState state(cluster);
  JobTable jobs;
  JobQueue queue(jobs, RankOrder::Fifo());
  RunningIndex running(jobs, RankOrder::Fifo());
  SimpleThroughputModel model;
  Rng rng;
  const JobId admitted = jobs.Add(DeadlineJob(0, 2, 1000, QosClass::kStrict, 1000).spec);
  jobs.at(admitted).estimated_remaining = seconds(1000);
  queue.Insert(admitted);
  const SchedulingContext ctx{kTimeZero, cluster, state, jobs, queue, {}, running, model, rng};
  const GuaranteeAdmission plugin;

  struct Case {
    std::string name;
    Job job;
    bool ok;
  };
  const std::vector<Case> cases = {
      // By t=1300: 2000 + 500 GPU-s due, 2600 available.
      {"fits after the admitted job", DeadlineJob(1, 1, 500, QosClass::kStrict, 1300), true},
      // By t=1200: 2500 due, 2400 available.
      {"too tight after it", DeadlineJob(1, 1, 500, QosClass::kStrict, 1200), false},
      // Its own deadline (t=500) is fine, but by t=1000 2500 is due and 2000 available: it
      // would push the admitted job past its deadline.
      {"would make the admitted job miss", DeadlineJob(1, 1, 500, QosClass::kStrict, 500), false},
      {"a soft job is always admitted", DeadlineJob(1, 1, 500, QosClass::kSoft, 500), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Fit fit = plugin.Admit(JobView(c.job, kTimeZero), ctx);
    EXPECT_EQ(fit.ok, c.ok);
    if (!c.ok) {
      EXPECT_THAT(fit.reason, HasSubstr("cannot be guaranteed"));
    }
  }
}

}  // namespace
}  // namespace dlsched
