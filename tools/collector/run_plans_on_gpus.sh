#!/usr/bin/env bash
# Several named plans at once, one GPU each: plan i runs as
#   CUDA_VISIBLE_DEVICES=i tools/collector/run_plan_on_gpu.sh --plan NAME_i [OPTIONS] OUTDIR/gpuI
# and its results come back as flat files in OUTDIR (a device call returns few files, none deep):
#   OUTDIR/NAME.csv.gz      the measured rows (tiles.csv format; FORMAT.md)
#   OUTDIR/NAME_run.txt     the run's env.txt, then its log.txt (which starts at the line '[Ns] perfloom collector
#                           plan run'; data keeps them as NAME_env.txt and NAME_log.txt)
#
#   tools/collector/run_plans_on_gpus.sh OUTDIR NAME... [-- run_plan_on_gpu.sh options]
#
# e.g. tools/collector/run_plans_on_gpus.sh "$OUT" lists_s5050 lists_s5151 -- --repeat 2 --heuristic-n 8 --budget-s 450
# Each GPU runs its own collector with its own build folder; the GPUs do not share power or clocks, so each
# plan is timed as on a machine of its own (the env records cuda_visible_devices=I). More plans than GPUs:
# an error, before anything runs. Run from the repository root.
set -u -o pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR NAME... [-- run_plan_on_gpu.sh options]" >&2; exit 2; }
OUTDIR="$1"; shift
NAMES=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do NAMES+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ngpu="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)"
if [ "${#NAMES[@]}" -gt "$ngpu" ]; then
  echo "$0: ${#NAMES[@]} plans but $ngpu GPU(s): at most one plan a GPU" >&2
  exit 2
fi
mkdir -p "$OUTDIR"
pids=()
for i in "${!NAMES[@]}"; do
  CUDA_VISIBLE_DEVICES=$i bash "$HERE/run_plan_on_gpu.sh" --plan "${NAMES[$i]}" "$@" "$OUTDIR/gpu$i" > "$OUTDIR/gpu$i.out" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!NAMES[@]}"; do
  wait "${pids[$i]}" || rc=$?
  name="${NAMES[$i]}"
  d="$(dirname "$(ls "$OUTDIR/gpu$i"/*/env.txt 2>/dev/null | head -1)")"
  echo "== GPU $i: $name ($d)"; tail -n 5 "$OUTDIR/gpu$i.out"
  [ -s "$d/$name.csv.gz" ] && cp "$d/$name.csv.gz" "$OUTDIR/$name.csv.gz"
  [ -s "$d/$name.csv" ] && gzip -c "$d/$name.csv" > "$OUTDIR/$name.csv.gz"
  cat "$d/env.txt" "$d/log.txt" > "$OUTDIR/${name}_run.txt" 2>/dev/null
done
exit $rc
