#!/usr/bin/env bash
# Runs the vLLM-like step measurement on the device machine; results under $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/step_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 step_bench.py "$OUT" "${STEP_BUDGET:-330}" ${STEP_VARIANT:-} 2> "$OUT/stderr.txt"  # STEP_VARIANT=fused: fused elementwise
rc=$?
tail -n 20 "$OUT/stderr.txt"
exit $rc
