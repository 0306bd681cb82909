#!/usr/bin/env bash
# Fidelity to Tiresias' simulator (docs/fidelity.md, Reproducing Tiresias): on the first 1,000
# Philly jobs on 64 nodes x 4 GPUs, with the reference's modelling choices (placement-blind
# speeds, free preemption), fifo and tiresias-dlas-gpu land within 5% of the average JCT and
# makespan Tiresias reports for fifo and dlas-gpu (../shared/peer-results/tiresias/RESULTS.md).
# Skips (exit 77) without the fixture.
set -euo pipefail
dlsched=$1 peer=$2
trace="$peer/tiresias/philly_1000.csv"
if [ ! -f "$trace" ]; then
  echo "SKIP: $trace not found (the reference runs live in ../shared/peer-results)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$dlsched" simulate -q --trace "tiresias:$trace" --cluster 64x4xV100 --throughput flat \
  --checkpoint-s 0 --restore-s 0 --threads 1 --policy fifo,tiresias-dlas-gpu \
  --json "$out/r.json" | tee "$out/table"
python3 - "$out/r.json" <<'PY'
import json, sys
# Tiresias' fifo and dlas-gpu: average JCT and makespan (max end time), seconds.
reference = {"fifo": ("fifo", 778690.942, 5944538),
             "tiresias-dlas-gpu": ("dlas-gpu", 113286.805, 5944538)}
for run in json.load(open(sys.argv[1]))["runs"]:
    scheme, avg_jct, makespan = reference[run["policy"]]
    assert run["completed"] == 1000, (run["policy"], run["completed"])
    for key, want in (("avg_jct_s", avg_jct), ("makespan_s", makespan)):
        ratio = run[key] / want
        print(f"{run['policy']} {key}: {run[key]:.1f} s, {ratio:.3f}x Tiresias' {scheme}")
        assert abs(ratio - 1) <= 0.05, (run["policy"], key, run[key], want)
PY
