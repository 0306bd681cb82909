#include "io/gavel_throughputs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlsched/model/cluster.h"
#include "dlsched/model/job.h"
#include "dlsched/perf/throughput_model.h"

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR ""
#endif

namespace dlsched {
namespace {

using JobKey = GavelThroughputTable::JobKey;
using JobType = GavelThroughputTable::JobType;

// A hand-written table in Gavel's layout. ResNet-50 bs64 is measured on V100 at 1/2/4/8 GPUs
// (4, 7, 12, 20) and unconsolidated at 2/4 (6, 10); K80 at 1/2/4 with 2 GPUs "cannot run" (0)
// and no unconsolidated rows; LM bs20 at 1 GPU only; A3C without a batch size.
constexpr char kFixture[] = R"json({
  "v100": {
    "('ResNet-50 (batch size 64)', 1)": {
      "null": 4.0,
      "('LM (batch size 20)', 1)": [3.0, 20.0],
      "('A3C', 1)": [0.0, 0.0]
    },
    "('ResNet-50 (batch size 64)', 2)": {"null": 7.0},
    "('ResNet-50 (batch size 64)', 4)": {"null": 12.0},
    "('ResNet-50 (batch size 64)', 8)": {"null": 20.0},
    "('LM (batch size 20)', 1)": {"null": 30.0, "('ResNet-50 (batch size 64)', 1)": [20.0, 3.0]},
    "('A3C', 1)": {"null": 5.0}
  },
  "v100_unconsolidated": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 4.0},
    "('ResNet-50 (batch size 64)', 2)": {"null": 6.0},
    "('ResNet-50 (batch size 64)', 4)": {"null": 10.0}
  },
  "k80": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 1.0},
    "('ResNet-50 (batch size 64)', 2)": {"null": 0.0},
    "('ResNet-50 (batch size 64)', 4)": {"null": 3.0},
    "('LM (batch size 20)', 1)": {"null": 10.0}
  }
})json";

// Writes `text` to a fresh file under the test temp dir and returns its path.
std::string WriteTempFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/gavel_throughputs_test_" + name + ".json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::shared_ptr<const GavelThroughputTable> FixtureTable() {
  Result<GavelThroughputTable> table = GavelThroughputTable::Parse(kFixture, "fixture");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return std::make_shared<const GavelThroughputTable>(std::move(table).value());
}

std::string RealTablePath() {
  return std::string(DLSCHED_TRACES_DIR) + "/gavel/simulation_throughputs.json";
}

TEST(GavelThroughputTableTest, IsolatedLookups) {
  const auto table = FixtureTable();
  struct Case {
    std::string name;
    std::string model;
    int batch_size;
    int num_gpus;
    std::string gpu;
    bool consolidated;
    std::optional<double> want;
  };
  const double k = GavelThroughputTable::kUnconsolidatedFallbackFactor;
  const std::vector<Case> cases = {
      {"measured", "ResNet-50", 64, 1, "V100", true, 4.0},
      {"type name is case-insensitive", "ResNet-50", 64, 2, "v100", true, 7.0},
      {"measured 8", "ResNet-50", 64, 8, "V100", true, 20.0},
      {"interpolated 3 = mean of 2 and 4", "ResNet-50", 64, 3, "V100", true, 9.5},
      {"interpolated 6 between 4 and 8", "ResNet-50", 64, 6, "V100", true, 16.0},
      {"extrapolated 16 = 2 x the 8-GPU value", "ResNet-50", 64, 16, "V100", true, 40.0},
      {"1-GPU-only job scales linearly", "LM", 20, 2, "K80", true, 20.0},
      {"unconsolidated measured", "ResNet-50", 64, 2, "V100", false, 6.0},
      {"unconsolidated interpolated", "ResNet-50", 64, 3, "V100", false, 8.0},
      {"unconsolidated extrapolated from its own series", "ResNet-50", 64, 8, "V100", false, 20.0},
      {"a single GPU is always consolidated", "ResNet-50", 64, 1, "V100", false, 4.0},
      {"unconsolidated fallback: consolidated x factor", "ResNet-50", 64, 4, "K80", false, 3.0 * k},
      {"cannot run is 0", "ResNet-50", 64, 2, "K80", true, 0.0},
      {"next to a cannot-run size is 0", "ResNet-50", 64, 3, "K80", true, 0.0},
      {"unconsolidated fallback of cannot-run is 0", "ResNet-50", 64, 2, "K80", false, 0.0},
      {"model without batch size matches any batch", "A3C", 32, 1, "V100", true, 5.0},
      {"model without batch size, batch 0", "A3C", 0, 1, "V100", true, 5.0},
      {"unknown model", "BERT", 64, 1, "V100", true, std::nullopt},
      {"unknown batch size", "ResNet-50", 32, 1, "V100", true, std::nullopt},
      {"unknown GPU type", "ResNet-50", 64, 1, "A100", true, std::nullopt},
      {"known type, job not measured there", "A3C", 0, 1, "K80", true, std::nullopt},
      {"zero GPUs", "ResNet-50", 64, 0, "V100", true, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<double> got =
        table->Isolated(c.model, c.batch_size, c.num_gpus, c.gpu, c.consolidated);
    ASSERT_EQ(got.has_value(), c.want.has_value());
    if (c.want.has_value()) {
      EXPECT_DOUBLE_EQ(*got, *c.want);
    }
  }
}

TEST(GavelThroughputTableTest, MeasuredIsRaw) {
  const auto table = FixtureTable();
  EXPECT_EQ(table->Measured({"ResNet-50", 64, 4}, "V100", true), 12.0);
  EXPECT_EQ(table->Measured({"ResNet-50", 64, 4}, "v100", false), 10.0);
  EXPECT_EQ(table->Measured({"ResNet-50", 64, 3}, "V100", true), std::nullopt);
  EXPECT_EQ(table->Measured({"ResNet-50", 64, 2}, "K80", false), std::nullopt);
}

TEST(GavelThroughputTableTest, Colocated) {
  const auto table = FixtureTable();
  using Tputs = std::optional<std::pair<double, double>>;
  struct Case {
    std::string name;
    JobKey a;
    JobKey b;
    std::string gpu;
    Tputs want;
  };
  const std::vector<Case> cases = {
      {"measured pair", {"ResNet-50", 64, 1}, {"LM", 20, 1}, "V100", Tputs({3.0, 20.0})},
      {"reverse direction", {"LM", 20, 1}, {"ResNet-50", 64, 1}, "v100", Tputs({20.0, 3.0})},
      {"may not share", {"ResNet-50", 64, 1}, {"A3C", 8, 1}, "V100", Tputs({0.0, 0.0})},
      {"pair not measured", {"A3C", 0, 1}, {"ResNet-50", 64, 1}, "V100", std::nullopt},
      {"other GPU type", {"ResNet-50", 64, 1}, {"LM", 20, 1}, "K80", std::nullopt},
      {"other scale factor", {"ResNet-50", 64, 2}, {"LM", 20, 1}, "V100", std::nullopt},
      {"unknown job", {"BERT", 8, 1}, {"LM", 20, 1}, "V100", std::nullopt},
      {"unknown type", {"ResNet-50", 64, 1}, {"LM", 20, 1}, "A100", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(table->Colocated(c.a, c.b, c.gpu), c.want);
  }
  EXPECT_EQ(table->num_pairs(), 3u);
}

TEST(GavelThroughputTableTest, ListsJobAndGpuTypes) {
  const auto table = FixtureTable();
  const std::vector<JobType> want_jobs = {{"A3C", 0}, {"LM", 20}, {"ResNet-50", 64}};
  EXPECT_EQ(table->job_types(), want_jobs);
  EXPECT_EQ(table->gpu_types(), (std::vector<std::string>{"K80", "V100"}));
  EXPECT_EQ(table->num_measurements(), 13u);
  EXPECT_TRUE(table->HasJobType("A3C", 4));
  EXPECT_FALSE(table->HasJobType("LM", 40));
  EXPECT_TRUE(table->HasGpuType("k80"));
  EXPECT_FALSE(table->HasGpuType("P100"));
}

TEST(GavelThroughputTableTest, ParseJobKey) {
  struct Case {
    std::string text;
    std::optional<JobKey> want;
  };
  const std::vector<Case> cases = {
      {"('ResNet-50 (batch size 64)', 1)", JobKey{"ResNet-50", 64, 1}},
      {"('Recommendation (batch size 8192)', 8)", JobKey{"Recommendation", 8192, 8}},
      {"(\"LM (batch size 5)\", 2)", JobKey{"LM", 5, 2}},
      {"  ( 'Transformer (batch size 16)' ,  4 )  ", JobKey{"Transformer", 16, 4}},
      {"('A3C', 1)", JobKey{"A3C", 0, 1}},
      {"('CycleGAN', 1)", JobKey{"CycleGAN", 0, 1}},
      {"('ResNet-50 (batch size 64)', 0)", std::nullopt},
      {"('ResNet-50 (batch size 64)', x)", std::nullopt},
      {"('ResNet-50 (batch size 64)', 1", std::nullopt},
      {"('ResNet-50 (batch size 64)\", 1)", std::nullopt},
      {"(ResNet-50, 1)", std::nullopt},
      {"('ResNet-50 (batch size)', 1)", std::nullopt},
      {"('ResNet-50 (batch size -3)', 1)", std::nullopt},
      {"('ResNet-50 (batch size 64', 1)", std::nullopt},
      {"(' (batch size 64)', 1)", std::nullopt},
      {"('', 1)", std::nullopt},
      {"null", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<JobKey> got = GavelThroughputTable::ParseJobKey(c.text);
    ASSERT_EQ(got.ok(), c.want.has_value()) << got.status().ToString();
    if (c.want.has_value()) {
      EXPECT_EQ(*got, *c.want);
    } else {
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    }
  }
  // The job_type column of Gavel's traces.
  Result<JobType> type = GavelThroughputTable::ParseJobType("Transformer (batch size 128)");
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(*type, (JobType{"Transformer", 128}));
}

TEST(GavelThroughputTableTest, LoadRejectsBadFiles) {
  struct Case {
    std::string name;
    std::string json;
    std::string want_in_message;
  };
  const std::vector<Case> cases = {
      {"not_json", "{\"v100\": {", "not valid JSON"},
      {"not_object", "[1, 2]", "expected a non-empty object"},
      {"empty", "{}", "expected a non-empty object"},
      {"jobs_not_object", R"j({"v100": 3})j", "expected an object of job keys"},
      {"bad_worker_type", R"j({"_unconsolidated": {}})j", "bad worker type"},
      {"no_measurements", R"j({"v100": {}})j", "no isolated throughputs"},
      {"bad_key", R"j({"v100": {"ResNet-50": {"null": 1.0}}})j", "job key \"ResNet-50\""},
      {"entry_not_object", R"j({"v100": {"('A3C', 1)": 1.0}})j", "expected an object"},
      {"no_null", R"j({"v100": {"('A3C', 1)": {}}})j", "no \"null\""},
      {"string_tput", R"j({"v100": {"('A3C', 1)": {"null": "fast"}}})j", "expected a number"},
      {"negative_tput", R"j({"v100": {"('A3C', 1)": {"null": -1}}})j", "must be finite and >= 0"},
      {"pair_not_array", R"j({"v100": {"('A3C', 1)": {"null": 1, "('A3C', 1)": 2}}})j",
       "expected [self, other]"},
      {"pair_too_short", R"j({"v100": {"('A3C', 1)": {"null": 1, "('A3C', 1)": [2]}}})j",
       "expected [self, other]"},
      {"bad_pair_key", R"j({"v100": {"('A3C', 1)": {"null": 1, "A3C": [1, 1]}}})j", "pair \"A3C\""},
      {"duplicate_after_parse",
       R"j({"v100": {"('A3C', 1)": {"null": 1}, "(\"A3C\", 1)": {"null": 2}}})j",
       "same job type and scale factor 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = WriteTempFile(c.name, c.json);
    Result<GavelThroughputTable> table = GavelThroughputTable::Load(path);
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find(path), std::string::npos) << table.status().ToString();
    EXPECT_NE(table.status().message().find(c.want_in_message), std::string::npos)
        << table.status().ToString();
    std::filesystem::remove(path);
  }
}

TEST(GavelThroughputTableTest, LoadsFixtureFile) {
  const std::string path = WriteTempFile("good", kFixture);
  Result<GavelThroughputTable> table = GavelThroughputTable::Load(path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->Isolated("ResNet-50", 64, 4, "V100", true), 12.0);
  std::filesystem::remove(path);
}

TEST(GavelThroughputTableTest, MissingFileIsNotFound) {
  const std::string path = testing::TempDir() + "/gavel_throughputs_test_no_such_file.json";
  Result<GavelThroughputTable> table = GavelThroughputTable::Load(path);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kNotFound);
  EXPECT_NE(table.status().message().find(path), std::string::npos);
}

// A fallback that makes its use visible.
class ConstantModel final : public ThroughputModel {
 public:
  double ItersPerSecond(const JobSpec&, const Cluster&, const Placement&) const override {
    return 123.0;
  }
};

class GavelThroughputModelTest : public testing::Test {
 protected:
  void SetUp() override {
    const RackId rack = cluster_.InternRack("r0");
    const GpuTypeId v100 = cluster_.InternGpuType("V100");
    const GpuTypeId k80 = cluster_.InternGpuType("K80");
    const GpuTypeId a100 = cluster_.InternGpuType("A100");
    v100_a_ = AddNode("v100-a", rack, v100);
    v100_b_ = AddNode("v100-b", rack, v100);
    k80_ = AddNode("k80", rack, k80);
    a100_ = AddNode("a100", rack, a100);
  }

  NodeId AddNode(const std::string& name, RackId rack, GpuTypeId type) {
    NodeSpec spec;
    spec.name = name;
    spec.rack = rack;
    spec.gpus.assign(4, GpuSpec{type, 16384, 0});
    Result<NodeId> id = cluster_.AddNode(std::move(spec));
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }

  static JobSpec Spec(std::string model, int batch_size, int num_gpus) {
    JobSpec spec;
    spec.model = std::move(model);
    spec.batch_size = batch_size;
    spec.num_gpus = num_gpus;
    return spec;
  }

  Cluster cluster_;
  NodeId v100_a_, v100_b_, k80_, a100_;
};

TEST_F(GavelThroughputModelTest, ItersPerSecond) {
  const GavelThroughputModel model(FixtureTable(), std::make_shared<ConstantModel>());
  const double k = GavelThroughputTable::kUnconsolidatedFallbackFactor;
  struct Case {
    std::string name;
    JobSpec spec;
    Placement placement;
    double want;
  };
  const std::vector<Case> cases = {
      {"one V100", Spec("ResNet-50", 64, 1), {{{v100_a_, 0b1}}}, 4.0},
      {"allocated count, not requested", Spec("ResNet-50", 64, 1), {{{v100_a_, 0b11}}}, 7.0},
      {"unmeasured count interpolates", Spec("ResNet-50", 64, 3), {{{v100_a_, 0b111}}}, 9.5},
      {"spread over two nodes",
       Spec("ResNet-50", 64, 4),
       {{{v100_a_, 0b11}, {v100_b_, 0b11}}},
       10.0},
      {"mixed types run at the slower",
       Spec("ResNet-50", 64, 4),
       {{{v100_a_, 0b11}, {k80_, 0b11}}},
       3.0 * k},
      {"unknown model -> fallback", Spec("BERT", 32, 1), {{{v100_a_, 0b1}}}, 123.0},
      {"unknown GPU type -> fallback", Spec("ResNet-50", 64, 1), {{{a100_, 0b1}}}, 123.0},
      {"any unknown type -> fallback",
       Spec("ResNet-50", 64, 2),
       {{{v100_a_, 0b1}, {a100_, 0b1}}},
       123.0},
      {"cannot run there", Spec("ResNet-50", 64, 2), {{{k80_, 0b11}}}, 0.0},
      {"empty placement", Spec("ResNet-50", 64, 1), {}, 0.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(model.ItersPerSecond(c.spec, cluster_, c.placement), c.want);
  }
}

TEST_F(GavelThroughputModelTest, ReferenceItersPerSecond) {
  const GavelThroughputModel model(FixtureTable(), std::make_shared<ConstantModel>());
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("ResNet-50", 64, 4)), 12.0);
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("ResNet-50", 64, 3), "v100"), 9.5);
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("LM", 20, 1), "K80"), 10.0);
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("ResNet-50", 64, 2), "K80"), std::nullopt);
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("BERT", 32, 1)), std::nullopt);
  EXPECT_EQ(model.ReferenceItersPerSecond(Spec("ResNet-50", 64, 1), "A100"), std::nullopt);
}

TEST(GavelThroughputTableRealTest, MatchesDocumentedValues) {
  const std::string path = RealTablePath();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "traces not found at " << path;
  Result<GavelThroughputTable> loaded = GavelThroughputTable::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const GavelThroughputTable& table = *loaded;

  EXPECT_EQ(table.gpu_types(), (std::vector<std::string>{"K80", "P100", "V100"}));
  EXPECT_EQ(table.job_types().size(), 26u);
  EXPECT_EQ(table.num_measurements(), 492u);
  EXPECT_EQ(table.num_pairs(), 5277u);

  struct Case {
    std::string name;
    std::string model;
    int batch_size;
    int num_gpus;
    std::string gpu;
    bool consolidated;
    double want;
  };
  const double k = GavelThroughputTable::kUnconsolidatedFallbackFactor;
  const std::vector<Case> cases = {
      {"SOURCE.md v100", "ResNet-50", 64, 1, "V100", true, 4.394774823323071},
      {"SOURCE.md k80", "ResNet-50", 64, 1, "K80", true, 0.6190282202246573},
      {"SOURCE.md p100", "ResNet-50", 64, 1, "P100", true, 2.6194694075770055},
      {"unconsolidated measured", "ResNet-50", 64, 8, "V100", false, 19.757330902241037},
      {"k80 unconsolidated missing -> factor", "ResNet-50", 64, 2, "K80", false,
       1.2636370655757299 * k},
      {"interpolated 3", "ResNet-50", 64, 3, "V100", true,
       (7.922054367597505 + 9.451949566394442) / 2},
      {"k80 bs128 multi-GPU cannot run", "ResNet-50", 128, 2, "K80", true, 0.0},
      {"A3C any batch", "A3C", 4, 1, "V100", true, 7.175767179667988},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<double> got =
        table.Isolated(c.model, c.batch_size, c.num_gpus, c.gpu, c.consolidated);
    ASSERT_TRUE(got.has_value());
    EXPECT_DOUBLE_EQ(*got, c.want);
  }
  const auto pair = table.Colocated({"ResNet-50", 64, 1}, {"LM", 20, 1}, "V100");
  ASSERT_TRUE(pair.has_value());
  EXPECT_DOUBLE_EQ(pair->first, 3.0214759821669617);
  EXPECT_DOUBLE_EQ(pair->second, 24.79801703692631);
  EXPECT_EQ(table.Colocated({"ResNet-50", 64, 2}, {"LM", 20, 2}, "V100"),
            std::optional(std::pair(0.0, 0.0)));
}

}  // namespace
}  // namespace dlsched
