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
