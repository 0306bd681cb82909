#!/usr/bin/env bash
# Fidelity to Gavel's simulator (docs/fidelity.md, Reproducing Gavel): on Gavel's bundled 96-job
# trace on 8 V100 + 16 P100 + 24 K80, with the reference's modelling choices (its measured
# throughputs as the truth and what the policy sees, gangs never split over servers, free
# preemption), these land within 5% of the average JCT and makespan Gavel reports for
# max_min_fairness_perf (14,622.8 s and 63,944.5 s; ../shared/peer-results/gavel/RESULTS.md):
# hetero-las, and with Gavel's walk of the per-type lease lists (type_walk: type-order) both
# hetero-las and gavel-max-min-perf. Skips (exit 77) without the traces.
set -euo pipefail
dlsched=$1 traces=$2
trace="$traces/gavel/traces/physical_cluster/max_min_fairness.trace"
if [ ! -f "$trace" ]; then
  echo "SKIP: $trace not found (the third-party traces live in ../shared/traces)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat > "$out/hetero-las-walk.json" <<'JSON'
{"name": "hetero-las-walk", "description": "hetero-las, Gavel's type walk", "allocator": "max-min",
 "round_s": 360, "type_walk": "type-order"}
JSON
cat > "$out/gavel-max-min-perf-walk.json" <<'JSON'
{"name": "gavel-max-min-perf-walk", "description": "gavel-max-min-perf, Gavel's type walk",
 "allocator": "max-min", "round_s": 360, "realloc_interval_s": 1920,
 "backfill_between_rounds": false, "reset_counts_at_allocation": true, "type_walk": "type-order"}
JSON
"$dlsched" simulate -q --oracle --trace "gavel:$trace" --traces-dir "$traces" \
  --cluster 1x8xV100+1x16xP100+1x24xK80 --checkpoint-s 0 --restore-s 0 --threads 1 \
  --policy "hetero-las,$out/hetero-las-walk.json,$out/gavel-max-min-perf-walk.json" \
  --json "$out/r.json" | tee "$out/table"
python3 - "$out/r.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 3, [run["policy"] for run in runs]
for run in runs:
    assert run["completed"] == 96, (run["policy"], run["completed"])
    for key, reference in (("avg_jct_s", 14622.820), ("makespan_s", 63944.529)):
        ratio = run[key] / reference
        print(f"{run['policy']} {key}: {run[key]:.1f} s, {ratio:.3f}x Gavel's max_min_fairness_perf")
        assert abs(ratio - 1) <= 0.05, (run["policy"], key, run[key], reference)
PY
