# shellcheck shell=bash
# Sourced by run_on_gpu.sh, run_plan_on_gpu.sh and run_latency_probe.sh.

# Prints perfloom's id of GPU 0 (gpus/<id>.json), from the driver's name.
collector_gpu_id() {
  local name
  name="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)"
  case "$name" in
    *H100*PCIe*) echo h100-pcie ;;
    *H100*NVL*) echo h100-nvl ;;
    *H100*) echo h100-sxm ;;
    *H200*NVL*) echo h200-nvl ;;
    *H200*) echo h200 ;;
    *) echo "${name:-unknown-gpu}" | tr 'A-Z' 'a-z' | sed -e 's/nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//' ;;
  esac
}

# Makes the output folder D and its log.txt (emptied): sets LOG and defines `log`, which prints a
# line with the seconds since T0 and appends it to the log.
collector_open_log() {
  D="$1"
  mkdir -p "$D"
  LOG="$D/log.txt"
  : > "$LOG"
  # shellcheck disable=SC2317  # called by the sourcing script
  log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }
}

# Prints the machine as env.txt records it: the GPU id and the date, the KEY=VALUE lines given as
# arguments (the run's mode), the GPU's state (clocks, power, ECC), the toolchain, the CPU and the
# kernel. Needs GPU_ID.
collector_env() {
  local kv
  echo "gpu_id=$GPU_ID"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for kv in "$@"; do echo "$kv"; done
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu,persistence_mode,ecc.mode.current --format=csv -i 0 2>&1
  echo "--- nvidia-smi -q (clocks, power, application clocks)"
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE -i 0 2>&1 | sed -n '1,80p'
  echo "--- toolchain"
  nvcc --version 2>&1 | tail -2
  cmake --version 2>&1 | head -1
  ninja --version 2>&1 | sed 's/^/ninja /'
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "kernel=$(uname -r)"
}

# Builds the collector programs on a GPU machine.
#   build_collector BUILD_DIR PROGRAM...   (PROGRAM: collect, calibrate)
# Uses cmake + ninja where they exist, else nvcc directly; finds CUPTI and cuBLASLt next to nvcc or
# (fallback) in the CUDA wheels PyTorch ships with. Sets BIN to BUILD_DIR/bin when every program was
# built (empty otherwise) and puts the CUPTI library folder on LD_LIBRARY_PATH. Needs `log` and LOG.
build_collector() {
  local build="$1"; shift
  local here cc nvcc cuda_root inc="" lib="" dir h l p targets=()
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | head -1 | tr -d ' .')"
  [ -n "$cc" ] || cc=90
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  cuda_root="$(dirname "$(dirname "$nvcc")")"
  for dir in "$cuda_root/include" "$cuda_root/extras/CUPTI/include" "$cuda_root"/targets/*/include; do
    [ -f "$dir/cupti.h" ] && { inc="$dir"; break; }
  done
  if [ -z "$inc" ]; then
    h="$(find / -xdev -name cupti.h -path '*include*' 2>/dev/null | head -1)"
    [ -n "$h" ] && inc="$(dirname "$h")"
  fi
  for dir in "$cuda_root/lib64" "$cuda_root/extras/CUPTI/lib64" "$cuda_root"/targets/*/lib; do
    ls "$dir"/libcupti.so* >/dev/null 2>&1 && { lib="$dir"; break; }
  done
  if [ -z "$lib" ]; then
    l="$(find / -xdev -name 'libcupti.so*' 2>/dev/null | head -1)"
    [ -n "$l" ] && lib="$(dirname "$l")"
  fi
  log "nvcc=$nvcc cupti include=${inc:-?} lib=${lib:-?} sm_$cc"
  for p in "$@"; do targets+=(--target "perfloom-$p"); done
  BIN=""
  if command -v cmake >/dev/null && command -v ninja >/dev/null; then
    rm -rf "$build"
    if cmake -S "$here" -B "$build" -G Ninja -DCMAKE_CUDA_COMPILER="$nvcc" -DPERFLOOM_CUDA_ARCHS="$cc" \
         ${lib:+-DCMAKE_LIBRARY_PATH="$lib"} ${inc:+-DCMAKE_INCLUDE_PATH="$inc"} >>"$LOG" 2>&1 \
       && cmake --build "$build" "${targets[@]}" -j 16 >>"$LOG" 2>&1; then
      BIN="$build/bin"
    else
      log "cmake build failed; trying nvcc directly"
    fi
  fi
  if [ -z "$BIN" ]; then
    mkdir -p "$build/bin"
    for p in "$@"; do
      "$nvcc" -O3 -std=c++17 -gencode arch=compute_$cc,code=sm_$cc --expt-relaxed-constexpr -lineinfo \
        ${inc:+-I"$inc"} ${lib:+-L"$lib"} \
        -o "$build/bin/perfloom-$p" "$here/$p.cu" -lcublasLt -lcupti -ldl >>"$LOG" 2>&1 &
    done
    wait
    BIN="$build/bin"
    for p in "$@"; do [ -x "$build/bin/perfloom-$p" ] || BIN=""; done
  fi
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  return 0
}
