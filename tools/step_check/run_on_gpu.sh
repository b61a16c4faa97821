#!/usr/bin/env bash
# Runs the vLLM-like step measurement on the device machine; results under $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/step_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
# SM clock and power once a second: long prefills run at the power limit, and clocks explain run-to-run drift
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 1000 > "$OUT/smi.csv" 2>&1 &
SMI=$!
python3 step_bench.py "$OUT" "${STEP_BUDGET:-330}" ${STEP_VARIANT:-} 2> "$OUT/stderr.txt"  # STEP_VARIANT=fused: fused elementwise
rc=$?
kill $SMI 2>/dev/null
tail -n 20 "$OUT/stderr.txt"
exit $rc
