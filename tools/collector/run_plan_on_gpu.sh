#!/usr/bin/env bash
# One GPU run of perfloom-collect in plan mode: build it, check the plans (dry run), then time every
# plan point plus cuBLASLt's heuristic results at each plan shape, into tiles.csv-format rows (FORMAT.md).
#
#   tools/collector/run_plan_on_gpu.sh [--plan NAME | --variants [NAME]] [--repeat R] [--heuristic-n H]
#                                      [--settle-ms G] [--budget-s S] [--dry-run] [OUTDIR]
#
# Without --plan: the sparse sampling plans data/<gpu-id>/plan_bf16.csv and plan_fp8e4m3.csv
# (`perfloom tune --plan --dtype DT --gpu ID --out ...`; written here with build/bin/perfloom where they
# are missing and the CLI is built), each point once with cuBLASLt's first 8 heuristic results per
# shape, into tiles_plan.csv.
# --plan NAME: data/<gpu-id>/NAME_plan.csv(.gz) instead (a lists round or a side-by-side check of
# perfloom-tuner-eval, or `perfloom tune --gemm ... --plan`), every configuration timed R times in
# rounds (--repeat, default 3) with cuBLASLt's first H heuristic results per shape (--heuristic-n,
# default 1: its default), into NAME.csv.
# --variants [NAME]: like --plan (default NAME: variants), each configuration also with every other
# custom option and CTA swizzle cuBLASLt accepts (perfloom-collect --variants): variants.csv trains
# the tuner table's variant model.
# --settle-ms G: before each configuration's measurement the GPU idles as long as the previous
# measurement kept it busy, at most G ms (default 20, 0: never), so that the clocks it is timed at
# do not depend on what ran before it. --budget-s S: measuring time (default 150; the dry run prints
# an estimate). --dry-run stops after building and parsing the plans (no GPU needed: set
# PERFLOOM_GPU_ID=h100-sxm or h200 where nvidia-smi finds none).
#
# Run from the repository root. Results land in OUTDIR/<gpu-id>/ (default OUTDIR: $OUT if set, else
# ./collector-out): the CSV, gzip-compressed (tiles_plan.csv.gz or NAME.csv.gz), log.txt, env.txt,
# dry_run.txt, collect_full.txt.gz (every refused plan point) and the plans used.
set -u -o pipefail

BUDGET=150
DRY=""
REPEATED=""
VARIANTS=""
NAMED=""
REPEAT=3
HEUR_N=1
SETTLE_MS=20
OUTDIR="${OUT:-$PWD/collector-out}"
while [ $# -gt 0 ]; do
  case "$1" in
    --budget-s) BUDGET="$2"; shift ;;
    --dry-run) DRY=1 ;;
    --plan) NAMED="$2"; shift ;;
    --variants) VARIANTS=variants; case "${2:-}" in ""|-*|/*) ;; *) VARIANTS="$2"; shift ;; esac ;;
    --repeat) REPEAT="$2"; shift ;;
    --heuristic-n) HEUR_N="$2"; shift ;;
    --settle-ms) SETTLE_MS="$2"; shift ;;
    *) OUTDIR="$1" ;;
  esac
  shift
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=collector_lib.sh
source "$HERE/collector_lib.sh"
ROOT="$(cd "$HERE/../.." && pwd)"
T0=$(date +%s)

gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)"
GPU_ID="$(collector_gpu_id)"
[ -n "${PERFLOOM_GPU_ID:-}" ] && GPU_ID="$PERFLOOM_GPU_ID"
collector_open_log "$OUTDIR/$GPU_ID"

log "perfloom collector plan run on '$gpu_name' -> $D (budget ${BUDGET}s)"

# ---- plans ---------------------------------------------------------------------------------------
PLANS=()
MODE_ARGS=()
OUTNAME=tiles_plan.csv
PLAN_DTYPES="bf16 fp8e4m3"  # the sampling plans; --plan and --variants measure one named plan instead
if [ -n "$VARIANTS" ] || [ -n "$NAMED" ]; then
  PLAN_DTYPES=""
  REPEATED=1  # R rounds, cuBLASLt's first H results per shape
  MODE_ARGS=(--heuristic-n "$HEUR_N" --repeat "$REPEAT")
  [ -n "$VARIANTS" ] && MODE_ARGS+=(--variants)
  NAME="${VARIANTS:-$NAMED}"
  OUTNAME="$NAME.csv"
  p="$ROOT/data/$GPU_ID/${NAME}_plan.csv"
  if [ ! -s "$p" ] && [ -s "$p.gz" ]; then gzip -dc "$p.gz" > "$D/${NAME}_plan.csv"; p="$D/${NAME}_plan.csv"; fi
  if [ -s "$p" ]; then PLANS+=("$p"); else log "no plan: $p(.gz) is missing"; fi
fi
for dt in $PLAN_DTYPES; do
  p="$ROOT/data/$GPU_ID/plan_$dt.csv"
  if [ ! -s "$p" ] && [ -x "$ROOT/build/bin/perfloom" ]; then  # a checkout with the CLI built
    p="$D/plan_$dt.csv"
    "$ROOT/build/bin/perfloom" tune --plan --dtype "$dt" --gpu "$GPU_ID" --out "$p" 2>&1 | tee -a "$LOG"
  fi
  if [ -s "$p" ]; then PLANS+=("$p"); else log "no plan for $dt: $ROOT/data/$GPU_ID/plan_$dt.csv is missing"; fi
done
if [ ${#PLANS[@]} -eq 0 ]; then
  log "NO PLANS for '$GPU_ID' (write them with: perfloom tune --plan --dtype DT --gpu $GPU_ID --out data/$GPU_ID/plan_DT.csv)"
  exit 2
fi
MODE_ARGS+=(--settle-ms "$SETTLE_MS")
PLAN_ARGS=()
for p in "${PLANS[@]}"; do PLAN_ARGS+=(--plan "$p"); [ "$(dirname "$p")" = "$D" ] || cp "$p" "$D/"; done

# ---- environment ---------------------------------------------------------------------------------
collector_env "mode=plan${REPEATED:+ repeat=$REPEAT}${VARIANTS:+ variants} settle_ms=$SETTLE_MS budget_s=$BUDGET${CUDA_VISIBLE_DEVICES:+ cuda_visible_devices=$CUDA_VISIBLE_DEVICES}" "plans=${PLANS[*]}" > "$D/env.txt" 2>&1

# ---- build (as run_on_gpu.sh does: cmake + ninja, else nvcc directly) ----------------------------
# one build folder per GPU, so that runs on several GPUs at once (CUDA_VISIBLE_DEVICES) do not collide
build_collector "/tmp/perfloom-collector-plan-build${CUDA_VISIBLE_DEVICES:+-gpu${CUDA_VISIBLE_DEVICES//,/_}}" collect
if [ -z "$BIN" ]; then
  log "BUILD FAILED (see log.txt)"
  exit 3
fi
log "built $BIN/perfloom-collect"

# ---- dry run: parse the plans, print every configuration and the time estimate -------------------
if ! "$BIN/perfloom-collect" --sweep plan "${PLAN_ARGS[@]}" "${MODE_ARGS[@]}" --budget-s "$BUDGET" --dry-run > "$D/dry_run.txt" 2>>"$LOG"; then
  log "the plans do not parse (see log.txt)"
  exit 2
fi
grep -E '^(plan:|dry-run)' "$D/dry_run.txt" | tee -a "$LOG"
if [ -n "$DRY" ]; then log "dry run only: $D/dry_run.txt lists every configuration"; exit 0; fi

# ---- measure -------------------------------------------------------------------------------------
OUTCSV="$D/$OUTNAME"
finish_csv() {  # a crashed collector leaves FILE.partial: keep its rows
  local f="$1"
  if [ ! -s "$f" ] && [ -s "$f.partial" ]; then mv "$f.partial" "$f"; log "kept partial $f"; fi
  rm -f "$f.partial"
}
t_m=$(date +%s)
log "collect plan (budget ${BUDGET}s)"
timeout $(( BUDGET + 90 )) "$BIN/perfloom-collect" --sweep plan "${PLAN_ARGS[@]}" "${MODE_ARGS[@]}" --budget-s "$BUDGET" --out "$OUTCSV" 2>&1 \
  | tee -a "$D/collect_full.txt" | grep -v '^plan: skip ' | tail -n 40 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
finish_csv "$OUTCSV"
# A configuration that breaks the CUDA context stops the collector (exit 6) with the next shape
# in OUTCSV.resume: go on from there in a fresh process while budget is left.
part=0
while [ "$rc" -eq 6 ] && [ -s "$OUTCSV.resume" ] && [ $part -lt 5 ]; do
  left=$(( BUDGET - ($(date +%s) - t_m) ))
  [ "$left" -gt 10 ] || break
  first=$(cat "$OUTCSV.resume"); rm -f "$OUTCSV.resume"
  part=$(( part + 1 ))
  log "collector exited with 6; resuming at shape $first for ${left}s"
  timeout $(( left + 60 )) "$BIN/perfloom-collect" --sweep plan "${PLAN_ARGS[@]}" "${MODE_ARGS[@]}" --first-shape "$first" --budget-s "$left" \
    --out "$D/${OUTNAME%.csv}_$part.csv" 2>&1 | tee -a "$D/collect_full.txt" | grep -v '^plan: skip ' | tail -n 20 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  PART="$D/${OUTNAME%.csv}_$part.csv"
  finish_csv "$PART"
  [ -s "$PART" ] && grep -v '^#' "$PART" | tail -n +2 >> "$OUTCSV"
  rm -f "$PART"
  [ -s "$PART.resume" ] && mv "$PART.resume" "$OUTCSV.resume"
done
rm -f "$OUTCSV.resume"
n_skip=$(grep -c '^plan: skip ' "$D/collect_full.txt" 2>/dev/null); n_skip=${n_skip:-0}
log "skipped plan points (first 20 of $n_skip):"
grep '^plan: skip ' "$D/collect_full.txt" 2>/dev/null | head -n 20 | tee -a "$LOG"
gzip -9 -f "$D/collect_full.txt" 2>/dev/null

# ---- summary -------------------------------------------------------------------------------------
if [ -s "$OUTCSV" ]; then
  rows=$(grep -v '^#' "$OUTCSV" | tail -n +2 | wc -l)
  plan_rows=$(grep -v '^#' "$OUTCSV" | grep -c ',-2,plan,' || true)
  shapes=$(grep -v '^#' "$OUTCSV" | tail -n +2 | cut -d, -f2-5 | sort -u | wc -l)
  if [ -n "$REPEATED" ]; then
    log "$OUTNAME: $rows rows ($REPEAT per configuration) over $shapes (shape, dtype) points"
  else
    log "$OUTNAME: $rows rows ($plan_rows plan configurations, $(( rows - plan_rows )) heuristic results) over $shapes (shape, dtype) points"
  fi
else
  log "NO ROWS measured"
fi
log "done in $(( $(date +%s) - T0 ))s"
[ -s "$OUTCSV" ] || exit 1
# Gzip-compressed, as data/ keeps the large collector CSVs (every reader takes them either way).
gzip -9 -n -f "$OUTCSV"
