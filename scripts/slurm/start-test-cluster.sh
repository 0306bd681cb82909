#!/usr/bin/env bash
# Starts a throw-away Slurm cluster on this one machine, for dlsched's Slurm tests and for trying
# `dlsched serve --executor slurm` without a real cluster:
#
#   scripts/slurm/start-test-cluster.sh DIR      # prints the variables to export, e.g.
#   export $(cat DIR/env)                         #   SLURM_CONF=DIR/etc/slurm.conf
#   sinfo; dlsched serve --executor slurm --slurm-partition dlsched ...
#   scripts/slurm/stop-test-cluster.sh DIR
#
# Everything lives under DIR (config, munge key and socket, state, spool, logs, the placeholder
# GPU device files); nothing outside it is touched, and no system service is used. It runs:
#   - munged with a freshly generated key and its own socket (DIR/munge);
#   - slurmctld, and one slurmd per node: Debian's slurmd accepts `-N NAME` with a per-node Port,
#     so every "node" is a real slurmd process on 127.0.0.1 with its own port, spool dir and log;
#   - three nodes, GPUs declared as gres on placeholder character devices (DIR/dev, made with
#     mknod, else symlinks to /dev/null), AutoDetect=off, and SHARDS shards of each GPU (gres
#     "shard", on the same device files: GPU sharing through Slurm, docs/sharing.md):
#       node1  4 x gpu:v100, shard:8   features rack=r1,ib
#       node2  4 x gpu:v100, shard:8   features rack=r1
#       node3  2 x gpu:t4,   shard:4   features rack=r2
#     One partition, "dlsched" (default), with all three.
#   - select/cons_tres (CR_Core), proctrack/linuxproc and task/none (no cgroups needed in a
#     container), no accounting database (jobs are followed with squeue and scontrol), the
#     backfill scheduler with a 1 s interval (heterogeneous jobs, which dlsched uses for gangs
#     with unequal GPU counts per node, are started only by backfill), short slurmd timeouts so a
#     dead slurmd is noticed within seconds, and ReturnToService=2 so a node whose slurmd comes
#     back is usable again at once.
#
# Idempotent: if the cluster in DIR already answers, it only prints the variables. Exit status:
# 0 running; 77 Slurm or munge is not installed, or not root (a test harness reports a skip),
# unless $CI is set, where that is an error (1); 1 anything else (the logs are in DIR/log).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
PARTITION=dlsched
NODES=(node1 node2 node3)
declare -A GRES=([node1]="v100:4" [node2]="v100:4" [node3]="t4:2")
declare -A FEATURES=([node1]="rack=r1,ib" [node2]="rack=r1" [node3]="rack=r2")
# Shards per GPU: as many jobs as a sharing profile puts on one GPU (greedy-share: 2).
SHARDS=2

skip() {
  if [ -n "${CI:-}" ]; then
    echo "start-test-cluster: $* (CI is set, so this is an error: run scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "start-test-cluster: SKIP: $*" >&2
  exit 77
}

PATH="$PATH:/usr/sbin:/sbin"
for tool in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$tool" >/dev/null || skip "'$tool' not found: install slurm-wlm and munge"
done
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs jobs as their user)"

export SLURM_CONF="$DIR/etc/slurm.conf"
print_env() {
  {
    echo "SLURM_CONF=$SLURM_CONF"
    echo "DLSCHED_SLURM_PARTITION=$PARTITION"
    echo "DLSCHED_SLURM_DIR=$DIR"
  } >"$DIR/env"
  cat "$DIR/env"
}

all_idle() {
  local states
  states=$(sinfo -h -N -p "$PARTITION" -o '%N %t' 2>/dev/null) || return 1
  [ "$(grep -c ' idle$' <<<"$states")" -eq "${#NODES[@]}" ]
}

if [ -f "$SLURM_CONF" ] && all_idle; then
  print_env
  exit 0
fi
# Something half-started (or a previous run's leftovers): start from scratch.
"$(dirname "$0")/stop-test-cluster.sh" "$DIR" >/dev/null 2>&1 || true

# Four free TCP ports in a row: slurmctld, then one slurmd per node.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
BASE=$((20000 + ($$ * 7) % 30000))
for _ in $(seq 1 200); do
  ok=1
  for i in 0 1 2 3; do port_free $((BASE + i)) || { ok=0; break; }; done
  [ $ok -eq 1 ] && break
  BASE=$((BASE + 5))
done
[ $ok -eq 1 ] || { echo "start-test-cluster: no free ports" >&2; exit 1; }

rm -rf "$DIR/etc" "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/dev" "$DIR/munge" "$DIR/env"
mkdir -p "$DIR/etc" "$DIR/state" "$DIR/log" "$DIR/dev" "$DIR/munge"
for n in "${NODES[@]}"; do mkdir -p "$DIR/spool/$n"; done

# --- munge ---
SOCKET="$DIR/munge/munge.socket"
if [ ${#SOCKET} -gt 100 ]; then
  # Too long for a Unix socket address: a short directory of its own under TMPDIR.
  sockdir="${TMPDIR:-/tmp}/dlsched-munge-$(cksum <<<"$DIR" | cut -d' ' -f1)"
  mkdir -p "$sockdir"
  chmod 755 "$sockdir"
  SOCKET="$sockdir/munge.socket"
fi
chmod 755 "$DIR/munge"
head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
chmod 600 "$DIR/munge/munge.key"
munged --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
  --seed-file="$DIR/munge/munged.seed"

# --- placeholder GPU devices and the config ---
gres_lines=()
shard_lines=()
node_lines=()
i=1
for n in "${NODES[@]}"; do
  type=${GRES[$n]%%:*}
  count=${GRES[$n]##*:}
  for g in $(seq 0 $((count - 1))); do
    dev="$DIR/dev/${n}-gpu$g"
    mknod "$dev" c 1 3 2>/dev/null || ln -s /dev/null "$dev"
    shard_lines+=("NodeName=$n Name=shard Count=$SHARDS File=$dev")
  done
  gres_lines+=("NodeName=$n Name=gpu Type=$type File=$DIR/dev/${n}-gpu[0-$((count - 1))]")
  node_lines+=("NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((BASE + i)) CPUs=8 RealMemory=4096 Gres=gpu:$type:$count,shard:$((count * SHARDS)) Feature=${FEATURES[$n]} State=UNKNOWN")
  i=$((i + 1))
done

cat >"$SLURM_CONF" <<EOF
# Written by dlsched's scripts/slurm/start-test-cluster.sh: a throw-away test cluster.
ClusterName=dlschedtest
SlurmctldHost=localhost
SlurmctldPort=$BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,shard
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=2
MessageTimeout=3
InactiveLimit=0
MinJobAge=300
KillWait=2
Waittime=0
$(printf '%s\n' "${node_lines[@]}")
PartitionName=$PARTITION Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
{
  echo "AutoDetect=off"
  printf '%s\n' "${gres_lines[@]}"
  printf '%s\n' "${shard_lines[@]}"
} >"$DIR/etc/gres.conf"
# No cgroup constraints: the defaults (ConstrainDevices=no, ...) with whatever cgroup version the
# machine mounts; proctrack/linuxproc follows the processes.
echo "CgroupAutomount=no" >"$DIR/etc/cgroup.conf"

# --- daemons ---
# -c: a fresh controller state (no jobs from an earlier run).
slurmctld -c
for n in "${NODES[@]}"; do slurmd -N "$n"; done

for _ in $(seq 1 300); do
  if all_idle; then
    print_env
    exit 0
  fi
  sleep 0.1
done
echo "start-test-cluster: the nodes did not become idle within 30 s:" >&2
sinfo -N >&2 || true
tail -n 20 "$DIR"/log/*.log >&2 || true
exit 1
