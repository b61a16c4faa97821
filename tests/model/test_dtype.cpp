#include <gtest/gtest.h>

#include "model/dtype.h"

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
