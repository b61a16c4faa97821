#!/usr/bin/env bash
# Runs the sustained-power probe on the device machine; results under $OUT (about 90 s).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/power_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 power_probe.py "$OUT" "$@" 2> "$OUT/stderr.txt"
rc=$?
tail -n 20 "$OUT/stderr.txt"
exit $rc
