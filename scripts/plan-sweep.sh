#!/usr/bin/env bash
# Runs one `perfloom plan` as a Slurm job array of N shards and a dependent merge job.
#
#   scripts/plan-sweep.sh N OUTDIR [PERFLOOM] -- PLAN-OPTIONS...
#
# Task K of the array (sbatch --array=1-N) runs `PERFLOOM plan PLAN-OPTIONS --shard K/N --json`
# into OUTDIR/shard-K.json; a job that starts once every task succeeded
# (--dependency=afterok:ARRAY, dropped by Slurm if one fails) runs `PERFLOOM plan --merge` of all
# shards into OUTDIR/plan.json (the single run's JSON) and OUTDIR/plan.txt (its text). Logs go to
# OUTDIR/logs/. PERFLOOM defaults to build/bin/perfloom of this checkout. Extra sbatch options
# (partition, time limit, account) come from the environment: SBATCH_PARTITION, SBATCH_TIMELIMIT,
# SBATCH_ACCOUNT and the like, or PLAN_SWEEP_SBATCH_ARGS (split on spaces) for the rest.
# Prints the array's and the merge job's ids and writes them to OUTDIR/jobs (`array ID`, `merge ID`).
set -euo pipefail

usage() {
  echo "usage: scripts/plan-sweep.sh N OUTDIR [PERFLOOM] -- PLAN-OPTIONS..." >&2
  echo "  e.g. scripts/plan-sweep.sh 4 sweep/ -- --model llama-3.1-8b --workload poisson:rate=1,n=200,input=512,output=128 \\" >&2
  echo "         --sla ttft_p90=500,tpot_p90=50 --load 20req/s --gpus all" >&2
  exit 2
}
fail() {
  echo "plan-sweep: $*" >&2
  exit 1
}

(($# >= 3)) || usage
shards=$1
outdir=$2
shift 2
perfloom="$(cd "$(dirname "$0")/.." && pwd)/build/bin/perfloom"
if [[ $1 != -- ]]; then
  perfloom=$1
  shift
fi
[[ ${1:-} == -- ]] || usage
shift
(($# > 0)) || fail "no plan options after -- (at least --model, --workload and --sla)"

[[ $shards =~ ^[0-9]+$ ]] && ((10#$shards >= 1 && 10#$shards <= 4096)) ||
  fail "the number of shards must be a whole number from 1 to 4096 (got \"$shards\")"
shards=$((10#$shards))
command -v sbatch >/dev/null 2>&1 ||
  fail "sbatch not found on PATH: this submits a Slurm job array; run it on a Slurm login node (or run perfloom plan --shard K/$shards --json by hand and merge with perfloom plan --merge)"
[[ -f $perfloom && -x $perfloom ]] || fail "perfloom binary \"$perfloom\" is not an executable file (give its path as the third argument)"
perfloom="$(cd "$(dirname "$perfloom")" && pwd)/$(basename "$perfloom")"

# The options this script sets itself, and those the merge needs as well (the GPU files, the
# database, the calibrations, --top for the text).
merge_opts=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]}
  case $a in
    --shard | --shard=* | --merge | --merge=*)
      fail "$a: the sweep sets --shard and --merge itself; give only the plan's options" ;;
    --db | --gpus-dir | --calibration | --top)
      ((i + 1 < ${#args[@]})) || fail "$a needs a value"
      merge_opts+=("$a" "${args[i + 1]}") ;;
    --db=* | --gpus-dir=* | --calibration=* | --top=*)
      merge_opts+=("$a") ;;
  esac
done

mkdir -p "$outdir/logs" || fail "cannot create the output folder \"$outdir\""
outdir="$(cd "$outdir" && pwd)"
[[ -w $outdir ]] || fail "the output folder \"$outdir\" is not writable"
for f in "$outdir"/shard-*.json "$outdir/plan.json" "$outdir/plan.txt"; do
  [[ -e $f ]] && fail "\"$f\" exists from an earlier sweep; use an empty output folder"
done

# The job scripts, with every argument quoted as given.
q() { (($# == 0)) || printf ' %q' "$@"; }  # each argument quoted, after a space
{
  echo '#!/usr/bin/env bash'
  echo 'set -euo pipefail'
  echo "k=\${SLURM_ARRAY_TASK_ID:?not run as a task of the job array}"
  printf 'out=%q/shard-$k.json\n' "$outdir"
  # Written aside and renamed, so a shard file is whole or absent.
  echo "$(q "$perfloom") plan$(q "$@") --shard \"\$k/$shards\" --json > \"\$out.part\""
  echo 'mv "$out.part" "$out"'
} >"$outdir/shard.sbatch"
files=()
for ((k = 1; k <= shards; k++)); do files+=("$outdir/shard-$k.json"); done
merge_list=$(IFS=,; echo "${files[*]}")
{
  echo '#!/usr/bin/env bash'
  echo 'set -euo pipefail'
  merge_cmd="$(q "$perfloom") plan --merge$(q "$merge_list")$(q "${merge_opts[@]+"${merge_opts[@]}"}")"
  echo "$merge_cmd --json >$(q "$outdir/plan.json.part")"
  echo "$merge_cmd >$(q "$outdir/plan.txt.part")"
  echo "mv$(q "$outdir/plan.txt.part" "$outdir/plan.txt")"
  echo "mv$(q "$outdir/plan.json.part" "$outdir/plan.json")"
} >"$outdir/merge.sbatch"
chmod +x "$outdir/shard.sbatch" "$outdir/merge.sbatch"

read -r -a extra <<<"${PLAN_SWEEP_SBATCH_ARGS:-}"
submit() {
  local id
  id=$(sbatch --parsable "${extra[@]+"${extra[@]}"}" "$@") || fail "sbatch refused the job (sbatch $*)"
  id=${id%%;*}  # --parsable prints ID[;CLUSTER]
  [[ $id =~ ^[0-9]+$ ]] || fail "sbatch printed \"$id\", not a job id"
  echo "$id"
}
array=$(submit --job-name=perfloom-plan-shard --array="1-$shards" --chdir="$outdir" \
  --output="$outdir/logs/shard-%a.out" --error="$outdir/logs/shard-%a.err" "$outdir/shard.sbatch")
merge=$(submit --job-name=perfloom-plan-merge --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --chdir="$outdir" --output="$outdir/logs/merge.out" --error="$outdir/logs/merge.err" "$outdir/merge.sbatch")
printf 'array %s\nmerge %s\n' "$array" "$merge" >"$outdir/jobs"
echo "plan-sweep: job array $array ($shards shards -> $outdir/shard-K.json), merge job $merge -> $outdir/plan.json and plan.txt (logs: $outdir/logs/)"
