#!/usr/bin/env bash
# One GPU run of perfloom-latency-probe (latency_probe.cu): build it, run it, and write
# OUTDIR/<gpu-id>/latency_probe/latency_probe.csv with env.txt and log.txt beside it (about 20 s with the
# build on an H100). perfloom trains on every collector CSV under data/: see README.md for which
# version of the probe's output lies there.
#
#   tools/collector/run_latency_probe.sh [OUTDIR]      (default OUTDIR: $OUT if set, else ./collector-out)
set -u -o pipefail
OUTDIR="${1:-${OUT:-$PWD/collector-out}}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=collector_lib.sh
source "$HERE/collector_lib.sh"
T0=$(date +%s)
GPU_ID="$(collector_gpu_id)"
collector_open_log "$OUTDIR/$GPU_ID/latency_probe"
collector_env "mode=latency_probe" > "$D/env.txt" 2>&1
build_collector /tmp/perfloom-latency-probe-build latency-probe
[ -n "$BIN" ] || { log "BUILD FAILED (see log.txt)"; exit 1; }
"$BIN/perfloom-latency-probe" --out "$D/latency_probe.csv" 2>&1 | tee -a "$LOG"
rc=$?
log "perfloom-latency-probe exit $rc; $(grep -vc '^#' "$D/latency_probe.csv") lines"
exit $rc
