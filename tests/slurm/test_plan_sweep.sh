#!/usr/bin/env bash
# scripts/plan-sweep.sh on a real Slurm cluster of one node, started here on localhost: munged with
# its own key and socket, slurmctld and slurmd, all configured, logging and keeping state in a
# fresh temporary folder on free ports. A sweep of 2 shards is submitted; the merge job's plan.json
# must be byte for byte the single unsharded `perfloom plan --json`. Every daemon is stopped on the
# way out, whatever the way (a watchdog stops them too if this script is killed).
#
#   tests/slurm/test_plan_sweep.sh PERFLOOM SOURCE_DIR
#
# Exit 0: passed; 1: failed; 77: skipped, only because Slurm or munge is not installed
# (scripts/install-deps.sh installs slurm-wlm and munge).
set -euo pipefail

perfloom=${1:?usage: test_plan_sweep.sh PERFLOOM SOURCE_DIR}
source_dir=${2:?usage: test_plan_sweep.sh PERFLOOM SOURCE_DIR}
limit_s=${PLAN_SWEEP_TEST_TIMEOUT:-120}  # the sweep's jobs must finish within this

PATH=$PATH:/usr/sbin:/sbin
for b in munged slurmctld slurmd sbatch squeue scontrol; do
  if ! command -v "$b" >/dev/null 2>&1; then
    echo "SKIP: $b not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
    exit 77
  fi
done
[[ -x $perfloom ]] || { echo "FAIL: perfloom binary $perfloom missing"; exit 1; }

# Nothing from a surrounding Slurm job (CI itself run under Slurm) may leak into this cluster.
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_' || true)

tmp=$(mktemp -d /tmp/perfloom-slurm.XXXXXX)
chmod 700 "$tmp"
pids=()
watchdog=
log() { echo "[$(date +%T)] $*"; }
stop_daemons() {
  local p
  for p in "${pids[@]+"${pids[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]+"${pids[@]}"}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "${pids[@]+"${pids[@]}"}"; do kill -KILL "$p" 2>/dev/null || true; done
}
dump_logs() {
  local f
  for f in "$tmp"/log/*.log "$tmp"/out/logs/*; do
    [[ -s $f ]] || continue
    echo "----- $f (last 30 lines)"
    tail -n 30 "$f"
  done
}
finish() {
  local rc=$?
  trap - EXIT INT TERM
  # slurmstepd and the jobs' processes run as children of slurmd: stopped with it, or found here.
  if [[ -n ${ctld_port:-} ]]; then SLURM_CONF=$tmp/slurm.conf scancel --quiet --user="$(id -un)" 2>/dev/null || true; fi
  stop_daemons
  [[ -n $watchdog ]] && kill "$watchdog" 2>/dev/null
  if ((rc != 0)); then
    dump_logs
    echo "FAIL (rc $rc); the cluster's files are kept in $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A TCP port nothing listens on or uses (from /proc/net/tcp{,6}), picked at random.
used_ports() { awk 'NR > 1 { split($2, a, ":"); print strtonum("0x" a[2]) }' /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
free_port() {
  local p used
  used=" $(used_ports | tr '\n' ' ') $* "
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 40000))
    [[ $used == *" $p "* ]] || { echo "$p"; return; }
  done
  echo "no free TCP port found" >&2
  return 1
}
ctld_port=$(free_port)
slurmd_port=$(free_port "$ctld_port")
host=$(hostname -s)
user=$(id -un)
mkdir -p "$tmp"/{log,run,state,out} "$tmp/spool/$host"

# munge: its own key, socket, pid, seed and log, nothing of the system's.
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge.key"
munged --foreground --force --key-file="$tmp/munge.key" --socket="$tmp/run/munge.sock" \
  --pid-file="$tmp/run/munged.pid" --seed-file="$tmp/run/munged.seed" --log-file="$tmp/log/munged.log" \
  >>"$tmp/log/munged.log" 2>&1 &
pids+=($!)

cat >"$tmp/slurm.conf" <<EOF
ClusterName=perfloom-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$tmp/run/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
ReturnToService=2
SlurmdParameters=config_overrides
PlugStackConfig=$tmp/plugstack.conf
MaxArraySize=64
MinJobAge=300
InactiveLimit=0
KillWait=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP
EOF
: >"$tmp/plugstack.conf"
export SLURM_CONF=$tmp/slurm.conf

# Waits up to $1 s for the command after it to succeed.
wait_for() {
  local secs=$1
  shift
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}
wait_for 10 test -S "$tmp/run/munge.sock" || { echo "FAIL: munged did not start"; exit 1; }

slurmctld -D -i -f "$tmp/slurm.conf" >>"$tmp/log/slurmctld.stdout" 2>&1 &
pids+=($!)
slurmd -D -f "$tmp/slurm.conf" -N "$host" >>"$tmp/log/slurmd.stdout" 2>&1 &
pids+=($!)
# The watchdog: should this script die without its trap (SIGKILL), the daemons go too.
(
  trap '' INT
  parent=$$
  while kill -0 "$parent" 2>/dev/null && ((SECONDS < limit_s + 120)); do sleep 1; done
  kill -KILL "${pids[@]}" 2>/dev/null || true
) </dev/null >/dev/null 2>&1 &
watchdog=$!
log "cluster in $tmp: slurmctld :$ctld_port, slurmd :$slurmd_port, node $host"

node_idle() { [[ $(sinfo --noheader --nodes="$host" --format=%t 2>/dev/null) == idle* ]]; }
if ! wait_for 30 node_idle; then
  echo "FAIL: the node did not come up idle: $(sinfo --noheader --nodes="$host" --format='%t %E' 2>&1)"
  exit 1
fi
log "node idle"

# The plan, as the CLI tests plan it: four GPU types, 2 shards of two.
db=$tmp/perfloom.db
# shellcheck disable=SC2054 # commas inside the values
plan_args=(--model llama-3.1-8b --workload poisson:rate=1,n=40,input=512,output=32,seed=1
  --gpus h100,h200,t4,a100-sxm-80gb --tp 1,2 --max-gpus 2 --load 2req/s --sla ttft_p90=2000,tpot_p90=100 --db "$db")
"$perfloom" plan "${plan_args[@]}" --json >"$tmp/single.json"
"$perfloom" plan "${plan_args[@]}" >"$tmp/single.txt"

"$source_dir/scripts/plan-sweep.sh" 2 "$tmp/out" "$perfloom" -- "${plan_args[@]}"
read -r _ array < <(grep '^array ' "$tmp/out/jobs")
read -r _ merge < <(grep '^merge ' "$tmp/out/jobs")
[[ $array =~ ^[0-9]+$ && $merge =~ ^[0-9]+$ ]] || { echo "FAIL: no job ids in $tmp/out/jobs"; exit 1; }

job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
end=$((SECONDS + limit_s))
while :; do
  state=$(job_state "$merge")
  case $state in
    COMPLETED) break ;;
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
      echo "FAIL: merge job $merge ended $state; the array: $(squeue --noheader --jobs="$array" 2>&1; scontrol show job "$array" 2>&1 | grep -E 'JobState|ArrayTaskId')"
      exit 1 ;;
  esac
  if ((SECONDS >= end)); then
    echo "FAIL: merge job $merge not done after ${limit_s}s (state ${state:-unknown}): $(squeue 2>&1)"
    exit 1
  fi
  sleep 0.5
done
log "merge job $merge completed"

for k in 1 2; do
  [[ -s $tmp/out/shard-$k.json ]] || { echo "FAIL: shard $k wrote no $tmp/out/shard-$k.json"; exit 1; }
  grep -q "\"index\": $k" "$tmp/out/shard-$k.json" || { echo "FAIL: shard-$k.json is not shard $k"; exit 1; }
done
if ! cmp "$tmp/single.json" "$tmp/out/plan.json"; then
  echo "FAIL: the merged plan.json differs from the single run's:"
  diff "$tmp/single.json" "$tmp/out/plan.json" | head -n 40
  exit 1
fi
# The text differs only in the first line's wall time (a merge has none of its own).
if ! diff <(tail -n +2 "$tmp/single.txt") <(tail -n +2 "$tmp/out/plan.txt") >/dev/null; then
  echo "FAIL: the merged plan.txt differs from the single run's text beyond its first line:"
  diff <(tail -n +2 "$tmp/single.txt") <(tail -n +2 "$tmp/out/plan.txt") | head -n 40
  exit 1
fi
log "PASS: 2 shards on Slurm merged into the single run's plan ($(wc -c <"$tmp/out/plan.json") bytes)"
