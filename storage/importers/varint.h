#pragma once
// The compact record encoding the trace importer and its op table share: LEB128 varints,
// zigzag for signed values, raw 8-byte doubles.
#include <cstdint>
#include <cstring>
#include <string>

namespace perfloom::storage::varint {

inline void put(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline uint64_t get(const unsigned char*& p) {
  uint64_t v = 0;
  int shift = 0;
  while (*p & 0x80) {
    v |= uint64_t(*p++ & 0x7F) << shift;
    shift += 7;
  }
  v |= uint64_t(*p++) << shift;
  return v;
}
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
inline void put_double(std::string& out, double d) {
  char b[8];
  std::memcpy(b, &d, 8);
  out.append(b, 8);
}
inline double get_double(const unsigned char*& p) {
  double d;
  std::memcpy(&d, p, 8);
  p += 8;
  return d;
}

}  // namespace perfloom::storage::varint
