// Shared by perfloom-collect and perfloom-calibrate: error checks, the CUPTI kernel timer,
// NVML clock queries (loaded at run time so that nothing links against the driver), a rotating
// device memory pool that keeps operands out of L2, and small statistics/CSV helpers.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

#define CUDA_CHECK(x)                                                                                   \
  do {                                                                                                  \
    cudaError_t err__ = (x);                                                                            \
    if (err__ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err__), __FILE__, __LINE__, \
                   cudaGetErrorString(err__));                                                          \
      std::exit(3);                                                                                     \
    }                                                                                                   \
  } while (0)

#define CUPTI_CHECK(x)                                                                                      \
  do {                                                                                                      \
    CUptiResult r__ = (x);                                                                                  \
    if (r__ != CUPTI_SUCCESS) {                                                                             \
      const char* s__ = nullptr;                                                                            \
      cuptiGetResultString(r__, &s__);                                                                      \
      std::fprintf(stderr, "CUPTI error %d at %s:%d: %s\n", (int)r__, __FILE__, __LINE__, s__ ? s__ : "?"); \
      std::exit(4);                                                                                         \
    }                                                                                                       \
  } while (0)

#define CUBLAS_CHECK(x)                                                                 \
  do {                                                                                  \
    cublasStatus_t s__ = (x);                                                           \
    if (s__ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s__, __FILE__, __LINE__); \
      std::exit(5);                                                                     \
    }                                                                                   \
  } while (0)

namespace perfloom {

// ----------------------------------------------------------------------------------------------
// CUPTI kernel timer.
//
// Every measured launch sequence is bracketed by a tiny marker kernel (perfloom_marker_kernel).
// Memsets and memcpys count as part of the operation that issued them.
// All work runs on one stream, so after sorting the activity records by start time the kernels
// (and memsets) between two consecutive markers belong to one repetition. This needs no
// correlation bookkeeping and also keeps cuBLASLt's programmatic dependent launches from
// overlapping one repetition with the next.
// ----------------------------------------------------------------------------------------------

#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif

struct ActRecord {
  uint64_t start_ns = 0, end_ns = 0;
  std::string name;  // demangled; "memset" for memsets
  bool marker = false;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int regs = 0;
  int smem_bytes = 0;
  double us() const { return (end_ns - start_ns) * 1e-3; }
};

inline std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? std::string(d) : std::string(name);
  std::free(d);
  return s;
}

class CuptiTimer {
 public:
  static CuptiTimer& instance() {
    static CuptiTimer t;
    return t;
  }

  void start() {
    if (started_) return;
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(&CuptiTimer::buffer_requested, &CuptiTimer::buffer_completed));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    started_ = true;
  }

  // Synchronises the device, flushes CUPTI and returns all records since the last call,
  // sorted by start time.
  std::vector<ActRecord> drain() {
    CUDA_CHECK(cudaDeviceSynchronize());
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::vector<ActRecord> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(records_);
    }
    std::sort(out.begin(), out.end(), [](const ActRecord& a, const ActRecord& b) { return a.start_ns < b.start_ns; });
    return out;
  }

 private:
  static constexpr size_t kBufBytes = 8u << 20;
  bool started_ = false;
  std::mutex mu_;
  std::vector<ActRecord> records_;

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufBytes));
    *size = kBufBytes;
    *max_records = 0;
  }

  static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CuptiTimer& self = instance();
    CUpti_Activity* rec = nullptr;
    std::vector<ActRecord> got;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        auto* k = reinterpret_cast<KernelRecord*>(rec);
        ActRecord a;
        a.start_ns = k->start;
        a.end_ns = k->end;
        a.marker = k->name && std::strstr(k->name, "perfloom_marker_kernel") != nullptr;
        if (!a.marker) a.name = demangle(k->name);
        a.grid[0] = k->gridX;
        a.grid[1] = k->gridY;
        a.grid[2] = k->gridZ;
        a.block[0] = k->blockX;
        a.block[1] = k->blockY;
        a.block[2] = k->blockZ;
        a.regs = k->registersPerThread;
        a.smem_bytes = k->staticSharedMemory + k->dynamicSharedMemory;
        got.push_back(std::move(a));
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(rec);
        ActRecord a;
        a.start_ns = m->start;
        a.end_ns = m->end;
        a.name = "memset";
        got.push_back(std::move(a));
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
        ActRecord a;
        a.start_ns = m->start;
        a.end_ns = m->end;
        a.name = "memcpy";
        got.push_back(std::move(a));
      }
    }
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
    if (dropped) std::fprintf(stderr, "warning: CUPTI dropped %zu records\n", dropped);
    std::free(buffer);
    std::lock_guard<std::mutex> lock(self.mu_);
    for (auto& a : got) self.records_.push_back(std::move(a));
  }
};

__global__ void perfloom_marker_kernel() {}

inline void launch_marker(cudaStream_t s) { perfloom_marker_kernel<<<1, 1, 0, s>>>(); }

struct Stats {
  double median = 0, min = 0, p10 = 0, p90 = 0;
  int n = 0;
};

inline double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = q * (v.size() - 1);
  size_t lo = (size_t)std::floor(pos), hi = (size_t)std::ceil(pos);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

inline Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = (int)v.size();
  s.median = quantile_sorted(v, 0.5);
  s.min = v.front();
  s.p10 = quantile_sorted(v, 0.1);
  s.p90 = quantile_sorted(v, 0.9);
  return s;
}

// What one measured operation produced: per-repetition device time (sum of the kernels and
// memsets it launched) and a description of the kernels of the first timed repetition.
struct Measurement {
  bool ok = false;
  std::string error;
  std::vector<double> rep_us;
  Stats st;
  std::string kernel_names;  // distinct names in launch order, joined with " ; "
  ActRecord main_kernel;     // the longest kernel of the first timed repetition
  int kernels_per_rep = 0;
  int sm_mhz_after = -1;  // NVML's SM clock right after the last repetition (-1: unknown)
  double busy_us = 0;     // device time of every launch: probe, warm-up and repetitions
};

inline int nvml_sm_clock_mhz_now();  // after class Nvml below

// Splits records at markers. Groups before the first marker and after the last are dropped.
inline std::vector<std::vector<ActRecord>> split_at_markers(const std::vector<ActRecord>& recs) {
  std::vector<std::vector<ActRecord>> groups;
  bool open = false;
  std::vector<ActRecord> cur;
  for (const auto& r : recs) {
    if (r.marker) {
      if (open) groups.push_back(std::move(cur));
      cur.clear();
      open = true;
    } else if (open) {
      cur.push_back(r);
    }
  }
  return groups;
}

// launch(i) enqueues repetition i on stream s (it may rotate operands by i). The number of
// repetitions adapts to the operation's duration: reps = clamp(target_us / t_first, min, max).
template <class Launch>
Measurement measure(cudaStream_t s, Launch&& launch, int min_reps, int max_reps, double target_us, int min_warmup = 2) {
  Measurement m;
  auto& timer = CuptiTimer::instance();
  timer.drain();  // drop anything launched before (fills, setup)

  // Probe: one launch (also the first warm-up) tells how long the operation takes.
  launch_marker(s);
  launch(0);
  launch_marker(s);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    m.error = cudaGetErrorString(e);
    return m;
  }
  auto probe = split_at_markers(timer.drain());
  double t0 = 0;
  if (!probe.empty())
    for (auto& r : probe[0]) t0 += r.us();
  m.busy_us = t0;
  if (probe.empty() || probe[0].empty()) {
    m.error = "no kernel recorded";
    return m;
  }
  int reps = (int)std::ceil(target_us / std::max(t0, 0.5));
  reps = std::max(min_reps, std::min(max_reps, reps));
  int warmup = std::max(min_warmup, std::min(10, (int)std::ceil(200.0 / std::max(t0, 0.5))));

  launch_marker(s);
  for (int i = 0; i < warmup + reps; ++i) {
    launch(i + 1);
    launch_marker(s);
  }
  e = cudaGetLastError();
  if (e != cudaSuccess) {
    m.error = cudaGetErrorString(e);
    return m;
  }
  auto groups = split_at_markers(timer.drain());
  if ((int)groups.size() != warmup + reps) {
    m.error = "expected " + std::to_string(warmup + reps) + " groups, got " + std::to_string(groups.size());
    return m;
  }
  for (int i = 0; i < warmup + reps; ++i) {
    double t = 0;
    for (auto& r : groups[i]) t += r.us();
    m.busy_us += t;
    if (i >= warmup) m.rep_us.push_back(t);
  }
  const auto& first = groups[warmup];
  m.kernels_per_rep = (int)first.size();
  double best = -1;
  for (auto& r : first) {
    if (m.kernel_names.find(r.name) == std::string::npos) {
      if (!m.kernel_names.empty()) m.kernel_names += " ; ";
      m.kernel_names += r.name;
    }
    if (r.us() > best) {
      best = r.us();
      m.main_kernel = r;
    }
  }
  m.st = stats_of(m.rep_us);
  m.sm_mhz_after = nvml_sm_clock_mhz_now();
  m.ok = m.st.n > 0 && m.kernels_per_rep > 0;
  if (!m.ok && m.error.empty()) m.error = "empty repetitions";
  return m;
}

// ----------------------------------------------------------------------------------------------
// NVML, loaded with dlopen so that the programs build and start where the driver library is
// missing (they then report clocks as -1).
// ----------------------------------------------------------------------------------------------
class Nvml {
 public:
  static Nvml& instance() {
    static Nvml n;
    return n;
  }
  bool ok() const { return dev_ != nullptr; }
  int sm_clock_mhz() { return clock(1); }   // NVML_CLOCK_SM
  int mem_clock_mhz() { return clock(2); }  // NVML_CLOCK_MEM
  int max_sm_clock_mhz() {
    unsigned v = 0;
    if (!ok() || !max_clock_ || max_clock_(dev_, 1, &v) != 0) return -1;
    return (int)v;
  }
  std::string driver() {
    char buf[96] = {0};
    if (drv_ && drv_(buf, sizeof(buf)) == 0) return buf;
    int v = 0;
    cudaDriverGetVersion(&v);
    return "cuda-driver-api-" + std::to_string(v);
  }
  int temperature_c() {
    unsigned v = 0;
    if (!ok() || !temp_ || temp_(dev_, 0, &v) != 0) return -1;
    return (int)v;
  }
  int power_limit_w() {
    unsigned v = 0;
    if (!ok() || !plimit_ || plimit_(dev_, &v) != 0) return -1;
    return (int)(v / 1000);
  }

 private:
  using InitFn = int (*)();
  using HandleFn = int (*)(unsigned, void**);
  using BusFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned*);
  using DrvFn = int (*)(char*, unsigned);
  using TempFn = int (*)(void*, int, unsigned*);
  using PowFn = int (*)(void*, unsigned*);
  void* dev_ = nullptr;
  ClockFn clock_ = nullptr, max_clock_ = nullptr;
  DrvFn drv_ = nullptr;
  TempFn temp_ = nullptr;
  PowFn plimit_ = nullptr;

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) lib = dlopen("libnvidia-ml.so", RTLD_NOW);
    if (!lib) return;
    auto init = (InitFn)dlsym(lib, "nvmlInit_v2");
    auto handle = (HandleFn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    auto by_bus = (BusFn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    clock_ = (ClockFn)dlsym(lib, "nvmlDeviceGetClockInfo");
    max_clock_ = (ClockFn)dlsym(lib, "nvmlDeviceGetMaxClockInfo");
    drv_ = (DrvFn)dlsym(lib, "nvmlSystemGetDriverVersion");
    temp_ = (TempFn)dlsym(lib, "nvmlDeviceGetTemperature");
    plimit_ = (PowFn)dlsym(lib, "nvmlDeviceGetEnforcedPowerLimit");
    if (!init || !handle || !clock_ || init() != 0) return;
    // NVML numbers GPUs as the machine does and ignores CUDA_VISIBLE_DEVICES: find the CUDA
    // device by its PCI bus id, so that a collector given one GPU of several reads that GPU.
    int cur = 0;
    cudaGetDevice(&cur);
    void* d = nullptr;
    char bus[32] = {0};
    if (by_bus && cudaDeviceGetPCIBusId(bus, sizeof bus, cur) == cudaSuccess && by_bus(bus, &d) == 0)
      dev_ = d;
    else if (handle((unsigned)cur, &d) == 0)
      dev_ = d;
  }
  int clock(int type) {
    unsigned v = 0;
    if (!ok() || clock_(dev_, type, &v) != 0) return -1;
    return (int)v;
  }
};

inline int nvml_sm_clock_mhz_now() { return Nvml::instance().sm_clock_mhz(); }

// ----------------------------------------------------------------------------------------------
// Rotating operand pool. One big allocation; an operation whose operands take `bytes` gets
// `sets` disjoint slots so that the sets together cover at least `cycle_bytes` (a multiple of
// the L2 size): by the time a slot comes round again its lines have been evicted.
// ----------------------------------------------------------------------------------------------
struct Pool {
  char* base = nullptr;
  size_t bytes = 0;
  size_t cycle_bytes = 0;

  void init(size_t want, size_t l2_bytes) {
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    bytes = std::min(want, free_b / 2);
    bytes &= ~(size_t)0xFFFFF;
    CUDA_CHECK(cudaMalloc(&base, bytes));
    cycle_bytes = std::max<size_t>(4 * l2_bytes, 256u << 20);
  }
  static size_t align(size_t b) { return (b + 4095) & ~(size_t)4095; }
  // How many slots an operation of `b` bytes rotates through (0: it does not fit).
  int sets_for(size_t b) const {
    b = align(b);
    if (b > bytes) return 0;
    if (b >= cycle_bytes) return 1;
    size_t n = (cycle_bytes + b - 1) / b;
    n = std::min(n, bytes / b);
    return (int)std::max<size_t>(1, std::min<size_t>(n, 4096));
  }
  char* slot(size_t b, int i, int sets) const { return base + align(b) * (size_t)(i % std::max(1, sets)); }
};

// Fills with uniform values in [-1, 1) of the given element kind (0 fp32, 1 fp16, 2 bf16,
// 3 fp8e4m3, 4 int8), from a hash so that no values repeat with a short period.
__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

__global__ void fill_random_kernel(void* p, size_t n_elems, int kind, uint64_t seed) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (; i < n_elems; i += stride) {
    float u = (hash32(i * 0x9E3779B97F4A7C15ULL + seed) >> 8) * (1.0f / 16777216.0f) * 2.f - 1.f;
    switch (kind) {
      case 0:
        static_cast<float*>(p)[i] = u;
        break;
      case 1:
        static_cast<__half*>(p)[i] = __float2half(u);
        break;
      case 2:
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(u);
        break;
      case 3:
        static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(u * 4.f);
        break;
      case 4:
        static_cast<int8_t*>(p)[i] = (int8_t)(u * 100.f);
        break;
    }
  }
}

inline size_t elem_bytes(int kind) { return kind == 0 ? 4 : (kind <= 2 ? 2 : 1); }

inline void fill_random(void* p, size_t bytes, int kind, uint64_t seed, cudaStream_t s) {
  size_t n = bytes / elem_bytes(kind);
  fill_random_kernel<<<2048, 256, 0, s>>>(p, n, kind, seed);
  CUDA_CHECK(cudaGetLastError());
}

// ----------------------------------------------------------------------------------------------
// Small helpers.
// ----------------------------------------------------------------------------------------------
inline std::string csv_quote(const std::string& s) {
  bool need = s.find_first_of(",\"\n\r") != std::string::npos;
  if (!need) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"')
      o += "\"\"";
    else if (c == '\n' || c == '\r')
      o += ' ';
    else
      o += c;
  }
  return o + "\"";
}

inline std::string fmt(double v, int prec = 3) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", prec, v);
  return b;
}

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char b[64];
  std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

inline double wall_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline std::string cublaslt_version_string() {
  size_t v = cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

inline std::string cuda_runtime_string() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The GPU, driver, library and clock lines of a collector CSV's environment block (FORMAT.md), from
// gpu_name to date, as perfloom-collect and perfloom-latency-probe write them.
inline std::vector<std::string> gpu_env_lines(const cudaDeviceProp& prop) {
  auto& nv = Nvml::instance();
  std::vector<std::string> e;
  e.push_back("gpu_name=" + std::string(prop.name));
  e.push_back("compute_capability=" + std::to_string(prop.major) + "." + std::to_string(prop.minor));
  e.push_back("sm_count=" + std::to_string(prop.multiProcessorCount));
  e.push_back("l2_bytes=" + std::to_string(prop.l2CacheSize));
  e.push_back("memory_bytes=" + std::to_string(prop.totalGlobalMem));
  e.push_back("driver=" + nv.driver());
  e.push_back("cuda_runtime=" + cuda_runtime_string());
  e.push_back("cublaslt_version=" + cublaslt_version_string());
  uint32_t cupti_v = 0;
  cuptiGetVersion(&cupti_v);
  e.push_back("cupti_api_version=" + std::to_string(cupti_v));
  e.push_back("sm_clock_mhz_before=" + std::to_string(nv.sm_clock_mhz()));
  e.push_back("sm_clock_max_mhz=" + std::to_string(nv.max_sm_clock_mhz()));
  e.push_back("mem_clock_mhz=" + std::to_string(nv.mem_clock_mhz()));
  e.push_back("power_limit_w=" + std::to_string(nv.power_limit_w()));
  e.push_back("temperature_c_before=" + std::to_string(nv.temperature_c()));
  e.push_back("date=" + utc_now());
  return e;
}

}  // namespace perfloom
