#!/usr/bin/env bash
# Fidelity to Gavel's simulator (docs/fidelity.md, Reproducing Gavel): hetero-las on Gavel's bundled
# 96-job trace on 8 V100 + 16 P100 + 24 K80, with the reference's modelling choices (its measured
# throughputs as the truth and what the policy sees, gangs never split over servers, free
# preemption), lands within 5% of the average JCT and makespan Gavel reports for
# max_min_fairness_perf (14,622.8 s and 63,944.5 s; ../shared/peer-results/gavel/RESULTS.md).
# Skips (exit 77) without the traces.
set -euo pipefail
dlsched=$1 traces=$2
trace="$traces/gavel/traces/physical_cluster/max_min_fairness.trace"
if [ ! -f "$trace" ]; then
  echo "SKIP: $trace not found (the third-party traces live in ../shared/traces)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$dlsched" simulate -q --oracle --trace "gavel:$trace" --traces-dir "$traces" \
  --cluster 1x8xV100+1x16xP100+1x24xK80 --checkpoint-s 0 --restore-s 0 --threads 1 \
  --policy hetero-las --json "$out/r.json" | tee "$out/table"
python3 - "$out/r.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["completed"] == 96, run["completed"]
for key, reference in (("avg_jct_s", 14622.820), ("makespan_s", 63944.529)):
    ratio = run[key] / reference
    print(f"{key}: {run[key]:.1f} s, {ratio:.3f}x Gavel's max_min_fairness_perf")
    assert abs(ratio - 1) <= 0.05, (key, run[key], reference)
PY
