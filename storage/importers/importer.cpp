#include "storage/importers/importer.h"

namespace perfloom::storage {

namespace {
// Length of the valid UTF-8 sequence at s[i], 0 when invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}
}  // namespace

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

ImportedKernel classified_kernel(const ClassifyInput& in) {
  const Classification c = classify_kernel(in);
  ImportedKernel k;
  k.family = c.family;
  k.desc.op = c.op;
  if (c.dtype) {
    k.desc.dtype = *c.dtype;
    k.dtype_known = true;
  }
  if (c.shape) {
    k.desc.shape = *c.shape;
    k.shape_known = true;
  }
  k.desc.tile = c.tile;
  k.desc.launch = in.launch;
  k.desc.name = in.kernel_name;
  k.library = c.library == "unknown" ? std::string() : c.library;
  k.launched_by = in.framework_op;
  return k;
}

ImportedKernel dataset_kernel(const KernelDesc& desc) {
  ImportedKernel k;
  k.desc = desc;
  k.family = family_of(desc.op);
  k.dtype_known = true;
  k.shape_known = desc.op != Op::unknown;
  return k;
}

}  // namespace perfloom::storage
