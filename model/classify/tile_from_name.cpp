#include "model/classify/tile_from_name.h"

#include <array>

namespace perfloom {

namespace {

constexpr char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_ident(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Case-insensitive find of a lowercase needle.
size_t ifind(std::string_view hay, std::string_view needle, size_t from = 0) {
  if (needle.empty() || hay.size() < needle.size()) return std::string_view::npos;
  const size_t last = hay.size() - needle.size();
  for (size_t i = from; i <= last; ++i) {
    if (lower(hay[i]) != needle[0]) continue;
    size_t j = 1;
    while (j < needle.size() && lower(hay[i + j]) == needle[j]) ++j;
    if (j == needle.size()) return i;
  }
  return std::string_view::npos;
}

bool ieq(std::string_view a, std::string_view lower_b) {
  if (a.size() != lower_b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower_b[i]) return false;
  return true;
}

bool istarts(std::string_view a, std::string_view lower_b) {
  return a.size() >= lower_b.size() && ieq(a.substr(0, lower_b.size()), lower_b);
}

// Reads an unsigned number of at most 6 digits at s[i]; advances i. -1 when there is none.
int read_int(std::string_view s, size_t& i) {
  size_t start = i;
  int v = 0;
  while (i < s.size() && is_digit(s[i]) && i - start < 6) v = v * 10 + (s[i++] - '0');
  if (i == start || (i < s.size() && is_digit(s[i]))) return -1;
  return v;
}

// Parses "AxB" or "AxBxC" starting at tok[0]; returns the number of dims read (0: not dims).
// With `whole`, the token must end right after the dims.
int parse_dims(std::string_view tok, std::array<int, 3>& d, bool whole = true, size_t* end = nullptr) {
  size_t i = 0;
  int n = 0;
  while (n < 3) {
    int v = read_int(tok, i);
    if (v < 0) return 0;
    d[size_t(n++)] = v;
    if (i < tok.size() && (tok[i] == 'x' || tok[i] == 'X') && i + 1 < tok.size() && is_digit(tok[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  if (n < 2) return 0;
  if (whole && i != tok.size()) return 0;
  if (end) *end = i;
  return n;
}

// The identifier run starting at pos (letters, digits, '_').
std::string_view ident_from(std::string_view name, size_t pos) {
  size_t e = pos;
  while (e < name.size() && is_ident(name[e])) ++e;
  return name.substr(pos, e - pos);
}

// Splits an identifier on '_' and calls f(token, index); stops early when f returns false.
template <class F>
void for_tokens(std::string_view seg, F&& f) {
  size_t i = 0, idx = 0;
  while (i <= seg.size()) {
    size_t j = seg.find('_', i);
    if (j == std::string_view::npos) j = seg.size();
    if (j > i && !f(seg.substr(i, j - i), idx++)) return;
    i = j + 1;
  }
}

bool plausible(int m, int n) { return m > 0 && n > 0 && m <= 1024 && n <= 1024; }

// nvjet_[smNN_]<types>_<M>x<N>_<K>x<stages>_<clusterM>x<clusterN>[_2cta]_<v|h>_bz[_coopA][_splitK]..._TNT
bool parse_nvjet(std::string_view name, TileNameInfo& out) {
  size_t pos = name.find("nvjet_");
  if (pos == std::string_view::npos) return false;
  std::string_view seg = ident_from(name, pos);
  TileConfig t;
  int dims_seen = 0;
  for_tokens(seg, [&](std::string_view tok, size_t) {
    std::array<int, 3> d{};
    if (parse_dims(tok, d) == 2) {
      if (dims_seen == 0) {
        t.tile_m = d[0];
        t.tile_n = d[1];
      } else if (dims_seen == 1) {
        t.tile_k = d[0];
        t.stages = d[1];
      } else if (dims_seen == 2) {
        t.cluster_m = d[0];
        t.cluster_n = d[1];
      }
      ++dims_seen;
    } else if (ieq(tok, "splitk")) {
      out.split_k = true;
    } else if (ieq(tok, "2cta")) {
      out.two_cta = true;
    } else if (ieq(tok, "streamk")) {
      out.stream_k = true;
    }
    return true;
  });
  out.format = "nvjet";
  out.column_major = true;
  if (dims_seen > 0 && plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

// sm80/sm90 xmma: ..._tilesize128x128x64_stage4_warpsize2x2x1_..._cgasize1x2x1_..._segment_k_on...
bool parse_xmma(std::string_view name, TileNameInfo& out) {
  size_t pos = name.find("xmma_");
  if (pos == std::string_view::npos) return false;
  // Back up to the start of the identifier (sm90_xmma_...).
  while (pos > 0 && is_ident(name[pos - 1])) --pos;
  std::string_view seg = ident_from(name, pos);
  TileConfig t;
  bool have = false;
  for_tokens(seg, [&](std::string_view tok, size_t) {
    std::array<int, 3> d{};
    if (istarts(tok, "tilesize") && parse_dims(tok.substr(8), d) >= 2) {
      t.tile_m = d[0];
      t.tile_n = d[1];
      t.tile_k = d[2];
      have = true;
    } else if (istarts(tok, "cgasize") && parse_dims(tok.substr(7), d) >= 2) {
      t.cluster_m = d[0];
      t.cluster_n = d[1];
    } else if (istarts(tok, "stage") && tok.size() > 5 && is_digit(tok[5])) {
      size_t i = 5;
      int v = read_int(tok, i);
      if (v > 0 && i == tok.size()) t.stages = v;
    } else if (ieq(tok, "splitk")) {
      out.split_k = true;
    }
    return true;
  });
  if (ifind(seg, "segment_k_on") != std::string_view::npos) out.split_k = true;
  if (ifind(seg, "stream_k") != std::string_view::npos || ifind(seg, "streamk") != std::string_view::npos)
    out.stream_k = true;
  out.format = "xmma";
  out.column_major = ifind(seg, "gemm") != std::string_view::npos && ifind(seg, "cudnn") == std::string_view::npos;
  if (have && plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

bool is_gemm_token(std::string_view tok) {
  return ifind(tok, "gemm") != std::string_view::npos || ifind(tok, "fprop") != std::string_view::npos ||
         ifind(tok, "dgrad") != std::string_view::npos || ifind(tok, "wgrad") != std::string_view::npos;
}

// Shared by pre-Hopper cuBLAS and CUTLASS 2/3 procedural names: reads the dims after the gemm token.
//  2-dim tokens: first = tile MxN, then K x stages (after "stages" for cuBLAS; next one for CUTLASS 2).
//  3-dim tokens (CUTLASS 3): tile MxNxK, cluster, then the stage count as a bare number.
void parse_after_gemm(std::string_view seg, TileNameInfo& out, TileConfig& t, bool& have) {
  bool after_gemm = false, want_stages_next = false, want_bare_stages = false;
  int twos = 0, threes = 0;
  for_tokens(seg, [&](std::string_view tok, size_t) {
    if (!after_gemm) {
      if (is_gemm_token(tok)) after_gemm = true;
      return true;
    }
    std::array<int, 3> d{};
    int n = parse_dims(tok, d);
    if (n == 2) {
      if (twos == 0 && !have) {
        t.tile_m = d[0];
        t.tile_n = d[1];
        have = true;
      } else if (want_stages_next || twos == 1) {
        t.tile_k = d[0];
        t.stages = d[1];
      }
      ++twos;
      want_stages_next = false;
    } else if (n == 3) {
      if (threes == 0 && !have) {
        t.tile_m = d[0];
        t.tile_n = d[1];
        t.tile_k = d[2];
        have = true;
        want_bare_stages = false;
      } else if (threes == 1) {
        t.cluster_m = d[0];
        t.cluster_n = d[1];
        want_bare_stages = true;
      }
      ++threes;
    } else if (ieq(tok, "stages")) {
      want_stages_next = true;
    } else if (want_bare_stages && !tok.empty() && is_digit(tok[0])) {
      size_t i = 0;
      int v = read_int(tok, i);
      if (v >= 0 && i == tok.size()) t.stages = v;  // 0: CUTLASS picked the count itself
      want_bare_stages = false;
    } else {
      want_bare_stages = false;
      if (ieq(tok, "splitk"))
        out.split_k = true;
      else if (ieq(tok, "streamk"))
        out.stream_k = true;
    }
    return true;
  });
  if (ifind(seg, "stream_k") != std::string_view::npos) out.stream_k = true;
  if (ifind(seg, "split_k") != std::string_view::npos) out.split_k = true;
}

bool parse_cutlass3x(std::string_view name, TileNameInfo& out) {
  size_t pos = name.find("cutlass3x_");
  if (pos == std::string_view::npos) return false;
  std::string_view seg = ident_from(name, pos);
  TileConfig t;
  bool have = false;
  parse_after_gemm(seg, out, t, have);
  out.format = "cutlass3";
  if (have && plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

// cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8, cutlass_tensorop_..fprop.. .
bool parse_cutlass2(std::string_view name, TileNameInfo& out) {
  // The first "cutlass_..." identifier with a gemm/conv token ("cutlass__5x_cudnn::Kernel<" has none).
  std::string_view seg;
  for (size_t pos = 0; (pos = name.find("cutlass_", pos)) != std::string_view::npos; pos += 8) {
    if (pos > 0 && is_ident(name[pos - 1])) continue;
    std::string_view cand = ident_from(name, pos);
    bool gemmish = false;
    for_tokens(cand, [&](std::string_view tok, size_t) {
      if (is_gemm_token(tok)) {
        gemmish = true;
        return false;
      }
      return true;
    });
    if (gemmish) {
      seg = cand;
      break;
    }
  }
  if (seg.empty()) return false;
  TileConfig t;
  bool have = false;
  parse_after_gemm(seg, out, t, have);
  out.format = "cutlass2";
  // cuBLAS ships CUTLASS 2 kernels and launches them as cutlass::Kernel2<cutlass_80_...>.
  out.column_major = name.find("Kernel2<") != std::string_view::npos;
  if (have && plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

// Pre-Hopper cuBLAS: ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn, volta_sgemm_128x64_nn.
bool parse_cublas_legacy(std::string_view name, TileNameInfo& out) {
  static constexpr std::string_view kArch[] = {"ampere_", "turing_", "volta_", "maxwell_", "pascal_", "kepler_",
                                               "hopper_", "sm86_",   "sm89_",  "sm75_",    "sm70_"};
  size_t start = 0;
  if (istarts(name, "void ")) start = 5;
  std::string_view rest = name.substr(start);
  bool arch = false;
  for (auto a : kArch)
    if (istarts(rest, a)) {
      arch = true;
      break;
    }
  if (!arch) return false;
  std::string_view seg = ident_from(rest, 0);
  if (ifind(seg, "gemm") == std::string_view::npos) return false;
  TileConfig t;
  bool have = false;
  parse_after_gemm(seg, out, t, have);
  out.format = "cublas";
  out.column_major = true;
  if (have && plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

// TensorRT-LLM generated GEMMs (FlashInfer trtllm-gen):
// bmm_Bfloat16_MxInt4Bfloat16_castBfloat16_Fp32_Ab32_t128x16x256u2_s3_et128x16_m256x16x16_c2x1x1_rM_..._sm100f
bool parse_trtllm_gen(std::string_view name, TileNameInfo& out) {
  if (!(istarts(name, "bmm_") || istarts(name, "gemm_"))) return false;
  std::string_view seg = ident_from(name, 0);
  if (ifind(seg, "_sm1") == std::string_view::npos && ifind(seg, "_sm9") == std::string_view::npos) return false;
  TileConfig t;
  bool have = false, stages = false;
  for_tokens(seg, [&](std::string_view tok, size_t idx) {
    if (idx == 0 || tok.size() < 2) return true;
    std::array<int, 3> d{};
    size_t end = 0;
    if (!have && tok[0] == 't' && is_digit(tok[1]) && parse_dims(tok.substr(1), d, false, &end) == 3) {
      t.tile_m = d[0];
      t.tile_n = d[1];
      t.tile_k = d[2];
      have = true;
    } else if (have && !stages && tok[0] == 's' && is_digit(tok[1])) {
      size_t i = 1;
      int v = read_int(tok, i);
      if (v > 0 && i == tok.size()) {
        t.stages = v;
        stages = true;
      }
    } else if (tok[0] == 'c' && is_digit(tok[1]) && parse_dims(tok.substr(1), d) == 3) {
      t.cluster_m = d[0];
      t.cluster_n = d[1];
    }
    return true;
  });
  if (!have) return false;
  out.format = "trtllm-gen";
  if (plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

// Reads "cute::tuple<cute::C<a>, cute::C<b>, cute::C<c> >" at pos (just after "cute::tuple<").
bool read_c_triple(std::string_view s, size_t pos, std::array<int, 3>& d) {
  size_t i = pos;
  for (int n = 0; n < 3; ++n) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (s.compare(i, 8, "cute::C<") == 0)
      i += 8;
    else if (s.compare(i, 2, "C<") == 0)
      i += 2;
    else
      return false;
    if (s.compare(i, 5, "(int)") == 0) i += 5;
    int v = read_int(s, i);
    if (v < 0 || i >= s.size() || s[i] != '>') return false;
    d[size_t(n)] = v;
    ++i;
    while (i < s.size() && s[i] == ' ') ++i;
    if (n < 2) {
      if (i >= s.size() || s[i] != ',') return false;
      ++i;
    }
  }
  return true;
}

// cutlass::device_kernel<...GemmUniversal<..., CollectiveMma<MainloopSm90...<Stages, Cluster, ...>, Tile, ...
bool parse_cute_template(std::string_view name, TileNameInfo& out) {
  std::string_view s = name.substr(0, std::min<size_t>(name.size(), 8192));
  if (s.find("cute::") == std::string_view::npos || s.find("Gemm") == std::string_view::npos) return false;
  TileConfig t;
  bool have = false;
  size_t ml = s.find("MainloopSm");
  size_t scan_from = 0;
  if (ml != std::string_view::npos) {
    size_t lt = s.find('<', ml);
    if (lt != std::string_view::npos) {
      size_t i = lt + 1;
      if (s.compare(i, 5, "(int)") == 0) i += 5;
      int v = read_int(s, i);
      if (v > 0) t.stages = v;
      scan_from = lt;
    }
  }
  // The first triple after the mainloop policy is its cluster shape; the next is the CTA tile.
  std::array<int, 3> first{}, d{};
  bool have_first = false;
  size_t p = scan_from;
  for (int guard = 0; guard < 16; ++guard) {
    p = s.find("cute::tuple<", p);
    if (p == std::string_view::npos) break;
    p += 12;
    if (!read_c_triple(s, p, d)) continue;
    bool small = d[0] <= 16 && d[1] <= 16 && d[2] <= 16;
    if (!have_first && small && ml != std::string_view::npos) {
      first = d;
      have_first = true;
      continue;
    }
    if (d[0] >= 16 && d[1] >= 8) {
      t.tile_m = d[0];
      t.tile_n = d[1];
      t.tile_k = d[2];
      have = true;
      break;
    }
  }
  if (have_first) {
    t.cluster_m = std::max(first[0], 1);
    t.cluster_n = std::max(first[1], 1);
  }
  if (s.find("StreamK") != std::string_view::npos) out.stream_k = true;
  if (s.find("SplitK") != std::string_view::npos) out.split_k = true;
  if (!have) return false;
  out.format = "cute";
  if (plausible(t.tile_m, t.tile_n)) out.tile = t;
  return true;
}

}  // namespace

TileNameInfo parse_tile_name(std::string_view name) {
  TileNameInfo out;
  if (name.empty()) return out;
  if (parse_nvjet(name, out) || parse_xmma(name, out) || parse_cutlass3x(name, out) || parse_cutlass2(name, out) ||
      parse_cublas_legacy(name, out) || parse_trtllm_gen(name, out) || parse_cute_template(name, out)) {
    if (out.tile && out.stream_k) out.tile->stream_k = true;
  }
  return out;
}

std::optional<TileConfig> tile_from_kernel_name(std::string_view name) { return parse_tile_name(name).tile; }

std::optional<int> operand_alignment_elements(std::string_view name) {
  for (size_t pos = 0; (pos = ifind(name, "_align", pos)) != std::string_view::npos; pos += 6) {
    size_t e = pos + 6;
    const int v = read_int(name, e);
    if (v <= 0 || (e < name.size() && is_ident(name[e]) && name[e] != '_')) continue;
    return v;
  }
  return std::nullopt;
}

std::optional<AttentionTileInfo> attention_tile_from_name(std::string_view name) {
  AttentionTileInfo info;
  if (size_t p = ifind(name, "flash_fwd_kernel_traits<"); p != std::string_view::npos) {
    // A profiler joins a split-KV kernel and its combine kernel with " ; ": the first one decides.
    const size_t fwd = ifind(name, "flash_fwd_");
    info.split_kv = fwd != std::string_view::npos && istarts(name.substr(fwd), "flash_fwd_splitkv_kernel");
    size_t i = p + std::string_view("flash_fwd_kernel_traits<").size();
    std::array<int, 4> v{};
    for (size_t n = 0; n < v.size(); ++n) {
      while (i < name.size() && name[i] == ' ') ++i;
      v[n] = read_int(name, i);
      if (v[n] <= 0) return std::nullopt;
      while (i < name.size() && name[i] == ' ') ++i;
      if (i >= name.size() || (name[i] != ',' && name[i] != '>')) return std::nullopt;
      ++i;
    }
    info.head_dim = v[0];
    info.q_rows = v[1];
    info.kv_cols = v[2];
    info.warps = v[3];
    info.warps_m = v[3];  // FlashAttention-2 splits the query rows over its warps
    info.format = "flash-attn2";
  } else if (size_t q = ifind(name, "sdpa");
             q != std::string_view::npos && ifind(name, "cudnn") != std::string_view::npos) {
    // The first "<rows>x<keys>x<D>" token followed by a "<a>x<b>x<c>" warp layout token.
    bool found = false;
    for_tokens(ident_from(name, q), [&](std::string_view tok, size_t) {
      std::array<int, 3> d{};
      if (!found && parse_dims(tok, d) == 3) {
        if (info.q_rows == 0) {
          info.q_rows = d[0];
          info.kv_cols = d[1];
          info.head_dim = d[2];
          return true;
        }
        info.warps = d[0] * d[1] * d[2];
        info.warps_m = d[0];
        found = true;
        return false;
      }
      info.q_rows = 0;  // the warp layout must follow the tile directly
      return true;
    });
    if (!found) return std::nullopt;
    info.split_kv = true;
    info.format = "cudnn";
  } else {
    return std::nullopt;
  }
  if (!plausible(info.q_rows, info.kv_cols) || info.head_dim <= 0 || info.head_dim > 1024 || info.warps <= 0 ||
      info.warps > 32)
    return std::nullopt;
  return info;
}

}  // namespace perfloom
