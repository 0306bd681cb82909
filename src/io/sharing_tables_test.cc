#include "io/sharing_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlsched/sharing/demand.h"

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR ""
#endif

namespace dlsched {
namespace {

using sharing::FitError;
using sharing::FittedInterferenceModel;
using sharing::PairSample;

constexpr char kSingle[] =
    "model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n"
    "ResNet50,ImageNet,32,0,432.5,100.0,80.75,5518.0,2\n"
    "ResNet50,ImageNet,128,0,465.6,100.0,86.9,13326.0,2\n"
    "ResNet50,ImageNet,32,1,670.6,95.8,67.5,3838.0,2\n"
    "LSTM,Wikitext2,64,0,4496.0,97.0,74.875,3884.0,2\n"
    "PPO,LunarLander,64,0,14.2,11.9,0.0,2051.0,0\n"
    "PPO,LunarLander,32,0,5.1,12.4,0.0,2051.0,0\n";

constexpr char kPairs[] =
    ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,"
    "speed2,gpu_util,gmem_util,gmem\n"
    "0,ResNet50,ImageNet,1,32,0,0.6,LSTM,Wikitext2,1,64,0,0.7,99.0,90.0,9400\n"
    "1,PPO,LunarLander,1,32,0,0.98,LSTM,Wikitext2,1,64,0,0.95,99.0,75.0,5900\n";

// ResNet-50 and LM share a V100 ([3, 20] against 4 and 30 alone); ResNet-50 and A3C may not.
constexpr char kGavel[] = R"json({
  "v100": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 4.0, "('LM (batch size 20)', 1)": [3.0, 20.0],
                                         "('A3C', 1)": [0.0, 0.0]},
    "('LM (batch size 20)', 1)": {"null": 30.0, "('ResNet-50 (batch size 64)', 1)": [20.0, 3.0]},
    "('A3C', 1)": {"null": 5.0}
  },
  "k80": {"('ResNet-50 (batch size 64)', 1)": {"null": 1.0}}
})json";

TEST(SharingTablesTest, ParsesLucidTables) {
  Result<std::vector<LucidJobProfile>> singles = ParseLucidSingle(kSingle, "single.csv");
  ASSERT_TRUE(singles.ok()) << singles.status().ToString();
  ASSERT_EQ(singles->size(), 6u);
  const LucidJobProfile& r = (*singles)[2];
  EXPECT_EQ(r.key, (sharing::JobTypeKey{"ResNet50", 32, true}));
  EXPECT_EQ(r.dataset, "ImageNet");
  EXPECT_DOUBLE_EQ(r.gpu_util_pct, 95.8);
  EXPECT_DOUBLE_EQ(r.gmem_mib, 3838.0);
  EXPECT_EQ(r.label, 2);

  Result<std::vector<LucidPair>> pairs = ParseLucidColocate(kPairs, "pairs.csv");
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[1].line, 3);
  EXPECT_EQ((*pairs)[1].a.model, "PPO");
  EXPECT_DOUBLE_EQ((*pairs)[1].speed_b, 0.95);

  Result<SharingMeasurements> m = LucidMeasurements(*singles, *pairs, "pairs.csv");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->catalog.size(), 6);
  EXPECT_EQ(m->pairs.size(), 2u);
  ASSERT_EQ(m->lucid_samples.size(), 4u);
  EXPECT_EQ(m->lucid_samples[1].group, 0);
  EXPECT_DOUBLE_EQ(m->lucid_samples[1].speed, 0.7);
  EXPECT_DOUBLE_EQ(m->lucid_samples[1].self.sm_util, 0.97);
  EXPECT_EQ(m->lucid_samples[1].other.memory_mib, 5518);
}

TEST(SharingTablesTest, ErrorsNameFileAndLine) {
  struct Case {
    std::string name;
    std::string text;
    std::string want;
  };
  const std::string header =
      ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,"
      "speed2,gpu_util,gmem_util,gmem\n";
  const std::vector<Case> cases = {
      {"missing column", "model1,speed1\nA,1\n", "f.csv:1: no column \"batchsize1\""},
      {"short row", header + "0,A,D,1,32,0,0.9\n", "f.csv:2: expected 16 fields, got 7"},
      {"bad speed", header + "\n0,A,D,1,32,0,fast,B,D,1,32,0,0.9,50,20,4000\n",
       "f.csv:3: speed1 must be a number"},
      {"two GPUs", header + "0,A,D,2,32,0,0.9,B,D,1,32,0,0.9,50,20,4000\n",
       "f.csv:2: gpu_num1 must be an integer in [1, 1]"},
      {"bad amp", header + "0,A,D,1,32,2,0.9,B,D,1,32,0,0.9,50,20,4000\n",
       "f.csv:2: amp must be an integer in [0, 1]"},
      {"empty", "", "f.csv: empty file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<std::vector<LucidPair>> got = ParseLucidColocate(c.text, "f.csv");
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find(c.want), std::string::npos) << got.status().ToString();
  }
  // A pair naming a type single_data lacks.
  Result<std::vector<LucidJobProfile>> singles = ParseLucidSingle(kSingle, "single.csv");
  Result<std::vector<LucidPair>> pairs = ParseLucidColocate(
      header + "0,ResNet50,D,1,32,0,0.9,VGG,D,1,32,0,0.9,50,20,4000\n", "pairs.csv");
  ASSERT_TRUE(singles.ok() && pairs.ok());
  const Result<SharingMeasurements> m = LucidMeasurements(*singles, *pairs, "pairs.csv");
  EXPECT_NE(m.status().message().find("pairs.csv:2: job type VGG batch 32 amp 0"),
            std::string::npos)
      << m.status().ToString();
}

TEST(SharingTablesTest, ParsesAlibabaGpuMilliOfSingleGpuTasks) {
  const std::string text =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
      "p1,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
      "p2,6000,12288,0,0,,BE,Running,1,2,1\n"
      "p3,6000,12288,8,1000,,BE,Running,1,2,1\n";
  Result<std::vector<int>> milli = ParseAlibabaGpuMilli(text, "pods.csv");
  ASSERT_TRUE(milli.ok()) << milli.status().ToString();
  EXPECT_EQ(*milli, (std::vector<int>{1000, 460}));
  const Result<std::vector<int>> bad =
      ParseAlibabaGpuMilli("num_gpu,gpu_milli\n1,500\n1,1500\n", "pods.csv");
  EXPECT_NE(bad.status().message().find("pods.csv:3: gpu_milli"), std::string::npos)
      << bad.status().ToString();
}

TEST(SharingTablesTest, GavelPairsBorrowLucidFeatures) {
  Result<GavelThroughputTable> table = GavelThroughputTable::Parse(kGavel, "gavel.json");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  Result<SharingMeasurements> m =
      LucidMeasurements(*ParseLucidSingle(kSingle, "s"), *ParseLucidColocate(kPairs, "p"), "p");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(AddGavelMeasurements(*table, *m).ok());
  const std::optional<int> resnet = m->catalog.Find({"ResNet-50", 64, false});
  const std::optional<int> lm = m->catalog.Find({"LM", 20, false});
  const std::optional<int> a3c = m->catalog.Find({"A3C", 0, false});
  ASSERT_TRUE(resnet.has_value() && lm.has_value() && a3c.has_value());
  // bs64 is as far from 32 as from 128 in log2: the smaller wins. A3C takes PPO's smallest.
  EXPECT_EQ(m->catalog.at(*resnet).memory_mib, 5518);
  EXPECT_EQ(m->catalog.at(*lm).memory_mib, 3884);
  EXPECT_DOUBLE_EQ(m->catalog.at(*a3c).sm_util, 0.124);

  const auto fallback = std::make_shared<FittedInterferenceModel>(
      FittedInterferenceModel::Weights{0.5, 0, 0, 0, 0, 0, 0});
  const sharing::TableInterferenceModel v100(m->catalog.size(), m->pairs, "V100", fallback);
  EXPECT_NEAR(*v100.Measured(*resnet, *lm), 0.75, 1e-6);
  EXPECT_NEAR(*v100.Measured(*lm, *resnet), 20.0 / 30.0, 1e-6);
  EXPECT_EQ(*v100.Measured(*resnet, *a3c), 0.0);
  // On a K80 nothing of Gavel's was measured: Lucid's untyped pairs, then the fallback.
  const sharing::TableInterferenceModel k80(m->catalog.size(), m->pairs, "K80", fallback);
  EXPECT_FALSE(k80.Measured(*resnet, *lm).has_value());
  EXPECT_DOUBLE_EQ(k80.PairSpeed(m->catalog.Job(*resnet), m->catalog.Job(*lm)), 0.5);
  EXPECT_NEAR(k80.PairSpeed(m->catalog.Job(0), m->catalog.Job(3)), 0.6, 1e-6);
  // Samples: the sharing pair only, both directions.
  ASSERT_EQ(m->gavel_samples.size(), 2u);
  EXPECT_EQ(m->gavel_samples[0].group, m->gavel_samples[1].group);
}

void Print(const std::string& what, const FitError& e) {
  std::cout << "[ sharing  ] " << what << ": n=" << e.num_samples << " MAE=" << e.mae
            << " RMSE=" << e.rmse << " max=" << e.max_abs << " baseline MAE=" << e.baseline_mae
            << "\n";
}

double MeanSpeed(const std::vector<PairSample>& samples) {
  double sum = 0.0;
  for (const PairSample& s : samples) sum += s.speed;
  return sum / static_cast<double>(samples.size());
}

// The figures in docs/sharing.md: the fitted model's error on held-back measured pairs.
TEST(SharingTablesTest, FittedModelErrorOnHeldBackPairs) {
  const std::string traces = DLSCHED_TRACES_DIR;
  if (!std::filesystem::exists(traces + "/lucid/colocate_info.csv") ||
      !std::filesystem::exists(traces + "/gavel/simulation_throughputs.json")) {
    GTEST_SKIP() << "traces not found at " << traces;
  }
  Result<SharingMeasurements> m = LoadSharingMeasurements(traces, /*with_gavel=*/true);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->lucid_samples.size(), 2 * 1388u);
  EXPECT_FALSE(m->gavel_samples.empty());

  // Lucid: 5-fold cross-validation over pairs.
  Result<FitError> lucid_cv = sharing::CrossValidateFit(m->lucid_samples, 5);
  ASSERT_TRUE(lucid_cv.ok()) << lucid_cv.status().ToString();
  Print("lucid 5-fold CV", *lucid_cv);
  EXPECT_LT(lucid_cv->mae, lucid_cv->baseline_mae);

  // Lucid, leave one model out: every pair that involves the held-out model is predicted by a
  // model fitted to pairs without it (an unseen job type).
  std::map<std::string, int> model_index;
  for (const PairSample& s : m->lucid_samples) {
    model_index.emplace(m->catalog.at(s.self.type).key.model, 0);
  }
  int next = 0;
  for (auto& [name, index] : model_index) index = next++;
  FitError pooled;
  double pooled_sq = 0.0;
  for (const auto& [name, index] : model_index) {
    std::vector<PairSample> train;
    std::vector<PairSample> test;
    for (const PairSample& s : m->lucid_samples) {
      const bool involves = m->catalog.at(s.self.type).key.model == name ||
                            m->catalog.at(s.other.type).key.model == name;
      (involves ? test : train).push_back(s);
    }
    Result<FittedInterferenceModel> fit = FittedInterferenceModel::Fit(train);
    ASSERT_TRUE(fit.ok());
    const FitError e = sharing::EvaluateFit(*fit, test, MeanSpeed(train));
    pooled.num_samples += e.num_samples;
    pooled.mae += e.mae * e.num_samples;
    pooled.baseline_mae += e.baseline_mae * e.num_samples;
    pooled_sq += e.rmse * e.rmse * e.num_samples;
    pooled.max_abs = std::max(pooled.max_abs, e.max_abs);
  }
  pooled.mae /= pooled.num_samples;
  pooled.baseline_mae /= pooled.num_samples;
  pooled.rmse = std::sqrt(pooled_sq / pooled.num_samples);
  Print("lucid leave-one-model-out", pooled);
  EXPECT_LT(pooled.mae, 0.2);

  // Gavel: fitted to all of Lucid, tested on Gavel's pairs (a different testbed and GPU types).
  Result<FittedInterferenceModel> lucid_fit = FittedInterferenceModel::Fit(m->lucid_samples);
  ASSERT_TRUE(lucid_fit.ok());
  std::cout << "[ sharing  ] weights fitted to all Lucid pairs:";
  for (double w : lucid_fit->weights()) std::cout << " " << w;
  std::cout << "\n";
  Print("lucid fit -> gavel pairs",
        sharing::EvaluateFit(*lucid_fit, m->gavel_samples, MeanSpeed(m->lucid_samples)));
  std::cout << "[ sharing  ] mean speed: lucid " << MeanSpeed(m->lucid_samples) << ", gavel "
            << MeanSpeed(m->gavel_samples) << "; gavel pairs stored " << m->pairs.size() - 1388
            << "\n";
  Result<FitError> gavel_cv = sharing::CrossValidateFit(m->gavel_samples, 5);
  ASSERT_TRUE(gavel_cv.ok()) << gavel_cv.status().ToString();
  Print("gavel 5-fold CV", *gavel_cv);

  // The model a simulator would use on a V100: Gavel's V100 pairs, then Lucid's, then the fit.
  Result<std::unique_ptr<sharing::TableInterferenceModel>> v100 = MakeInterferenceModel(*m, "V100");
  ASSERT_TRUE(v100.ok()) << v100.status().ToString();
  const std::optional<int> resnet = m->catalog.Find({"ResNet-50", 64, false});
  const std::optional<int> lm = m->catalog.Find({"LM", 20, false});
  ASSERT_TRUE(resnet.has_value() && lm.has_value());
  EXPECT_TRUE((*v100)->Measured(*resnet, *lm).has_value());
  const sharing::SharingJob unknown{sharing::SharingJob::kUnknownType, 0.9, 0.6, 8000};
  EXPECT_DOUBLE_EQ((*v100)->PairSpeed(unknown, m->catalog.Job(*lm)),
                   lucid_fit->PairSpeed(unknown, m->catalog.Job(*lm)));
}

TEST(SharingTablesTest, AlibabaGpuMilliDistribution) {
  const std::string path =
      std::string(DLSCHED_TRACES_DIR) + "/alibaba-gpu-v2023/openb_pod_list_default.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "traces not found at " << path;
  Result<std::vector<int>> milli = LoadAlibabaGpuMilli(path);
  ASSERT_TRUE(milli.ok()) << milli.status().ToString();
  std::vector<double> shared;
  for (int v : *milli) {
    if (v < 1000) shared.push_back(v / 1000.0);
  }
  EXPECT_EQ(shared.size(), 3078u);  // shared/traces/alibaba-gpu-v2023/SOURCE.md
  Result<sharing::EmpiricalDistribution> d =
      sharing::EmpiricalDistribution::FromSamples(std::move(shared));
  ASSERT_TRUE(d.ok());
  std::cout << "[ sharing  ] alibaba gpu_milli < 1000: n=" << d->size()
            << " p10=" << d->Percentile(10) << " p50=" << d->Percentile(50)
            << " p90=" << d->Percentile(90) << "\n";
  EXPECT_GT(d->Percentile(0), 0.0);
  EXPECT_LT(d->Percentile(100), 1.0);
}

}  // namespace
}  // namespace dlsched
