// cuBLASLt GEMM in perfloom's layout: C[M,N] = A[M,K] · W^T with W (N,K) row-major and A, C
// row-major. In cuBLASLt's column-major terms this is D(N x M) = op(W)(N x K) · A^T(K x M) with
// transa = T, transb = N ("TN"), the layout fp8 requires. cuBLASLt's tile names are "rows x cols"
// of its D, so a tile's first number runs along N and its second along M.
#pragma once

#include "common.h"
#include "cublaslt_names.h"

#include <random>
#include <set>
#include <tuple>

namespace perfloom {

struct GemmType {
  const char* name;
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int fill_kind;  // see fill_random_kernel
  size_t ab_bytes, cd_bytes;
  bool fp8;
};

inline const std::vector<GemmType>& gemm_types() {
  static const std::vector<GemmType> t = {
      {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, 2, 2, false},
      {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2, 2, false},
      {"fp8e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 3, 1, 2, true},
      {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 0, 4, 4, false},
      {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 0, 4, 4, false},
      {"int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, 4, 1, 4, false},
  };
  return t;
}

inline const GemmType* find_gemm_type(const std::string& n) {
  for (auto& t : gemm_types())
    if (n == t.name) return &t;
  return nullptr;
}

inline std::string id_name(const IdName* tab, size_t n, int id) {
  for (size_t i = 0; i < n; ++i)
    if (tab[i].id == id) return tab[i].name;
  return "id" + std::to_string(id);
}
inline std::string tile_name(int id) { return id_name(kTileNames, sizeof(kTileNames) / sizeof(kTileNames[0]), id); }
inline std::string stages_name(int id) {
  return id_name(kStagesNames, sizeof(kStagesNames) / sizeof(kStagesNames[0]), id);
}
inline std::string cluster_name(int id) {
  return id_name(kClusterNames, sizeof(kClusterNames) / sizeof(kClusterNames[0]), id);
}
inline std::string reduction_name(uint32_t r) {
  switch (r) {
    case CUBLASLT_REDUCTION_SCHEME_NONE:
      return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE:
      return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE:
      return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE:
      return "output_type";
    default:
      return "r" + std::to_string(r);
  }
}

struct AlgoInfo {
  int algo_id = -1;
  uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
  int32_t splitk = 1;
  uint16_t cluster = 0;
  auto key() const { return std::make_tuple(algo_id, tile, stages, splitk, reduction, swizzle, custom, cluster); }
};

inline AlgoInfo algo_info(const cublasLtMatmulAlgo_t& a) {
  AlgoInfo i;
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &i.algo_id, sizeof(i.algo_id), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &i.tile, sizeof(i.tile), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &i.stages, sizeof(i.stages), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &i.splitk, sizeof(i.splitk), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &i.reduction, sizeof(i.reduction),
                                       &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &i.swizzle, sizeof(i.swizzle), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &i.custom, sizeof(i.custom), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &i.cluster, sizeof(i.cluster), &w);
  return i;
}

// A candidate configuration: the algo and what cuBLASLt said about it.
struct GemmConfig {
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
  float waves = 0;
  int heuristic_rank = 0;  // 1 = cuBLASLt's first choice; 0 = enumerated, not returned by the heuristic
  AlgoInfo info;
};

class GemmProblem {
 public:
  GemmProblem(cublasLtHandle_t h, const GemmType& t, int64_t M, int64_t N, int64_t K, const float* d_one,
              size_t ws_bytes)
      : h_(h), t_(t), M_(M), N_(N), K_(K), ws_bytes_(ws_bytes) {
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, t.compute, t.scale));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (t.fp8) {  // per-tensor scales of 1, as torch._scaled_mm passes them
      CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &d_one, sizeof(d_one)));
      CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &d_one, sizeof(d_one)));
    }
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, t.ab, K, N, K));  // W as stored: K x N col-major
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, t.ab, K, M, K));  // A: K x M col-major
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, t.cd, N, M, N));  // C: N x M col-major
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes_,
                                                      sizeof(ws_bytes_)));
  }
  ~GemmProblem() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatmulDescDestroy(op_);
  }
  GemmProblem(const GemmProblem&) = delete;
  GemmProblem& operator=(const GemmProblem&) = delete;

  size_t bytes_w() const { return (size_t)N_ * K_ * t_.ab_bytes; }
  size_t bytes_a() const { return (size_t)M_ * K_ * t_.ab_bytes; }
  size_t bytes_c() const { return (size_t)M_ * N_ * t_.cd_bytes; }
  size_t bytes_all() const { return Pool::align(bytes_w()) + Pool::align(bytes_a()) + Pool::align(bytes_c()); }
  double flops() const { return 2.0 * M_ * N_ * K_; }

  std::vector<GemmConfig> heuristic(int count) {
    std::vector<cublasLtMatmulHeuristicResult_t> res(count);
    int got = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h_, op_, a_, b_, c_, c_, pref_, count, res.data(), &got);
    std::vector<GemmConfig> out;
    if (s != CUBLAS_STATUS_SUCCESS) return out;
    for (int i = 0; i < got; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      GemmConfig c;
      c.algo = res[i].algo;
      c.workspace = res[i].workspaceSize;
      c.waves = res[i].wavesCount;
      c.heuristic_rank = i + 1;
      c.info = algo_info(c.algo);
      out.push_back(c);
    }
    return out;
  }

  // Random valid configurations from cuBLASLt's algorithm capabilities (tile x stages x split-K
  // x swizzle), checked with cublasLtMatmulAlgoCheck; those already in `seen` are skipped.
  std::vector<GemmConfig> enumerate(int want, int attempts, std::mt19937_64& rng,
                                    std::set<decltype(AlgoInfo{}.key())>& seen) {
    std::vector<GemmConfig> out;
    int ids[256];
    int nids = 0;
    if (cublasLtMatmulAlgoGetIds(h_, t_.compute, t_.scale, t_.ab, t_.ab, t_.cd, t_.cd, 256, ids, &nids) !=
            CUBLAS_STATUS_SUCCESS ||
        nids == 0)
      return out;
    struct Caps {
      int id;
      std::vector<uint32_t> tiles, stages;
      int splitk;
      uint32_t red_mask;
      int swizzle;
    };
    std::vector<Caps> caps;
    for (int i = 0; i < nids; ++i) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(h_, t_.compute, t_.scale, t_.ab, t_.ab, t_.cd, t_.cd, ids[i], &algo) !=
          CUBLAS_STATUS_SUCCESS)
        continue;
      Caps c{ids[i], {}, {}, 0, 0, 0};
      size_t w = 0;
      if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0, &w) ==
              CUBLAS_STATUS_SUCCESS &&
          w) {
        c.tiles.resize(w / sizeof(uint32_t));
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, c.tiles.data(), w, &w);
      }
      if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, nullptr, 0, &w) ==
              CUBLAS_STATUS_SUCCESS &&
          w) {
        c.stages.resize(w / sizeof(uint32_t));
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, c.stages.data(), w, &w);
      }
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &c.splitk, sizeof(c.splitk), &w);
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &c.red_mask, sizeof(c.red_mask),
                                        &w);
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &c.swizzle, sizeof(c.swizzle),
                                        &w);
      if (c.tiles.empty()) c.tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
      if (c.stages.empty()) c.stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
      caps.push_back(std::move(c));
    }
    if (caps.empty()) return out;
    const int32_t splits[] = {1, 1, 2, 3, 4, 8};
    for (int a = 0; a < attempts && (int)out.size() < want; ++a) {
      const Caps& c = caps[rng() % caps.size()];
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(h_, t_.compute, t_.scale, t_.ab, t_.ab, t_.cd, t_.cd, c.id, &algo) !=
          CUBLAS_STATUS_SUCCESS)
        continue;
      uint32_t tile = c.tiles[rng() % c.tiles.size()];
      uint32_t stages = c.stages[rng() % c.stages.size()];
      int32_t sk = c.splitk ? splits[rng() % 6] : 1;
      uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
      if (sk > 1) {
        if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
          red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        else if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
          red = CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
        else if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_INPLACE)
          red = CUBLASLT_REDUCTION_SCHEME_INPLACE;
        else
          sk = 1;
      }
      uint32_t swz = c.swizzle ? (uint32_t)(rng() % 2) : 0;
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile));
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages));
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof(sk));
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red));
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz));
      GemmConfig g;
      if (!check(algo, 0, g)) continue;
      if (!seen.insert(g.info.key()).second) continue;
      out.push_back(g);
    }
    return out;
  }

  // What an algorithm allows for split-K.
  struct SplitCaps {
    int32_t splitk_ok = 0;
    uint32_t red_mask = 0;
  };
  static SplitCaps split_caps(const cublasLtMatmulAlgo_t& algo) {
    SplitCaps c;
    size_t w = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &c.splitk_ok, sizeof(c.splitk_ok), &w);
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &c.red_mask, sizeof(c.red_mask),
                                      &w);
    return c;
  }
  // The reduction scheme the sweeps use for split-K (compute type, else output type, else in
  // place); NONE when the algorithm offers none.
  static uint32_t reduction_for(const SplitCaps& c) {
    if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) return CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE) return CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
    if (c.red_mask & CUBLASLT_REDUCTION_SCHEME_INPLACE) return CUBLASLT_REDUCTION_SCHEME_INPLACE;
    return CUBLASLT_REDUCTION_SCHEME_NONE;
  }
  // The tile ids an algorithm supports (empty when it does not say).
  static std::vector<uint32_t> tile_caps(const cublasLtMatmulAlgo_t& algo) {
    std::vector<uint32_t> tiles;
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0, &w) == CUBLAS_STATUS_SUCCESS &&
        w) {
      tiles.resize(w / sizeof(uint32_t));
      cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(), w, &w);
    }
    return tiles;
  }

  // One configuration of `base`'s algorithm: tile, stages, cluster shape and split-K set (the
  // reduction scheme from reduction_for), checked with cublasLtMatmulAlgoCheck and within the
  // workspace. False, with the reason in `why`, when cuBLASLt refuses it. Shared by the tiles
  // sweep's variations and the plan mode.
  bool configure(const GemmConfig& base, const SplitCaps& caps, uint32_t tile, uint32_t stages, uint16_t cluster,
                 int32_t splitk, int rank, GemmConfig& out, std::string* why = nullptr) const {
    auto refuse = [&](const std::string& w) {
      if (why) *why = w;
      return false;
    };
    cublasLtMatmulAlgo_t algo = base.algo;
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (splitk > 1) {
      if (!caps.splitk_ok) return refuse("the algorithm has no split-K");
      red = reduction_for(caps);
      if (red == CUBLASLT_REDUCTION_SCHEME_NONE) return refuse("the algorithm offers no split-K reduction scheme");
    }
    if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile)) !=
        CUBLAS_STATUS_SUCCESS)
      return refuse("tile id not accepted");
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages));
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster));
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk));
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red));
    return check(algo, rank, out, why);
  }

  // `algo` checked with cublasLtMatmulAlgoCheck and within the workspace, into `out` (algorithm,
  // workspace, waves, `rank`, what cuBLASLt reads back); false, with the reason in `why` and `out`
  // left alone, when cuBLASLt refuses it. Every configuration the collector sets goes through it.
  bool check(const cublasLtMatmulAlgo_t& algo, int rank, GemmConfig& out, std::string* why = nullptr) const {
    cublasLtMatmulHeuristicResult_t r{};
    const cublasStatus_t s = cublasLtMatmulAlgoCheck(h_, op_, a_, b_, c_, c_, &algo, &r);
    if (s != CUBLAS_STATUS_SUCCESS) {
      if (why) *why = "cublasLtMatmulAlgoCheck status " + std::to_string((int)s);
      return false;
    }
    if (r.workspaceSize > ws_bytes_) {
      if (why) *why = "needs " + std::to_string(r.workspaceSize) + " bytes of workspace";
      return false;
    }
    out.algo = algo;
    out.workspace = r.workspaceSize;
    out.waves = r.wavesCount;
    out.heuristic_rank = rank;
    out.info = algo_info(algo);
    return true;
  }

  // A configuration a plan asks for, forced: tile, stages (the base's where `stages` is
  // CUBLASLT_MATMUL_STAGES_UNDEFINED), cluster shape and split-K set on a base algorithm with
  // configure(). cuBLASLt refuses some of these on one base and accepts them on another (a
  // heuristic result's other attributes, such as its custom option, come along), so the bases
  // are tried in order until one is accepted and keeps the tile, cluster and split-K:
  //   "rR"        heuristic result R whose algorithm offers the tile, as it is;
  //   "rR/plain"  the same with its custom option and CTA swizzle cleared;
  //   "init"      the algorithm of the first such result, freshly initialised (defaults).
  // `how` names the base that was accepted,
  // empty for the first; false, with each refusal in `why`, when none was.
  bool force(const std::vector<GemmConfig>& heur, uint32_t tile, uint32_t stages, uint16_t cluster, int32_t splitk,
             int rank, GemmConfig& out, std::string& how, std::string& why) const {
    std::vector<std::pair<std::string, std::string>> refusals;  // (base, reason)
    auto attempt = [&](const GemmConfig& base, const std::string& name) {
      const uint32_t st = stages == CUBLASLT_MATMUL_STAGES_UNDEFINED ? base.info.stages : stages;
      std::string w;
      GemmConfig g;
      if (!configure(base, split_caps(base.algo), tile, st, cluster, splitk, rank, g, &w)) {
        refusals.emplace_back(name, w);
        return false;
      }
      if (g.info.tile != tile || g.info.cluster != cluster || g.info.splitk != splitk) {
        refusals.emplace_back(name, "changed to tile " + tile_name((int)g.info.tile) + " cluster " +
                                        cluster_name((int)g.info.cluster) + " splitk " + std::to_string(g.info.splitk));
        return false;
      }
      out = g;
      how = name;
      return true;
    };
    std::vector<const GemmConfig*> bases;
    for (const auto& h : heur) {
      auto tiles = tile_caps(h.algo);
      if (std::find(tiles.begin(), tiles.end(), tile) != tiles.end()) bases.push_back(&h);
    }
    if (bases.empty()) {
      why = "no algorithm among cuBLASLt's heuristic results offers this tile";
      return false;
    }
    const GemmConfig* first = bases.front();
    for (const GemmConfig* b : bases)
      if (attempt(*b, "r" + std::to_string(b->heuristic_rank))) {
        if (b == first) how.clear();
        return true;
      }
    for (const GemmConfig* b : bases) {
      if (b->info.custom == 0 && b->info.swizzle == 0) continue;
      GemmConfig plain = *b;
      const uint32_t zero = 0;
      cublasLtMatmulAlgoConfigSetAttribute(&plain.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &zero, sizeof(zero));
      cublasLtMatmulAlgoConfigSetAttribute(&plain.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &zero, sizeof(zero));
      plain.info = algo_info(plain.algo);
      if (attempt(plain, "r" + std::to_string(b->heuristic_rank) + "/plain")) return true;
    }
    GemmConfig fresh = *first;
    if (cublasLtMatmulAlgoInit(h_, t_.compute, t_.scale, t_.ab, t_.ab, t_.cd, t_.cd, first->info.algo_id,
                               &fresh.algo) == CUBLAS_STATUS_SUCCESS) {
      fresh.info = algo_info(fresh.algo);
      if (stages == CUBLASLT_MATMUL_STAGES_UNDEFINED) fresh.info.stages = first->info.stages;
      if (attempt(fresh, "init")) return true;
    }
    // One line: the reason once where every base gave the same, else each base's.
    bool same = true;
    for (const auto& r : refusals) same = same && r.second == refusals.front().second;
    why.clear();
    if (same && !refusals.empty()) {
      why = "on all " + std::to_string(refusals.size()) + " bases: " + refusals.front().second;
    } else {
      for (const auto& [base, reason] : refusals) why += (why.empty() ? "" : "; ") + base + ": " + reason;
    }
    return false;
  }

  // `g` with cuBLASLt's custom option set (a plan's cublaslt_custom); false, with the reason in
  // `why`, when cuBLASLt refuses it or it changes the configuration.
  bool with_custom(const GemmConfig& g, uint32_t custom, GemmConfig& out, std::string& why) const {
    cublasLtMatmulAlgo_t algo = g.algo;
    cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof(custom));
    std::string w;
    if (!check(algo, g.heuristic_rank, out, &w)) {
      why = "custom option " + std::to_string(custom) + ": " + w;
      return false;
    }
    if (out.info.tile != g.info.tile || out.info.cluster != g.info.cluster || out.info.splitk != g.info.splitk) {
      why = "custom option " + std::to_string(custom) + " changed the configuration";
      return false;
    }
    return true;
  }

  // The kernel variants of a configuration (`--variants`): the same algorithm, tile, stages,
  // cluster shape and split-K with each other custom option (0..CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX)
  // and CTA swizzle (0 and 1 where CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) cuBLASLt accepts
  // (cublasLtMatmulAlgoCheck, within the workspace). On Hopper the nvjet kernel's raster order
  // and schedule come with them, which a configuration as the tuner names it leaves open.
  std::vector<GemmConfig> variants(const GemmConfig& g) const {
    std::vector<GemmConfig> out;
    uint32_t custom_max = 0;
    int32_t swizzle_ok = 0;
    size_t w = 0;
    cublasLtMatmulAlgoCapGetAttribute(&g.algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max, sizeof(custom_max),
                                      &w);
    cublasLtMatmulAlgoCapGetAttribute(&g.algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle_ok, sizeof(swizzle_ok),
                                      &w);
    custom_max = std::min<uint32_t>(custom_max, 63);
    for (uint32_t custom = 0; custom <= custom_max; ++custom)
      for (uint32_t swz = 0; swz <= (swizzle_ok ? 1u : 0u); ++swz) {
        if (custom == g.info.custom && swz == g.info.swizzle) continue;
        cublasLtMatmulAlgo_t algo = g.algo;
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof(custom));
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz));
        GemmConfig v;
        if (!check(algo, g.heuristic_rank, v)) continue;
        if (v.info.tile != g.info.tile || v.info.cluster != g.info.cluster || v.info.splitk != g.info.splitk ||
            v.info.stages != g.info.stages)
          continue;
        out.push_back(v);
      }
    return out;
  }

  // Variations of a heuristic result (on Hopper: the nvjet algorithm, whose heuristic list
  // stops at 8): other tiles, stage counts, cluster shapes and split-K of the same algo,
  // checked with cublasLtMatmulAlgoCheck; those already in `seen` are skipped.
  std::vector<GemmConfig> vary(const GemmConfig& base, int want, int attempts, std::mt19937_64& rng,
                               std::set<decltype(AlgoInfo{}.key())>& seen) {
    std::vector<GemmConfig> out;
    std::vector<uint32_t> tiles = tile_caps(base.algo), stages;
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&base.algo, CUBLASLT_ALGO_CAP_STAGES_IDS, nullptr, 0, &w) ==
            CUBLAS_STATUS_SUCCESS &&
        w) {
      stages.resize(w / sizeof(uint32_t));
      cublasLtMatmulAlgoCapGetAttribute(&base.algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages.data(), w, &w);
    }
    const SplitCaps caps = split_caps(base.algo);
    if (tiles.empty()) tiles.push_back(base.info.tile);
    if (stages.empty()) stages.push_back(base.info.stages);
    const uint16_t clusters[] = {base.info.cluster,
                                 CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                 CUBLASLT_CLUSTER_SHAPE_4x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_2x2x1};
    const int32_t splits[] = {1, 1, 1, 2, 3, 4};
    for (int a = 0; a < attempts && (int)out.size() < want; ++a) {
      uint32_t tile = tiles[rng() % tiles.size()];
      uint32_t st = (rng() % 2) ? base.info.stages : stages[rng() % stages.size()];
      uint16_t cl = clusters[rng() % 6];
      int32_t sk = caps.splitk_ok ? splits[rng() % 6] : 1;
      if (sk > 1 && reduction_for(caps) == CUBLASLT_REDUCTION_SCHEME_NONE) sk = 1;
      GemmConfig g;
      if (!configure(base, caps, tile, st, cl, sk, -1, g)) continue;
      if (!seen.insert(g.info.key()).second) continue;
      out.push_back(g);
    }
    return out;
  }

  cublasStatus_t run(const GemmConfig& c, const void* A, const void* W, void* C, void* ws, cudaStream_t s) const {
    const void* alpha = t_.scale == CUDA_R_32I ? (const void*)&ione_ : (const void*)&fone_;
    const void* beta = t_.scale == CUDA_R_32I ? (const void*)&izero_ : (const void*)&fzero_;
    return cublasLtMatmul(h_, op_, alpha, W, a_, A, b_, beta, C, c_, C, c_, &c.algo, ws, ws_bytes_, s);
  }

  int64_t M() const { return M_; }
  int64_t N() const { return N_; }
  int64_t K() const { return K_; }
  const GemmType& type() const { return t_; }

 private:
  cublasLtHandle_t h_;
  const GemmType& t_;
  int64_t M_, N_, K_;
  size_t ws_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  float fone_ = 1.f, fzero_ = 0.f;
  int32_t ione_ = 1, izero_ = 0;
};

}  // namespace perfloom
