#!/usr/bin/env bash
# Issue 4 item 6 (docs/qos.md, "Experiments"): the QoS guarantee rate of the QoS-aware policy
# against its baselines on the three Chronus traces (SLO, MIX1, MIX2) on 512 V100s; on SLO and
# MIX2 on a heterogeneous cluster, beside `qos-agnostic` (qos without deadline_fit, so the GPU
# type is left to consolidation); and on the Philly trace with deadlines by rule. Writes one
# `dlsched simulate --json` file per run into OUT_DIR and prints markdown tables on stdout.
#   scripts/qos-experiment.sh [--no-philly] [TRACES_DIR] [OUT_DIR]
# TRACES_DIR: default $DLSCHED_TRACES, else ../shared/traces beside the repository.
# OUT_DIR: default qos-experiment/ in the current directory.
# DLSCHED: the binary, default build/dlsched (run from the repository root).
# --no-philly: skip the Philly run (82,247 jobs, seven policies: about a minute).
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }

philly_run=1
positional=()
for arg in "$@"; do
  case "$arg" in
    --no-philly) philly_run=0 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "qos-experiment: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *) positional+=("$arg") ;;
  esac
done
if [ ${#positional[@]} -gt 2 ]; then usage >&2; exit 2; fi

repo_root=$(cd "$(dirname "$0")/.." && pwd)
traces=${positional[0]:-${DLSCHED_TRACES:-$repo_root/../shared/traces}}
out=${positional[1]:-qos-experiment}
dlsched=${DLSCHED:-build/dlsched}

command -v python3 >/dev/null ||
  { echo "qos-experiment: python3 is needed to print the tables; install it" >&2; exit 1; }
[ -x "$dlsched" ] ||
  { echo "qos-experiment: no dlsched binary at $dlsched (build it, or set DLSCHED)" >&2; exit 1; }
chronus() { echo "$traces/chronus/trace_job_Philly_$1.csv"; }
philly="$traces/pollux/philly.csv"
for f in "$(chronus SLO)" "$(chronus MIX1)" "$(chronus MIX2)" "$philly"; do
  [ -r "$f" ] || { echo "qos-experiment: missing $f (TRACES_DIR=$traces)" >&2; exit 1; }
done

mkdir -p "$out"
# qos without deadline_fit: the same order, admission and preemption, placed by consolidation
# alone (so on whichever GPU type packs best).
python3 - "$repo_root/profiles/qos.json" "$out/qos-agnostic.json" <<'EOF'
import json
import sys
profile = json.load(open(sys.argv[1]))
profile["name"] = "qos-agnostic"
profile["description"] = "qos without deadline_fit: the GPU type is left to consolidation"
profile["score"] = ["consolidate"]
json.dump(profile, open(sys.argv[2], "w"), indent=2)
EOF

homogeneous=64x8xV100
# 896 GPUs, 589 V100-equivalents by the built-in model's speeds (K80 0.2, P100 0.6): about
# 1.15x the capacity of the 512 V100s.
hetero=32x8xK80+32x8xP100+48x8xV100
baselines=fifo-backfill,edf,sjf,las,tiresias,elasticflow,qos

start=$SECONDS
# run NAME TRACE CLUSTER POLICIES [FLAGS...]: one simulate call on two threads.
run() {
  local name=$1 trace=$2 cluster=$3 policies=$4
  shift 4
  local t0=$SECONDS
  if ! "$dlsched" simulate -q --json "$out/$name.json" --trace "$trace" --cluster "$cluster" \
    --policy "$policies" --threads 2 "$@" >"$out/$name.log" 2>&1; then
    echo "qos-experiment: dlsched simulate failed on $name; see $out/$name.log" >&2
    cat "$out/$name.log" >&2
    exit 1
  fi
  echo "  $name: $((SECONDS - t0)) s" >&2
}

echo "qos-experiment: $dlsched, traces $traces, results in $out/" >&2
for t in SLO MIX1 MIX2; do
  run "chronus-$t" "chronus:$(chronus $t)" "$homogeneous" "$baselines" --skip-bad-rows
done
for t in SLO MIX2; do
  run "hetero-$t" "chronus:$(chronus $t)" "$hetero" \
    "edf,las,tiresias,elasticflow,qos,$out/qos-agnostic.json" --skip-bad-rows
done
if [ "$philly_run" -eq 1 ]; then
  run philly "philly:$philly" "$homogeneous" "$baselines" --deadlines slack=1.5:3,strict=0.5,soft=0.2
fi
echo "qos-experiment: simulations took $((SECONDS - start)) s" >&2

python3 - "$out" "$homogeneous" "$hetero" "$philly_run" <<'EOF'
import json
import os
import sys

out, homogeneous, hetero, philly_run = sys.argv[1:]


def pct(x):
    return f"{x:.1%}"


def table(title, names):
    print(f"### {title}\n")
    header = ["trace", "policy", "QoS met", "strict", "soft", "best-effort avg JCT",
              "GPU util", "preemptions", "rejected"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for name in names:
        doc = json.load(open(os.path.join(out, name + ".json")))
        for r in doc["runs"]:
            # The JSON has no per-class counts: a trace without soft jobs has a soft rate of 0
            # and the overall rate equal to the strict one; without best-effort jobs, JCT 0.
            has_soft = r["qos_met_rate_soft"] > 0 or r["qos_met_rate"] != r["qos_met_rate_strict"]
            has_be = r["best_effort_avg_jct_s"] > 0
            cells = [name.split("-")[-1], r["policy"], pct(r["qos_met_rate"]),
                     pct(r["qos_met_rate_strict"]),
                     pct(r["qos_met_rate_soft"]) if has_soft else "-",
                     f"{r['best_effort_avg_jct_s'] / 3600:.1f} h" if has_be else "-",
                     pct(r["gpu_utilization"]), f"{r['preemptions']:,}", f"{r['rejected']:,}"]
            print("| " + " | ".join(cells) + " |")
    print()


table(f"Chronus traces on {homogeneous}", ["chronus-SLO", "chronus-MIX1", "chronus-MIX2"])
table(f"Chronus traces on {hetero}", ["hetero-SLO", "hetero-MIX2"])
if philly_run == "1":
    table(f"Philly with deadlines (slack=1.5:3, strict=0.5, soft=0.2) on {homogeneous}",
          ["philly"])
EOF
