#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "sim/report.h"
#include "support/report_runs.h"

namespace dlsched::sim {
namespace {

using testing::Finished;
using testing::SyntheticRun;
using testing::WithDeadlines;

std::string BestLine(const std::vector<RunResult>& runs) {
  std::ostringstream out;
  WriteComparisonTable(runs, out);
  std::string text = out.str();
  text.pop_back();                // the newline
  text.resize(text.rfind('\n'));  // the estimates line
  return text.substr(text.rfind('\n') + 1);
}

TEST(FormatDurationTest, Table) {
  struct Case {
    double seconds;
    std::string want;
  };
  const std::vector<Case> cases = {
      {0, "0.0s"},      {12.34, "12.3s"}, {59.94, "59.9s"},      {59.96, "1.0m"},
      {2100, "35.0m"},  {3590, "59.8m"},  {3597, "1.0h"},        {4320, "1.2h"},
      {86000, "23.9h"}, {86220, "1.0d"},  {3.4 * 86400, "3.4d"}, {-90, "-1.5m"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.seconds);
    EXPECT_EQ(FormatDuration(c.seconds), c.want);
  }
}

TEST(ComparisonTableTest, OneRowPerRunAndBestLine) {
  std::vector<RunResult> runs = {SyntheticRun("fifo", 50, 1, 4), SyntheticRun("srtf", 50, 1, 1)};
  // Only runs that accounted for every job compete: srtf is faster but has an unfinished job.
  RunResult done = SyntheticRun("las", 50, 1, 2);
  done.jobs.pop_back();
  ComputeSummary(done);
  runs.push_back(done);
  std::ostringstream out;
  WriteComparisonTable(runs, out);
  const std::string text = out.str();
  std::istringstream lines(text);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 7u) << text;  // header, rule, 3 runs, best line, estimates
  EXPECT_EQ(rows[0].rfind("policy", 0), 0u);
  EXPECT_NE(rows[0].find("p99 JCT"), std::string::npos);
  EXPECT_NE(rows[0].find("wall s"), std::string::npos);
  EXPECT_EQ(rows[2].rfind("fifo", 0), 0u);
  EXPECT_EQ(rows[4].rfind("las", 0), 0u);
  // Right-aligned numbers end in the same column.
  EXPECT_EQ(rows[2].size(), rows[3].size());
  EXPECT_EQ(rows[5].rfind("Best avg JCT", 0), 0u);
  EXPECT_NE(rows[5].find(": las ("), std::string::npos) << rows[5];
  EXPECT_EQ(rows[6],
            "Estimates the policies saw: run times from history (past jobs of the same user, "
            "model and GPU count); speeds from builtin");
}

TEST(ComparisonTableTest, OracleRunsAreLabelledAndTheEstimatesNamed) {
  RunResult oracle = Finished("sjf", {600, 600});
  oracle.oracle = true;
  oracle.runtime_estimator = "oracle";
  oracle.speed_estimator = "the ground truth (builtin, oracle)";
  RunResult honest = Finished("sjf", {900, 900});
  honest.speed_estimator = "builtin model with per-job error (lognormal sigma 0.12)";
  std::ostringstream out;
  WriteComparisonTable({oracle, honest}, out);
  std::istringstream lines(out.str());
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u) << out.str();
  EXPECT_EQ(rows[2].rfind("sjf (oracle) ", 0), 0u) << rows[2];
  EXPECT_EQ(rows[3].rfind("sjf ", 0), 0u) << rows[3];
  EXPECT_NE(rows[4].find("sjf (oracle) ("), std::string::npos) << rows[4];
  EXPECT_EQ(rows[5],
            "Estimates the policies saw: run times from the oracle (true run times); speeds from "
            "the ground truth (builtin, oracle) | run times from history (past jobs of the same "
            "user, model and GPU count); speeds from builtin model with per-job error (lognormal "
            "sigma 0.12)");

  std::ostringstream html;
  ASSERT_TRUE(WriteHtmlReport({oracle, honest}, ReportMeta{}, html).ok());
  EXPECT_NE(html.str().find("sjf (oracle)"), std::string::npos);
  EXPECT_NE(html.str().find("<dt>Estimates</dt><dd>run times from the oracle"), std::string::npos);
}

TEST(ComparisonTableTest, BestLineComparesOnlyRunsThatCompletedTheSameJobs) {
  struct Case {
    std::string name;
    std::vector<RunResult> runs;
    std::string want;
  };
  const Case cases[] = {
      {"a policy that rejects most jobs is left out, not crowned",
       {Finished("las", {600, 600, 600, 600}), Finished("qos", {60, -1, -1, -1}),
        Finished("fifo", {900, 900, 900, 900})},
       "Best avg JCT among runs that completed all 4 jobs: las (10.0m); left out: qos "
       "(completed 1 of 4)"},
      {"the same number of jobs but other jobs",
       {Finished("edf", {60, -1, 60}), Finished("qos", {-1, 30, 30})},
       "Best avg JCT among runs that completed the same 2 of 3 jobs: edf (1.0m); left out: qos "
       "(completed other jobs)"},
      {"runs within 1% are a tie",
       {Finished("las", {1000, 1000}), Finished("tiresias", {995, 995}),
        Finished("fifo", {2000, 2000})},
       "Best avg JCT among runs that completed all 2 jobs: no clear winner, tiresias (16.6m), "
       "las (16.7m) are within 1%"},
      {"just over 1% is a win",
       {Finished("las", {1000, 1000}), Finished("tiresias", {989, 989})},
       "Best avg JCT among runs that completed all 2 jobs: tiresias (16.5m)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(BestLine(c.runs), c.want);
  }
}

TEST(ComparisonTableTest, NoRunAccountsForEveryJob) {
  std::ostringstream out;
  WriteComparisonTable({SyntheticRun("fifo", 20, 1, 1)}, out);
  EXPECT_NE(out.str().find("Best avg JCT: none"), std::string::npos) << out.str();
}

TEST(ComparisonTableTest, QosColumnOnlyWhenSomeRunHasDeadlines) {
  std::ostringstream plain;
  WriteComparisonTable({SyntheticRun("fifo", 30, 1, 1)}, plain);
  EXPECT_EQ(plain.str().find("qos met"), std::string::npos);

  const RunResult edf = WithDeadlines(SyntheticRun("edf", 30, 1, 1));
  std::ostringstream out;
  WriteComparisonTable({SyntheticRun("fifo", 30, 1, 1), edf}, out);
  std::istringstream lines(out.str());
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u) << out.str();
  const size_t column = rows[0].find("qos met");
  ASSERT_NE(column, std::string::npos) << rows[0];
  EXPECT_LT(column, rows[0].find("wall s"));
  // fifo had no deadlines: "-"; edf shows its rate as a percentage.
  const std::string want = fmt::format("{:.1f}%", 100 * edf.summary.qos_met_rate);
  EXPECT_NE(rows[3].find(want), std::string::npos) << rows[3];
  EXPECT_NE(rows[2].find(" - "), std::string::npos) << rows[2];

  std::ostringstream html;
  ASSERT_TRUE(WriteHtmlReport({edf}, ReportMeta{}, html).ok());
  EXPECT_NE(html.str().find("<th>qos met</th>"), std::string::npos);
}

TEST(ComparisonTableTest, TimingColumnsOnlyOnRequest) {
  RunResult run = SyntheticRun("fifo", 20, 1, 1);
  run.summary.cycle_times = {12, 0.0015, 0.004, 0.0125};
  std::ostringstream plain;
  WriteComparisonTable({run}, plain);
  EXPECT_EQ(plain.str().find("cycle"), std::string::npos) << plain.str();
  std::ostringstream timed;
  WriteComparisonTable({run}, timed, true);
  std::istringstream lines(timed.str());
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  // Header, rule, the run, the winner line, the estimates line.
  ASSERT_EQ(rows.size(), 5u) << timed.str();
  EXPECT_GT(rows[0].find("cycle p50 ms"), rows[0].find("wall s"));
  EXPECT_NE(rows[0].find("cycle max ms"), std::string::npos);
  EXPECT_TRUE(rows[2].ends_with("12         1.500         4.000        12.500")) << rows[2];
}

}  // namespace
}  // namespace dlsched::sim
