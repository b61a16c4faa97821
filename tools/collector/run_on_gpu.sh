#!/usr/bin/env bash
# One GPU run of perfloom's collector: build, calibrate, collect (GEMM default + tile sweeps,
# elementwise/norm kernels), attention through PyTorch, and a short table at the end.
#
#   tools/collector/run_on_gpu.sh [--quick] [--only PART[,PART...]] [OUTDIR]
#
# PART: calibrate, gemm, tiles, elementwise, attention (default: all of them; --only elementwise
# re-measures the elementwise/norm kernels alone, about a minute with the build).
#
# Results land in OUTDIR/<gpu-id>/ (default OUTDIR: $OUT if set, else ./collector-out):
#   calibration.json gemm.csv tiles.csv elementwise.csv attention.csv trace.json.gz env.txt log.txt
# Needs: nvcc (CUDA >= 12 with CUPTI and cuBLASLt), cmake + ninja (else nvcc is called directly),
# python3 with torch for the attention part. A full run takes about 7 minutes on an H100.
set -u -o pipefail

QUICK=""
ONLY="calibrate,gemm,tiles,elementwise,attention"
OUTDIR="${OUT:-$PWD/collector-out}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK="--quick" ;;
    --only) shift; ONLY="${1:?--only needs a list of parts}" ;;
    *) OUTDIR="$1" ;;
  esac
  shift
done
wanted() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=collector_lib.sh
source "$HERE/collector_lib.sh"
T0=$(date +%s)

gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)"
GPU_ID="$(collector_gpu_id)"
collector_open_log "$OUTDIR/$GPU_ID"

log "perfloom collector run on '$gpu_name' -> $D ${QUICK} parts: $ONLY"

# ---- environment ---------------------------------------------------------------------------------
{
  collector_env "mode=${QUICK:-full}"
  python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
} > "$D/env.txt" 2>&1
log "environment written"

# ---- build ---------------------------------------------------------------------------------------
build_collector /tmp/perfloom-collector-build collect calibrate
if [ -z "$BIN" ]; then
  log "BUILD FAILED (see log.txt); only the attention part will run"
else
  log "built $BIN"
fi

# ---- budgets (seconds) ---------------------------------------------------------------------------
if [ -n "$QUICK" ]; then
  B_GEMM=20; B_TILES=15; B_EW=10; B_ATTN=25
else
  B_GEMM=150; B_TILES=85; B_EW=35; B_ATTN=80
fi

finish_csv() {  # a crashed collector leaves FILE.partial: keep its rows
  local f="$1"
  if [ ! -s "$f" ] && [ -s "$f.partial" ]; then mv "$f.partial" "$f"; log "kept partial $f"; fi
  rm -f "$f.partial"
}

if [ -n "$BIN" ]; then
  if wanted calibrate; then
    log "calibrate"
    timeout 170 "$BIN/perfloom-calibrate" $QUICK --out "$D/calibration.json" 2>&1 | tee -a "$LOG"
  fi
  for sw in gemm tiles elementwise; do
    wanted "$sw" || continue
    case $sw in gemm) b=$B_GEMM; f=gemm.csv ;; tiles) b=$B_TILES; f=tiles.csv ;; elementwise) b=$B_EW; f=elementwise.csv ;; esac
    log "collect $sw (budget ${b}s)"
    t_sw=$(date +%s)
    timeout $(( b + 90 )) "$BIN/perfloom-collect" --sweep $sw $QUICK --budget-s $b --out "$D/$f" 2>&1 | tail -n 60 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    finish_csv "$D/$f"
    left=$(( b - ($(date +%s) - t_sw) ))
    if [ "$sw" = tiles ] && [ "$rc" -ne 0 ] && [ "$left" -gt 10 ]; then
      # a configuration broke the CUDA context: go on with the heuristic's own configurations only
      log "tiles exited with $rc; rerunning without variations for ${left}s"
      timeout $(( left + 60 )) "$BIN/perfloom-collect" --sweep tiles $QUICK --no-vary --seed 4242 --budget-s $left \
        --out "$D/tiles_b.csv" 2>&1 | tail -n 20 | tee -a "$LOG"
      finish_csv "$D/tiles_b.csv"
      [ -s "$D/tiles_b.csv" ] && grep -v '^#' "$D/tiles_b.csv" | tail -n +2 >> "$D/tiles.csv"
      rm -f "$D/tiles_b.csv"
    fi
  done
fi

if wanted attention; then
  log "attention (torch.profiler, budget ${B_ATTN}s)"
  PYTHONUNBUFFERED=1 timeout $(( B_ATTN + 120 )) python3 "$HERE/attention_torch.py" $QUICK --budget-s $B_ATTN \
    --out "$D/attention.csv" --trace "$D/trace.json.gz" 2>&1 | tail -n 40 | tee -a "$LOG"
fi

# files over 15 MB travel gzipped
for f in "$D"/*.csv; do
  [ -f "$f" ] || continue
  if [ "$(stat -c %s "$f")" -gt 15000000 ]; then gzip -9 -f "$f"; log "gzipped $f"; fi
done

# ---- summary -------------------------------------------------------------------------------------
log "done in $(( $(date +%s) - T0 ))s"
python3 - "$D" <<'EOF' 2>&1 | tee -a "$LOG"
import csv, gzip, json, os, sys
d = sys.argv[1]
def rows(name):
    p = os.path.join(d, name)
    if not os.path.exists(p) and os.path.exists(p + ".gz"): p += ".gz"
    if not os.path.exists(p): return []
    op = gzip.open if p.endswith(".gz") else open
    with op(p, "rt") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))
print(f"==== summary {os.path.basename(d)} ====")
g = rows("gemm.csv")
by = {}
for r in g: by[r["dtype"]] = by.get(r["dtype"], 0) + 1
print(f"gemm.csv        rows={len(g):6d}  " + " ".join(f"{k}={v}" for k, v in sorted(by.items())))
t = rows("tiles.csv")
pts = {(r["dtype"], r["M"], r["N"], r["K"]) for r in t}
print(f"tiles.csv       rows={len(t):6d}  distinct (shape,dtype) sweeps={len(pts)}")
e = rows("elementwise.csv")
by = {}
for r in e: by[r["op"]] = by.get(r["op"], 0) + 1
print(f"elementwise.csv rows={len(e):6d}  " + " ".join(f"{k}={v}" for k, v in sorted(by.items())))
a = rows("attention.csv")
by = {}
for r in a: by[r["op"]] = by.get(r["op"], 0) + 1
print(f"attention.csv   rows={len(a):6d}  " + " ".join(f"{k}={v}" for k, v in sorted(by.items())))
for r in g:
    if r["dtype"] == "bf16" and r["M"] == "8192" and r["N"] == "28672" and r["K"] == "4096":
        f = 2 * 8192 * 28672 * 4096 / float(r["latency_us"]) / 1e6
        print(f"check: bf16 8192x28672x4096 {r['latency_us']} us = {f:.0f} TFLOP/s ({r['tile']})")
try:
    c = json.load(open(os.path.join(d, "calibration.json")))
    m = c["measured"]
    print("calibration: " + ", ".join(f"{k}={v:.4g}" for k, v in m.items() if isinstance(v, (int, float))))
    print("tensor_tflops: " + ", ".join(f"{k}={v:.0f}" for k, v in m.get("tensor_tflops", {}).items()))
    print(f"clock MHz before/after: {c.get('clock_mhz_before')} / {c.get('clock_mhz_after')}")
except Exception as ex:
    print("calibration.json missing or unreadable:", ex)
for f in sorted(os.listdir(d)):
    print(f"  {f:20s} {os.path.getsize(os.path.join(d, f)) / 1e6:8.2f} MB")
EOF
