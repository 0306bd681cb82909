#!/usr/bin/env bash
# Submit-to-start latency through Slurm (BENCHMARKS.md): `dlsched serve --executor slurm` on the
# throw-away cluster of scripts/slurm/start-test-cluster.sh (started here in a temp dir, stopped
# at the end). N one-GPU jobs, one at a time on an idle cluster: the clock starts just before
# `dlsched submit` (so the CLI's own start-up counts) and stops when the job's command runs (it
# writes `date +%s%N`). Between jobs it waits a random 0-1 s: slurmctld starts batch jobs from
# passes it runs about once a second (main scheduler, backfill with bf_interval=1), so a
# submission made right after the previous start would always land just after a pass. Prints
# p50, p99 and max in milliseconds.
#   bench/slurm_latency.sh [path/to/dlsched] [N=100]
set -euo pipefail
bin=$(realpath "${1:-build/dlsched}")
n=${2:-100}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlsched-slurm-bench.XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  "$here/scripts/slurm/stop-test-cluster.sh" "$dir/cluster" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

set +e
"$here/scripts/slurm/start-test-cluster.sh" "$dir/cluster" >/dev/null
rc=$?
set -e
[ $rc -eq 0 ] || exit $rc
export $(cat "$dir/cluster/env")
export PATH="$PATH:/usr/sbin:/sbin"

"$bin" serve --listen 127.0.0.1:0 --executor slurm --slurm-partition "$DLSCHED_SLURM_PARTITION" \
  --workdir "$dir/work" --durability process --kill-jobs-on-exit \
  >"$dir/serve.out" 2>"$dir/serve.err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$dir/serve.out" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/serve.err" >&2; exit 1; }
  sleep 0.1
done
DLSCHED_SERVER=$(sed -n 's/^listening on //p' "$dir/serve.out")
export DLSCHED_SERVER

: >"$dir/latencies"
for i in $(seq 1 "$n"); do
  t0=$(date +%s%N)
  id=$("$bin" submit --json --gpus 1 -- sh -c 'date +%s%N > "$DLSCHED_CHECKPOINT_DIR/started"' |
    sed -n 's/.*"id":[[:space:]]*\([0-9]*\).*/\1/p')
  started="$dir/work/jobs/$id/checkpoint/started"
  for _ in $(seq 3000); do
    [ -s "$started" ] && break
    sleep 0.005
  done
  [ -s "$started" ] || { echo "job $id did not start within 15 s" >&2; exit 1; }
  echo $((($(cat "$started") - t0) / 1000)) >>"$dir/latencies"  # microseconds
  sleep "0.$(printf %03d $((RANDOM % 1000)))"
done

sort -n "$dir/latencies" | awk -v n="$n" '
  { v[NR] = $1 }
  END {
    p50 = v[int((n - 1) * 0.50) + 1]; p99 = v[int((n - 1) * 0.99) + 1]
    printf "submit-to-start through Slurm, %d jobs: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
      n, p50 / 1000, p99 / 1000, v[n] / 1000
  }'
