#!/usr/bin/env bash
# One GPU run of a paired probe: the same forced cuBLASLt configurations measured on two GPUs (run
# this once on each), each point R times in rounds, with the GPU's SM clock, power and throttle
# reasons sampled every 50 ms beside it, and a calibration of the same machine. It answers whether
# a time difference between two GPUs seen in the sweeps (taken on other machines, other days) is
# the GPUs' own, and whether the machine's clocks or its calibrated rates explain it.
#
#   tools/collector/run_pair_probe.sh PLAN.csv [--repeat R] [--budget-s S] [OUTDIR]
#
# PLAN.csv: plan.h's format (op,dtype,M,N,K,cublaslt_tile,cublaslt_cluster,splitk[,cublaslt_stages]).
# Results in OUTDIR/<gpu-id>/ (default OUTDIR: $OUT if set, else ./collector-out): probe.csv (the
# collector's tiles.csv format), clocks.csv (nvidia-smi samples over the whole run), calibration.json,
# env.txt, log.txt. About 2 to 3 minutes on an H100 or H200.
set -u -o pipefail

PLAN=""
REPEAT=3
BUDGET=90
OUTDIR="${OUT:-$PWD/collector-out}"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) REPEAT="$2"; shift ;;
    --budget-s) BUDGET="$2"; shift ;;
    *) if [ -z "$PLAN" ]; then PLAN="$1"; else OUTDIR="$1"; fi ;;
  esac
  shift
done
[ -s "$PLAN" ] || { echo "usage: run_pair_probe.sh PLAN.csv [--repeat R] [--budget-s S] [OUTDIR] (no plan: '$PLAN')" >&2; exit 2; }
PLAN="$(cd "$(dirname "$PLAN")" && pwd)/$(basename "$PLAN")"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=collector_lib.sh
source "$HERE/collector_lib.sh"
T0=$(date +%s)
GPU_ID="$(collector_gpu_id)"
collector_open_log "$OUTDIR/$GPU_ID"
log "pair probe on '$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)' -> $D (plan $PLAN, repeat $REPEAT)"
cp "$PLAN" "$D/plan.csv"
collector_env "mode=pair-probe repeat=$REPEAT budget_s=$BUDGET" "plan=$PLAN" > "$D/env.txt" 2>&1

build_collector /tmp/perfloom-collector-probe-build collect calibrate
if [ -z "$BIN" ]; then log "BUILD FAILED (see log.txt)"; exit 3; fi
log "built $BIN"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,nounits -lms 50 -i 0 > "$D/clocks.csv" 2>&1 &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

log "calibrate"
timeout 170 "$BIN/perfloom-calibrate" --out "$D/calibration.json" 2>&1 | tee -a "$LOG"
log "collect the plan"
timeout $(( BUDGET + 90 )) "$BIN/perfloom-collect" --sweep plan --plan "$PLAN" --heuristic-n 0 --repeat "$REPEAT" \
  --budget-s "$BUDGET" --out "$D/probe.csv" 2>&1 | tail -n 30 | tee -a "$LOG"
[ -s "$D/probe.csv" ] || { [ -s "$D/probe.csv.partial" ] && mv "$D/probe.csv.partial" "$D/probe.csv"; }
kill $SMI 2>/dev/null
rows=$(grep -v '^#' "$D/probe.csv" 2>/dev/null | tail -n +2 | wc -l)
log "done: $rows rows in probe.csv, $(wc -l < "$D/clocks.csv") clock samples"
gzip -9 -f "$D/clocks.csv"
