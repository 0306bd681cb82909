#!/usr/bin/env bash
# Runs the benchmarks (BENCHMARKS.md). Extra arguments go to Google Benchmark, e.g.
#   bench/run.sh --benchmark_filter=Replay
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench-build >/dev/null
exec build/dlsched_bench --benchmark_counters_tabular=true "$@"
