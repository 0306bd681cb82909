#!/usr/bin/env bash
# Fidelity to Gavel's simulator (docs/fidelity.md, Reproducing Gavel): on Gavel's bundled 96-job
# trace on 8 V100 + 16 P100 + 24 K80, with the reference's modelling choices (its measured
# throughputs as the truth and what the policy sees, gangs never split over servers, free
# preemption), these land within 5% of the average JCT and makespan Gavel reports for
# max_min_fairness_perf (14,622.8 s and 63,944.5 s; ../shared/peer-results/gavel/RESULTS.md):
# hetero-las, and with Gavel's walk of the per-type lease lists (type_walk: type-order) both
# hetero-las and the earlier gavel-max-min-perf keys, also with max-min's first LP alone
# (max-min-one-stage); and for max_min_fairness (19,989.3 s and 77,141.3 s), the earlier
# gavel-max-min keys with its shuffled type walk and X spread over the tied types as Gavel's
# interior-point solver leaves it (spread_tied_types; its small LPs by GLPK, max-min-glpk: the
# agnostic LP's vertex is its whole type choice, and the dense simplex's vertices put its
# makespan at 0.948x); and the shipped Gavel profiles,
# gavel-max-min-perf against max_min_fairness_perf and gavel-max-min against max_min_fairness.
# Skips (exit 77) without the traces. With the peer results (third argument), also Gavel's
# generated 2,000-job trace on 36:36:36: max_min_fairness_perf (16,296.7 s and 326,452.6 s)
# with the earlier profile's keys and max-min's first stage alone (allocator
# max-min-one-stage), and the three shipped profiles, gavel-max-min-perf, gavel-max-min
# (max_min_fairness: 23,052.2 s and 366,801.0 s) and gavel-finish-time-fairness
# (finish_time_fairness_perf, patched: 21,467.1 s and 338,044.8 s), about 20 s on one core.
set -euo pipefail
dlsched=$1 traces=$2 peer_results=${3:-}
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
cat > "$out/gavel-max-min-perf-one-stage-walk.json" <<'JSON'
{"name": "gavel-max-min-perf-one-stage-walk", "description": "gavel-max-min-perf, first LP only, Gavel's walk",
 "allocator": "max-min-one-stage", "round_s": 360, "realloc_interval_s": 1920,
 "backfill_between_rounds": false, "reset_counts_at_allocation": true, "type_walk": "type-order"}
JSON
cat > "$out/gavel-max-min-spread.json" <<'JSON'
{"name": "gavel-max-min-spread", "description": "gavel-max-min, Gavel's walk, X spread over tied types",
 "allocator": "max-min-glpk", "round_s": 360, "realloc_interval_s": 1920, "agnostic": true,
 "backfill_between_rounds": false, "reset_counts_at_allocation": true, "type_walk": "shuffled",
 "spread_tied_types": true}
JSON
"$dlsched" simulate -q --oracle --trace "gavel:$trace" --traces-dir "$traces" \
  --cluster 1x8xV100+1x16xP100+1x24xK80 --checkpoint-s 0 --restore-s 0 --threads 1 \
  --policy "hetero-las,$out/hetero-las-walk.json,$out/gavel-max-min-perf-walk.json,$out/gavel-max-min-spread.json,$out/gavel-max-min-perf-one-stage-walk.json,gavel-max-min-perf,gavel-max-min" \
  --json "$out/r.json" | tee "$out/table"
python3 - "$out/r.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 7, [run["policy"] for run in runs]
# Gavel's figures: (policy, avg JCT, makespan).
perf = ("max_min_fairness_perf", 14622.820, 63944.529)
agnostic = ("max_min_fairness", 19989.255, 77141.282)
for run in runs:
    assert run["completed"] == 96, (run["policy"], run["completed"])
    name, avg, makespan = (agnostic if run["policy"] in ("gavel-max-min-spread", "gavel-max-min")
                           else perf)
    for key, reference in (("avg_jct_s", avg), ("makespan_s", makespan)):
        ratio = run[key] / reference
        print(f"{run['policy']} {key}: {run[key]:.1f} s, {ratio:.3f}x Gavel's {name}")
        assert abs(ratio - 1) <= 0.05, (run["policy"], key, run[key], reference)
PY

generated="$peer_results/gavel/gen_2000_l150_seed7.trace"
if [ -z "$peer_results" ] || [ ! -f "$generated" ]; then
  echo "(the 2,000-job check needs ../shared/peer-results; not run)"
  exit 0
fi
cat > "$out/gavel-max-min-perf-one-stage.json" <<'JSON'
{"name": "gavel-max-min-perf-one-stage", "description": "gavel-max-min-perf, max-min's first LP only",
 "allocator": "max-min-one-stage", "round_s": 360, "realloc_interval_s": 1920,
 "backfill_between_rounds": false, "reset_counts_at_allocation": true}
JSON
"$dlsched" simulate -q --oracle --trace "gavel:$generated" --traces-dir "$traces" \
  --cluster 1x36xV100+1x36xP100+1x36xK80 --checkpoint-s 0 --restore-s 0 --threads 1 \
  --policy "$out/gavel-max-min-perf-one-stage.json,gavel-max-min-perf,gavel-max-min,gavel-finish-time-fairness" \
  --json "$out/r2000.json" | tee "$out/table2000"
python3 - "$out/r2000.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert len(runs) == 4, [run["policy"] for run in runs]
# Gavel's figures per profile: (policy, avg JCT, makespan).
perf = ("max_min_fairness_perf", 16296.676, 326452.638)
reference = {"gavel-max-min-perf-one-stage": perf, "gavel-max-min-perf": perf,
             "gavel-max-min": ("max_min_fairness", 23052.169, 366800.973),
             "gavel-finish-time-fairness": ("finish_time_fairness_perf", 21467.113, 338044.798)}
for run in runs:
    assert run["completed"] == 2000, (run["policy"], run["completed"])
    name, avg, makespan = reference[run["policy"]]
    for key, figure in (("avg_jct_s", avg), ("makespan_s", makespan)):
        ratio = run[key] / figure
        print(f"{run['policy']} {key}: {run[key]:.1f} s, {ratio:.3f}x Gavel's {name}")
        assert abs(ratio - 1) <= 0.05, (run["policy"], key, run[key], figure)
PY
