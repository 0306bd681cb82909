#include "lp/face_centre.h"

#include <gtest/gtest.h>

#include <vector>

#include "lp/finish_time_fairness.h"

namespace dlsched::hetero {
namespace {

// Two alike types of 2 GPUs, two 1-GPU jobs running alike everywhere: max-min's optimum gives
// each job all its time (z* = 1), anywhere; the vertex puts each on one type, the face's centre
// splits each job's time evenly.
TEST(CentreOfOptimalFaceTest, SplitsTiedTypesEvenly) {
  const AllocationProblem problem{2, {2, 2}, {1, 1}, {1, 1, 1, 1}};
  const Allocation vertex{2, {1, 0, 0, 1}};
  const Allocation centre = CentreOfOptimalFace(problem, {0, 1}, {1, 1}, vertex);
  ASSERT_TRUE(CheckAllocation(problem, centre).ok());
  for (double x : centre.fraction) EXPECT_NEAR(x, 0.5, 1e-3);
}

// One type of 3 GPUs; job A (1 GPU) needs all its time for z* = 1, job B (2 GPUs, its equal
// share 0.75) needs X_B >= 0.75 and can have up to 1. Its slacks are X_B - 0.75 (the relaxed
// target), 1 - X_B twice (its time, and the GPUs, A holding one) and X_B: the centre is the root
// of 1 / (X - 0.75 (1 - 1e-4)) - 2 / (1 - X) + 1 / X, 0.83898. A keeps its target.
TEST(CentreOfOptimalFaceTest, SpreadsWhatTheBottleneckLeavesToTheCentre) {
  const AllocationProblem problem{1, {3}, {1, 2}, {1, 1}};
  for (const double vertex_b : {0.75, 1.0}) {
    SCOPED_TRACE(vertex_b);
    const Allocation vertex{1, {1, vertex_b}};
    const Allocation centre = CentreOfOptimalFace(problem, {0, 1}, {1, 0.75}, vertex);
    ASSERT_TRUE(CheckAllocation(problem, centre).ok());
    EXPECT_NEAR(centre.at(1, 0), 0.83898, 1e-4);
    EXPECT_GE(centre.at(0, 0), 1 - 1e-4);
  }
}

// max-min-gavel's normalisation: one type of 4 GPUs, a 1-GPU and a 2-GPU job of rate 1. Gavel
// maximises min(X_1, 2 X_2): z* = 1 needs X_1 = 1 and X_2 >= 0.5, and the face's centre is
// X_2 = 0.75 (its slacks X_2 - 0.5, 1 - X_2, X_2 and the GPUs' 3 - 2 X_2). The equal share
// (both jobs' share 1) maximises min(X_1, X_2) instead: X_2 = 1.
TEST(CentreOfOptimalFaceTest, MaxMinGavelWeighsRatesByTheGang) {
  const AllocationProblem problem{1, {4}, {1, 2}, {1, 1}};
  Result<Allocation> gavel = AllocateMaxMinGavel(problem);
  Result<Allocation> equal = AllocateMaxMinOneStageCentre(problem);
  ASSERT_TRUE(gavel.ok() && equal.ok());
  EXPECT_NEAR(gavel->at(0, 0), 1, 1e-4);
  EXPECT_NEAR(gavel->at(1, 0), 0.75, 1e-3);
  EXPECT_NEAR(equal->at(1, 0), 1, 1e-3);
}

// The allocators: the optimum's value is kept (to the relaxation), every usable type gets time.
TEST(CentreOfOptimalFaceTest, TheCentredAllocatorsKeepTheirOptimum) {
  const AllocationProblem problem{2,
                                  {2, 4},
                                  {1, 1, 2, 1},
                                  {3, 1, 1, 1, 2, 1, 1, 0},
                                  {100, 200, 300, 400},
                                  {50, 0, 10, 0},
                                  {10, 0, 0, 0}};
  Result<Allocation> vertex = AllocateMaxMinOneStage(problem);
  Result<Allocation> centre = AllocateMaxMinOneStageCentre(problem);
  ASSERT_TRUE(vertex.ok() && centre.ok());
  ASSERT_TRUE(CheckAllocation(problem, *centre).ok());
  EXPECT_GE(MinNormalisedRate(problem, *centre), MinNormalisedRate(problem, *vertex) * (1 - 2e-4));
  for (int j = 0; j < problem.num_jobs(); ++j) {
    for (int t = 0; t < problem.num_types; ++t) {
      if (problem.thr(j, t) > 0) EXPECT_GT(centre->at(j, t), 0) << j << " " << t;
    }
  }
  Result<Allocation> ftf_vertex = AllocateFinishTimeFairnessMinMax(problem);
  Result<Allocation> ftf_centre = AllocateFinishTimeFairnessCentre(problem);
  ASSERT_TRUE(ftf_vertex.ok() && ftf_centre.ok());
  ASSERT_TRUE(CheckAllocation(problem, *ftf_centre).ok());
  EXPECT_LE(MaxFinishTimeRatio(problem, *ftf_centre),
            MaxFinishTimeRatio(problem, *ftf_vertex) * (1 + 2e-4));
}

}  // namespace
}  // namespace dlsched::hetero
