#include "model/dtype.h"

#include <algorithm>
#include <cctype>

namespace perfloom {

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32:
      return "fp32";
    case Dtype::tf32:
      return "tf32";
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp8e4m3:
      return "fp8e4m3";
    case Dtype::fp8e5m2:
      return "fp8e5m2";
    case Dtype::int8:
      return "int8";
    case Dtype::fp4:
      return "fp4";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view text) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "fp32" || s == "float32" || s == "float" || s == "f32") return Dtype::fp32;
  if (s == "tf32") return Dtype::tf32;
  if (s == "fp16" || s == "float16" || s == "half" || s == "f16") return Dtype::fp16;
  if (s == "bf16" || s == "bfloat16") return Dtype::bf16;
  if (s == "fp8e4m3" || s == "fp8" || s == "e4m3" || s == "float8_e4m3fn" || s == "fp8_e4m3") return Dtype::fp8e4m3;
  if (s == "fp8e5m2" || s == "e5m2" || s == "float8_e5m2" || s == "fp8_e5m2") return Dtype::fp8e5m2;
  if (s == "int8" || s == "i8") return Dtype::int8;
  if (s == "fp4" || s == "nvfp4" || s == "mxfp4") return Dtype::fp4;
  return std::nullopt;
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32:
      return 4.0;
    case Dtype::fp16:
    case Dtype::bf16:
      return 2.0;
    case Dtype::fp8e4m3:
    case Dtype::fp8e5m2:
    case Dtype::int8:
      return 1.0;
    case Dtype::fp4:
      return 0.5;
  }
  return 4.0;
}

std::optional<std::string_view> tensor_rate_key(Dtype d) {
  switch (d) {
    case Dtype::fp32:
      return std::nullopt;
    case Dtype::tf32:
      return "tf32";
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp8e4m3:
    case Dtype::fp8e5m2:
      return "fp8";
    case Dtype::int8:
      return "int8";
    case Dtype::fp4:
      return "fp4";
  }
  return std::nullopt;
}

}  // namespace perfloom
