// The one rule for which measurements train the predictor (model/training.h
// predictor_training_exclusion), on notes as the importers write them.
#include <gtest/gtest.h>

#include "model/training.h"

using namespace perfloom;

namespace {

TEST(TrainingFilter, Fp8KvCacheAndForeignCublasOptionsAreLeftOut) {
  // Kept: ordinary notes, and a configuration timed with its own custom option (" base").
  EXPECT_FALSE(predictor_training_exclusion(""));
  EXPECT_FALSE(predictor_training_exclusion("kv_cache_dtype=auto;kernel_source=vllm_flash_attn"));
  EXPECT_FALSE(
      predictor_training_exclusion("method=cuda_event;source=plan:64x128x64/s1/c2x1 table 1 variant=c1/s0 base rep=1"));
  EXPECT_FALSE(predictor_training_exclusion("method=cuda_event;source=plan:64x128x64/s1/c2x1 table 1"));
  // Left out, each with a reason.
  const auto fp8 = predictor_training_exclusion("kv_cache_dtype=fp8;kernel_source=vllm_flash_attn");
  ASSERT_TRUE(fp8);
  EXPECT_NE(fp8->find("fp8 KV cache"), std::string_view::npos);
  const auto variant =
      predictor_training_exclusion("method=cuda_event;source=plan:64x128x64/s1/c2x1 table 1 variant=c3/s0 rep=1");
  ASSERT_TRUE(variant);
  EXPECT_NE(variant->find("custom option"), std::string_view::npos);
  // " base" must follow the variant, not come before it.
  EXPECT_TRUE(predictor_training_exclusion("source=base plan variant=c3/s0 rep=2"));
}

}  // namespace

// The error statistics the accuracy report prints: absolute percentage errors, and the median of
// predicted over measured time that says which way a model errs.
TEST(ErrorStats, TheMedianRatioSaysWhichWayThePredictionsErr) {
  const ErrorStats s = error_stats({1.5, 2.0, 1.0, 4.0}, {1.0, 2.0, 2.0, 2.0});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mape, (50.0 + 0.0 + 50.0 + 100.0) / 4);
  EXPECT_DOUBLE_EQ(s.median_ratio, 1.25);  // ratios 0.5, 1, 1.5, 2
  const ErrorStats slow = error_stats({3.0, 3.0, 6.0}, {2.0, 2.0, 4.0});
  EXPECT_DOUBLE_EQ(slow.median_ratio, 1.5);
  EXPECT_EQ(error_stats({1.0}, {0.0}).n, 0u);  // a zero measurement is left out
}
