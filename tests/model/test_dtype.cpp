#include <gtest/gtest.h>

#include "model/dtype.h"
#include "model/kernel.h"

using namespace perfloom;

TEST(Dtype, ParsesContractNamesAndFrameworkSpellings) {
  EXPECT_EQ(parse_dtype("bf16"), Dtype::bf16);
  EXPECT_EQ(parse_dtype("bfloat16"), Dtype::bf16);
  EXPECT_EQ(parse_dtype("FP16"), Dtype::fp16);
  EXPECT_EQ(parse_dtype("fp8"), Dtype::fp8e4m3);
  EXPECT_EQ(parse_dtype("float8_e5m2"), Dtype::fp8e5m2);
  EXPECT_EQ(parse_dtype("float32"), Dtype::fp32);
  EXPECT_FALSE(parse_dtype("fp12").has_value());
  for (Dtype d : kAllDtypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d);
}

TEST(Dtype, BytesAndTensorKeys) {
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::bf16), 2.0);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::fp8e4m3), 1.0);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::fp4), 0.5);
  EXPECT_EQ(tensor_rate_key(Dtype::fp8e5m2), "fp8");
  EXPECT_FALSE(tensor_rate_key(Dtype::fp32).has_value());
}

// model/kernel.h kernel_key: one function for training's dedup (shape) and the predictor's memo.
TEST(KernelKey, ShapeKeyIsTrainingsTextAndPredictionKeyAddsWhatPredictionsRead) {
  KernelDesc k;
  k.op = Op::gemm;
  k.dtype = Dtype::bf16;
  k.shape.M = 4096;
  k.shape.N = 1024;
  k.shape.K = 512;
  EXPECT_EQ(kernel_key(k), "gemm|bf16|4096|1024|512");  // the text the train/validation split hashes
  EXPECT_EQ(kernel_key(k, KernelKeyDetail::prediction), "gemm|bf16|4096|1024|512|c");

  KernelDesc tiled = k;
  tiled.tile = TileConfig{128, 256, 64, 2, 1, 4, 1, false};
  tiled.name = "nvjet_a";
  KernelDesc launched = k;
  launched.launch = LaunchArgs{{132, 1, 1}, {384, 1, 1}, 168, 1024};
  // Same shape: one training key; different tiles or launches: different predictions.
  EXPECT_EQ(kernel_key(tiled), kernel_key(k));
  EXPECT_EQ(kernel_key(launched), kernel_key(k));
  EXPECT_NE(kernel_key(tiled, KernelKeyDetail::prediction), kernel_key(k, KernelKeyDetail::prediction));
  EXPECT_NE(kernel_key(launched, KernelKeyDetail::prediction), kernel_key(k, KernelKeyDetail::prediction));
  KernelDesc renamed = tiled;
  renamed.name = "nvjet_b";  // a tiled kernel's name reaches the model
  EXPECT_NE(kernel_key(renamed, KernelKeyDetail::prediction), kernel_key(tiled, KernelKeyDetail::prediction));
  KernelDesc untiled_renamed = k;
  untiled_renamed.name = "other";  // an untiled known op's name does not
  EXPECT_EQ(kernel_key(untiled_renamed, KernelKeyDetail::prediction), kernel_key(k, KernelKeyDetail::prediction));

  KernelDesc attn;
  attn.op = Op::attn_prefill;
  attn.shape.B = 2;
  attn.shape.S = 128;
  attn.shape.Hq = 32;
  attn.shape.Hkv = 8;
  attn.shape.D = 128;
  KernelDesc acausal = attn;
  acausal.shape.causal = false;
  EXPECT_EQ(kernel_key(acausal), kernel_key(attn));
  EXPECT_NE(kernel_key(acausal, KernelKeyDetail::prediction), kernel_key(attn, KernelKeyDetail::prediction));
  EXPECT_EQ(kernel_key(attn, KernelKeyDetail::prediction), "attn_prefill|bf16|2|128|32|8|128|c");
}
