// perfloom-collect: measures LLM-shaped kernels with CUPTI and writes the perfloom collector CSV
// (FORMAT.md beside this file). Sweeps:
//   gemm         cuBLASLt's default (heuristic first choice) over model and random shapes,
//                fp16 bf16 fp8e4m3 tf32 fp32
//   tiles        every configuration cuBLASLt offers for a subset of (shape, dtype) points
//   elementwise  the project's rmsnorm, fused_add_rmsnorm, silu_mul, add, softmax, rotary,
//                kv_cache_write kernels (kernels.cuh)
//   plan         the (shape, dtype, configuration) points of sampling plans from
//                `perfloom tune --plan` (plan.h), plus cuBLASLt's heuristic results per plan shape
// Usage: perfloom-collect --sweep gemm|tiles|elementwise --out FILE.csv [--quick] [--budget-s S]
//                         [--seed N] [--pool-gb G] [--dry-run]
//        perfloom-collect --sweep plan --plan PLAN.csv [--plan PLAN2.csv ...] --out tiles_plan.csv
//                         [--heuristic-n N] [--repeat R] [--variants] [--first-shape I] [--budget-s S] [--dry-run]
//        --variants: each plan configuration also with every other custom option and CTA swizzle
//                cuBLASLt accepts for it (GemmProblem::variants), its source ending in
//                " variant=cC/sS" (C: the custom option, S: the swizzle; the plan's own row says
//                " variant=cC/sS base" with its own)
#include "common.h"
#include "gemm.h"
#include "kernels.cuh"
#include "plan.h"

#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace perfloom;

namespace {

constexpr const char* kCollectorVersion = "2";  // 2: the flat, fast-math SiLU-and-mul kernel

struct Args {
  std::string sweep = "gemm";
  std::string out = "out.csv";
  bool quick = false;
  bool dry_run = false;
  bool no_vary = false;
  double budget_s = 150;
  uint64_t seed = 20251121;
  double pool_gb = 8;
  std::vector<std::string> plans;  // --sweep plan: the plan CSVs
  int heuristic_n = 8;             // --sweep plan: cuBLASLt heuristic results measured per plan shape
  size_t first_shape = 0;          // --sweep plan: skip the first shapes (resuming a broken run)
  int repeat = 1;                  // --sweep plan: measurements of each configuration, in rounds over the shape's list
  bool variants = false;  // --sweep plan: every plan configuration also with each other custom option and CTA swizzle
  bool small_m = false;   // --sweep tiles: decode shapes, M = 1..7 (the default draw starts at 8)
  double settle_ms = 20;  // GEMMs: the most the GPU idles before each configuration's measurement (0: never)
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--sweep")
      a.sweep = val();
    else if (k == "--out")
      a.out = val();
    else if (k == "--quick")
      a.quick = true;
    else if (k == "--dry-run")
      a.dry_run = true;
    else if (k == "--no-vary")
      a.no_vary = true;
    else if (k == "--budget-s")
      a.budget_s = std::stod(val());
    else if (k == "--seed")
      a.seed = std::stoull(val());
    else if (k == "--pool-gb")
      a.pool_gb = std::stod(val());
    else if (k == "--plan")
      a.plans.push_back(val());
    else if (k == "--heuristic-n")
      a.heuristic_n = std::max(0, std::stoi(val()));
    else if (k == "--first-shape")
      a.first_shape = (size_t)std::stoull(val());
    else if (k == "--repeat")
      a.repeat = std::max(1, std::stoi(val()));
    else if (k == "--variants")
      a.variants = true;
    else if (k == "--small-m")
      a.small_m = true;
    else if (k == "--settle-ms")
      a.settle_ms = std::max(0.0, std::stod(val()));
    else if (k == "-h" || k == "--help") {
      std::printf(
          "perfloom-collect --sweep gemm|tiles|elementwise --out FILE.csv [--quick] "
          "[--budget-s S] [--seed N] [--pool-gb G] [--no-vary] [--small-m] [--dry-run]\n"
          "perfloom-collect --sweep plan --plan PLAN.csv [--plan PLAN2.csv ...] --out tiles_plan.csv "
          "[--heuristic-n N] [--repeat R] [--variants] [--first-shape I] [--budget-s S] [--dry-run]\n"
          "  --settle-ms G: before each GEMM configuration's measurement the GPU idles as long as the\n"
          "  previous measurement kept it busy, at most G ms, so that the clocks it is timed at do not\n"
          "  depend on what ran before it (a power-capped GPU's memory); default 20, 0: never\n");
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.sweep != "gemm" && a.sweep != "tiles" && a.sweep != "elementwise" && a.sweep != "plan") {
    std::fprintf(stderr, "--sweep must be gemm, tiles, elementwise or plan\n");
    std::exit(2);
  }
  if (a.sweep == "plan" && a.plans.empty()) {
    std::fprintf(stderr, "--sweep plan needs --plan PLAN.csv (from `perfloom tune --plan`)\n");
    std::exit(2);
  }
  return a;
}

// ----------------------------------------------------------------------------------------------
// Output
// ----------------------------------------------------------------------------------------------
const char* kColumns[] = {"op", "dtype", "M", "N", "K", "Bt", "B", "S", "L", "Hq", "Hkv", "D", "T", "H", "I", "V",
                          "latency_us", "min_us", "p10_us", "p90_us", "reps", "method", "kernel_name", "algo_id",
                          "tile", "stages", "splitk", "reduction", "swizzle", "cluster", "heuristic_rank", "sweep",
                          // extensions (readers find columns by name)
                          "workspace_bytes", "waves", "grid", "block", "regs", "smem_bytes", "kernels", "source",
                          "sm_mhz"};

struct Row {
  std::string op, dtype;
  std::map<std::string, int64_t> shape;
  const Measurement* m = nullptr;
  const GemmConfig* cfg = nullptr;
  std::string sweep = "default";
  std::string source;
};

class CsvOut {
 public:
  void open(const std::string& path, const std::vector<std::string>& env) {
    path_ = path;
    env_ = env;
    f_.open(path + ".partial");
    if (!f_) {
      std::fprintf(stderr, "cannot write %s.partial\n", path.c_str());
      std::exit(2);
    }
    for (auto& e : env_) f_ << "# " << e << "\n";
    f_ << header() << "\n";
    f_.flush();
  }
  void write(const Row& r) {
    std::string line = format(r);
    rows_.push_back(line);
    f_ << line << "\n";
    f_.flush();
    ++count_;
  }
  // Rewrites the file with the final environment (clocks after) on top.
  void finish(const std::vector<std::string>& env_after) {
    f_.close();
    std::ofstream o(path_);
    for (auto& e : env_) o << "# " << e << "\n";
    for (auto& e : env_after) o << "# " << e << "\n";
    o << header() << "\n";
    for (auto& l : rows_) o << l << "\n";
    o.close();
    std::remove((path_ + ".partial").c_str());
  }
  size_t count() const { return count_; }

 private:
  std::string path_;
  std::vector<std::string> env_;
  std::ofstream f_;
  std::vector<std::string> rows_;
  size_t count_ = 0;

  static std::string header() {
    std::string h;
    for (auto c : kColumns) {
      if (!h.empty()) h += ",";
      h += c;
    }
    return h;
  }
  static std::string format(const Row& r) {
    std::vector<std::string> v;
    v.push_back(r.op);
    v.push_back(r.dtype);
    for (const char* c : {"M", "N", "K", "Bt", "B", "S", "L", "Hq", "Hkv", "D", "T", "H", "I", "V"}) {
      auto it = r.shape.find(c);
      v.push_back(it == r.shape.end() ? "" : std::to_string(it->second));
    }
    const Measurement& m = *r.m;
    v.push_back(fmt(m.st.median));
    v.push_back(fmt(m.st.min));
    v.push_back(fmt(m.st.p10));
    v.push_back(fmt(m.st.p90));
    v.push_back(std::to_string(m.st.n));
    v.push_back("cupti");
    std::string names = m.kernel_names;
    if (names.size() > 600) names = names.substr(0, 597) + "...";
    v.push_back(csv_quote(names));
    if (r.cfg) {
      const AlgoInfo& a = r.cfg->info;
      v.push_back(std::to_string(a.algo_id));
      v.push_back(tile_name((int)a.tile));
      v.push_back(stages_name((int)a.stages));
      v.push_back(std::to_string(a.splitk));
      v.push_back(reduction_name(a.reduction));
      v.push_back(std::to_string(a.swizzle));
      v.push_back(cluster_name((int)a.cluster));
      v.push_back(std::to_string(r.cfg->heuristic_rank));
    } else {
      for (int i = 0; i < 8; ++i) v.push_back("");
    }
    v.push_back(r.sweep);
    v.push_back(r.cfg ? std::to_string(r.cfg->workspace) : "");
    v.push_back(r.cfg ? fmt(r.cfg->waves, 3) : "");
    const ActRecord& k = m.main_kernel;
    v.push_back(std::to_string(k.grid[0]) + "x" + std::to_string(k.grid[1]) + "x" + std::to_string(k.grid[2]));
    v.push_back(std::to_string(k.block[0]) + "x" + std::to_string(k.block[1]) + "x" + std::to_string(k.block[2]));
    v.push_back(std::to_string(k.regs));
    v.push_back(std::to_string(k.smem_bytes));
    v.push_back(std::to_string(m.kernels_per_rep));
    v.push_back(csv_quote(r.source));
    v.push_back(m.sm_mhz_after > 0 ? std::to_string(m.sm_mhz_after) : "");
    std::string line;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) line += ",";
      line += v[i];
    }
    return line;
  }
};

// ----------------------------------------------------------------------------------------------
// Shapes
// ----------------------------------------------------------------------------------------------
struct NK {
  int64_t N, K;
  std::string src;
};

struct ModelCfg {
  const char* name;
  int64_t hidden, inter, nq, nkv, hd, vocab;
};

const ModelCfg kModels[] = {
    {"llama3-8b", 4096, 14336, 32, 8, 128, 128256},   {"llama3-70b", 8192, 28672, 64, 8, 128, 128256},
    {"qwen2.5-7b", 3584, 18944, 28, 4, 128, 152064},  {"qwen2.5-14b", 5120, 13824, 40, 8, 128, 152064},
    {"qwen2.5-72b", 8192, 29568, 64, 8, 128, 152064}, {"qwen3-32b", 5120, 25600, 64, 8, 128, 151936},
    {"mixtral-8x7b", 4096, 14336, 32, 8, 128, 32000},
};

// (N, K) of the linear layers of the models above and of DeepSeek-V3's dense parts, with
// tensor-parallel slices (column-parallel layers split N, row-parallel layers split K).
std::vector<NK> model_layers(bool with_lm_head) {
  std::vector<NK> v;
  std::set<std::pair<int64_t, int64_t>> seen;
  auto add = [&](int64_t N, int64_t K, const std::string& s) {
    if (N <= 0 || K <= 0 || N % 8 || K % 8) return;
    if (seen.insert({N, K}).second) v.push_back({N, K, s});
  };
  for (int tp : {1, 2, 4, 8}) {
    std::string t = "/tp" + std::to_string(tp);
    for (auto& m : kModels) {
      if (m.nq % tp || m.inter % tp) continue;
      int64_t nkv = std::max<int64_t>(1, m.nkv / tp);
      add((m.nq / tp + 2 * nkv) * m.hd, m.hidden, std::string(m.name) + "/qkv" + t);
      add(m.hidden, m.nq / tp * m.hd, std::string(m.name) + "/o" + t);
      add(2 * m.inter / tp, m.hidden, std::string(m.name) + "/gate_up" + t);
      add(m.hidden, m.inter / tp, std::string(m.name) + "/down" + t);
      if (with_lm_head && tp == 1) add(m.vocab, m.hidden, std::string(m.name) + "/lm_head");
    }
    // DeepSeek-V3: MLA projections, dense MLP (first 3 layers), shared expert
    const std::string d = "deepseek-v3";
    if (tp == 1) {
      add(1536, 7168, d + "/q_a");
      add(576, 7168, d + "/kv_a");
      if (with_lm_head) add(129280, 7168, d + "/lm_head");
    }
    add(24576 / tp, 1536, d + "/q_b" + t);
    add(32768 / tp, 512, d + "/kv_b" + t);
    add(7168, 16384 / tp, d + "/o" + t);
    add(36864 / tp, 7168, d + "/dense_gate_up" + t);
    add(7168, 18432 / tp, d + "/dense_down" + t);
    add(4096 / tp, 7168, d + "/shared_gate_up" + t);
    add(7168, 2048 / tp, d + "/shared_down" + t);
  }
  add(8, 4096, "mixtral-8x7b/router");
  add(256, 7168, "deepseek-v3/router");
  return v;
}

const int64_t kTokens[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

int64_t log_uniform(std::mt19937_64& rng, double lo, double hi, int64_t mult) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  int64_t v = (int64_t)std::llround(std::exp(u(rng)));
  v = std::max<int64_t>(mult, (v + mult - 1) / mult * mult);
  return v;
}

struct GemmPoint {
  const GemmType* t;
  int64_t M, N, K;
  std::string src;
};

// Per-dtype rough peak (TFLOP/s) used only to cap point sizes and to estimate run time.
double peak_tflops(const std::string& dt) {
  if (dt == "fp8e4m3") return 1200;
  if (dt == "fp16" || dt == "bf16") return 650;
  if (dt == "tf32") return 320;
  return 50;  // fp32
}
double flop_cap(const std::string& dt, bool tiles) {
  double ms = tiles ? 0.35 : 7.0;  // largest single kernel we accept, at peak
  return peak_tflops(dt) * 1e12 * ms * 1e-3;
}

std::vector<GemmPoint> gemm_points(const std::string& dt, bool quick, std::mt19937_64& rng) {
  const GemmType* t = find_gemm_type(dt);
  std::vector<GemmPoint> pts;
  auto layers = model_layers(true);
  double cap = flop_cap(dt, false);
  // fp16/tf32/fp32 matter less for LLM serving: a random part of the model points.
  double keep = (dt == "bf16" || dt == "fp8e4m3") ? 1.0 : (dt == "fp16" ? 0.8 : 0.5);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto& l : layers)
    for (int64_t M : kTokens) {
      if (2.0 * M * l.N * l.K > cap) continue;
      if (l.src.find("lm_head") != std::string::npos && M > 4096) continue;
      if (u(rng) > keep) continue;
      pts.push_back({t, M, l.N, l.K, l.src});
    }
  int nrand = (dt == "bf16" || dt == "fp8e4m3") ? 500 : 250;
  for (int i = 0; i < nrand; ++i) {
    for (int tries = 0; tries < 50; ++tries) {
      int64_t M = log_uniform(rng, 1, 16384, 1);
      int64_t N = log_uniform(rng, 64, 65536, 16);
      int64_t K = log_uniform(rng, 64, 32768, 16);
      if (2.0 * M * N * K > cap) continue;
      pts.push_back({t, M, N, K, "random"});
      break;
    }
  }
  std::shuffle(pts.begin(), pts.end(), rng);
  if (quick) pts.resize(std::min<size_t>(pts.size(), 12));
  return pts;
}

// With small_m: decode shapes, M = 1..7 tokens (a batch of a few sequences), which the default draw
// (M from 8) leaves out, down to 2e7 flops (a 4096 x 4096 weight read once at M = 1).
std::vector<GemmPoint> tile_points(bool quick, std::mt19937_64& rng, bool small_m = false) {
  std::vector<GemmPoint> pts;
  auto layers = model_layers(false);
  const std::vector<int64_t> Ms = small_m ? std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}
                                          : std::vector<int64_t>{8,   16,   32,   64,   128,  192,  256,  384, 512,
                                                                 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
  const double min_flops = small_m ? 2e7 : 2e8;
  const double max_m = small_m ? 7 : 8192, min_m = small_m ? 1 : 8;
  struct Want {
    const char* dt;
    int n;
  };
  const Want wants[] = {{"bf16", 115}, {"fp8e4m3", 100}, {"fp16", 35}};
  for (auto& w : wants) {
    const GemmType* t = find_gemm_type(w.dt);
    double cap = flop_cap(w.dt, true);
    std::vector<GemmPoint> cand;
    for (auto& l : layers)
      for (int64_t M : Ms)
        if (2.0 * M * l.N * l.K <= cap && 2.0 * M * l.N * l.K >= min_flops) cand.push_back({t, M, l.N, l.K, l.src});
    std::shuffle(cand.begin(), cand.end(), rng);
    int n_model = quick ? 2 : (int)(w.n * 0.7);
    for (int i = 0; i < n_model && i < (int)cand.size(); ++i) pts.push_back(cand[i]);
    int n_rand = quick ? 1 : w.n - n_model;
    for (int i = 0; i < n_rand; ++i) {
      for (int tries = 0; tries < 100; ++tries) {
        int64_t M = log_uniform(rng, min_m, max_m, 1);
        int64_t N = log_uniform(rng, 256, 32768, 64);
        int64_t K = log_uniform(rng, 256, 16384, 64);
        double f = 2.0 * M * N * K;
        if (f > cap || f < min_flops) continue;
        pts.push_back({t, M, N, K, "random"});
        break;
      }
    }
  }
  return pts;  // kept in dtype order: the pool is refilled once per dtype
}

// ----------------------------------------------------------------------------------------------
// Context shared by the sweeps
// ----------------------------------------------------------------------------------------------
struct Ctx {
  Args args;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  Pool pool;
  void* ws = nullptr;
  size_t ws_bytes = 32u << 20;
  float* d_one = nullptr;
  std::vector<int> clock_samples;
  int filled_kind = -1;
  uint64_t fill_seed = 1;
  double last_busy_us = 0;  // the previous GEMM measurement's device time (--settle-ms)
};

void fill_pool(Ctx& c, int kind) {
  if (c.filled_kind == kind) return;
  fill_random(c.pool.base, c.pool.bytes, kind, c.fill_seed++, c.stream);
  CUDA_CHECK(cudaStreamSynchronize(c.stream));
  c.filled_kind = kind;
}

void sample_clock(Ctx& c) {
  int v = Nvml::instance().sm_clock_mhz();
  if (v > 0) c.clock_samples.push_back(v);
}

// Runs bf16 GEMMs for `seconds` so that clocks and temperature settle before measuring.
void warm_gpu(Ctx& c, double seconds) {
  const GemmType& t = *find_gemm_type("bf16");
  GemmProblem p(c.lt, t, 8192, 8192, 8192, c.d_one, c.ws_bytes);
  auto cfgs = p.heuristic(1);
  if (cfgs.empty()) return;
  fill_pool(c, t.fill_kind);
  char* A = c.pool.base;
  char* W = A + Pool::align(p.bytes_a());
  char* C = W + Pool::align(p.bytes_w());
  double t0 = wall_s();
  while (wall_s() - t0 < seconds) {
    for (int i = 0; i < 20; ++i) p.run(cfgs[0], A, W, C, c.ws, c.stream);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
  }
}

std::vector<std::string> env_lines(Ctx& c) {
  std::vector<std::string> e;
  e.push_back("format=perfloom-collector/1");
  e.push_back("collector_version=" + std::string(kCollectorVersion));
  e.push_back("sweep=" + c.args.sweep + (c.args.quick ? " (quick)" : "") + (c.args.small_m ? " (small-m)" : ""));
  if (c.args.sweep == "plan") {
    std::string files;
    for (auto& f : c.args.plans) files += (files.empty() ? "" : " ") + f;
    e.push_back("plan_files=" + files);
    e.push_back("heuristic_n=" + std::to_string(c.args.heuristic_n));
    e.push_back("repeat=" + std::to_string(c.args.repeat) +
                (c.args.repeat > 1 ? " (rounds after the first in a shuffled order)" : ""));
    e.push_back(std::string("variants=") + (c.args.variants ? "1" : "0"));
  }
  e.push_back("settle_ms=" + fmt(c.args.settle_ms, 1) +
              " (before each GEMM configuration's measurement the GPU idles as long as the previous one kept it busy, "
              "at most this)");
  for (auto& l : gpu_env_lines(c.prop)) e.push_back(std::move(l));
  e.push_back(
      "timing=CUPTI activity (CONCURRENT_KERNEL + MEMSET); per repetition the sum of the device durations of all "
      "kernels and memsets the operation launched; latency_us = median");
  e.push_back("l2_rotation_bytes=" + std::to_string(c.pool.cycle_bytes));
  e.push_back("cublaslt_workspace_bytes=" + std::to_string(c.ws_bytes));
  e.push_back(
      "gemm_layout=C[M,N] = A[M,K] * W^T, W (N,K) row-major; cuBLASLt TN with m=N n=M; tile names are cuBLASLt's "
      "(first number along N, second along M, third K)");
  return e;
}

std::vector<std::string> env_after(Ctx& c, double elapsed) {
  auto& nv = Nvml::instance();
  std::vector<std::string> e;
  e.push_back("sm_clock_mhz_after=" + std::to_string(nv.sm_clock_mhz()));
  e.push_back("temperature_c_after=" + std::to_string(nv.temperature_c()));
  if (!c.clock_samples.empty()) {
    auto s = c.clock_samples;
    std::sort(s.begin(), s.end());
    e.push_back("sm_clock_mhz_during_median=" + std::to_string(s[s.size() / 2]));
    e.push_back("sm_clock_mhz_during_min=" + std::to_string(s.front()));
    e.push_back("sm_clock_mhz_during_max=" + std::to_string(s.back()));
  }
  e.push_back("elapsed_s=" + fmt(elapsed, 1));
  return e;
}

// ----------------------------------------------------------------------------------------------
// GEMM sweeps
// ----------------------------------------------------------------------------------------------
Measurement measure_gemm(Ctx& c, GemmProblem& p, const GemmConfig& cfg, int min_reps, int max_reps, double target_us) {
  size_t b = p.bytes_all();
  int sets = c.pool.sets_for(b);
  cublasStatus_t first_err = CUBLAS_STATUS_SUCCESS;
  // --settle-ms: the GPU idles as long as the previous measurement kept it busy, at most G ms,
  // so that every configuration starts from the same clocks whatever ran before it (a power-
  // capped GPU lowers its clocks for a while after a long, hungry run, and without a rest a
  // large GEMM's latency moves 5-15% with what was timed before it).
  const double idle_us = std::min(c.args.settle_ms * 1000, c.last_busy_us);
  if (idle_us > 0) {
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    std::this_thread::sleep_for(std::chrono::microseconds((int64_t)idle_us));
  }
  auto launch = [&](int i) {
    char* base = c.pool.slot(b, i, sets);
    char* A = base;
    char* W = A + Pool::align(p.bytes_a());
    char* C = W + Pool::align(p.bytes_w());
    cublasStatus_t s = p.run(cfg, A, W, C, c.ws, c.stream);
    if (s != CUBLAS_STATUS_SUCCESS && first_err == CUBLAS_STATUS_SUCCESS) first_err = s;
  };
  Measurement m = measure(c.stream, launch, min_reps, max_reps, target_us);
  c.last_busy_us = m.busy_us;
  if (first_err != CUBLAS_STATUS_SUCCESS) {
    m.ok = false;
    m.error = "cublasLtMatmul status " + std::to_string((int)first_err);
  }
  return m;
}

int run_gemm(Ctx& c, CsvOut& out) {
  std::mt19937_64 rng(c.args.seed);
  const char* dts[] = {"bf16", "fp8e4m3", "fp16", "tf32", "fp32"};
  const double share[] = {0.28, 0.26, 0.18, 0.14, 0.14};
  double t_start = wall_s(), carry = 0;
  for (int di = 0; di < 5; ++di) {
    std::string dt = dts[di];
    if (dt == "fp8e4m3" && c.prop.major * 10 + c.prop.minor < 89) continue;
    auto pts = gemm_points(dt, c.args.quick, rng);
    const GemmType& t = *find_gemm_type(dt);
    double budget = c.args.budget_s * share[di] + carry;
    double t0 = wall_s();
    if (c.args.dry_run) {
      double est = 0;
      for (auto& p : pts) {
        double bytes = (double)(p.M * p.K + p.N * p.K) * t.ab_bytes + (double)p.M * p.N * t.cd_bytes;
        double tk = std::max(2.0 * p.M * p.N * p.K / (peak_tflops(dt) * 1e6 * 0.7), bytes / 2.8e6) + 4;
        int reps = std::max(10, std::min(50, (int)std::ceil(2000 / tk)));
        int wu = std::max(2, std::min(10, (int)std::ceil(200 / tk)));
        est += (1 + wu + reps) * (tk + 3) + 1500;
      }
      std::printf("dry-run gemm %-8s points=%zu est_s=%.1f budget_s=%.1f\n", dt.c_str(), pts.size(), est * 1e-6,
                  budget);
      carry = 0;
      continue;
    }
    fill_pool(c, t.fill_kind);
    int done = 0, failed = 0;
    for (auto& pt : pts) {
      if (wall_s() - t0 > budget) break;
      GemmProblem p(c.lt, t, pt.M, pt.N, pt.K, c.d_one, c.ws_bytes);
      if (c.pool.sets_for(p.bytes_all()) == 0) continue;
      auto cfgs = p.heuristic(1);
      if (cfgs.empty()) {
        ++failed;
        continue;
      }
      Measurement m = measure_gemm(c, p, cfgs[0], 10, 50, 2000);
      if (!m.ok) {
        ++failed;
        std::fprintf(stderr, "gemm %s %ldx%ldx%ld: %s\n", dt.c_str(), (long)pt.M, (long)pt.N, (long)pt.K,
                     m.error.c_str());
        continue;
      }
      Row r;
      r.op = "gemm";
      r.dtype = dt;
      r.shape = {{"M", pt.M}, {"N", pt.N}, {"K", pt.K}};
      r.m = &m;
      r.cfg = &cfgs[0];
      r.sweep = "default";
      r.source = pt.src;
      out.write(r);
      if (++done % 100 == 0) sample_clock(c);
    }
    double used = wall_s() - t0;
    carry = std::max(0.0, budget - used);
    std::printf("gemm %-8s measured=%d failed=%d of %zu points in %.1f s\n", dt.c_str(), done, failed, pts.size(),
                used);
    std::fflush(stdout);
  }
  std::printf("gemm sweep total %.1f s, %zu rows\n", wall_s() - t_start, out.count());
  return 0;
}

int run_tiles(Ctx& c, CsvOut& out) {
  std::mt19937_64 rng(c.args.seed + 7);
  auto pts = tile_points(c.args.quick, rng, c.args.small_m);
  if (c.args.dry_run) {
    std::printf("dry-run tiles points=%zu\n", pts.size());
    return 0;
  }
  double t0 = wall_s();
  int done = 0, configs = 0, failed = 0;
  const int heur_n = 64;                     // cuBLASLt 13 returns at most 8 on Hopper
  const int vary_n = c.args.quick ? 6 : 14;  // variations of the heuristic's algorithm
  const int enum_n = 2;                      // other (older) algorithms of the algo list
  for (size_t pi = 0; pi < pts.size(); ++pi) {
    auto& pt = pts[pi];
    // keep the remaining budget evenly spread over the remaining points
    double left = c.args.budget_s - (wall_s() - t0);
    if (left <= 0) break;
    double per_point = left / (double)(pts.size() - pi);
    if (pt.t->fp8 && c.prop.major * 10 + c.prop.minor < 89) continue;
    fill_pool(c, pt.t->fill_kind);
    GemmProblem p(c.lt, *pt.t, pt.M, pt.N, pt.K, c.d_one, c.ws_bytes);
    if (c.pool.sets_for(p.bytes_all()) == 0) continue;
    auto cfgs = p.heuristic(heur_n);
    std::set<decltype(AlgoInfo{}.key())> seen;
    for (auto& g : cfgs) seen.insert(g.info.key());
    if (!cfgs.empty() && !c.args.no_vary) {
      auto var = p.vary(cfgs[0], vary_n, 400, rng, seen);
      cfgs.insert(cfgs.end(), var.begin(), var.end());
    }
    auto extra = p.enumerate(enum_n, 600, rng, seen);
    cfgs.insert(cfgs.end(), extra.begin(), extra.end());
    double tp = wall_s();
    int ok_here = 0;
    for (auto& g : cfgs) {
      if (wall_s() - tp > 3 * per_point && ok_here >= 8) break;
      Measurement m = measure_gemm(c, p, g, 10, 20, 600);
      if (!m.ok) {
        ++failed;
        cudaError_t sticky = cudaDeviceSynchronize();
        if (sticky != cudaSuccess) {  // a broken configuration killed the context
          std::fprintf(stderr, "tiles: %s after algo %d tile %s; stopping\n", cudaGetErrorString(sticky),
                       g.info.algo_id, tile_name((int)g.info.tile).c_str());
          out.finish(env_after(c, wall_s() - t0));
          std::exit(6);
        }
        continue;
      }
      Row r;
      r.op = "gemm";
      r.dtype = pt.t->name;
      r.shape = {{"M", pt.M}, {"N", pt.N}, {"K", pt.K}};
      r.m = &m;
      r.cfg = &g;
      r.sweep = "tiles";
      r.source = pt.src;
      out.write(r);
      ++ok_here;
      ++configs;
    }
    if (ok_here > 0) ++done;
    if (pi % 10 == 0) sample_clock(c);
  }
  std::printf("tiles: %d (shape,dtype) points, %d configurations measured, %d failed, %.1f s\n", done, configs, failed,
              wall_s() - t0);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// Plan mode: the points of `perfloom tune --plan` sampling plans
// ----------------------------------------------------------------------------------------------
struct PlanShape {
  const GemmType* t = nullptr;
  int64_t M = 0, N = 0, K = 0;
  std::vector<const PlanEntry*> entries;
};

// Reads every --plan file (exit 2 with "FILE:LINE: reason" on bad input) and groups the rows by
// (dtype, shape), in dtype order (the pool is refilled once per dtype), else in plan order.
std::vector<PlanShape> plan_shapes(const Args& a, std::vector<PlanEntry>& storage) {
  auto known = [](const std::string& d) { return find_gemm_type(d) != nullptr && d != "int8"; };
  for (const auto& path : a.plans) {
    try {
      auto v = read_plan(path, known);
      storage.insert(storage.end(), v.begin(), v.end());
    } catch (const PlanError& e) {
      std::fprintf(stderr, "perfloom-collect: bad plan: %s\n", e.what());
      std::exit(2);
    }
  }
  std::vector<PlanShape> shapes;
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, size_t> index;
  for (const auto& e : storage) {
    auto key = std::make_tuple(e.dtype, e.M, e.N, e.K);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, shapes.size()).first;
      shapes.push_back({find_gemm_type(e.dtype), e.M, e.N, e.K, {}});
    }
    shapes[it->second].entries.push_back(&e);
  }
  std::stable_sort(shapes.begin(), shapes.end(), [](const PlanShape& x, const PlanShape& y) {
    return std::string(x.t->name) < std::string(y.t->name);
  });
  return shapes;
}

// Rough device time of one GEMM at 70% of peak or the DRAM bound (µs), for the dry-run estimate.
double est_gemm_us(const GemmType& t, int64_t M, int64_t N, int64_t K) {
  double bytes = (double)(M * K + N * K) * t.ab_bytes + (double)M * N * t.cd_bytes;
  return std::max(2.0 * M * N * K / (peak_tflops(t.name) * 1e6 * 0.7), bytes / 2.8e6) + 4;
}
// One measurement as measure_gemm(…, 10, 20, 600) takes it, plus ~2 ms of host work (CUPTI
// flush, configuration check) and the --settle-ms idle (at most the busy time): seconds.
double est_measure_s(double tk, double settle_ms) {
  int reps = std::max(10, std::min(20, (int)std::ceil(600 / tk)));
  int wu = std::max(2, std::min(10, (int)std::ceil(200 / tk)));
  const double busy_us = (1 + wu + reps) * (tk + 3);
  return (busy_us + 2000 + std::min(settle_ms * 1000, busy_us)) * 1e-6;
}

std::string plan_source(const PlanEntry& e) {
  std::string s = "plan:" + (e.config.empty() ? e.tile_name : e.config);
  if (!e.why.empty()) s += " " + e.why;
  return s;
}

// The tile name in the nvjet kernel's name ("nvjet_sm90_tst_128x64_64x6_2x1_..."): its fourth
// '_'-separated part; empty when the repetition ran no nvjet kernel (a memset may come first).
std::string nvjet_tile(const std::string& names) {
  const size_t at = names.find("nvjet_");
  if (at == std::string::npos) return "";
  std::string name = names.substr(at);
  name = name.substr(0, name.find_first_of(" ;"));
  std::vector<std::string> parts;
  std::stringstream ss(name);
  std::string p;
  while (std::getline(ss, p, '_')) parts.push_back(p);
  return parts.size() > 3 ? parts[3] : "";
}

int run_plan(Ctx& c, CsvOut& out) {
  std::vector<PlanEntry> storage;
  auto shapes = plan_shapes(c.args, storage);
  size_t n_points = 0;
  for (auto& s : shapes) n_points += s.entries.size();
  std::printf(
      "plan: %zu configurations over %zu (shape, dtype) points from %zu file(s); +%d heuristic results per shape\n",
      n_points, shapes.size(), c.args.plans.size(), c.args.heuristic_n);
  if (c.args.dry_run) {
    std::map<std::string, std::pair<double, double>> est;  // dtype -> plan s, heuristic s
    std::map<std::string, size_t> cnt;
    for (size_t si = 0; si < shapes.size(); ++si) {
      const auto& s = shapes[si];
      const double tk = est_gemm_us(*s.t, s.M, s.N, s.K);
      auto& e = est[s.t->name];
      e.first += c.args.repeat * s.entries.size() * est_measure_s(tk, c.args.settle_ms);
      e.second += c.args.repeat * c.args.heuristic_n * est_measure_s(tk, c.args.settle_ms) + 1e-3;
      cnt[s.t->name] += s.entries.size();
      if (si < c.args.first_shape) continue;
      std::printf("shape %zu %s M=%ld N=%ld K=%ld est %.1f us/GEMM\n", si, s.t->name, (long)s.M, (long)s.N, (long)s.K,
                  tk);
      for (const PlanEntry* p : s.entries)
        std::printf("  %s:%zu tile %s (id %d) stages %s (id %d) cluster %s (id %d) splitk %d  [%s; %s]\n",
                    p->file.c_str(), p->line, p->tile_name.c_str(), p->tile_id,
                    p->stages_name.empty() ? "(heuristic's)" : p->stages_name.c_str(), p->stages_id,
                    p->cluster_name.c_str(), p->cluster_id, p->splitk, p->config.c_str(), p->why.c_str());
    }
    double total = 0;
    for (auto& [dt, e] : est) {
      std::printf(
          "dry-run plan %-8s configurations=%zu est_s=%.1f (plan points) + %.1f (%d heuristic results per shape)\n",
          dt.c_str(), cnt[dt], e.first, e.second, c.args.heuristic_n);
      total += e.first + e.second;
    }
    std::printf("dry-run plan total est_s=%.1f budget_s=%.1f\n", total, c.args.budget_s);
    return 0;
  }

  // Per dtype an equal share of the budget; what a dtype leaves over carries to the next.
  std::map<std::string, size_t> shapes_per_dtype;
  for (auto& s : shapes) ++shapes_per_dtype[s.t->name];
  const double t0 = wall_s();
  double dt_start = t0, dt_budget = 0;
  std::string cur_dt;
  size_t n_dt_left = shapes_per_dtype.size();
  int measured = 0, heur_rows = 0, refused = 0, failed = 0, mismatched = 0, shapes_done = 0, over_budget = 0;
  std::map<std::string, int> forced_via;  // which base GemmProblem::force used: "first base", "r", "r/plain", "init"
  for (size_t si = c.args.first_shape; si < shapes.size(); ++si) {
    auto& s = shapes[si];
    if (s.t->name != cur_dt) {
      cur_dt = s.t->name;
      dt_start = wall_s();
      const double left = c.args.budget_s - (dt_start - t0);  // what earlier dtypes left carries over
      dt_budget = n_dt_left ? left / (double)n_dt_left : left;
      if (n_dt_left) --n_dt_left;
      std::printf("plan %s: %zu shapes, budget %.0f s\n", cur_dt.c_str(), shapes_per_dtype[cur_dt], dt_budget);
      std::fflush(stdout);
    }
    if (wall_s() - dt_start > dt_budget || wall_s() - t0 > c.args.budget_s) {
      over_budget += (int)s.entries.size();
      continue;
    }
    if (s.t->fp8 && c.prop.major * 10 + c.prop.minor < 89) {
      std::fprintf(stderr, "plan: %s needs compute capability 8.9; skipping %zu points\n", s.t->name, s.entries.size());
      refused += (int)s.entries.size();
      continue;
    }
    fill_pool(c, s.t->fill_kind);
    GemmProblem p(c.lt, *s.t, s.M, s.N, s.K, c.d_one, c.ws_bytes);
    if (c.pool.sets_for(p.bytes_all()) == 0) {
      std::fprintf(stderr, "plan: %s %ldx%ldx%ld does not fit the pool; skipping\n", s.t->name, (long)s.M, (long)s.N,
                   (long)s.K);
      refused += (int)s.entries.size();
      continue;
    }
    auto heur = p.heuristic(std::max(64, c.args.heuristic_n));
    if (heur.empty()) {
      std::fprintf(stderr, "plan: cuBLASLt has no heuristic result for %s %ldx%ldx%ld; skipping its %zu points\n",
                   s.t->name, (long)s.M, (long)s.N, (long)s.K, s.entries.size());
      refused += (int)s.entries.size();
      continue;
    }
    auto write = [&](const Measurement& m, const GemmConfig& g, const std::string& source) {
      Row r;
      r.op = "gemm";
      r.dtype = s.t->name;
      r.shape = {{"M", s.M}, {"N", s.N}, {"K", s.K}};
      r.m = &m;
      r.cfg = &g;
      r.sweep = "plan";
      r.source = source;
      out.write(r);
    };
    // A measurement that failed: a broken configuration may have killed the context.
    auto check_sticky = [&](const GemmConfig& g) {
      cudaError_t sticky = cudaDeviceSynchronize();
      if (sticky == cudaSuccess) return;
      std::fprintf(stderr, "plan: %s after %s %ldx%ldx%ld tile %s; stopping (resume with --first-shape %zu)\n",
                   cudaGetErrorString(sticky), s.t->name, (long)s.M, (long)s.N, (long)s.K,
                   tile_name((int)g.info.tile).c_str(), si + 1);
      std::ofstream(c.args.out + ".resume") << (si + 1) << "\n";
      out.finish(env_after(c, wall_s() - t0));
      std::exit(6);
    };
    // What to measure for this shape: cuBLASLt's own choices (the default, rank 1, to compare
    // against), then the plan's points, each resolved once to a configuration.
    struct Job {
      GemmConfig g;
      std::string source;
      const PlanEntry* entry = nullptr;
    };
    std::vector<Job> jobs;
    for (int i = 0; i < (int)heur.size() && i < c.args.heuristic_n; ++i)
      jobs.push_back({heur[i], "plan:heuristic", nullptr});
    for (const PlanEntry* e : s.entries) {
      auto skip = [&](const std::string& why) {
        ++refused;
        std::fprintf(stderr, "plan: skip %s:%zu (%s %ldx%ldx%ld tile %s cluster %s splitk %d): %s\n", e->file.c_str(),
                     e->line, s.t->name, (long)s.M, (long)s.N, (long)s.K, e->tile_name.c_str(), e->cluster_name.c_str(),
                     e->splitk, why.c_str());
      };
      if (e->heuristic_rank > 0) {  // cuBLASLt's result of that rank, as it is
        if ((int)heur.size() < e->heuristic_rank) {
          skip("cuBLASLt returns only " + std::to_string(heur.size()) + " heuristic results");
          continue;
        }
        const GemmConfig& h = heur[e->heuristic_rank - 1];
        if ((int)h.info.tile != e->tile_id) {
          skip("heuristic result " + std::to_string(e->heuristic_rank) + " has tile " + tile_name((int)h.info.tile));
          continue;
        }
        jobs.push_back({h, plan_source(*e), e});
        continue;
      }
      // Forced on a heuristic result whose algorithm offers the tile (on Hopper the nvjet
      // algorithm), as the tiles sweep's variations are; GemmProblem::force says which.
      const uint32_t stages = e->stages_id >= 0 ? (uint32_t)e->stages_id : (uint32_t)CUBLASLT_MATMUL_STAGES_UNDEFINED;
      GemmConfig g;
      std::string how, why;
      if (!p.force(heur, (uint32_t)e->tile_id, stages, (uint16_t)e->cluster_id, e->splitk, -2, g, how, why)) {
        skip("cuBLASLt refuses it: " + why);
        continue;
      }
      if (e->custom >= 0) {  // the option `perfloom tune` names (cublaslt_custom)
        GemmConfig v;
        std::string cwhy;
        if (!p.with_custom(g, (uint32_t)e->custom, v, cwhy)) {
          skip("cuBLASLt refuses it: " + cwhy);
          continue;
        }
        g = v;
      }
      std::string kind = how.empty() ? "first base" : "";  // "r3/plain" counts as "r/plain"
      for (char ch : how)
        if (!std::isdigit((unsigned char)ch)) kind += ch;
      ++forced_via[kind];
      jobs.push_back({g,
                      plan_source(*e) + (how.empty() ? "" : " via=" + how) +
                          (e->custom >= 0 ? " custom=" + std::to_string(e->custom) : ""),
                      e});
    }
    if (c.args.variants) {
      const size_t planned = jobs.size();
      for (size_t j = 0; j < planned; ++j) {
        if (!jobs[j].entry) continue;
        const GemmConfig base = jobs[j].g;
        const std::string src = jobs[j].source;
        const PlanEntry* entry = jobs[j].entry;
        jobs[j].source +=
            " variant=c" + std::to_string(base.info.custom) + "/s" + std::to_string(base.info.swizzle) + " base";
        for (const GemmConfig& v : p.variants(base))
          jobs.push_back(
              {v, src + " variant=c" + std::to_string(v.info.custom) + "/s" + std::to_string(v.info.swizzle), entry});
      }
    }
    // --repeat R: the whole list R times over, so that each configuration's repetitions are
    // spread over the shape's measuring time (a clock drift hits them all alike); one row per
    // measurement, its source ending in " rep=K" where R > 1. The first round keeps the plan's
    // order, every later one is shuffled (seeded by --seed, the shape and the round), so that
    // no configuration is always timed after the same one.
    std::vector<bool> dead(jobs.size(), false);
    std::vector<size_t> order(jobs.size());
    for (int rep = 1; rep <= c.args.repeat; ++rep) {
      std::iota(order.begin(), order.end(), size_t{0});
      if (rep > 1) {
        std::mt19937_64 round_rng(c.args.seed ^ (uint64_t)(si * 1000003 + rep));
        std::shuffle(order.begin(), order.end(), round_rng);
      }
      for (size_t j : order) {
        if (dead[j]) continue;
        Job& job = jobs[j];
        const std::string source = job.source + (c.args.repeat > 1 ? " rep=" + std::to_string(rep) : "");
        Measurement m = measure_gemm(c, p, job.g, 10, 20, 600);
        if (!m.ok) {
          ++failed;
          dead[j] = true;
          std::fprintf(stderr, "plan: %s of %s %ldx%ldx%ld failed: %s\n", job.source.c_str(), s.t->name, (long)s.M,
                       (long)s.N, (long)s.K, m.error.c_str());
          check_sticky(job.g);
          continue;
        }
        if (job.entry && job.entry->heuristic_rank == 0) {
          const std::string kt = nvjet_tile(m.kernel_names);
          if (!kt.empty() && kt != job.entry->tile_name) {
            ++mismatched;
            ++refused;
            dead[j] = true;
            std::fprintf(stderr, "plan: skip %s:%zu: the kernel run (%s) has tile %s\n", job.entry->file.c_str(),
                         job.entry->line, m.kernel_names.substr(0, 60).c_str(), kt.c_str());
            continue;
          }
        }
        write(m, job.g, source);
        if (rep == 1) ++(job.entry ? measured : heur_rows);
      }
    }
    ++shapes_done;
    if (shapes_done % 20 == 0) {
      sample_clock(c);
      std::printf("plan: %d/%zu shapes, %d plan points, %d heuristic rows, %.0f s\n", shapes_done, shapes.size(),
                  measured, heur_rows, wall_s() - t0);
      std::fflush(stdout);
    }
  }
  std::printf(
      "plan: %d (shape,dtype) points, %d of %zu plan configurations measured, %d heuristic rows, %d plan "
      "configurations skipped (%d kernel-tile mismatches), %d failed measurements, %d left over budget, %.1f s\n",
      shapes_done, measured, n_points, heur_rows, refused, mismatched, failed, over_budget, wall_s() - t0);
  std::string via;
  for (const auto& [kind, n] : forced_via) via += (via.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  std::printf("plan: forced configurations accepted by base (GemmProblem::force): %s\n",
              via.empty() ? "none" : via.c_str());
  return 0;
}

// ----------------------------------------------------------------------------------------------
// Elementwise / norm sweep
// ----------------------------------------------------------------------------------------------
int threads_for(int64_t vec_per_row) {
  int64_t t = std::min<int64_t>(1024, std::max<int64_t>(32, vec_per_row));
  return (int)((t + 31) / 32 * 32);
}

struct EwPoint {
  std::string op, dtype;
  std::map<std::string, int64_t> shape;
};

std::vector<EwPoint> ew_points(bool quick) {
  std::vector<int64_t> Ts = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  if (quick)
    Ts = {1, 64, 4096};
  else {  // plus token counts off the powers of two (log-uniform, fixed seed)
    std::mt19937_64 rng(77);
    for (int i = 0; i < 14; ++i) Ts.push_back(log_uniform(rng, 1, 32768, 1));
  }
  std::vector<int64_t> Hs = {2048, 3584, 4096, 5120, 7168, 8192};
  if (quick) Hs = {4096};
  std::vector<int64_t> Is = {1792, 3584, 7168, 11008, 13824, 14336, 18944, 28672};
  if (quick) Is = {14336};
  std::vector<int64_t> Vs = {32000, 128256, 151936};
  if (quick) Vs = {32000};
  struct Rot {
    int64_t hq, hkv, d;
  };
  std::vector<Rot> rots = {{32, 8, 128}, {64, 8, 128},  {28, 4, 128}, {40, 8, 128},
                           {8, 1, 128},  {32, 32, 128}, {16, 16, 64}};
  if (quick) rots = {{32, 8, 128}};
  struct Kv {
    int64_t hkv, d;
  };
  std::vector<Kv> kvs = {{8, 128}, {4, 128}, {1, 128}, {2, 128}, {32, 128}, {8, 64}};
  if (quick) kvs = {{8, 128}};
  std::vector<EwPoint> p;
  for (auto T : Ts) {
    for (auto H : Hs) {
      p.push_back({"rmsnorm", "bf16", {{"T", T}, {"H", H}}});
      p.push_back({"fused_add_rmsnorm", "bf16", {{"T", T}, {"H", H}}});
      p.push_back({"add", "bf16", {{"T", T}, {"H", H}}});
      if (H == 4096 || H == 8192) {
        p.push_back({"rmsnorm", "fp16", {{"T", T}, {"H", H}}});
        p.push_back({"fused_add_rmsnorm", "fp16", {{"T", T}, {"H", H}}});
        p.push_back({"add", "fp16", {{"T", T}, {"H", H}}});
      }
    }
    for (auto I : Is) {
      p.push_back({"silu_mul", "bf16", {{"T", T}, {"I", I}}});
      if (I == 14336) p.push_back({"silu_mul", "fp16", {{"T", T}, {"I", I}}});
    }
    for (auto V : Vs)
      if ((double)T * V <= 3.0e8) p.push_back({"softmax", "bf16", {{"T", T}, {"V", V}}});
    for (auto& r : rots) p.push_back({"rotary", "bf16", {{"T", T}, {"Hq", r.hq}, {"Hkv", r.hkv}, {"D", r.d}}});
    for (auto& k : kvs) p.push_back({"kv_cache_write", "bf16", {{"T", T}, {"Hkv", k.hkv}, {"D", k.d}}});
  }
  return p;
}

template <typename T>
Measurement run_ew_typed(Ctx& c, const EwPoint& pt, int64_t* d_pos, int64_t* d_slots, T* cos_sin, int64_t max_pos,
                         T* k_cache, T* v_cache, int64_t cache_slots) {
  auto g = [&](const char* k) {
    auto it = pt.shape.find(k);
    return it == pt.shape.end() ? 0 : it->second;
  };
  const int64_t Tn = g("T");
  const size_t es = sizeof(T);
  const float eps = 1e-6f;
  std::function<void(char*)> body;
  size_t bytes = 0;
  if (pt.op == "rmsnorm") {
    int64_t H = g("H");
    size_t x = Pool::align(Tn * H * es), w = Pool::align(H * es);
    bytes = 2 * x + w;
    int th = threads_for(H / 8);
    body = [=, &c](char* b) {
      rmsnorm_kernel<T><<<Tn, th, 0, c.stream>>>((T*)(b + x), (const T*)b, (const T*)(b + 2 * x), (int)H, eps);
    };
  } else if (pt.op == "fused_add_rmsnorm") {
    int64_t H = g("H");
    size_t x = Pool::align(Tn * H * es), w = Pool::align(H * es);
    bytes = 2 * x + w;
    int th = threads_for(H / 8);
    body = [=, &c](char* b) {
      fused_add_rmsnorm_kernel<T><<<Tn, th, 0, c.stream>>>((T*)b, (T*)(b + x), (const T*)(b + 2 * x), (int)H, eps);
    };
  } else if (pt.op == "add") {
    int64_t H = g("H");
    size_t x = Pool::align(Tn * H * es);
    bytes = 3 * x;
    size_t nvec = (size_t)Tn * H / 8;
    unsigned blocks = (unsigned)((nvec + 255) / 256);
    body = [=, &c](char* b) {
      add_kernel<T><<<blocks, 256, 0, c.stream>>>((T*)(b + 2 * x), (const T*)b, (const T*)(b + x), nvec);
    };
  } else if (pt.op == "silu_mul") {
    int64_t I = g("I");
    size_t in = Pool::align(Tn * 2 * I * es), o = Pool::align(Tn * I * es);
    bytes = in + o;
    const int64_t nvec = Tn * (I / 8);
    const unsigned blocks = (unsigned)std::min<int64_t>((nvec + 255) / 256, INT32_MAX);
    body = [=, &c](char* b) {
      silu_mul_kernel<T><<<blocks, 256, 0, c.stream>>>((T*)(b + in), (const T*)b, (int)I, Tn);
    };
  } else if (pt.op == "softmax") {
    int64_t V = g("V");
    size_t x = Pool::align(Tn * V * es);
    bytes = 2 * x;
    body = [=, &c](char* b) { softmax_kernel<T><<<Tn, 1024, 0, c.stream>>>((T*)(b + x), (const T*)b, (int)V); };
  } else if (pt.op == "rotary") {
    int64_t Hq = g("Hq"), Hkv = g("Hkv"), D = g("D");
    size_t q = Pool::align(Tn * Hq * D * es), k = Pool::align(Tn * Hkv * D * es);
    bytes = q + k;
    int items = (int)((Hq + Hkv) * (D / 2 / 8));
    int th = std::min(512, std::max(32, (items + 31) / 32 * 32));
    (void)max_pos;
    body = [=, &c](char* b) {
      rotary_neox_kernel<T><<<Tn, th, 0, c.stream>>>((T*)b, (T*)(b + q), d_pos, cos_sin, (int)Hq, (int)Hkv, (int)D);
    };
  } else if (pt.op == "kv_cache_write") {
    int64_t Hkv = g("Hkv"), D = g("D");
    size_t kb = Pool::align(Tn * Hkv * D * es);
    bytes = 2 * kb;
    int th = threads_for(Hkv * D / 8);
    (void)cache_slots;  // slots index rows of Hkv*D elements; the cache holds cache_slots rows of 32*128
    body = [=, &c](char* b) {
      kv_cache_write_kernel<T>
          <<<Tn, th, 0, c.stream>>>((const T*)b, (const T*)(b + kb), k_cache, v_cache, d_slots, (int)Hkv, (int)D);
    };
  }
  int sets = c.pool.sets_for(bytes);
  Measurement m;
  if (!body || sets == 0) {
    m.error = "unsupported or too large";
    return m;
  }
  return measure(
      c.stream, [&](int i) { body(c.pool.slot(bytes, i, sets)); }, 10, 100, 1000);
}

// Checks each kernel once against a float reference on the host (bf16, small shapes) and prints
// the largest relative error; the sweep runs either way, the log says whether they compute right.
void check_elementwise(Ctx& c) {
  using bf = __nv_bfloat16;
  const int T = 3, H = 4096, I = 1792, V = 32000, Hq = 8, Hkv = 2, D = 128;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto rnd = [&](size_t n) {
    std::vector<bf> v(n);
    for (auto& x : v) x = __float2bfloat16(u(rng));
    return v;
  };
  auto f = [](bf x) { return __bfloat162float(x); };
  auto up = [&](const std::vector<bf>& h) {
    bf* d;
    CUDA_CHECK(cudaMalloc(&d, h.size() * 2));
    CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    return d;
  };
  auto down = [&](const bf* d, size_t n) {
    std::vector<bf> h(n);
    CUDA_CHECK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
    return h;
  };
  auto err = [&](const std::vector<bf>& got, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      double e = f(got[i]) - ref[i];
      num += e * e;
      den += (double)ref[i] * ref[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
  };
  std::string report;
  auto note = [&](const char* name, double e) {
    char b[96];
    std::snprintf(b, sizeof(b), " %s=%.1e%s", name, e, (e < 1e-2 && std::isfinite(e)) ? "" : "(BAD)");
    report += b;
  };
  {  // rmsnorm + fused_add_rmsnorm
    auto x = rnd(T * H), r = rnd(T * H), w = rnd(H);
    bf *dx = up(x), *dr = up(r), *dw = up(w), *dy = up(x);
    rmsnorm_kernel<bf><<<T, 512, 0, c.stream>>>(dy, dx, dw, H, 1e-6f);
    fused_add_rmsnorm_kernel<bf><<<T, 512, 0, c.stream>>>(dx, dr, dw, H, 1e-6f);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    std::vector<float> ref(T * H), ref2(T * H);
    for (int t = 0; t < T; ++t) {
      double ss = 0, ss2 = 0;
      for (int h = 0; h < H; ++h) {
        float a = f(x[t * H + h]);
        ss += a * a;
        float s = f(__float2bfloat16(a + f(r[t * H + h])));
        ss2 += s * s;
      }
      float inv = 1.f / std::sqrt((float)(ss / H) + 1e-6f), inv2 = 1.f / std::sqrt((float)(ss2 / H) + 1e-6f);
      for (int h = 0; h < H; ++h) {
        ref[t * H + h] = f(x[t * H + h]) * inv * f(w[h]);
        ref2[t * H + h] = f(__float2bfloat16(f(x[t * H + h]) + f(r[t * H + h]))) * inv2 * f(w[h]);
      }
    }
    note("rmsnorm", err(down(dy, T * H), ref));
    note("fused_add_rmsnorm", err(down(dx, T * H), ref2));
    cudaFree(dx);
    cudaFree(dr);
    cudaFree(dw);
    cudaFree(dy);
  }
  {  // silu_mul, add, softmax
    auto x = rnd(T * 2 * I), a = rnd(T * H), b = rnd(T * H), s = rnd(T * V);
    bf *dx = up(x), *dy = up(rnd(T * I)), *da = up(a), *db = up(b), *dc = up(a), *ds = up(s), *dso = up(s);
    silu_mul_kernel<bf><<<7, 96, 0, c.stream>>>(dy, dx, I, T);  // a small grid: the stride loop runs
    add_kernel<bf><<<(T * H / 8 + 255) / 256, 256, 0, c.stream>>>(dc, da, db, (size_t)T * H / 8);
    softmax_kernel<bf><<<T, 1024, 0, c.stream>>>(dso, ds, V);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    std::vector<float> r1(T * I), r2(T * H), r3(T * V);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < I; ++i) {
        float g = f(x[t * 2 * I + i]);
        r1[t * I + i] = g / (1 + std::exp(-g)) * f(x[t * 2 * I + I + i]);
      }
    for (int i = 0; i < T * H; ++i) r2[i] = f(a[i]) + f(b[i]);
    for (int t = 0; t < T; ++t) {
      float m = -1e30f;
      double sum = 0;
      for (int v = 0; v < V; ++v) m = std::max(m, f(s[t * V + v]));
      for (int v = 0; v < V; ++v) sum += std::exp(f(s[t * V + v]) - m);
      for (int v = 0; v < V; ++v) r3[t * V + v] = std::exp(f(s[t * V + v]) - m) / sum;
    }
    note("silu_mul", err(down(dy, T * I), r1));
    note("add", err(down(dc, T * H), r2));
    note("softmax", err(down(dso, T * V), r3));
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dso);
  }
  {  // rotary + kv_cache_write
    const int maxpos = 64, blocks = 8, bs = 16;
    auto q = rnd(T * Hq * D), k = rnd(T * Hkv * D), cs = rnd(maxpos * D), kc0 = rnd(blocks * bs * Hkv * D);
    std::vector<int64_t> pos = {5, 0, 63}, slots = {17, 3, 100};
    bf *dq = up(q), *dk = up(k), *dcs = up(cs), *dkc = up(kc0), *dvc = up(kc0);
    int64_t *dpos, *dsl;
    CUDA_CHECK(cudaMalloc(&dpos, 3 * 8));
    CUDA_CHECK(cudaMalloc(&dsl, 3 * 8));
    CUDA_CHECK(cudaMemcpy(dpos, pos.data(), 24, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dsl, slots.data(), 24, cudaMemcpyHostToDevice));
    kv_cache_write_kernel<bf><<<T, 32, 0, c.stream>>>(dk, dq, dkc, dvc, dsl, Hkv, D);  // before rotary changes k
    rotary_neox_kernel<bf><<<T, 96, 0, c.stream>>>(dq, dk, dpos, dcs, Hq, Hkv, D);
    CUDA_CHECK(cudaStreamSynchronize(c.stream));
    std::vector<float> rq(T * Hq * D);
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < Hq; ++h)
        for (int i = 0; i < D / 2; ++i) {
          float x1 = f(q[(t * Hq + h) * D + i]), x2 = f(q[(t * Hq + h) * D + D / 2 + i]);
          float co = f(cs[pos[t] * D + i]), si = f(cs[pos[t] * D + D / 2 + i]);
          rq[(t * Hq + h) * D + i] = x1 * co - x2 * si;
          rq[(t * Hq + h) * D + D / 2 + i] = x2 * co + x1 * si;
        }
    note("rotary", err(down(dq, T * Hq * D), rq));
    auto kc = down(dkc, kc0.size());
    std::vector<float> rk, gk;
    std::vector<bf> gkb;
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < Hkv * D; ++j) {
        rk.push_back(f(k[t * Hkv * D + j]));
        gkb.push_back(kc[slots[t] * Hkv * D + j]);
      }
    note("kv_cache_write", err(gkb, rk));
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dcs);
    cudaFree(dkc);
    cudaFree(dvc);
    cudaFree(dpos);
    cudaFree(dsl);
  }
  std::printf("kernel check (relative L2 error vs host float reference):%s\n", report.c_str());
}

int run_elementwise(Ctx& c, CsvOut& out) {
  auto pts = ew_points(c.args.quick);
  if (c.args.dry_run) {
    std::printf("dry-run elementwise points=%zu\n", pts.size());
    return 0;
  }
  check_elementwise(c);
  std::mt19937_64 rng(c.args.seed + 3);
  const int64_t max_T = 32768, max_pos = 32768;
  // positions: random in [0, max_pos); slots: distinct random slots of a paged cache whose
  // capacity is 4x the largest T (so consecutive tokens land in scattered blocks).
  const int64_t cache_slots = 4 * max_T;
  std::vector<int64_t> pos(max_T), slots(cache_slots);
  for (auto& p : pos) p = (int64_t)(rng() % max_pos);
  for (int64_t i = 0; i < cache_slots; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  int64_t *d_pos = nullptr, *d_slots = nullptr;
  CUDA_CHECK(cudaMalloc(&d_pos, max_T * sizeof(int64_t)));
  CUDA_CHECK(cudaMalloc(&d_slots, max_T * sizeof(int64_t)));
  CUDA_CHECK(cudaMemcpy(d_pos, pos.data(), max_T * sizeof(int64_t), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_slots, slots.data(), max_T * sizeof(int64_t), cudaMemcpyHostToDevice));
  // cos/sin cache and paged KV cache (largest head config: 32 x 128)
  const size_t cs_bytes = (size_t)max_pos * 128 * 2;
  const size_t cache_bytes = (size_t)cache_slots * 32 * 128 * 2;
  char *d_cs = nullptr, *d_kc = nullptr, *d_vc = nullptr;
  CUDA_CHECK(cudaMalloc(&d_cs, cs_bytes));
  CUDA_CHECK(cudaMalloc(&d_kc, cache_bytes));
  CUDA_CHECK(cudaMalloc(&d_vc, cache_bytes));
  fill_random(d_cs, cs_bytes, 2, 99, c.stream);  // bf16 bits; also used as fp16 (only timing)
  CUDA_CHECK(cudaStreamSynchronize(c.stream));

  double t0 = wall_s();
  int done = 0, failed = 0;
  for (auto& pt : pts) {
    if (wall_s() - t0 > c.args.budget_s) break;
    // bf16 values in [-1, 1) read as fp16 are finite too, so one fill serves both types
    fill_pool(c, 2);
    Measurement m = pt.dtype == "fp16"
                        ? run_ew_typed<__half>(c, pt, d_pos, d_slots, (__half*)d_cs, max_pos, (__half*)d_kc,
                                               (__half*)d_vc, cache_slots)
                        : run_ew_typed<__nv_bfloat16>(c, pt, d_pos, d_slots, (__nv_bfloat16*)d_cs, max_pos,
                                                      (__nv_bfloat16*)d_kc, (__nv_bfloat16*)d_vc, cache_slots);
    if (!m.ok) {
      ++failed;
      std::fprintf(stderr, "%s %s: %s\n", pt.op.c_str(), pt.dtype.c_str(), m.error.c_str());
      continue;
    }
    Row r;
    r.op = pt.op;
    r.dtype = pt.dtype;
    r.shape = pt.shape;
    r.m = &m;
    r.sweep = "default";
    r.source = "perfloom kernels.cuh";
    out.write(r);
    if (++done % 50 == 0) sample_clock(c);
  }
  std::printf("elementwise: %d measured, %d failed of %zu points in %.1f s\n", done, failed, pts.size(), wall_s() - t0);
  cudaFree(d_pos);
  cudaFree(d_slots);
  cudaFree(d_cs);
  cudaFree(d_kc);
  cudaFree(d_vc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.args = parse(argc, argv);
  if (c.args.dry_run) {
    CsvOut dummy;
    if (c.args.sweep == "gemm") {
      c.prop.major = 9;
      return run_gemm(c, dummy);
    }
    if (c.args.sweep == "tiles") return run_tiles(c, dummy);
    if (c.args.sweep == "plan") return run_plan(c, dummy);
    return run_elementwise(c, dummy);
  }
  if (c.args.sweep == "plan") {  // a bad plan fails here, before the GPU warms up
    std::vector<PlanEntry> storage;
    plan_shapes(c.args, storage);
  }
  double t_start = wall_s();
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaGetDeviceProperties(&c.prop, 0));
  CuptiTimer::instance().start();
  CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  CUBLAS_CHECK(cublasLtCreate(&c.lt));
  CUDA_CHECK(cudaMalloc(&c.ws, c.ws_bytes));
  CUDA_CHECK(cudaMalloc(&c.d_one, sizeof(float)));
  float one = 1.f;
  CUDA_CHECK(cudaMemcpy(c.d_one, &one, sizeof(float), cudaMemcpyHostToDevice));
  c.pool.init((size_t)(c.args.pool_gb * (1ull << 30)), (size_t)c.prop.l2CacheSize);
  std::printf("perfloom-collect: %s, %d SMs, L2 %d MB, pool %.1f GB, rotation cycle %.0f MB\n", c.prop.name,
              c.prop.multiProcessorCount, c.prop.l2CacheSize >> 20, c.pool.bytes / 1073741824.0,
              c.pool.cycle_bytes / 1048576.0);
  warm_gpu(c, c.args.quick ? 0.3 : 1.5);
  c.last_busy_us = (c.args.quick ? 0.3 : 1.5) * 1e6;  // --settle-ms: the warm-up was the last load

  CsvOut out;
  out.open(c.args.out, env_lines(c));
  int rc = 0;
  if (c.args.sweep == "gemm")
    rc = run_gemm(c, out);
  else if (c.args.sweep == "tiles")
    rc = run_tiles(c, out);
  else if (c.args.sweep == "plan")
    rc = run_plan(c, out);
  else
    rc = run_elementwise(c, out);
  out.finish(env_after(c, wall_s() - t_start));
  std::printf("wrote %zu rows to %s\n", out.count(), c.args.out.c_str());
  cublasLtDestroy(c.lt);
  return rc;
}
