#!/usr/bin/env bash
# Extra exhaustive tile sweeps for the wave tuner (issue #8): the collector's `--sweep tiles`
# (250 (shape, dtype) points per seed, every configuration cuBLASLt offers plus variations) run
# with other seeds than the default run's (20251121), so tile_points() draws other shapes.
# Run from the repository root on a GPU machine:
#   tools/collector/run_tiles_more.sh [--small-m] OUTDIR SEED...   (e.g. $OUT 1 2 3 4 5 6)
# Writes OUTDIR/<gpu-id>/tiles_s<SEED>.csv, env.txt, log.txt (copy them to data/<gpu-id>/tiles_more/).
# --small-m: decode shapes, M = 1..7 (`perfloom-collect --small-m`), written as tiles_m1_s<SEED>.csv.
set -u -o pipefail
SMALL=""; PREFIX="tiles_s"
if [ "${1:-}" = "--small-m" ]; then SMALL="--small-m"; PREFIX="tiles_m1_s"; shift; fi
OUTDIR="$1"; shift
SEEDS=("$@")
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$HERE/collector_lib.sh"
T0=$(date +%s)
GPU_ID="$(collector_gpu_id)"
collector_open_log "$OUTDIR/$GPU_ID"
log "tiles_more on '$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)' -> $D seeds: ${SEEDS[*]}"
collector_env "mode=tiles_more${SMALL:+ $SMALL} seeds=${SEEDS[*]} budget_s=85 each" \
  "repo_commit=$(git rev-parse HEAD 2>/dev/null || echo ?)" > "$D/env.txt" 2>&1
log "environment written"
build_collector /tmp/perfloom-collector-build collect
if [ -z "$BIN" ]; then log "BUILD FAILED"; tail -n 40 "$LOG"; exit 1; fi
log "built $BIN"
for s in "${SEEDS[@]}"; do
  if [ $(( $(date +%s) - T0 )) -gt 470 ]; then log "time limit: seed $s skipped"; continue; fi
  f="$D/$PREFIX$s.csv"
  log "collect tiles seed $s${SMALL:+ $SMALL} (budget 85s)"
  timeout 150 "$BIN/perfloom-collect" --sweep tiles --seed "$s" $SMALL --budget-s 85 --out "$f" 2>&1 | tail -n 20 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && log "seed $s exited with $rc"
  if [ ! -s "$f" ] && [ -s "$f.partial" ]; then mv "$f.partial" "$f"; log "kept partial $f"; fi
  rm -f "$f.partial"
done
{
  echo "--- after"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -i 0 2>&1
} >> "$D/env.txt"
log "done in $(( $(date +%s) - T0 ))s"
python3 - "$D" "data/$GPU_ID/tiles.csv.gz" <<'PY' 2>&1 | tee -a "$LOG"
import csv, glob, gzip, os, sys
d, orig = sys.argv[1], sys.argv[2]
def shapes(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    return rows, {(r["dtype"], r["M"], r["N"], r["K"]) for r in rows}
seen = shapes(orig)[1] if os.path.exists(orig) else set()
print(f"original tiles.csv shapes={len(seen)}")
for p in sorted(glob.glob(os.path.join(d, "tiles_*s*.csv"))):
    rows, s = shapes(p)
    new = s - seen
    print(f"{os.path.basename(p):18s} rows={len(rows):6d} shapes={len(s)} new={len(new)}")
    seen |= s
print(f"total distinct shapes={len(seen)}")
PY
