#!/usr/bin/env python3
"""Prints the tables of scripts/evaluate.sh (docs/evaluation.md) from its JSON files.

  scripts/evaluate_tables.py OUT_DIR SEED...

Each cell is the mean over the seeds and [min, max] across them. Below each experiment: its own
metric for dlsched, the best specialised profile and the best baseline, and dlsched's gap.
"""
import json
import os
import sys

BASELINES = ["fifo", "fifo-backfill", "sjf", "srtf", "las", "tiresias", "edf"]


def load(out, name, seeds):
    runs = {}  # policy -> [run per seed]
    for s in seeds:
        path = os.path.join(out, f"{name}-s{s}.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            for run in json.load(f)["runs"]:
                runs.setdefault(run["policy"], []).append(run)
    return runs


def hours(run, key):
    v = run.get(key)
    return None if v is None else v / 3600


def pct(run, key):
    v = run.get(key)
    return None if v is None else 100 * v


def cell(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} [{fmt.format(min(values))}, {fmt.format(max(values))}]"


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def incomplete(runs):
    return any(r["completed"] + r["rejected"] < r["jobs"] for r in runs)


def table(title, runs, columns):
    print(f"#### {title}\n")
    print("| policy | " + " | ".join(c[0] for c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for policy, rs in runs.items():
        mark = " *" if incomplete(rs) else ""
        cells = [cell([get(r) for r in rs], fmt) for _, get, fmt in columns]
        print(f"| {policy}{mark} | " + " | ".join(cells) + " |")
    print()


def verdict(runs, metric_name, get, lower_is_better, specialised):
    """dlsched against the best specialised profile and the best baseline on one metric."""
    score = {p: mean([get(r) for r in rs]) for p, rs in runs.items()}
    score = {p: v for p, v in score.items() if v is not None}
    pick = min if lower_is_better else max
    mine = score.get("dlsched")
    spec = [p for p in specialised if p in score]
    base = [p for p in BASELINES if p in score]
    parts = []
    for label, group in (("best specialised", spec), ("best baseline", base)):
        if not group or mine is None:
            continue
        best = pick(group, key=lambda p: score[p])
        gap = (mine - score[best]) / score[best] * 100 if score[best] else 0
        worse = gap > 0 if lower_is_better else gap < 0
        parts.append(f"{label} {best} {score[best]:.2f} ({'+' if gap >= 0 else ''}{gap:.1f}%"
                     f"{', dlsched behind' if worse and abs(gap) > 5 else ''})")
    if mine is not None:
        print(f"{metric_name}: dlsched {mine:.2f}; " + "; ".join(parts) + "\n")


def main():
    out, seeds = sys.argv[1], sys.argv[2:]
    print(f"Seeds: {' '.join(seeds)}. Cells: mean [min, max] over the seeds; * = not every "
          "job finished in some run.\n")
    jct = [("avg JCT h", lambda r: hours(r, "avg_jct_s"), "{:.2f}"),
           ("p99 JCT h", lambda r: hours(r, "p99_jct_s"), "{:.1f}"),
           ("GPU util %", lambda r: pct(r, "gpu_utilization"), "{:.1f}"),
           ("preemptions", lambda r: r.get("preemptions"), "{:.0f}")]
    runs = load(out, "philly", seeds)
    if runs:
        table("Philly, 64x8xV100", runs, jct)
        verdict(runs, "avg JCT (h)", lambda r: hours(r, "avg_jct_s"), True,
                ["topo", "greedy-share", "priority-quota"])
        verdict(runs, "p99 JCT (h)", lambda r: hours(r, "p99_jct_s"), True,
                ["topo", "greedy-share", "priority-quota"])
    # A class a trace lacks reports 0 (SLO has no soft and no best-effort jobs): shown as – (so
    # is a class rate of exactly 0; the JSON has no per-class job counts to tell them apart).
    qos = [("QoS met %", lambda r: pct(r, "qos_met_rate"), "{:.1f}"),
           ("strict %", lambda r: pct(r, "qos_met_rate_strict") or None, "{:.1f}"),
           ("soft %", lambda r: pct(r, "qos_met_rate_soft") or None, "{:.1f}"),
           ("best-effort avg JCT h", lambda r: hours(r, "best_effort_avg_jct_s") or None,
            "{:.2f}"),
           ("avg JCT h", lambda r: hours(r, "avg_jct_s"), "{:.2f}"),
           ("rejected", lambda r: r.get("rejected"), "{:.0f}")]
    for t in ["SLO", "MIX1", "MIX2"]:
        runs = load(out, f"chronus-{t}", seeds)
        if runs:
            table(f"Chronus {t}, 64x8xV100", runs, qos)
            verdict(runs, "QoS met (%)", lambda r: pct(r, "qos_met_rate"), False,
                    ["qos", "elasticflow"])
    runs = load(out, "gavel", seeds)
    if runs:
        table("Gavel msr_seed0/0e4a51, 9x4xK80+9x4xP100+9x4xV100, predictor", runs, jct[:3])
        verdict(runs, "avg JCT (h)", lambda r: hours(r, "avg_jct_s"), True,
                ["hetero-las", "hetero-minjct", "hetero-greedy", "qos"])
    sizes = [2, 3, 4, 5, 6]
    by_size = {n: load(out, f"alibaba-{n}x4xV100", seeds) for n in sizes}
    if all(by_size.values()):
        print("#### Alibaba gpushare100, 2-6 nodes of 4 V100s: avg JCT (h) by cluster size\n")
        policies = list(by_size[4].keys())
        print("| policy | " + " | ".join(f"{n}x4 ({4 * n})" for n in sizes) +
              " | GPUs to reach target |")
        print("|---|" + "---|" * (len(sizes) + 1))
        avg = {p: {n: mean([hours(r, "avg_jct_s") for r in by_size[n][p]]) for n in sizes}
               for p in policies}
        exclusive = [p for p in policies if p in BASELINES + ["topo"]]
        target = min(avg[p][4] for p in exclusive)
        needed = {}
        for p in policies:
            pts = [(4 * n, avg[p][n]) for n in sizes]
            g = None
            if pts[0][1] <= target:
                g = pts[0][0]
            for (g0, j0), (g1, j1) in zip(pts, pts[1:]):
                if g is None and j1 <= target:
                    g = g0 + (j0 - target) / (j0 - j1) * (g1 - g0)
            needed[p] = g
            cells = [cell([hours(r, "avg_jct_s") for r in by_size[n][p]], "{:.3f}") for n in sizes]
            print(f"| {p} | " + " | ".join(cells) +
                  f" | {'> 24' if g is None else f'{g:.1f}'} |")
        print(f"\nTarget: {target:.3f} h, the best exclusive policy's average JCT at 4x4 "
              "(16 GPUs); GPUs linearly interpolated between sizes (fewer is better).\n")
        spec = [p for p in ["greedy-share", "heuristic-share"] if needed.get(p)]
        if needed.get("dlsched") and spec:
            best = min(spec, key=lambda p: needed[p])
            gap = (needed["dlsched"] - needed[best]) / needed[best] * 100
            print(f"GPUs to reach target: dlsched {needed['dlsched']:.1f}; best specialised "
                  f"{best} {needed[best]:.1f} ({'+' if gap >= 0 else ''}{gap:.1f}%)\n")
    runs = load(out, "topology", seeds)
    if runs:
        table("Topology: Gavel msr_seed0/0e4a51 on 8x8xV100, Gavel's table, predictor", runs,
              jct[:3])
        verdict(runs, "avg JCT (h)", lambda r: hours(r, "avg_jct_s"), True,
                ["topo", "greedy-share"])
    runs = load(out, "mixed", seeds)
    if runs:
        table("Mixed synthetic workload, 16x8xV100", runs, [jct[0]] + qos[:4] + [jct[2]])
        verdict(runs, "avg JCT (h)", lambda r: hours(r, "avg_jct_s"), True,
                ["qos", "topo", "greedy-share", "priority-quota"])
        verdict(runs, "QoS met (%)", lambda r: pct(r, "qos_met_rate"), False,
                ["qos", "topo", "greedy-share", "priority-quota"])


if __name__ == "__main__":
    main()
