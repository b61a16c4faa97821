// The sampling plan that `perfloom tune --plan` writes (model/tuner/sampling_plan.h), as
// `perfloom-collect --sweep plan` reads it: one (shape, dtype, configuration) point per row.
// Host-only C++17 without CUDA headers, so that the parser can be tested anywhere.
//
// Columns found by header name (others ignored): op, dtype, M, N, K, cublaslt_tile,
// cublaslt_cluster, splitk are required; config (perfloom's "MxNxK/sS/cMxN", for the tile's K
// slice), cublaslt_stages (the exact stages, e.g. "64x6"; "<tile_k>xAUTO" where absent or
// empty), heuristic_rank (R > 0: measure cuBLASLt's R-th heuristic result for the shape as it is,
// which must have this tile; 0 or empty: force the configuration), why, waves, last_wave_fill,
// k_iters are optional; cublaslt_custom (optional, an integer 0..63 or empty: the custom option,
// CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, to set on the forced configuration, as `perfloom tune` names
// it; empty: the base's) too. Tile and cluster are cuBLASLt's
// names and orientation (first number along N), as the collector sets them.
#pragma once

#include "cublaslt_names.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfloom {

struct PlanEntry {
  std::string file;
  size_t line = 0;    // 1-based line of the row in its file
  std::string dtype;  // the collector's dtype name (fp16 bf16 fp8e4m3 tf32 fp32)
  int64_t M = 0, N = 0, K = 0;
  std::string tile_name;  // cuBLASLt tile name, e.g. "128x64" (N x M)
  int tile_id = -1;
  std::string cluster_name;  // cuBLASLt cluster name, e.g. "2x1x1"
  int cluster_id = -1;
  int splitk = 1;
  int tile_k = 0;           // K slice from the config column (0: not given)
  std::string stages_name;  // the cublaslt_stages column, else "<tile_k>xAUTO" when cuBLASLt has that id, else empty
                            // (keep the base's)
  int stages_id = -1;
  int heuristic_rank = 0;  // > 0: cuBLASLt's heuristic result of that rank, unchanged (a re-measurement)
  int custom = -1;         // >= 0: the custom option to set on the forced configuration (-1: the base's)
  std::string config;      // perfloom's config string, as written by the plan
  std::string why;
  std::string waves, last_wave_fill, k_iters;  // the plan's own numbers, as text (informational)
};

// Thrown for a plan the collector cannot use; what() is "FILE:LINE: reason" ("FILE: cannot be opened").
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace plan_detail {

inline int find_id(const IdName* tab, size_t n, const std::string& name) {
  for (size_t i = 0; i < n; ++i)
    if (name == tab[i].name) return tab[i].id;
  return -1;
}

// One RFC 4180 record from `in` (quoted fields may hold commas, doubled quotes and line breaks).
// Returns false at the end of the input. `line` is advanced by the lines the record used.
inline bool read_record(std::istream& in, std::vector<std::string>& fields, size_t& line, bool& unterminated) {
  fields.clear();
  unterminated = false;
  std::string cur;
  bool quoted = false, any = false;
  char ch;
  while (in.get(ch)) {
    any = true;
    if (quoted) {
      if (ch == '"') {
        if (in.peek() == '"') {
          in.get(ch);
          cur += '"';
        } else
          quoted = false;
      } else {
        if (ch == '\n') ++line;
        cur += ch;
      }
      continue;
    }
    if (ch == '"')
      quoted = true;
    else if (ch == ',') {
      fields.push_back(cur);
      cur.clear();
    } else if (ch == '\r') {
    } else if (ch == '\n') {
      ++line;
      fields.push_back(cur);
      return true;
    } else
      cur += ch;
  }
  if (!any) return false;
  if (quoted) unterminated = true;
  fields.push_back(cur);
  return true;
}

inline std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace plan_detail

// Parses a plan from `in` (`file` names it in errors). `known_dtype(name)` says whether the
// collector can run a dtype. Throws PlanError naming file, line and reason for a missing column,
// an unknown op or dtype, a field that is not a positive integer, a tile or cluster name cuBLASLt
// does not have, or a plan without rows.
template <class KnownDtype>
std::vector<PlanEntry> parse_plan(std::istream& in, const std::string& file, KnownDtype&& known_dtype) {
  using namespace plan_detail;
  auto fail = [&](size_t line, const std::string& why) -> PlanError {
    return PlanError(file + ":" + std::to_string(line) + ": " + why);
  };
  std::vector<std::string> f;
  size_t line = 0;
  bool unterminated = false;
  // header: the first line that is neither empty nor a '#' comment
  std::vector<std::string> header;
  size_t header_line = 0;
  while (true) {
    size_t start = line + 1;
    if (!read_record(in, f, line, unterminated)) throw fail(start, "empty plan: no header row");
    if (f.size() == 1 && (trim(f[0]).empty() || trim(f[0])[0] == '#')) continue;
    header = f;
    header_line = start;
    break;
  }
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[trim(header[i])] = i;
  auto need = [&](const char* name) {
    auto it = col.find(name);
    if (it == col.end())
      throw fail(header_line, std::string("missing column '") + name +
                                  "' (a plan from `perfloom tune --plan` has op,dtype,M,N,K,config,cublaslt_tile,"
                                  "cublaslt_cluster,splitk,...)");
    return it->second;
  };
  auto opt = [&](const char* name) -> long {
    auto it = col.find(name);
    return it == col.end() ? -1 : (long)it->second;
  };
  const size_t c_op = need("op"), c_dt = need("dtype"), c_m = need("M"), c_n = need("N"), c_k = need("K"),
               c_tile = need("cublaslt_tile"), c_cl = need("cublaslt_cluster"), c_sk = need("splitk");
  const long c_cfg = opt("config"), c_why = opt("why"), c_w = opt("waves"), c_fill = opt("last_wave_fill"),
             c_ki = opt("k_iters"), c_st = opt("cublaslt_stages"), c_hr = opt("heuristic_rank"),
             c_cu = opt("cublaslt_custom");
  const size_t n_tiles = sizeof(kTileNames) / sizeof(kTileNames[0]);
  const size_t n_stages = sizeof(kStagesNames) / sizeof(kStagesNames[0]);
  const size_t n_clusters = sizeof(kClusterNames) / sizeof(kClusterNames[0]);

  std::vector<PlanEntry> out;
  while (true) {
    const size_t start = line + 1;
    if (!read_record(in, f, line, unterminated)) break;
    if (unterminated) throw fail(start, "unterminated quoted field");
    if (f.size() == 1 && (trim(f[0]).empty() || trim(f[0])[0] == '#')) continue;  // blank or comment
    if (f.size() < header.size())
      throw fail(start, "row has " + std::to_string(f.size()) + " fields, the header " + std::to_string(header.size()));
    auto field = [&](size_t c) { return trim(f[c]); };
    auto positive = [&](size_t c, const char* name) -> int64_t {
      const std::string s = field(c);
      char* end = nullptr;
      errno = 0;
      long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || errno || !end || *end != '\0' || v <= 0)
        throw fail(start, std::string(name) + " is not a positive integer: '" + s + "'");
      return (int64_t)v;
    };
    PlanEntry e;
    e.file = file;
    e.line = start;
    if (field(c_op) != "gemm")
      throw fail(start, "op '" + field(c_op) + "' is not gemm (the plan mode measures GEMMs only)");
    e.dtype = field(c_dt);
    if (e.dtype == "fp8") e.dtype = "fp8e4m3";
    if (!known_dtype(e.dtype))
      throw fail(start, "unknown dtype '" + field(c_dt) + "' (the collector knows fp16 bf16 fp8e4m3 tf32 fp32)");
    e.M = positive(c_m, "M");
    e.N = positive(c_n, "N");
    e.K = positive(c_k, "K");
    e.splitk = (int)positive(c_sk, "splitk");
    e.tile_name = field(c_tile);
    e.tile_id = find_id(kTileNames, n_tiles, e.tile_name);
    if (e.tile_id < 0 || e.tile_name == "UNDEFINED")
      throw fail(start, "cublaslt_tile '" + e.tile_name + "' is not a cuBLASLt tile name (e.g. 128x64)");
    e.cluster_name = field(c_cl);
    e.cluster_id = find_id(kClusterNames, n_clusters, e.cluster_name);
    if (e.cluster_id < 0)
      throw fail(start, "cublaslt_cluster '" + e.cluster_name + "' is not a cuBLASLt cluster shape (e.g. 2x1x1)");
    if (c_cfg >= 0) {
      e.config = field((size_t)c_cfg);
      // "MxNxK/..." : the third number is the K slice
      const std::string dims = e.config.substr(0, e.config.find('/'));
      std::vector<std::string> parts;
      std::stringstream ss(dims);
      std::string p;
      while (std::getline(ss, p, 'x')) parts.push_back(p);
      if (parts.size() >= 3) {
        char* end = nullptr;
        long v = std::strtol(parts[2].c_str(), &end, 10);
        if (end && *end == '\0' && v > 0) e.tile_k = (int)v;
      }
      if (!e.config.empty() && e.tile_k == 0) throw fail(start, "config '" + e.config + "' is not MxNxK/sS/cMxN");
    }
    if (c_st >= 0 && !field((size_t)c_st).empty()) {
      e.stages_name = field((size_t)c_st);
      e.stages_id = find_id(kStagesNames, n_stages, e.stages_name);
      if (e.stages_id <= 0)
        throw fail(start, "cublaslt_stages '" + e.stages_name + "' is not a cuBLASLt stages name (e.g. 64x6, 64xAUTO)");
    } else if (e.tile_k > 0) {
      const std::string st = std::to_string(e.tile_k) + "xAUTO";
      e.stages_id = find_id(kStagesNames, n_stages, st);
      if (e.stages_id >= 0) e.stages_name = st;
    }
    // An optional integer column within [lo, hi]; `none` where the column is absent or empty.
    auto optional_int = [&](long c, long lo, long hi, int none, const std::string& what) -> int {
      if (c < 0 || field((size_t)c).empty()) return none;
      const std::string s = field((size_t)c);
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(s.c_str(), &end, 10);
      if (errno || !end || *end != '\0' || v < lo || v > hi) throw fail(start, what + ": '" + s + "'");
      return (int)v;
    };
    e.heuristic_rank = optional_int(c_hr, 0, 64, 0, "heuristic_rank is not an integer from 0 to 64");
    e.custom = optional_int(c_cu, 0, 63, -1, "cublaslt_custom is not a custom option from 0 to 63");
    if (c_why >= 0) e.why = field((size_t)c_why);
    if (c_w >= 0) e.waves = field((size_t)c_w);
    if (c_fill >= 0) e.last_wave_fill = field((size_t)c_fill);
    if (c_ki >= 0) e.k_iters = field((size_t)c_ki);
    out.push_back(std::move(e));
  }
  if (out.empty()) throw fail(line, "the plan has a header but no rows");
  return out;
}

template <class KnownDtype>
std::vector<PlanEntry> read_plan(const std::string& path, KnownDtype&& known_dtype) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PlanError(path + ": cannot be opened");
  return parse_plan(in, path, known_dtype);
}

}  // namespace perfloom
