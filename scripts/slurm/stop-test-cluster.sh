#!/usr/bin/env bash
# Stops the test cluster that start-test-cluster.sh started in DIR: cancels its jobs, stops
# slurmctld, the slurmds, the slurmstepds they left (a killed slurmd leaves its job steps
# running) with their processes, and munged. Keeps DIR (its logs help when a test failed).
# Idempotent: does nothing when nothing runs.
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
[ -d "$1" ] || exit 0
DIR=$(cd "$1" && pwd)
PATH="$PATH:/usr/sbin:/sbin"
export SLURM_CONF="$DIR/etc/slurm.conf"

# The pid in FILE if that process still runs.
live_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# SIGKILL to a process and all its descendants, children first.
kill_tree() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -KILL "$1" 2>/dev/null
}

if [ -f "$SLURM_CONF" ] && [ -n "$(live_pid "$DIR/slurmctld.pid")" ]; then
  scancel --partition=dlsched >/dev/null 2>&1
  for _ in $(seq 1 50); do
    [ -z "$(squeue -h -p dlsched 2>/dev/null)" ] && break
    sleep 0.1
  done
fi

# SIGTERM to the daemons at once, then wait for them all (SIGKILL after 5 s).
pids=()
for f in "$DIR"/slurmd-*.pid "$DIR/slurmctld.pid"; do
  [ -e "$f" ] || continue
  if pid=$(live_pid "$f"); then
    kill -TERM "$pid" 2>/dev/null
    pids+=("$pid")
  fi
  rm -f "$f"
done
for _ in $(seq 1 50); do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 0.1
done
for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done

# slurmstepd runs in SlurmdLogFile's directory: that tells this cluster's apart from others'.
for pid in $(pgrep -x slurmstepd 2>/dev/null; pgrep -f '^slurmstepd:' 2>/dev/null); do
  cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
  case "$cwd" in "$DIR"/*) kill_tree "$pid" ;; esac
done

if pid=$(live_pid "$DIR/munge/munged.pid"); then
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi
rm -f "$DIR/env"
exit 0
