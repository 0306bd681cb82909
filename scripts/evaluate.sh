#!/usr/bin/env bash
# Issue 21 item 4 (docs/evaluation.md): the combined `dlsched` profile against the specialised
# profiles and the baselines on each source document's experiment, over several seeds, with the
# spread across them. Writes one `dlsched simulate --json` file per experiment and seed into
# OUT_DIR and prints markdown tables (mean over seeds, [min, max]) on stdout.
#   scripts/evaluate.sh [--quick] [--seeds "1 2 3"] [--only NAMES] [TRACES_DIR] [OUT_DIR]
# Experiments (NAMES, comma-separated, for --only): philly, chronus, gavel, alibaba, topology,
# mixed. One whose traces are missing is skipped with a message.
# TRACES_DIR: default $DLSCHED_TRACES, else ../shared/traces beside the repository.
# OUT_DIR: default evaluation/ in the current directory.
# DLSCHED: the binary, default build/dlsched (run from the repository root).
# --quick: slices (the first 20,000 Philly jobs, 10,000 of each Chronus trace, 1,500 synthetic
#   jobs) so that the whole evaluation fits a loaded 2-core machine; docs/evaluation.md says
#   which figures are slices.
# The seed varies the policies' estimate noise (--seed) and, where the workload is generated,
# the workload itself (synthetic jobs, deadlines by rule). No run uses the oracle.
set -euo pipefail

usage() { sed -n '2,17s/^# \{0,1\}//p' "$0"; }

quick=0
seeds="1 2 3"
only="philly,chronus,gavel,alibaba,topology,mixed"
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --seeds) seeds=$2; shift ;;
    --only) only=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "evaluate: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
if [ ${#positional[@]} -gt 2 ]; then usage >&2; exit 2; fi

repo_root=$(cd "$(dirname "$0")/.." && pwd)
traces=${positional[0]:-${DLSCHED_TRACES:-$repo_root/../shared/traces}}
out=${positional[1]:-evaluation}
dlsched=${DLSCHED:-build/dlsched}
threads=${THREADS:-2}

command -v python3 >/dev/null ||
  { echo "evaluate: python3 is needed to print the tables; install it" >&2; exit 1; }
[ -x "$dlsched" ] ||
  { echo "evaluate: no dlsched binary at $dlsched (build it, or set DLSCHED)" >&2; exit 1; }
mkdir -p "$out"

baselines=fifo,fifo-backfill,sjf,srtf,las,tiresias,edf
wanted() { [[ ",$only," == *",$1,"* ]]; }
have() {
  for f in "$@"; do
    [ -r "$f" ] || { echo "evaluate: skipping $experiment: missing $f" >&2; return 1; }
  done
}
# run NAME SEED simulate-args...: one invocation, its JSON in OUT_DIR/NAME-sSEED.json.
run() {
  local name=$1 seed=$2
  shift 2
  local json="$out/$name-s$seed.json" log="$out/$name-s$seed.log" t0=$SECONDS
  if ! "$dlsched" simulate -q --json "$json" --seed "$seed" --threads "$threads" \
    --traces-dir "$traces" "$@" >"$log" 2>&1; then
    echo "evaluate: dlsched simulate failed on $name seed $seed; see $log" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "  $name seed $seed: $((SECONDS - t0)) s" >&2
}

echo "evaluate: $dlsched, traces $traces, seeds $seeds, results in $out/" >&2
start=$SECONDS

experiment=philly
if wanted philly && have "$traces/pollux/philly.csv"; then
  slice=()
  [ "$quick" -eq 1 ] && slice=(--max-jobs 20000)
  for s in $seeds; do
    run philly "$s" --trace "philly:$traces/pollux/philly.csv" --cluster 64x8xV100 "${slice[@]}" \
      --policy "dlsched,topo,greedy-share,priority-quota,$baselines"
  done
fi

experiment=chronus
if wanted chronus && have "$traces/chronus/trace_job_Philly_SLO.csv"; then
  slice=()
  [ "$quick" -eq 1 ] && slice=(--max-jobs 10000)
  for t in SLO MIX1 MIX2; do
    for s in $seeds; do
      run "chronus-$t" "$s" --trace "chronus:$traces/chronus/trace_job_Philly_$t.csv" \
        --skip-bad-rows --cluster 64x8xV100 "${slice[@]}" \
        --policy "dlsched,qos,elasticflow,$baselines"
    done
  done
fi

# Gavel's setup: its measured table is the ground truth; the policies' speeds come from the
# predictor fitted to `dlsched profile` measurements of it (docs/hetero.md), as a heterogeneity-
# aware scheduler profiles job types; hetero-las-agnostic is Gavel's own baseline.
experiment=gavel
gavel_trace=$traces/gavel/traces/msr_seed0/0e4a51.trace
if wanted gavel && have "$gavel_trace" "$traces/gavel/simulation_throughputs.json"; then
  hetero=9x4xK80+9x4xP100+9x4xV100
  "$dlsched" profile --cluster "$hetero" --tables gavel --traces-dir "$traces" \
    --out "$out/gavel-profiles.json" >"$out/gavel-profile.log" 2>&1 ||
    { echo "evaluate: dlsched profile failed; see $out/gavel-profile.log" >&2; exit 1; }
  for s in $seeds; do
    run gavel "$s" --trace "gavel:$gavel_trace" --cluster "$hetero" \
      --predictor "$out/gavel-profiles.json" \
      --policy "dlsched,hetero-las,hetero-minjct,hetero-greedy,hetero-las-agnostic,qos,$baselines"
  done
fi

# Alibaba's fractional-GPU pods on 2-6 nodes of 4 V100s: the GPUs each policy needs to reach the
# best exclusive policy's average JCT at 4x4 (docs/sharing.md's measure).
experiment=alibaba
alibaba=$traces/alibaba-gpu-v2023/openb_pod_list_gpushare100.csv
if wanted alibaba && have "$alibaba"; then
  for c in 2x4xV100 3x4xV100 4x4xV100 5x4xV100 6x4xV100; do
    for s in $seeds; do
      run "alibaba-$c" "$s" --trace "alibaba:$alibaba" --cluster "$c" \
        --policy "dlsched,greedy-share,heuristic-share,topo,$baselines"
    done
  done
fi

# Topology: Gavel's per-model consolidation on 8 nodes of 8 V100s (docs/placement.md).
experiment=topology
if wanted topology && have "$gavel_trace" "$traces/gavel/simulation_throughputs.json"; then
  "$dlsched" profile --cluster 8x8xV100 --tables gavel --traces-dir "$traces" \
    --out "$out/topology-profiles.json" >"$out/topology-profile.log" 2>&1 ||
    { echo "evaluate: dlsched profile failed; see $out/topology-profile.log" >&2; exit 1; }
  for s in $seeds; do
    run topology "$s" --trace "gavel:$gavel_trace" --cluster 8x8xV100 \
      --predictor "$out/topology-profiles.json" --policy "dlsched,topo,greedy-share,$baselines"
  done
fi

# The mixed workload: synthetic Philly-like jobs from 16 users in 8 tenants (virtual clusters),
# 4 online services, deadlines by rule on 40% of the jobs (20% strict, 20% soft), single-GPU jobs
# that may share (built-in job types), on 16 nodes of 8 V100s at load 0.9.
experiment=mixed
mixed_jobs=4000
[ "$quick" -eq 1 ] && mixed_jobs=1500
for s in $seeds; do
  wanted mixed || break
  run mixed "$s" --trace "synthetic:jobs=$mixed_jobs,gpus=128,load=0.9,services=4,users=16,seed=$s" \
    --cluster 16x8xV100 --deadlines "slack=1.5:3,strict=0.2,soft=0.2,seed=$s" \
    --policy "dlsched,qos,topo,greedy-share,priority-quota,$baselines"
done

echo "evaluate: simulations took $((SECONDS - start)) s" >&2
python3 "$repo_root/scripts/evaluate_tables.py" "$out" $seeds
