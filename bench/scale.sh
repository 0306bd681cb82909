#!/usr/bin/env bash
# Cluster-scale replay (BENCHMARKS.md, "Ten thousand GPUs"): 100,000 synthetic jobs on
# 1,250 nodes x 8 V100 (10,000 GPUs), arrivals compressed to 1/100 of the time the cluster needs
# to run them (load=100), so the queue holds tens of thousands of jobs. One policy per process,
# one core, each cut off after LIMIT wall seconds; prints per policy the replay wall time, the
# scheduling cycles and the cycle wall time p50 / p99 / max (`simulate --timings`).
#   bench/scale.sh DLSCHED [LIMIT_S] [STOP_AT_S] [POLICY...]
# STOP_AT_S: simulated seconds to replay (0: the whole workload). Default policies: the
# baselines and the seed policies that run on one GPU type. SCALE_CLUSTER replaces the cluster
# (the round-based hetero-* and gavel-* policies: e.g. 417x8xK80+417x8xP100+416x8xV100, the same
# 1,250 eight-GPU nodes in three types). A run cut off at LIMIT prints how far it got (the
# simulator's last progress line: jobs done, simulated days).
set -uo pipefail
dlsched=${1:?usage: bench/scale.sh DLSCHED [LIMIT_S] [STOP_AT_S] [POLICY...]}
limit=${2:-600}
stop_at=${3:-0}
cluster=${SCALE_CLUSTER:-1250x8xV100}
shift $(($# < 3 ? $# : 3))
policies=("$@")
[ ${#policies[@]} -gt 0 ] ||
  policies=(fifo fifo-backfill sjf srtf las tiresias priority priority-quota greedy-share)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
stop=()
[ "$stop_at" = 0 ] || stop=(--stop-at-s "$stop_at")
printf '%-15s %9s %8s %8s %9s %9s %9s\n' policy wall_s done cycles p50_ms p99_ms max_ms
for p in "${policies[@]}"; do
  if ! timeout "$limit" "$dlsched" simulate --threads 1 \
      --trace synthetic:jobs=100000,gpus=10000,load=100 --cluster "$cluster" --policy "$p" \
      "${stop[@]}" --timings --json "$out/$p.json" > /dev/null 2> "$out/$p.err"; then
    printf '%-15s  did not finish in %s s: %s\n' "$p" "$limit" \
      "$(tr '\r' '\n' < "$out/$p.err" | grep '% of' | tail -1 | sed 's/^ *[^ ]* *//')"
    continue
  fi
  python3 - "$out/$p.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print("%-15s %9.2f %8d %8d %9.3f %9.3f %9.1f" % (
        r["policy"], r["wall_s"], r["completed"], r["cycles"], 1e3 * r["cycle_p50_s"],
        1e3 * r["cycle_p99_s"], 1e3 * r["cycle_max_s"]))
PY
done
