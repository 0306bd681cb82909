#!/usr/bin/env bash
# Issue 3 item 7 (docs/sharing.md, "Experiment: JCT vs cluster size"): average JCT against
# cluster size for exclusive policies (las, tiresias) and GPU-sharing ones (greedy-share,
# heuristic-share, naive-share, gandiva) on the Philly trace and on Alibaba's fractional-GPU pods,
# and how many GPUs each needs to reach the best exclusive policy's average JCT at a reference
# size. Writes one `dlsched simulate --json` file per workload and cluster size into OUT_DIR and
# prints markdown tables on stdout.
#   scripts/sharing-experiment.sh [--quick] [TRACES_DIR] [OUT_DIR]
# TRACES_DIR: default $DLSCHED_TRACES, else ../shared/traces beside the repository.
# OUT_DIR: default sharing-experiment/ in the current directory.
# DLSCHED: the binary, default build/dlsched (run from the repository root).
# --quick: three sizes per workload instead of six (the reference sizes stay).
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; }

quick=0
positional=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "sharing-experiment: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *) positional+=("$arg") ;;
  esac
done
if [ ${#positional[@]} -gt 2 ]; then usage >&2; exit 2; fi

repo_root=$(cd "$(dirname "$0")/.." && pwd)
traces=${positional[0]:-${DLSCHED_TRACES:-$repo_root/../shared/traces}}
out=${positional[1]:-sharing-experiment}
dlsched=${DLSCHED:-build/dlsched}

command -v python3 >/dev/null ||
  { echo "sharing-experiment: python3 is needed to print the tables; install it" >&2; exit 1; }
[ -x "$dlsched" ] ||
  { echo "sharing-experiment: no dlsched binary at $dlsched (build it, or set DLSCHED)" >&2; exit 1; }
philly="$traces/pollux/philly.csv"
alibaba="$traces/alibaba-gpu-v2023/openb_pod_list_gpushare100.csv"
# The sharing model's measurements (--sharing-data auto): without them dlsched silently falls
# back to its built-in job types, which is not the experiment documented.
for f in "$philly" "$alibaba" "$traces/lucid/single_data.csv" "$traces/lucid/colocate_info.csv" \
  "$traces/gavel/simulation_throughputs.json"; do
  [ -r "$f" ] || { echo "sharing-experiment: missing $f (TRACES_DIR=$traces)" >&2; exit 1; }
done

policies=las,tiresias,greedy-share,heuristic-share,naive-share,gandiva
# Cluster sizes, NODESxGPUSxTYPE. Philly's reference is 64x8 (the default cluster for traces).
# Alibaba's pods are all single-GPU, so nodes of 4 GPUs give finer steps; it is contended only
# below ~24 GPUs (from 32 on nothing waits), reference 4x4 (16 GPUs).
if [ "$quick" -eq 1 ]; then
  philly_sizes=(48x8xV100 64x8xV100 80x8xV100)
  alibaba_sizes=(2x4xV100 4x4xV100 6x4xV100)
else
  philly_sizes=(40x8xV100 48x8xV100 56x8xV100 64x8xV100 72x8xV100 80x8xV100)
  alibaba_sizes=(2x4xV100 3x4xV100 4x4xV100 5x4xV100 6x4xV100 8x4xV100)
fi
philly_ref=64x8xV100
alibaba_ref=4x4xV100

mkdir -p "$out"
start=$SECONDS
# run NAME TRACE CLUSTER: one simulate call, all policies on two threads.
run() {
  local name=$1 trace=$2 cluster=$3
  local json="$out/$name-$cluster.json" log="$out/$name-$cluster.log"
  local t0=$SECONDS
  if ! "$dlsched" simulate -q --json "$json" --trace "$trace" --cluster "$cluster" \
    --policy "$policies" --threads 2 --traces-dir "$traces" >"$log" 2>&1; then
    echo "sharing-experiment: dlsched simulate failed on $name $cluster; see $log" >&2
    cat "$log" >&2
    exit 1
  fi
  echo "  $name $cluster: $((SECONDS - t0)) s" >&2
}

echo "sharing-experiment: $dlsched, traces $traces, results in $out/" >&2
for c in "${philly_sizes[@]}"; do run philly "philly:$philly" "$c"; done
for c in "${alibaba_sizes[@]}"; do run alibaba "alibaba:$alibaba" "$c"; done
echo "sharing-experiment: simulations took $((SECONDS - start)) s" >&2

python3 - "$out" "philly:$philly_ref:${philly_sizes[*]}" "alibaba:$alibaba_ref:${alibaba_sizes[*]}" <<'EOF'
import json
import re
import sys

EXCLUSIVE = ["las", "tiresias"]
SHARING = ["greedy-share", "heuristic-share", "naive-share", "gandiva"]
TITLES = {
    "philly": "Philly (pollux/philly.csv)",
    "alibaba": "Alibaba-derived (alibaba-gpu-v2023/openb_pod_list_gpushare100.csv, its GPU pods)",
}


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    print("\n".join(lines) + "\n")


def gpus_to_reach(points, target):
    """First cluster size (GPUs, linear in between) at which avg JCT <= target; a string when
    the measured sizes do not bracket it. `points`: (gpus, avg JCT) by ascending gpus."""
    if points[0][1] <= target:
        return None, f"<= {points[0][0]}"
    for (g0, j0), (g1, j1) in zip(points, points[1:]):
        if j1 <= target:
            g = g0 + (j0 - target) / (j0 - j1) * (g1 - g0)
            return g, f"{g:.0f}"
    return None, f"> {points[-1][0]}"


def report(out, spec):
    name, ref, sizes = spec.split(":", 2)
    sizes = sizes.split()
    runs, gpus = {}, {}
    for c in sizes:
        with open(f"{out}/{name}-{c}.json") as f:
            doc = json.load(f)
        gpus[c] = int(re.search(r"\((\d+) GPUs", doc["cluster"]).group(1))
        for r in doc["runs"]:
            runs[(r["policy"], c)] = r
    hours = lambda p, c: runs[(p, c)]["avg_jct_s"] / 3600
    incomplete = lambda p, c: runs[(p, c)]["completed"] < runs[(p, c)]["jobs"]
    short = lambda c: c.replace("xV100", "")

    print(f"### {TITLES[name]}: {doc['runs'][0]['jobs']:,} jobs\n")
    print("(a) Average JCT, hours, by policy and V100 cluster size (GPUs in brackets)"
          + "; * = not every job completed\n")
    table(["policy", "kind"] + [f"{short(c)} ({gpus[c]})" for c in sizes],
          [[p, "exclusive" if p in EXCLUSIVE else "sharing"]
           + [f"{hours(p, c):.2f}" + ("*" if incomplete(p, c) else "") for c in sizes]
           for p in EXCLUSIVE + SHARING])

    print(f"(b) At the reference size {short(ref)} ({gpus[ref]} GPUs). Utilisations are "
          "time-averaged over the run: GPUs allocated; running jobs' mean memory demand over "
          "the GPUs' memory; SM use. Slowdowns are interference slowdowns in the ground truth "
          "(1/speed) of the jobs that ran shared: p95 and max over those jobs of the worst "
          "slowdown each ran at.\n")
    rows = []
    for p in EXCLUSIVE + SHARING:
        r = runs[(p, ref)]
        s = r["sharing"]
        rows.append([p, f"{r['avg_jct_s'] / 3600:.2f}", f"{r['gpu_utilization']:.1%}",
                     f"{r['gpu_mem_utilization']:.1%}", f"{s['gpu_sm_utilization']:.1%}",
                     f"{s['shared_gpu_s'] / 3600:,.0f}", f"{s['jobs_shared']:,}",
                     f"{s['p95_slowdown']:.2f}", f"{s['max_slowdown']:.2f}",
                     f"{r['oom_restarts']:,}", f"{s['oom_lost_gpu_s'] / 3600:,.1f}",
                     f"{r['migrations']:,}", f"{r['preemptions']:,}"])
    table(["policy", "avg JCT h", "GPU alloc", "GPU mem", "GPU SM", "shared GPU-h",
           "jobs shared", "p95 slowdown", "max slowdown", "OOM restarts", "OOM lost GPU-h",
           "migrations", "preemptions"], rows)

    best_excl = min(EXCLUSIVE, key=lambda p: hours(p, ref))
    best_share = min(SHARING, key=lambda p: hours(p, ref))
    target = hours(best_excl, ref)
    print(f"(c) GPUs needed to reach the target average JCT = {target:.2f} h, the best exclusive "
          f"policy's ({best_excl}) at {short(ref)} ({gpus[ref]} GPUs): each policy's avg JCT "
          "linearly interpolated over cluster GPUs; the first size where it reaches the target.\n")
    needed = {}
    rows = []
    for p in EXCLUSIVE + SHARING:
        g, text = gpus_to_reach([(gpus[c], hours(p, c)) for c in sizes], target)
        needed[p] = g
        rows.append([p, text, f"{g / gpus[ref]:.0%}" if g is not None else "-"])
    table(["policy", "GPUs to reach target", f"of {gpus[ref]} GPUs"], rows)
    if needed[best_excl] is not None and needed[best_share] is not None:
        print(f"Best sharing policy at the reference size: {best_share}; it needs "
              f"{needed[best_share]:.0f} GPUs against {needed[best_excl]:.0f} for {best_excl}: "
              f"ratio {needed[best_share] / needed[best_excl]:.2f} "
              f"({1 - needed[best_share] / needed[best_excl]:.0%} fewer GPUs).\n")

    print(f"(d) Paper-style curve: performance = target avg JCT / avg JCT (1.00 = as good as "
          f"{best_excl} on {gpus[ref]} GPUs) of the best exclusive ({best_excl}) and the best "
          f"sharing ({best_share}) policy at each size, and the sharing policy's avg JCT as a "
          "fraction of the exclusive one's on the same GPUs.\n")
    table(["cluster", "GPUs", "of reference", f"{best_excl} JCT h", f"{best_share} JCT h",
           f"{best_excl} perf", f"{best_share} perf", "sharing / exclusive JCT"],
          [[short(c), gpus[c], f"{gpus[c] / gpus[ref]:.0%}", f"{hours(best_excl, c):.2f}",
            f"{hours(best_share, c):.2f}", f"{target / hours(best_excl, c):.2f}",
            f"{target / hours(best_share, c):.2f}",
            f"{hours(best_share, c) / hours(best_excl, c):.2f}"] for c in sizes])


for spec in sys.argv[2:]:
    report(sys.argv[1], spec)
EOF
