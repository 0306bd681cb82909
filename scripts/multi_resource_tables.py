#!/usr/bin/env python3
"""Markdown tables of scripts/multi-resource-experiment.sh's runs (docs/multi-resource.md).

Usage: multi_resource_tables.py OUT_DIR "SEEDS"
Reads OUT_DIR/synthetic-SEED-ALLOCATION.json, chronus-ALLOCATION.json and
alibaba-ALLOCATION.json (`dlsched simulate --json` files) and prints one table per workload:
average JCT, GPU utilisation and the share of GPU-time idle for lack of CPU or memory
(host_blocked_gpu_share), per policy and allocation; for the synthetic mix the mean over the
seeds with the range, and the proportional / cpu-aware JCT ratio per seed.
"""
import json
import os
import statistics
import sys


def runs(path):
    with open(path) as f:
        return {r["policy"]: r for r in json.load(f)["runs"]}


def hours(seconds):
    return seconds / 3600


def spread(values, fmt):
    if len(values) == 1:
        return fmt.format(values[0])
    return (fmt + " ({}-{})").format(statistics.mean(values), fmt.format(min(values)),
                                      fmt.format(max(values)))


def synthetic(out, seeds):
    table = {}  # (policy, allocation) -> list of runs
    for seed in seeds:
        for allocation in ("proportional", "cpu-aware"):
            for policy, r in runs(os.path.join(out, f"synthetic-{seed}-{allocation}.json")).items():
                table.setdefault((policy, allocation), []).append(r)
    print(f"Synthetic data-loading mix, seeds {' '.join(seeds)}: mean (min-max) over the seeds\n")
    print("| policy | allocation | avg JCT (h) | GPU util | GPU-time idle for lack of host |"
          " JCT ratio proportional / cpu-aware |")
    print("|---|---|---|---|---|---|")
    for (policy, allocation), rs in sorted(table.items()):
        ratio = ""
        if allocation == "cpu-aware":
            prop = table[(policy, "proportional")]
            ratio = spread([p["avg_jct_s"] / c["avg_jct_s"] for p, c in zip(prop, rs)], "{:.2f}")
        print(f"| {policy} | {allocation} | "
              f"{spread([hours(r['avg_jct_s']) for r in rs], '{:.2f}')} | "
              f"{spread([r['gpu_utilization'] for r in rs], '{:.3f}')} | "
              f"{spread([r.get('host_blocked_gpu_share', 0) for r in rs], '{:.3f}')} | {ratio} |")
    print()


def trace(out, name, title, allocations):
    print(f"{title}\n")
    print("| policy | allocation | jobs | completed | avg JCT (h) | GPU util |"
          " GPU-time idle for lack of host |")
    print("|---|---|---|---|---|---|---|")
    for allocation in allocations:
        for policy, r in sorted(runs(os.path.join(out, f"{name}-{allocation}.json")).items()):
            print(f"| {policy} | {allocation} | {r['jobs']} | {r['completed']} | "
                  f"{hours(r['avg_jct_s']):.2f} | {r['gpu_utilization']:.3f} | "
                  f"{r.get('host_blocked_gpu_share', 0):.3f} |")
    print()


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, seeds = sys.argv[1], sys.argv[2].split()
    synthetic(out, seeds)
    trace(out, "chronus", "Chronus SLO trace with its CPU jobs", ("proportional", "cpu-aware"))
    trace(out, "alibaba", "Alibaba default pod list, the pods' own CPU requests",
          ("proportional", "requested"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
