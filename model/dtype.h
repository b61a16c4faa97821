#pragma once
// Data types of kernel operands, with the names used by the kernel-list CSV (CONTRACT.md).
#include <optional>
#include <string>
#include <string_view>

namespace perfloom {

enum class Dtype { fp32, tf32, fp16, bf16, fp8e4m3, fp8e5m2, int8, fp4 };

inline constexpr Dtype kAllDtypes[] = {Dtype::fp32,    Dtype::tf32,    Dtype::fp16, Dtype::bf16,
                                       Dtype::fp8e4m3, Dtype::fp8e5m2, Dtype::int8, Dtype::fp4};

std::string_view dtype_name(Dtype d);
// Accepts the contract names plus common spellings (float16, half, bfloat16, fp8, e4m3, float32).
std::optional<Dtype> parse_dtype(std::string_view text);
// Bytes per element as stored in memory (fp4 is 0.5).
double dtype_bytes(Dtype d);
// The key under which a GPU file lists tensor throughput for this dtype ("fp8" for both fp8
// formats); fp32 has none because it runs on the FMA lanes, not on tensor cores.
std::optional<std::string_view> tensor_rate_key(Dtype d);

}  // namespace perfloom
