#include "io/sharing_models.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/builders.h"

#ifndef DLSCHED_TRACES_DIR
#define DLSCHED_TRACES_DIR ""
#endif

namespace dlsched {
namespace {

TEST(SharingModelsTest, BuiltInWithoutMeasurementsOneModelPerGpuType) {
  const Cluster cluster = testing::MakeCluster("1x4xV100+1x4xK80");
  Result<SharingModels> models = LoadSharingModels("", cluster);
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  EXPECT_EQ(models->source, "built-in job types (no traces folder)");
  EXPECT_EQ(models->catalog.size(), 8);
  ASSERT_EQ(models->models.size(), 2u);
  for (const auto& model : models->models) EXPECT_NE(model, nullptr);
}

TEST(SharingModelsTest, MeasuredTablesWhenTheTracesAreThere) {
  const std::string traces = DLSCHED_TRACES_DIR;
  if (traces.empty() || !std::filesystem::exists(traces + "/lucid/single_data.csv")) {
    GTEST_SKIP() << "no Lucid measurements at " << traces;
  }
  const Cluster cluster = testing::MakeCluster("1x4xV100");
  Result<SharingModels> models = LoadSharingModels(traces, cluster);
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  EXPECT_NE(models->source.find("lucid+gavel measurements"), std::string::npos) << models->source;
  EXPECT_GT(models->catalog.size(), 8);
  ASSERT_EQ(models->models.size(), 1u);
}

}  // namespace
}  // namespace dlsched
