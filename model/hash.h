#pragma once
// FNV-1a, 64 bit: a stable hash of text for splits that must not change between runs or builds
// (training's calibration split, the tuner's shape folds) and for data fingerprints.
#include <cstdint>
#include <string_view>

namespace perfloom {

inline constexpr uint64_t kFnv1aOffset = 1469598103934665603ull;

// `h`: the hash so far, to continue over several pieces of text.
inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace perfloom
