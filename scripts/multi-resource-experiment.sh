#!/usr/bin/env bash
# Issue 20 item 6 (docs/multi-resource.md, "Experiment: CPU-aware allocation"): GPU-proportional
# CPU allocation against the CPU-aware one (`--host-allocation`) on a synthetic data-loading mix
# (several seeds), the Chronus SLO trace with its CPU jobs, and the Alibaba pods with their own
# CPU requests against GPU-proportional ones. Writes one `dlsched simulate --json` file per run
# into OUT_DIR and prints markdown tables on stdout.
#   scripts/multi-resource-experiment.sh [--seeds "1 2 3 4 5"] [TRACES_DIR] [OUT_DIR]
# TRACES_DIR: default $DLSCHED_TRACES, else ../shared/traces beside the repository.
# OUT_DIR: default multi-resource-experiment/ in the current directory.
# DLSCHED: the binary, default build/dlsched (run from the repository root).
set -euo pipefail

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; }

seeds="1 2 3 4 5"
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=${2:?--seeds needs a list}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "multi-resource-experiment: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
if [ ${#positional[@]} -gt 2 ]; then usage >&2; exit 2; fi

repo_root=$(cd "$(dirname "$0")/.." && pwd)
traces=${positional[0]:-${DLSCHED_TRACES:-$repo_root/../shared/traces}}
out=${positional[1]:-multi-resource-experiment}
dlsched=${DLSCHED:-build/dlsched}

command -v python3 >/dev/null ||
  { echo "multi-resource-experiment: python3 is needed to print the tables" >&2; exit 1; }
[ -x "$dlsched" ] ||
  { echo "multi-resource-experiment: no dlsched binary at $dlsched (build it, or set DLSCHED)" >&2
    exit 1; }
chronus="$traces/chronus/trace_job_Philly_SLO.csv"
alibaba="$traces/alibaba-gpu-v2023/openb_pod_list_default.csv"
for f in "$chronus" "$alibaba"; do
  [ -r "$f" ] || { echo "multi-resource-experiment: missing $f (TRACES_DIR=$traces)" >&2; exit 1; }
done
mkdir -p "$out"

policies=las,fifo-backfill
# Synergy's servers: 8 V100s, 24 cores (3 per GPU) and 500 GB; here 512 GiB, 64 GiB per GPU.
synthetic_cluster=16x8xV100:24c:512g+per-gpu:3c:64g
# The same servers for the Chronus trace's 512 GPUs, and four CPU-only nodes for its CPU jobs.
chronus_cluster=64x8xV100:24c:512g+4xcpu:32c:128g+per-gpu:3c:64g
# Alibaba's most common GPU node (96 cores, 8 GPUs; 570 of its 1,213 GPU nodes) and its most
# common CPU-only node (32 cores, 256 GiB), sized to the pods' load as in docs/sharing.md.
alibaba_cluster=4x8xV100:96c:768g+2xcpu:32c:256g+per-gpu:12c:96g

run() {  # NAME TRACE CLUSTER ALLOCATION [FLAGS...]
  local name=$1 trace=$2 cluster=$3 allocation=$4
  shift 4
  "$dlsched" simulate -q --trace "$trace" --cluster "$cluster" --policy "$policies" \
    --host-allocation "$allocation" --json "$out/$name.json" "$@"
}

for seed in $seeds; do
  for a in proportional cpu-aware; do
    run "synthetic-$seed-$a" "synthetic:mix=dataload,jobs=2000,gpus=128,load=0.8,seed=$seed" \
      "$synthetic_cluster" "$a" --seed "$seed"
  done
done
for a in proportional cpu-aware; do
  run "chronus-$a" "chronus:$chronus" "$chronus_cluster" "$a"
done
for a in proportional requested; do
  run "alibaba-$a" "alibaba:$alibaba" "$alibaba_cluster" "$a"
done

python3 "$repo_root/scripts/multi_resource_tables.py" "$out" "$seeds"
