#include "cli/profile_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "support/builders.h"

namespace dlsched::cli {
namespace {

PerfProfile Row(std::string source, std::string model, std::string type, int n, bool cons,
                double rate) {
  return PerfProfile{std::move(source), std::move(model), 32, std::move(type), n, cons, rate, {}};
}

// V100 at 1/2/4/8 GPUs (consolidated and spread), K80 (not in the cluster), T4 at 1/4 and 4
// spread, with a repeated T4 measurement.
std::vector<PerfProfile> Truth() {
  std::vector<PerfProfile> rows;
  for (int n : {1, 2, 4, 8}) rows.push_back(Row("gavel", "ResNet-50", "V100", n, true, 4.0 * n));
  for (int n : {2, 4, 8}) rows.push_back(Row("gavel", "ResNet-50", "V100", n, false, 3.0 * n));
  rows.push_back(Row("gavel", "ResNet-50", "K80", 1, true, 1.0));
  rows.push_back(Row("sia", "cifar10", "t4", 1, true, 4.0));
  rows.push_back(Row("sia", "cifar10", "t4", 1, true, 9.0));
  rows.push_back(Row("sia", "cifar10", "t4", 4, true, 0.0));
  rows.push_back(Row("sia", "cifar10", "t4", 4, false, 10.0));
  return rows;
}

TEST(ProfileCommandTest, ProfilesWhatTheClusterCanHost) {
  // V100: 2 nodes of 4; T4: 1 node of 4; A100: no table measures it.
  const Cluster cluster = dlsched::testing::MakeCluster("2x4xV100+1x4xT4+1x4xA100");
  const ProfileRun run = ProfileCluster(cluster, Truth(), {.models = {}, .seed = 1, .noise = 0});
  // V100 consolidated 1, 2, 4 (8 needs a node of 8) and spread 2, 4, 8; T4 1 (pooled) and 4;
  // T4 spread needs two T4 nodes.
  const std::vector<PerfProfile> want = {
      Row("gavel", "ResNet-50", "V100", 1, true, 4),
      Row("gavel", "ResNet-50", "V100", 2, false, 6),
      Row("gavel", "ResNet-50", "V100", 2, true, 8),
      Row("gavel", "ResNet-50", "V100", 4, false, 12),
      Row("gavel", "ResNet-50", "V100", 4, true, 16),
      Row("gavel", "ResNet-50", "V100", 8, false, 24),
      Row("sia", "cifar10", "T4", 1, true, 6),
      Row("sia", "cifar10", "T4", 4, true, 0),
  };
  ASSERT_EQ(run.profiles.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const PerfProfile& got = run.profiles[i];
    EXPECT_EQ(got.source, want[i].source);
    EXPECT_EQ(got.model, want[i].model);
    EXPECT_EQ(got.gpu_type, want[i].gpu_type);  // the cluster's spelling
    EXPECT_EQ(got.num_gpus, want[i].num_gpus);
    EXPECT_EQ(got.consolidated, want[i].consolidated);
    EXPECT_NEAR(got.iters_per_s, want[i].iters_per_s, 1e-12);
  }
  EXPECT_EQ(run.infeasible, 2u);  // V100 x8 on one node, T4 x4 spread
  EXPECT_EQ(run.unknown_types, std::vector<std::string>{"A100"});

  const ProfileRun only = ProfileCluster(cluster, Truth(), {.models = {"CIFAR10"}, .noise = 0});
  ASSERT_EQ(only.profiles.size(), 2u);
  EXPECT_EQ(only.profiles[0].model, "cifar10");
}

TEST(ProfileCommandTest, NoiseIsSeededAndMultiplicative) {
  const Cluster cluster = dlsched::testing::MakeCluster("2x4xV100+1x4xT4");
  const ProfileRun exact = ProfileCluster(cluster, Truth(), {.seed = 1, .noise = 0});
  const ProfileRun a = ProfileCluster(cluster, Truth(), {.seed = 1, .noise = 0.05});
  const ProfileRun b = ProfileCluster(cluster, Truth(), {.seed = 1, .noise = 0.05});
  const ProfileRun c = ProfileCluster(cluster, Truth(), {.seed = 2, .noise = 0.05});
  ASSERT_EQ(a.profiles.size(), exact.profiles.size());
  bool any_differs = false;
  for (size_t i = 0; i < a.profiles.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.profiles[i].iters_per_s, b.profiles[i].iters_per_s);
    any_differs |= a.profiles[i].iters_per_s != c.profiles[i].iters_per_s;
    const double truth = exact.profiles[i].iters_per_s;
    if (truth == 0) {
      EXPECT_EQ(a.profiles[i].iters_per_s, 0.0);  // cannot run stays so
    } else {
      EXPECT_NE(a.profiles[i].iters_per_s, truth);
      EXPECT_LT(std::abs(std::log(a.profiles[i].iters_per_s / truth)), 5 * 0.05);
    }
  }
  EXPECT_TRUE(any_differs);
}

class ProfileCommandRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test: CTest runs the tests of this fixture in parallel processes.
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("profile_command_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "traces/gavel");
    std::ofstream(dir_ / "traces/gavel/simulation_throughputs.json") << R"json({
      "v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 4.0},
               "('ResNet-50 (batch size 64)', 2)": {"null": 7.0},
               "('ResNet-50 (batch size 64)', 4)": {"null": 12.0},
               "('LM (batch size 20)', 1)": {"null": 30.0},
               "('LM (batch size 20)', 2)": {"null": 50.0}},
      "k80": {"('ResNet-50 (batch size 64)', 1)": {"null": 1.0},
              "('LM (batch size 20)', 1)": {"null": 10.0}}})json";
    flags_.traces_dir = (dir_ / "traces").string();
    flags_.tables = "gavel";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int Run() {
    out_.str("");
    err_.str("");
    return RunProfile(flags_, out_, err_);
  }

  std::filesystem::path dir_;
  ProfileFlags flags_;
  std::ostringstream out_, err_;
};

TEST_F(ProfileCommandRunTest, WritesAStoreThePredictorLoads) {
  flags_.cluster = "2x4xV100+1x4xK80";
  flags_.out_path = (dir_ / "profiles.json").string();
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("profiled 7 configurations of 2 job types"), std::string::npos)
      << out_.str();
  Result<ProfileStore> store = LoadProfileStore(flags_.out_path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(store->profiles.size(), 7u);
  EXPECT_EQ(store->about.at("tables"), "gavel");
  Result<PerfPredictor> predictor =
      PerfPredictor::Fit(store->profiles, std::make_shared<SimpleThroughputModel>());
  ASSERT_TRUE(predictor.ok()) << predictor.status().ToString();
  EXPECT_TRUE(predictor->Predict("LM", 20, {"K80", 2, true}).has_value());

  // Same seed, same bytes.
  std::ifstream first(flags_.out_path);
  const std::string first_text((std::istreambuf_iterator<char>(first)), {});
  ASSERT_EQ(Run(), kExitOk);
  std::ifstream second(flags_.out_path);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(second)), {}), first_text);

  // --evaluate on the store, as JSON.
  flags_ = ProfileFlags{.tables = "gavel",
                        .evaluate = true,
                        .holdout = 0.3,
                        .in_path = (dir_ / "profiles.json").string(),
                        .json = true};
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  const nlohmann::json report = nlohmann::json::parse(out_.str());
  EXPECT_EQ(report["holdout"], 0.3);
  ASSERT_FALSE(report["by_gpu_type"].empty());
  EXPECT_EQ(report["by_gpu_type"].back()["gpu_type"], "all");
  EXPECT_EQ(report["by_gpu_type"].back()["held_out"], 2);  // round(0.3 x 7)
}

TEST_F(ProfileCommandRunTest, EvaluatesTheTables) {
  flags_.evaluate = true;
  flags_.holdout = 0.3;
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("Predictor accuracy on tables gavel"), std::string::npos);
  EXPECT_NE(out_.str().find("gavel    all"), std::string::npos) << out_.str();
}

TEST_F(ProfileCommandRunTest, Errors) {
  struct Case {
    std::string name;
    ProfileFlags flags;
    int want_exit;
    std::string want_in_message;
  };
  const std::string traces = flags_.traces_dir;
  const std::string out = (dir_ / "p.json").string();
  const std::vector<Case> cases = {
      {"no cluster",
       {.tables = "gavel", .out_path = out, .traces_dir = traces},
       kExitUsage,
       "--cluster is required"},
      {"no out",
       {.cluster = "1x4xV100", .tables = "gavel", .traces_dir = traces},
       kExitUsage,
       "--out is required"},
      {"unknown table",
       {.cluster = "1x4xV100", .tables = "gavel,helios", .out_path = out},
       kExitUsage,
       "unknown table \"helios\""},
      {"bad cluster", {.cluster = "4x", .tables = "gavel", .out_path = out}, kExitUsage, ""},
      {"unknown model",
       {.cluster = "1x4xV100",
        .models = "BERT",
        .tables = "gavel",
        .out_path = out,
        .traces_dir = traces},
       kExitUsage,
       "unknown model \"BERT\" in --models (the tables have: LM, ResNet-50)"},
      {"evaluate with out",
       {.tables = "gavel", .out_path = out, .evaluate = true},
       kExitUsage,
       "--evaluate takes no"},
      {"json without evaluate",
       {.cluster = "1x4xV100", .tables = "gavel", .out_path = out, .json = true},
       kExitUsage,
       "need --evaluate"},
      {"bad holdout",
       {.tables = "gavel", .evaluate = true, .holdout = 1.0},
       kExitUsage,
       "--holdout"},
      {"no tables there",
       {.cluster = "1x4xV100", .tables = "gavel", .out_path = out, .traces_dir = "/nonexistent"},
       kExitRuntimeError,
       "not found"},
      {"no known type",
       {.cluster = "1x4xH100", .tables = "gavel", .out_path = out, .traces_dir = traces},
       kExitRuntimeError,
       "no GPU type of"},
      {"store missing",
       {.tables = "gavel", .evaluate = true, .in_path = (dir_ / "none.json").string()},
       kExitRuntimeError,
       "not found"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    flags_ = c.flags;
    EXPECT_EQ(Run(), c.want_exit);
    EXPECT_NE(err_.str().find(c.want_in_message), std::string::npos) << err_.str();
  }
}

TEST(ProfileCommandMainTest, HelpAndRegistration) {
  std::ostringstream out, err;
  const char* help[] = {"dlsched", "profile", "--help"};
  EXPECT_EQ(Main(3, const_cast<char**>(help), out, err), kExitOk);
  EXPECT_NE(out.str().find("--evaluate"), std::string::npos);
  EXPECT_NE(out.str().find("--noise"), std::string::npos);
  const char* bad[] = {"dlsched", "profile", "--noise", "3"};
  EXPECT_EQ(Main(4, const_cast<char**>(bad), out, err), kExitUsage);
}

TEST_F(ProfileCommandRunTest, SimulateTakesTheStoreAsItsEstimator) {
  flags_.cluster = "2x4xV100+1x4xK80";
  flags_.out_path = (dir_ / "profiles.json").string();
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  const std::string store = flags_.out_path;
  const std::string missing = (dir_ / "missing.json").string();
  std::ostringstream out, err;
  const char* simulate[] = {"dlsched",   "simulate",         "--trace",    "synthetic:jobs=30",
                            "--cluster", "2x4xV100+1x4xK80", "--policy",   "fifo,sjf",
                            "-q",        "--predictor",      store.c_str()};
  EXPECT_EQ(Main(11, const_cast<char**>(simulate), out, err), kExitOk) << err.str();
  EXPECT_NE(out.str().find("sjf"), std::string::npos);
  simulate[10] = missing.c_str();
  EXPECT_EQ(Main(11, const_cast<char**>(simulate), out, err), kExitRuntimeError);
  EXPECT_NE(err.str().find("profile store"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace dlsched::cli
